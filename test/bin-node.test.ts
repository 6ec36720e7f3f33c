/**
 * `npx collab` on a Node older than package.json's engines (README, Node versions): outside
 * production it runs again under the fallback Node, as `npm start` and `npm run cli` do;
 * under NODE_ENV=production it runs under that Node only when it is in .node/ already, and
 * otherwise refuses with a message; it never fetches one.
 *
 * The old Node is a real one when the machine has it (Node 20 on ours: the tests themselves
 * run under the fallback Node, first on PATH, so it is looked for further down PATH). Where
 * the machine has none, the Node running the tests stands in for one: a preload makes it
 * report 20.0.0, once (it clears its variable, so the run under the fallback Node, which
 * inherits the preload, sees its own version).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { tempDir } from './support/app.js';
import { ROOT } from './support/process.js';

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }; config: { fallbackNode: string } };
const minimum = /(\d+)\.(\d+)/.exec(pkg.engines.node)!.slice(1).map(Number);

function older(version: string): boolean {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  return major < minimum[0] || (major === minimum[0] && minor < minimum[1]);
}

/** A `node` on PATH (or in the usual places) older than engines.node, if the machine has one. */
function oldNode(): string | undefined {
  const seen = new Set<string>();
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/local/bin', '/usr/bin'];
  for (const dir of dirs) {
    const bin = path.join(dir, 'node');
    if (!dir || !fs.existsSync(bin)) continue;
    const real = fs.realpathSync(bin);
    if (seen.has(real)) continue;
    seen.add(real);
    const v = spawnSync(real, ['-v'], { encoding: 'utf8' });
    if (v.status === 0 && older(v.stdout.trim())) return real;
  }
  return undefined;
}

/** How to start `node` as an unsupported one: the machine's old Node, or this one pretending. */
function unsupportedNode(dir: string): { node: string; pre: string[]; env: Record<string, string>; what: string } {
  const real = oldNode();
  if (real) return { node: real, pre: [], env: {}, what: `the machine's ${spawnSync(real, ['-v'], { encoding: 'utf8' }).stdout.trim()}` };
  const preload = path.join(dir, 'pretend-old-node.mjs');
  fs.writeFileSync(
    preload,
    `if (process.env.COLLAB_PRETEND_NODE) {
  const value = process.env.COLLAB_PRETEND_NODE;
  delete process.env.COLLAB_PRETEND_NODE;
  Object.defineProperty(process.versions, 'node', { value });
}
`,
  );
  return { node: process.execPath, pre: ['--import', preload], env: { COLLAB_PRETEND_NODE: '20.0.0' }, what: `${process.version} reporting 20.0.0` };
}

