/**
 * The generated reference (issue 15): the OpenAPI document at `GET /openapi.json` is valid
 * OpenAPI 3.1, names every route of docs/guide.md's table and every route the app serves, with
 * both credential modes and the failure envelopes; `GET /docs` renders it in a real browser
 * (Debian's chromium through playwright-core) without reaching any other host; and the check
 * that holds every test's answers to their route's schemas (src/http/response-check.ts)
 * catches what it claims to.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import SwaggerParser from '@apidevtools/swagger-parser';
import { chromium } from 'playwright-core';
import { z } from 'zod';
import { harness, type Harness } from './support/app.js';
import { checkAnswer } from '../src/http/response-check.js';
import { answersOf } from '../src/http/schema.js';
import { DOCS_CSP } from '../src/http/openapi.js';
import type { AnyRoute } from '../src/http/route.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Debian's chromium on our machines; CI images that ship another Chromium build (GitHub's
// ubuntu runners have Google Chrome) name it in CHROMIUM_PATH.
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

async function openApiDoc(h: Harness): Promise<any> {
  const res = await h.app.inject({ method: 'GET', url: '/openapi.json' });
  assert.is(res.statusCode, 200, res.body);
  return JSON.parse(res.body);
}

/**
 * The `/v2/...` paths of docs/guide.md's route table (section "The API"). A row names a full
 * path, then shorter ones relative to it: `/v2/organizations/documents/add`, `get`,
 * `access/update` (siblings of its last segment), or `usergroups/users/add` after
 * `/v2/organizations/usergroups/add` (from the segment they share).
 */
