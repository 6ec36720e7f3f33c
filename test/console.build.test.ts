/**
 * The console's build and how the service serves it (docs/console.md):
 * - console/dist/ as committed is what `npm run build:console` makes from console/src/ now,
 *   byte for byte (a source edited without rebuilding fails here), and within its budget;
 * - `GET /console` and its assets answer with the console's CSP, no framing and nosniff;
 * - a service whose console/dist/ is missing refuses to start, naming the fix.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Fastify from 'fastify';
import { harness, tempDir, type Harness } from './support/app.js';
import { CONSOLE_CSP, consoleDir, installConsole } from '../src/http/console.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FILES = ['index.html', 'console.js', 'console.css', 'favicon.svg'];

const B = suite('console: the committed build');

B('console/dist/ is the build of console/src/ as it is now, byte for byte, within its budget', async () => {
  const out = tempDir('collab-console-build-');
  try {
    const { buildConsole, BUDGET } = (await import(pathToFileURL(path.join(root, 'scripts', 'build-console.mjs')).href)) as {
      buildConsole(out: string): Promise<{ scriptBytes: number; scriptGzipBytes: number; totalBytes: number }>;
      BUDGET: { scriptBytes: number; scriptGzipBytes: number; totalBytes: number };
    };
    const measured = await buildConsole(out);
    for (const f of FILES) {
      const built = fs.readFileSync(path.join(out, f));
      const committed = fs.readFileSync(path.join(consoleDir(), f));
      assert.ok(built.equals(committed), `console/dist/${f} is stale: run \`npm run build:console\` and commit console/dist/`);
    }
    assert.equal(fs.readdirSync(consoleDir()).sort(), [...FILES].sort(), 'console/dist/ holds the served files only');
    assert.ok(measured.scriptBytes <= BUDGET.scriptBytes && measured.scriptGzipBytes <= BUDGET.scriptGzipBytes, JSON.stringify(measured));
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

B('a missing build is refused at start, naming the command that makes it', () => {
  const empty = tempDir('collab-console-empty-');
  try {
    assert.throws(() => installConsole(Fastify(), empty), /npm run build:console/);
  } finally {
    fs.rmSync(empty, { recursive: true, force: true });
  }
});

B.run();

const S = suite<{ h: Harness }>('console: served with its policy');
S.before(async (ctx) => {
  ctx.h = await harness();
});
S.after(async (ctx) => ctx.h.close());

S('GET /console, /console/ and each asset: 200, its type, the CSP, no framing, nosniff', async ({ h }) => {
  const cases: [string, RegExp, string][] = [
    ['/console', /^text\/html/, 'index.html'],
    ['/console/', /^text\/html/, 'index.html'],
    ['/console/console.js', /^text\/javascript/, 'console.js'],
    ['/console/console.css', /^text\/css/, 'console.css'],
    ['/console/favicon.svg', /^image\/svg\+xml/, 'favicon.svg'],
  ];
  for (const [url, type, file] of cases) {
    const res = await h.app.inject({ method: 'GET', url });
    assert.is(res.statusCode, 200, url);
    assert.match(String(res.headers['content-type']), type, url);
    assert.is(res.headers['content-security-policy'], CONSOLE_CSP, url);
    assert.is(res.headers['x-frame-options'], 'DENY', url);
    assert.is(res.headers['x-content-type-options'], 'nosniff', url);
    assert.ok(res.rawPayload.equals(fs.readFileSync(path.join(consoleDir(), file))), `${url} serves console/dist/${file}`);
  }
});

S('/favicon.ico is no 404: it sends the browser to the console\'s icon', async ({ h }) => {
  const res = await h.app.inject({ method: 'GET', url: '/favicon.ico' });
  assert.is(res.statusCode, 301);
  assert.is(res.headers.location, '/console/favicon.svg');
  const icon = await h.app.inject({ method: 'GET', url: String(res.headers.location) });
  assert.is(icon.statusCode, 200);
  assert.match(icon.body, /^<svg /);
});

S('the policy: scripts from the service only, no inline script, no framing', () => {
  const directives = new Map(CONSOLE_CSP.split(';').map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k!, v]));
  assert.equal(directives.get('script-src'), ["'self'"]);
  assert.equal(directives.get('default-src'), ["'none'"]);
  assert.equal(directives.get('frame-ancestors'), ["'none'"]);
  assert.not.ok(CONSOLE_CSP.includes('unsafe-inline') || CONSOLE_CSP.includes('unsafe-eval'));
  // The page has no inline script for the policy to refuse: only the bundle, by URL.
  const html = fs.readFileSync(path.join(consoleDir(), 'index.html'), 'utf8');
  assert.equal([...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]), ['']);
  assert.not.match(html, /\son[a-z]+=/i);
});

S('no console source renders a string as markup', () => {
  const sources = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [path.join(dir, e.name)] : []));
  const files = sources(path.join(root, 'console', 'src'));
  assert.ok(files.length > 5, files.join(', '));
  for (const f of files) {
    const code = fs.readFileSync(f, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    assert.not.match(code, /dangerouslySetInnerHTML|innerHTML|outerHTML|insertAdjacentHTML|document\.write/, path.relative(root, f));
  }
});

S('the console is not in the OpenAPI document', async ({ h }) => {
  const doc = JSON.parse((await h.app.inject({ method: 'GET', url: '/openapi.json' })).body);
  assert.not.ok(Object.keys(doc.paths).some((p) => p.startsWith('/console')));
});

S.run();