function collab(dir: string, env: Record<string, string>, ...rest: Array<string | { bin: string; cwd: string }>) {
  const old = unsupportedNode(dir);
  const at = rest.find((a) => typeof a !== 'string') ?? { bin: path.join(ROOT, 'bin', 'collab.mjs'), cwd: ROOT };
  const args = rest.filter((a): a is string => typeof a === 'string');
  const r = spawnSync(old.node, [...old.pre, at.bin, ...args], {
    cwd: at.cwd,
    env: { ...process.env, DATA_DIR: path.join(dir, 'data'), ...old.env, ...env },
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, what: old.what };
}

test('on an unsupported Node, collab runs under the fallback Node outside production', () => {
  const dir = tempDir('collab-bin-node-');
  try {
    const r = collab(dir, { NODE_ENV: 'development' }, 'projections', 'status', '--json');
    assert.is(r.code, 0, `${r.what}: ${r.stderr}`);
    const status = JSON.parse(r.stdout) as { projections: Array<{ name: string }> };
    assert.ok(status.projections.some((p) => p.name === 'documents'), r.stdout);
    assert.ok(r.stderr.includes(`running under Node ${pkg.config.fallbackNode} from .node/`), `${r.what}: ${r.stderr}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('on an unsupported Node under NODE_ENV=production, collab runs under the fallback Node already in .node/, fetching nothing', () => {
  const dir = tempDir('collab-bin-node-');
  try {
    // The fallback Node is in .node/: the tests themselves run under it.
    const r = collab(dir, { NODE_ENV: 'production' }, 'projections', 'status', '--json');
    assert.ok(r.stderr.includes(`running under Node ${pkg.config.fallbackNode} from .node/`), `${r.what}: ${r.stderr}`);
    assert.not.ok(r.stderr.includes('collab needs Node'), r.stderr);
    assert.not.ok(r.stderr.includes('fetching Node'), 'no runtime fetched in production');
    // Production runs the compiled CLI: it answers where dist/ is built, and says to build it where not.
    if (fs.existsSync(path.join(ROOT, 'dist', 'src', 'cli.js'))) {
      assert.is(r.code, 0, `${r.what}: ${r.stdout}${r.stderr}`);
      const status = JSON.parse(r.stdout) as { projections: Array<{ name: string }> };
      assert.ok(status.projections.some((p) => p.name === 'documents'), r.stdout);
    } else {
      assert.ok(r.stderr.includes('dist/ is missing'), r.stderr);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('on an unsupported Node under NODE_ENV=production without the fallback in .node/, collab refuses, names the Node it needs and fetches nothing', () => {
  const dir = tempDir('collab-bin-node-');
  try {
    // A copy of what decides, in a folder with no .node/: bin/, scripts/node-runtime.mjs, package.json.
    const copy = path.join(dir, 'app');
    for (const f of ['bin/collab.mjs', 'scripts/node-runtime.mjs', 'package.json']) {
      fs.mkdirSync(path.dirname(path.join(copy, f)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, f), path.join(copy, f));
    }
    const r = collab(dir, { NODE_ENV: 'production' }, 'projections', 'status', '--json', { bin: path.join(copy, 'bin', 'collab.mjs'), cwd: copy });
    assert.is(r.code, 1, `${r.what}: ${r.stdout}${r.stderr}`);
    assert.is(r.stdout, '');
    assert.ok(r.stderr.includes(`collab needs Node ${pkg.engines.node}`), `${r.what}: ${r.stderr}`);
    assert.not.ok(r.stderr.includes('running under Node'), 'no fallback Node used');
    assert.not.ok(fs.existsSync(path.join(copy, '.node')), 'no runtime fetched in production');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('npx in this project on an unsupported Node prints no npm warning (EBADENGINE): the project\'s .npmrc', () => {
  const dir = tempDir('collab-bin-node-');
  try {
    // A project with this one's engines and .npmrc and a bin of its own: npx checks the root
    // package's engines whenever it reads the installed tree afresh (as on a fresh clone).
    const project = path.join(dir, 'p');
    fs.mkdirSync(path.join(project, 'bin'), { recursive: true });
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0', type: 'module', engines: pkg.engines, bin: { p: 'bin/p.mjs' } }));
    fs.writeFileSync(path.join(project, 'bin', 'p.mjs'), '#!/usr/bin/env node\nconsole.log("ran");\n', { mode: 0o755 });
    if (fs.existsSync(path.join(ROOT, '.npmrc'))) fs.copyFileSync(path.join(ROOT, '.npmrc'), path.join(project, '.npmrc'));
    const old = unsupportedNode(dir);
    // npx runs on the first `node` on PATH: the machine's old one, or this one pretending (a preload through NODE_OPTIONS).
    const env = old.pre.length
      ? { ...process.env, ...old.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${old.pre.join(' ')}`.trim() }
      : { ...process.env, PATH: `${path.dirname(old.node)}${path.delimiter}${process.env.PATH ?? ''}` };
    const r = spawnSync('npx', ['p'], { cwd: project, env, encoding: 'utf8' });
    assert.is(r.stdout.trim(), 'ran', `${old.what}: ${r.stdout}${r.stderr}`);
    assert.not.ok(/npm warn/i.test(r.stderr), `${old.what}: npm warned:\n${r.stderr}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