function readmeRoutes(readme: string): string[] {
  const start = readme.indexOf('| area | routes | credentials |');
  assert.ok(start >= 0, 'docs/guide.md has no route table ("| area | routes | credentials |")');
  const rows = readme.slice(start).split('\n').slice(2);
  const out: string[] = [];
  for (const row of rows) {
    if (!row.startsWith('|')) break;
    const cell = row.split('|')[2] ?? '';
    let full: string | undefined;
    for (const [, name] of cell.matchAll(/`([^`]+)`/g)) {
      if (name.startsWith('/v2/')) {
        full = name;
        out.push(name);
        continue;
      }
      assert.ok(full, `docs/guide.md route table: "${name}" comes before any full /v2/ path in its row`);
      const base = full.split('/');
      const first = name.split('/')[0];
      const shared = base.lastIndexOf(first, base.length - 2);
      const prefix = shared > 1 ? base.slice(0, shared) : base.slice(0, -1);
      out.push([...prefix, name].join('/'));
    }
  }
  return out;
}

/** The paths the app serves for `method`, read from Fastify's route tree. */
function servedPaths(h: Harness, method: string): string[] {
  const tree = h.app.printRoutes({ commonPrefix: false });
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:│   |    )*)(?:├── |└── )(.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1].length / 4;
    stack.length = depth;
    const full = (stack[depth - 1] ?? '') + m[2];
    stack.push(full);
    if (m[3]?.split(', ').includes(method)) out.push(full);
  }
  return out;
}

const D = suite<{ h: Harness; doc: any }>('OpenAPI document');
D.before(async (ctx) => {
  ctx.h = await harness();
  ctx.doc = await openApiDoc(ctx.h);
});
D.after(async (ctx) => ctx.h.close());

D('GET /openapi.json is a valid OpenAPI 3.1 document', async ({ doc }) => {
  assert.match(doc.openapi, /^3\.1\.\d+$/);
  // validate() dereferences in place: a copy, so the other tests see the document as served.
  try {
    await SwaggerParser.validate(structuredClone(doc));
  } catch (err) {
    assert.unreachable(`the document does not validate: ${(err as Error).message}`);
  }
  assert.type(doc.info.title, 'string');
  assert.ok(doc.info.title.length > 0);
});

D('both credential modes are security schemes, used by the routes of each mode', ({ doc }) => {
  const schemes = doc.components.securitySchemes as Record<string, { type: string; in: string; name: string }>;
  const byHeader = new Map(Object.entries(schemes).map(([id, s]) => [s.name, { id, ...s }]));
  for (const header of ['x-service-api-key', 'x-service-auth-token', 'x-service-workspace-id', 'x-service-workspace-auth-token']) {
    const s = byHeader.get(header);
    assert.ok(s, `no security scheme for header ${header}`);
    assert.is(s.type, 'apiKey');
    assert.is(s.in, 'header');
  }
  const requirement = (...headers: string[]) => Object.fromEntries(headers.map((x) => [byHeader.get(x)!.id, []]));
  // A mode's two headers go together: one requirement object names both.
  assert.equal(doc.paths['/v2/organizations/add'].post.security, [requirement('x-service-api-key', 'x-service-auth-token')]);
  assert.equal(doc.paths['/v2/workspace/apikey/create'].post.security, [
    requirement('x-service-workspace-id', 'x-service-workspace-auth-token'),
  ]);
});

D("names every route of docs/guide.md's table", ({ doc }) => {
  const routes = readmeRoutes(fs.readFileSync(path.join(root, 'docs', 'guide.md'), 'utf8'));
  // The table's shorthand resolves as a reader would read it (a parse that found nothing
  // would pass the check below vacuously).
  for (const p of ['/v2/workspace/create', '/v2/organizations/access/disablestate/update', '/v2/organizations/usergroups/users/delete', '/v2/agents/groups/list', '/v2/auth/generate_token']) {
    assert.ok(routes.includes(p), `docs/guide.md table parse misses ${p}: ${routes.join(' ')}`);
  }
  assert.ok(routes.length >= 50, `only ${routes.length} routes read from the docs/guide.md table`);
  // Every route is a POST but the change stream, a GET.
  const missing = routes.filter((p) => !(doc.paths[p]?.post ?? (p === '/v2/changes/stream' ? doc.paths[p]?.get : undefined)));
  assert.equal(missing, [], `docs/guide.md routes missing from the document: ${missing.join(', ')}`);
});

D('the one GET route of the API is documented as a GET, and is the only one', ({ h, doc }) => {
  const served = servedPaths(h, 'GET').filter((p) => p.startsWith('/v2/'));
  assert.equal(served, ['/v2/changes/stream']);
  assert.ok(doc.paths['/v2/changes/stream']?.get);
});

D('names every POST route the app serves', ({ h, doc }) => {
  const served = servedPaths(h, 'POST');
  assert.ok(served.includes('/v2/organizations/add'), `route tree parse: ${served.join(' ')}`);
  assert.ok(served.length >= 50, `only ${served.length} POST routes read from the route tree`);
  const missing = served.filter((p) => !doc.paths[p]?.post);
  assert.equal(missing, [], `served but not documented: ${missing.join(', ')}`);
});

D('the failure envelopes are components, and every route declares 400 and 500 with them', ({ doc }) => {
  for (const http of [400, 500]) {
    const envelope = doc.components.schemas?.[`Failure${http}`];
    assert.ok(envelope, `no component Failure${http}`);
    assert.ok(envelope.required?.includes('error'), `Failure${http} does not require error`);
    const error = envelope.properties.error;
    for (const field of ['status', 'message']) assert.ok(error.required?.includes(field), `Failure${http}.error does not require ${field}`);
  }
  assert.ok(doc.components.schemas.Failure500.properties.error.properties.status.enum.includes('INTERNAL'));
  const posts = Object.entries(doc.paths as Record<string, any>).filter(([, item]) => item.post);
  assert.ok(posts.length >= 50, `only ${posts.length} POST operations`);
  for (const [p, item] of posts) {
    for (const http of ['400', '500']) {
      const answer = item.post.responses?.[http];
      assert.ok(answer, `${p} declares no ${http}`);
      assert.is(answer.content?.['application/json']?.schema?.$ref, `#/components/schemas/Failure${http}`, `${p} ${http}`);
    }
  }
});

