#!/usr/bin/env node
// npm run test:production: the README's production sequence on a fresh clone, then the
// Dockerfile's runtime stage rebuilt without Docker (no engine runs on our machines). Needs
// the npm registry (npm ci). Ends with `N passed, N failed`.
//
// 1. git clone of this repository's HEAD (committed work only) into a temporary folder;
//    npm ci, npm run build, npm prune --omit=dev there.
// 2. No devDependency is left in node_modules (tsx, typescript, esbuild, uvu...).
// 3. NODE_ENV=production npm start serves: /healthz and /readyz answer 200 (readyz: the
//    projections caught up, so the background thread runs from dist/), a workspace is created;
//    the `collab` bin runs from dist/ (projections status); /console serves the committed
//    console build; SIGTERM ends it with code 0.
// 4. The runtime stage: the files of the Dockerfile's last stage's `COPY --from=build` lines
//    copied from the built clone into a folder of their own, its ENV, ENTRYPOINT and CMD
//    run there (as an unprivileged user when this runs as root, like `USER node`, with only
//    DATA_DIR writable), and its HEALTHCHECK command answers 0.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ensureSupportedNode, npmCommand, root } from './node-runtime.mjs';

await ensureSupportedNode();

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${name}${!ok && detail ? `\n     ${detail.replace(/\n/g, '\n     ')}` : ''}\n`);
  return ok;
}
function finish() {
  process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
  process.exit(failed === 0 ? 0 : 1);
}

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, status: r.status };
}
function npm(cwd, args, env = process.env) {
  const c = npmCommand(args);
  return sh(c.cmd, c.args, { cwd, env });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function startProcess(cmd, args, opts) {
  const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, exited, output: () => out };
}

async function waitStatus(url, want, ms, proc) {
  const deadline = Date.now() + ms;
  let done = false;
  void proc.exited.then(() => (done = true));
  let last = 'no answer';
  while (Date.now() < deadline && !done) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
      last = `${r.status} ${await r.text()}`;
      if (r.status === want) return true;
    } catch (e) {
      last = e.message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return check(`${url} answers ${want}`, false, `last: ${last}\n${proc.output().slice(-2000)}`);
}

async function stop(proc, name) {
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), 15_000);
  const { code, signal } = await proc.exited;
  clearTimeout(timer);
  check(`${name}: SIGTERM ends it with code 0`, code === 0, `code ${code}, signal ${signal}\n${proc.output().slice(-2000)}`);
}

// NODE_ENV=production refuses to start without an admin token (src/config/config.ts), as an operator's would.
const ADMIN_TOKEN = 'check-production-admin-token';

async function serves(base, proc, name) {
  if (!(await waitStatus(`${base}/healthz`, 200, 60_000, proc))) return false;
  check(`${name}: /healthz answers 200`, true);
  const r = await fetch(`${base}/v2/workspace/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-admin-token': ADMIN_TOKEN },
    body: JSON.stringify({ data: { ownerEmail: 'ops@example.com' } }),
  });
  const body = await r.json().catch(() => null);
  check(`${name}: a workspace is created`, r.status === 200 && body?.result?.status === 'success', `${r.status} ${JSON.stringify(body)}`);
  check(`${name}: /readyz answers 200 (the background thread applied the projections)`, await waitStatus(`${base}/readyz`, 200, 20_000, proc));
  // The console's committed build is served as it is (docs/console.md): no bundler at run time.
  const page = await fetch(`${base}/console`).catch((e) => ({ status: e.message, headers: new Headers() }));
  const script = await fetch(`${base}/console/console.js`).catch((e) => ({ status: e.message }));
  check(`${name}: /console and its script answer 200 with the console's CSP`, page.status === 200 && script.status === 200 && /script-src 'self'/.test(page.headers.get('content-security-policy') ?? ''), `${page.status} ${script.status}`);
  return true;
}

