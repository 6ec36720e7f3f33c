/**
 * `npx collab` on a Node older than package.json's engines (README, Node versions): outside
 * production it runs again under the fallback Node, as `npm start` and `npm run cli` do;
 * under NODE_ENV=production it refuses with a message and fetches nothing.
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

function collab(dir: string, env: Record<string, string>, ...args: string[]) {
  const old = unsupportedNode(dir);
  const r = spawnSync(old.node, [...old.pre, path.join(ROOT, 'bin', 'collab.mjs'), ...args], {
    cwd: ROOT,
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

test('on an unsupported Node under NODE_ENV=production, collab refuses and names the Node it needs', () => {
  const dir = tempDir('collab-bin-node-');
  try {
    const r = collab(dir, { NODE_ENV: 'production' }, 'projections', 'status', '--json');
    assert.is(r.code, 1, `${r.what}: ${r.stdout}${r.stderr}`);
    assert.is(r.stdout, '');
    assert.ok(r.stderr.includes(`collab needs Node ${pkg.engines.node}`), `${r.what}: ${r.stderr}`);
    assert.not.ok(r.stderr.includes('running under Node'), 'no runtime fetched in production');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