D.run();

const B = suite<{ h: Harness; base: string; title: string }>('/docs in headless Chromium');
B.before(async (ctx) => {
  ctx.h = await harness();
  ctx.title = (await openApiDoc(ctx.h)).info.title;
  await ctx.h.app.listen({ host: '127.0.0.1', port: 0 });
  ctx.base = `http://127.0.0.1:${(ctx.h.app.server.address() as AddressInfo).port}`;
});
B.after(async (ctx) => ctx.h.close());

/**
 * /docs shares its origin with the console, which keeps a key's auth token in sessionStorage
 * (docs/console.md): a site framing /docs, or a script it could get the page to run, would be
 * a way to that token. So every /docs answer (the page, its assets, the document) carries
 * the console's framing and sniffing headers and a CSP as strict as Swagger UI allows.
 */
B('every /docs answer carries the console\'s headers: no framing, no sniffing, a strict CSP', async ({ h }) => {
  for (const url of ['/docs', '/docs/', '/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js', '/docs/static/swagger-ui.css', '/docs/json']) {
    const res = await h.app.inject({ method: 'GET', url });
    assert.is(res.statusCode, 200, `${url}: ${res.statusCode}`);
    assert.is(res.headers['x-frame-options'], 'DENY', `${url}: x-frame-options`);
    assert.is(res.headers['x-content-type-options'], 'nosniff', `${url}: x-content-type-options`);
    assert.is(res.headers['referrer-policy'], 'no-referrer', `${url}: referrer-policy`);
    assert.is(res.headers['content-security-policy'], DOCS_CSP, `${url}: content-security-policy`);
  }
  const csp = Object.fromEntries(DOCS_CSP.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]));
  assert.equal(csp['frame-ancestors'], ["'none'"]);
  assert.equal(csp['default-src'], ["'none'"]);
  assert.equal(csp['script-src'], ["'self'"], 'no inline script, no eval');
  assert.equal(csp['connect-src'], ["'self'"]);
});

