/**
 * Fuzzing beyond test/fuzz.test.ts (issue 7.2):
 * - raw hostile texts on every route: 10,000 and 100,000 levels of [[[...]]] and of
 *   {"a":{"a":...}}, as the body and inside data, 10,000-item arrays, lone surrogates, NUL,
 *   1e999, duplicate and prototype keys: never a 5xx, always the envelope, each answered
 *   within a bound (never a hang), refusals leave the log untouched;
 * - the generated bodies of test/support/fuzz.ts against the real child process over a
 *   socket, each request bounded by a timeout, the process healthy afterwards.
 *
 * FUZZ_PROCESS_RUNS sets the generated bodies per route against the process (npm test: 4;
 * npm run test:reliability: 40). FUZZ_HANG_MS bounds each answer (default 10,000 ms: the
 * machine is shared; a hang is minutes, not seconds).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import fs from 'node:fs';
import { harness, tempDir, type Harness, type Tenant } from './support/app.js';
import { allRoutes } from '../src/app.js';
import { settleCascades } from '../src/http/routes/cascade.js';
import { bodyFor } from './support/fuzz.js';
import { startService, waitHealthy, type Service } from './support/process.js';

const PROCESS_RUNS = Number(process.env.FUZZ_PROCESS_RUNS ?? 4);
const HANG_MS = Number(process.env.FUZZ_HANG_MS ?? 10_000);

/** Rejects when `p` takes longer than HANG_MS. */
function bounded<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms: ${what}`)), HANG_MS);
    }),
  ]);
}

function assertEnvelope(status: number, text: string, where: string) {
  assert.ok(status < 500, `${where} -> ${status} ${text.slice(0, 300)}`);
  const parsed = JSON.parse(text);
  if (status === 200) {
    assert.is(parsed.result?.status, 'success', where);
    assert.type(parsed.result.message, 'string', where);
  } else {
    assert.type(parsed.error?.status, 'string', where);
    assert.type(parsed.error?.message, 'string', where);
  }
}

const deepArrays = (n: number) => '['.repeat(n) + ']'.repeat(n);
const deepObjects = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

/** Raw bodies: [name, text]. */
function hostileTexts(): Array<[string, string]> {
  const big = JSON.stringify(Array.from({ length: 10_000 }, (_, i) => ({ userId: `u${i}`, folderId: `f${i}`, documentId: `d${i}` })));
  return [
    ['10,000 levels of [[[...]]] as the body', deepArrays(10_000)],
    ['100,000 levels of [[[...]]] as the body', deepArrays(100_000)],
    ['10,000 levels of [[[...]]] as data', `{"data":${deepArrays(10_000)}}`],
    ['10,000 levels of [[[...]]] in a field', `{"data":{"organizationId":"org","folders":${deepArrays(10_000)},"documents":${deepArrays(10_000)},"users":${deepArrays(10_000)}}}`],
    ['10,000 levels of {"a":...} as data', `{"data":${deepObjects(10_000)}}`],
    ['100,000 levels of {"a":...} in a field', `{"data":{"organizationId":${deepObjects(100_000)}}}`],
    ['unclosed 50,000 levels', `{"data":${'['.repeat(50_000)}`],
    ['10,000-item arrays in every field', `{"data":{"organizationId":"org","folders":${big},"documents":${big},"users":${big},"userIds":${big},"documentIds":${big},"folderIds":${big},"organizations":${big}}}`],
    ['lone surrogates and NUL', '{"data":{"organizationId":"\\ud800\\u0000","documentId":"\\udfff","userIds":["\\ud83d"]}}'],
    ['1e999 and -0', '{"data":{"organizationId":1e999,"pageSize":-0,"expiresAt":1e999}}'],
    ['duplicate keys', '{"data":{"organizationId":"org","organizationId":{"$gt":""}}}'],
    ['prototype keys at depth', '{"data":{"organizationId":"org","folders":[{"folderId":"x","constructor":{"prototype":{"polluted":true}},"__proto__":{"polluted":true}}]}}'],
    ['a BOM before the body', '\ufeff{"data":{}}'],
    ['operator objects everywhere', '{"data":{"organizationId":{"$gt":""},"folderId":{"$ne":null},"userIds":{"$in":["u"]},"documentIds":[{"$where":"1"}]}}'],
  ];
}

const S = suite<{ h: Harness; t: Tenant }>('fuzz: hostile raw bodies, bounded answers');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  const post = (r: string, d: unknown) => ctx.h.post(r, d, ctx.t.headers);
  await post('/v2/organizations/add', { organizations: [{ organizationId: 'org' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'org', documents: [{ documentId: 'd' }] });
});
S.after(async (ctx) => ctx.h.close());

S('every route, raw hostile texts (deep nesting, huge arrays, odd unicode): envelope, no 5xx, bounded, nothing stored', async ({ h, t }) => {
  let cases = 0;
  let slowest = 0;
  for (const route of allRoutes(h.services)) {
    const headers = { ...(route.auth === 'workspace' ? t.workspaceHeaders : t.headers), 'content-type': 'application/json' };
    for (const [name, payload] of hostileTexts()) {
      await settleCascades(h.services);
      const before = await h.services.events.headPosition();
      const started = Date.now();
      const res = await bounded(h.app.inject({ method: 'POST', url: route.path, payload, headers }), `${route.path} ${name}`);
      slowest = Math.max(slowest, Date.now() - started);
      assertEnvelope(res.statusCode, res.body, `${route.path} ${name}`);
      if (res.statusCode !== 200) assert.is(await h.services.events.headPosition(), before, `${route.path} ${name}: a refusal changed the log`);
      cases++;
    }
  }
  assert.is(({} as any).polluted, undefined);
  assert.is((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  console.log(`  raw hostile bodies: ${cases} cases, slowest answer ${slowest} ms`);
});

const P = suite<{ s: Service; dir: string; t: Tenant }>('fuzz: the real process over a socket');
P.before(async (ctx) => {
  ctx.dir = tempDir('collab-fuzz-process-');
  ctx.s = await startService({ DATA_DIR: ctx.dir, LOG_LEVEL: 'error' });
  await waitHealthy(ctx.s);
  const ws = await (await fetch(`${ctx.s.url}/v2/workspace/create`, { method: 'POST', body: JSON.stringify({ data: { ownerEmail: 'f@example.com' } }) })).json() as any;
  const d = ws.result.data;
  const [apiKey, k] = Object.entries(d.apiKeyList)[0] as [string, { authToken: string }];
  ctx.t = {
    workspaceId: d.id,
    apiKey,
    workspaceHeaders: { 'x-service-workspace-id': d.id, 'x-service-workspace-auth-token': d.authToken },
    headers: { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken },
  };
});
P.after(async (ctx) => {
  if (ctx.s.child.exitCode === null) ctx.s.child.kill('SIGKILL');
  await ctx.s.exited;
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

P(`every route, ${PROCESS_RUNS} generated bodies each and the raw hostile texts, over a socket: envelope, no 5xx, never a hang`, async ({ s, t }) => {
  // The route list and schemas, from an app that is never started.
  const h = await harness();
  const routes = allRoutes(h.services);
  await h.close();
  const send = async (path: string, auth: string, payload: string) => {
    const headers = { ...(auth === 'workspace' ? t.workspaceHeaders : t.headers), 'content-type': 'application/json' };
    const r = await fetch(`${s.url}${path}`, { method: 'POST', headers, body: payload, signal: AbortSignal.timeout(HANG_MS) });
    return { status: r.status, text: await r.text() };
  };
  const ids = fc.constantFrom('org', 'f', 'd', 'u', 'nope', t.apiKey, '__proto__', 'constructor');
  let cases = 0;
  for (const route of routes) {
    await fc.assert(
      fc.asyncProperty(bodyFor(route.schema, ids), async (body) => {
        const payload = JSON.stringify(body);
        const r = await send(route.path, route.auth, payload);
        assertEnvelope(r.status, r.text, `${route.path} ${payload.slice(0, 300)}`);
        cases++;
      }),
      { numRuns: PROCESS_RUNS, endOnFailure: true },
    );
    for (const [name, payload] of hostileTexts().slice(0, 3)) {
      const r = await send(route.path, route.auth, payload);
      assertEnvelope(r.status, r.text, `${route.path} ${name}`);
      cases++;
    }
  }
  assert.is((await fetch(`${s.url}/healthz`)).status, 200);
  assert.is(s.child.exitCode, null, 'the process is still running');
  console.log(`  process fuzz: ${cases} cases over ${routes.length} routes`);
});

S.run();
P.run();