const work = mkdtempSync(path.join(os.tmpdir(), 'collab-prod-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
const clone = path.join(work, 'clone');
const head = sh('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).out.trim();
process.stdout.write(`production sequence on a clone of ${head} (Node ${process.version}) in ${work}\n`);
if (sh('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no']).out.trim()) {
  process.stdout.write('(uncommitted changes in the working tree are not part of the clone)\n');
}

// 1. The sequence. NODE_ENV is cleared for the install and build: an operator's shell may
// have it set, and npm ci would then leave out the TypeScript the build needs.
const env = { ...process.env, NODE_ENV: '' };
delete env.NODE_ENV;
if (!check('git clone', sh('git', ['clone', '--quiet', root, clone]).ok)) finish();
for (const step of [['ci', '--no-audit', '--no-fund'], ['run', 'build'], ['prune', '--omit=dev', '--no-audit', '--no-fund']]) {
  const r = npm(clone, step, env);
  if (!check(`npm ${step.join(' ')}`, r.ok, r.out.slice(-3000))) finish();
}

// 2. No devDependency left: nothing the lockfile marks dev-only (tsx, typescript, esbuild,
// uvu... @types/node stays: mongodb's typings depend on it, so it is not dev-only).
const lockfile = JSON.parse(readFileSync(path.join(clone, 'package-lock.json'), 'utf8'));
const devOnly = Object.entries(lockfile.packages)
  .filter(([p, v]) => p.startsWith('node_modules/') && v.dev === true)
  .map(([p]) => p);
const left = devOnly.filter((p) => existsSync(path.join(clone, p)));
check(`no dev-only package in node_modules after prune (${devOnly.length} in the lockfile: tsx, typescript, esbuild...)`, left.length === 0 && devOnly.includes('node_modules/tsx'), `left: ${left.join(', ')}`);
check('dist/ holds the compiled service, CLI and background thread', ['server.js', 'cli.js', 'background-worker.js'].every((f) => existsSync(path.join(clone, 'dist', 'src', f))));

// 3. NODE_ENV=production npm start, and the bin.
{
  const port = await freePort();
  const data = path.join(work, 'data-start');
  const prodEnv = { ...env, NODE_ENV: 'production', ADMIN_TOKEN, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: data, LOG_LEVEL: 'warn' };
  const c = npmCommand(['start']);
  const proc = startProcess(c.cmd, c.args, { cwd: clone, env: prodEnv });
  if (await serves(`http://127.0.0.1:${port}`, proc, 'NODE_ENV=production npm start')) {
    for (const [label, e] of [['NODE_ENV=production', prodEnv], ['no NODE_ENV, no tsx installed', { ...env, DATA_DIR: data }]]) {
      const r = sh(process.execPath, [path.join(clone, 'bin', 'collab.mjs'), 'projections', 'status', '--json'], { cwd: clone, env: e });
      let parsed = null;
      try {
        parsed = JSON.parse(r.out);
      } catch {}
      check(`collab projections status from dist/ (${label})`, r.ok && parsed !== null, r.out.slice(-2000));
    }
  }
  await stop(proc, 'npm start');
}

// 4. The Dockerfile's runtime stage.
{
  const lines = readFileSync(path.join(clone, 'Dockerfile'), 'utf8').split('\n');
  const last = lines.map((l, i) => (/^FROM\s/i.test(l) ? i : -1)).filter((i) => i >= 0).pop();
  const stage = lines.slice(last).map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const app = path.join(work, 'image', 'app');
  mkdirSync(app, { recursive: true });
  const stageEnv = {};
  let entrypoint = [];
  let cmd = [];
  let healthcheck = null;
  let user = null;
  let workdir = null;
  for (const l of stage) {
    let m;
    if ((m = /^COPY\s+--from=build\s+(.+)$/i.exec(l))) {
      const parts = m[1].split(/\s+/);
      const dest = parts.pop();
      for (const src of parts) {
        const from = path.join(clone, path.relative('/app', src));
        const to = path.resolve(app, dest.endsWith('/') || parts.length > 1 ? path.join(dest, path.basename(src)) : dest);
        cpSync(from, to, { recursive: true });
      }
    } else if ((m = /^COPY\s/i.exec(l))) {
      check(`runtime stage copies only from the build stage (${l})`, false);
    } else if ((m = /^ENV\s+(.+)$/i.exec(l))) {
      for (const kv of m[1].split(/\s+/)) {
        const [k, v] = kv.split('=');
        stageEnv[k] = v;
      }
    } else if ((m = /^ENTRYPOINT\s+(\[.*\])$/i.exec(l))) entrypoint = JSON.parse(m[1]);
    else if ((m = /^CMD\s+(\[.*\])$/i.exec(l))) cmd = JSON.parse(m[1]);
    else if ((m = /^HEALTHCHECK\s.*\bCMD\s+(\[.*\])$/i.exec(l))) healthcheck = JSON.parse(m[1]);
    else if ((m = /^USER\s+(\S+)$/i.exec(l))) user = m[1];
    else if ((m = /^WORKDIR\s+(\S+)$/i.exec(l))) workdir = m[1];
  }
  check('runtime stage: WORKDIR /app, USER node, a HEALTHCHECK, an exec-form ENTRYPOINT', workdir === '/app' && user === 'node' && healthcheck !== null && entrypoint[0] === 'node', JSON.stringify({ workdir, user, healthcheck, entrypoint }));
  const shipped = readdirSync(app).sort();
  check('runtime stage holds no sources, tests or bench', !shipped.some((f) => ['src', 'test', 'bench', 'commands', 'tsconfig.json'].includes(f)), shipped.join(', '));
  const leftInImage = devOnly.filter((p) => existsSync(path.join(app, p)));
  check('runtime stage has no dev-only package', leftInImage.length === 0 && existsSync(path.join(app, 'node_modules', 'fastify')), leftInImage.join(', '));

  // `USER node`: an unprivileged user that cannot write the app, only DATA_DIR.
  const data = path.join(work, 'image-data');
  mkdirSync(data);
  let asUser = [];
  if (process.getuid?.() === 0 && sh('setpriv', ['--version']).ok) {
    chownSync(data, 65534, 65534);
    // The user must reach this Node and the temporary folder (mkdtemp makes it 0700).
    chmodSync(work, 0o755);
    asUser = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--'];
  } else process.stdout.write('(not root: the runtime stage runs as this user)\n');
  const port = await freePort();
  const runEnv = { PATH: process.env.PATH, ...stageEnv, ADMIN_TOKEN, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: data, LOG_LEVEL: 'warn' };
  const node = (argv) => (argv[0] === 'node' ? [process.execPath, ...argv.slice(1)] : argv);
  const [bin, ...args] = [...asUser, ...node([...entrypoint, ...cmd])];
  const proc = startProcess(bin, args, { cwd: app, env: runEnv });
  if (await serves(`http://127.0.0.1:${port}`, proc, 'runtime stage')) {
    const [hbin, ...hargs] = [...asUser, ...node(healthcheck)];
    const h = sh(hbin, hargs, { cwd: app, env: runEnv });
    check('runtime stage: the HEALTHCHECK command answers 0', h.ok, h.out);
    if (asUser.length) {
      const w = sh(asUser[0], [...asUser.slice(1), process.execPath, '-e', "require('fs').writeFileSync('dist/x','')"], { cwd: app, env: runEnv });
      check('runtime stage: the unprivileged user cannot write the app', !w.ok, w.out);
    }
  }
  await stop(proc, 'runtime stage');
}

finish();