B('renders the document: title and operations shown, nothing fetched from another host', async ({ base, title }) => {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH to a Chromium build; this test renders /docs in it.`);
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-background-networking'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // What the CSP refused: Chromium reports each refusal on the console ("Refused to ...
    // because it violates the following Content Security Policy directive").
    const refused: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) refused.push(m.text());
    });
    const requested: string[] = [];
    page.on('request', (req) => requested.push(req.url()));
    // A request elsewhere is recorded above and then refused, so the page cannot quietly
    // depend on a CDN that happens to be reachable from this machine.
    await page.route('**/*', (route) => (new URL(route.request().url()).origin === base ? route.continue() : route.abort()));
    const res = await page.goto(`${base}/docs`);
    assert.ok(res?.ok(), `GET /docs answered ${res?.status()}`);
    await page.locator('.opblock').first().waitFor({ timeout: 60_000 });
    await page.getByText('/v2/organizations/add', { exact: true }).first().waitFor({ timeout: 60_000 });
    const shownTitle = await page.locator('.info .title').first().innerText();
    assert.ok(shownTitle.includes(title), `title shown: ${shownTitle}`);
    assert.ok((await page.locator('.opblock').count()) >= 50, 'fewer than 50 operations shown');
    fs.mkdirSync(path.join(root, 'test-output'), { recursive: true });
    await page.screenshot({ path: path.join(root, 'test-output', 'docs.png'), fullPage: true });
    const elsewhere = requested.filter((url) => {
      const u = new URL(url);
      return u.protocol === 'data:' || u.protocol === 'blob:' ? false : u.origin !== base;
    });
    assert.equal(elsewhere, [], `requests to other hosts: ${elsewhere.join(', ')}`);
    assert.is(res?.headers()['content-security-policy'], DOCS_CSP, 'the page was served under the CSP');
    // Expanding an operation renders its schemas and example (more of Swagger UI's styles).
    await page.locator('.opblock-summary').first().click();
    await page.locator('.opblock-body').first().waitFor({ timeout: 60_000 });
    assert.equal(refused, [], `refused by the CSP: ${refused.join(' | ')}`);
    assert.ok(requested.some((url) => url.startsWith(`${base}/docs/json`)), `the page did not load the document: ${requested.join(', ')}`);
  } finally {
    await browser.close();
  }
});

B.run();

/** A route of the shape the app registers, for checkAnswer (only what answersOf reads). */
const route = (over: Partial<AnyRoute> = {}): AnyRoute => ({
  path: '/v2/test/get',
  tag: 'Test',
  doc: { summary: 'A route for the checks.' },
  mutates: false,
  auth: 'apiKey',
  schema: z.object({}),
  response: z.object({ id: z.string(), rows: z.array(z.object({ name: z.string() })) }),
  handler: async () => ({ message: 'ok' }),
  ...over,
});
const ok = (data: unknown) => ({ result: { status: 'success', message: 'Fetched.', data } });
const fail = (status: string, message = 'No.') => ({ error: { status, message } });

const R = suite('checkAnswer (src/http/response-check.ts)');

R('an answer matching its schema passes, success and declared failures alike', () => {
  const answers = answersOf(route({ errors: ['NOT_FOUND'] }));
  assert.is(checkAnswer(answers, 200, ok({ id: 'o1', rows: [{ name: 'a' }] })), null);
  assert.is(checkAnswer(answers, 404, fail('NOT_FOUND')), null);
  assert.is(checkAnswer(answers, 400, fail('INVALID_ARGUMENT')), null);
  assert.is(checkAnswer(answers, 401, fail('UNAUTHENTICATED')), null);
});

R('a missing field fails, naming it', () => {
  const problem = checkAnswer(answersOf(route()), 200, ok({ rows: [] }));
  assert.type(problem, 'string');
  assert.match(problem!, /result\.data\.id/);
  assert.match(checkAnswer(answersOf(route()), 200, { result: { status: 'success', data: { id: 'o1', rows: [] } } })!, /result\.message/);
});

R('an undeclared extra field fails, naming its path', () => {
  const answers = answersOf(route());
  assert.is(checkAnswer(answers, 200, ok({ id: 'o1', rows: [], secret: 'x' })), 'result.data.secret is not in the schema');
  assert.is(checkAnswer(answers, 200, ok({ id: 'o1', rows: [{ name: 'a' }, { name: 'b', extra: 1 }] })), 'result.data.rows[1].extra is not in the schema');
  assert.match(checkAnswer(answers, 400, { error: { status: 'INVALID_ARGUMENT', message: 'No.', stack: 'at x.ts:1' } })!, /error\.stack is not in the schema/);
});

R('a failure status the route does not declare fails, under a declared HTTP status', () => {
  // HTTP 400 stands for INVALID_ARGUMENT and FAILED_PRECONDITION; this route declares only the first.
  const problem = checkAnswer(answersOf(route()), 400, fail('FAILED_PRECONDITION'));
  assert.type(problem, 'string');
  assert.match(problem!, /FAILED_PRECONDITION/);
  assert.match(problem!, /does not declare/);
  assert.is(checkAnswer(answersOf(route({ errors: ['FAILED_PRECONDITION'] })), 400, fail('FAILED_PRECONDITION')), null);
});

R('an HTTP status the route does not declare fails', () => {
  const problem = checkAnswer(answersOf(route()), 404, fail('NOT_FOUND'));
  assert.type(problem, 'string');
  assert.match(problem!, /HTTP 404/);
  assert.match(problem!, /does not declare/);
  // A read cannot lose a write race: 409 belongs to mutating routes only.
  assert.match(checkAnswer(answersOf(route()), 409, fail('ABORTED'))!, /HTTP 409/);
  assert.is(checkAnswer(answersOf(route({ mutates: true })), 409, fail('ABORTED')), null);
});

R.run();
