/**
 * The compiled build (`npm run build`, tsconfig.build.json) is what production runs, with no
 * tsx installed: the service, the CLI and the background thread must run from the emitted
 * JavaScript alone. The suite compiles into a folder of its own under .tmp/ (inside the
 * repository, so the emitted modules resolve node_modules and package.json's "type" as dist/
 * does) and runs the result with plain `node`, no loader.
 *
 * `npm run test:production` goes further (a fresh clone, devDependencies pruned, the image's
 * runtime stage); this suite keeps every `npm test` honest about the build.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './support/app.js';
import { ROOT, freePort } from './support/process.js';

const build = suite('compiled build');
const out = path.join(ROOT, '.tmp', `build-test-${process.pid}`);

function jsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? jsFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

build.before(() => {
  fs.rmSync(out, { recursive: true, force: true });
  const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT, 'tsconfig.build.json'), '--outDir', out], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  assert.is(r.status, 0, `tsc -p tsconfig.build.json failed:\n${r.stdout}${r.stderr}`);
});

build.after(() => fs.rmSync(out, { recursive: true, force: true }));

build('emits plain JavaScript for the service, the CLI and the background thread, none of it loading tsx or a .ts file', () => {
  for (const f of ['src/server.js', 'src/cli.js', 'src/runtime/background.js', 'src/background-worker.js']) {
    assert.ok(fs.existsSync(path.join(out, f)), `${f} emitted`);
  }
  const files = jsFiles(out);
  assert.ok(files.length > 50, `${files.length} files emitted`);
  for (const f of files) {
    assert.ok(f.endsWith('.js'), `${f}: only JavaScript`);
    const text = fs.readFileSync(f, 'utf8');
    assert.not.match(text, /from ['"]tsx|import\(['"]tsx/, `${f} loads tsx`);
    assert.not.match(text, /(from |import\()['"][^'"]+\.ts['"]/, `${f} imports a .ts file`);
  }
});

build('the compiled service serves with no loader: /healthz, a workspace, /readyz through the background thread, SIGTERM ends it with 0', async () => {
  const dir = tempDir('collab-build-');
  const port = await freePort();
  // No --import tsx: anything still needing TypeScript fails to load. BACKGROUND_THREAD is on
  // (the default): /readyz is 200 only once the thread applied the projections.
  const child = spawn(process.execPath, [path.join(out, 'src', 'server.js')], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '', PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dir, LOG_LEVEL: 'warn', BACKGROUND_THREAD: 'true', SIGNUP_RATE_PER_MINUTE: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c) => (output += c));
  child.stderr!.on('data', (c) => (output += c));
  const exited = new Promise<{ code: number | null }>((resolve) => child.on('exit', (code) => resolve({ code })));
  let gone = false;
  void exited.then(() => (gone = true));
  const base = `http://127.0.0.1:${port}`;
  const until = async (route: string) => {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && !gone) {
      try {
        if ((await fetch(`${base}${route}`)).status === 200) return;
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.unreachable(`${route} never answered 200:\n${output}`);
  };
  try {
    await until('/healthz');
    const r = await fetch(`${base}/v2/workspace/create`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { ownerEmail: 'build@example.com' } }) });
    assert.is(r.status, 200, await r.clone().text());
    const ws = (await r.json()) as any;
    await until('/readyz');
    assert.not.match(output, /background thread (failed|exited)/, output);

    // The compiled CLI on the same store sees the workspace the service created.
    const status = spawnSync(process.execPath, [path.join(out, 'src', 'cli.js'), 'projections', 'status', '--json'], { cwd: ROOT, env: { ...process.env, DATA_DIR: dir }, encoding: 'utf8' });
    assert.is(status.status, 0, status.stderr);
    const workspaces = JSON.parse(status.stdout).projections.find((p: { name: string }) => p.name === 'workspaces');
    assert.ok(workspaces.checkpoint !== null, `the workspaces projection applied the creation of ${ws.result.data.id}: ${status.stdout}`);
    assert.is(workspaces.lag, 0);

    child.kill('SIGTERM');
    assert.is((await exited).code, 0, output);
  } finally {
    if (!gone) child.kill('SIGKILL');
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

build.run();
