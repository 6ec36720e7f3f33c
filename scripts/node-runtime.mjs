#!/usr/bin/env node
// Which Node runs the README's commands. package.json's `engines.node` is what the
// dependencies need (better-sqlite3 13 loads through Node-API 10, in Node 22.14 and later;
// fastify's light-my-request pulls cookie@2, which asks for Node 22). Node 20 reached end of
// life in April 2026 but is still the Node on many machines, ours included: there `npm start`
// and `npm test` fetch the Node named in package.json's `config.fallbackNode` from the npm
// registry (the `node-<os>-<arch>` packages carry the official binaries and headers) into
// .node/<version>/ once, and run again under it. Production never downloads a runtime: with
// NODE_ENV=production it runs under that Node only when it is in .node/ already, and an
// unsupported Node otherwise stops the command with a message.
//
//   node scripts/node-runtime.mjs bin <version>   fetches that Node if needed, prints its bin dir
//   node scripts/node-runtime.mjs effective       the Node version `npm start`/`npm test` run under
//
// Node built-ins only, and nothing newer than Node 18 offers: this file runs on the old Node.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

/** `engines.node`, which must be of the form `>=A.B` or `>=A.B.C` (all this project needs). */
export function minimumNode() {
  const m = /^>=\s*(\d+)\.(\d+)(?:\.(\d+))?$/.exec(String(pkg.engines?.node ?? '').trim());
  if (!m) throw new Error(`package.json engines.node must read ">=MAJOR.MINOR[.PATCH]", got ${JSON.stringify(pkg.engines?.node)}`);
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

/** Whether `version` ("v22.23.3" or "22.23.3") is at least engines.node. */
export function isSupported(version = process.versions.node) {
  const v = version.replace(/^v/, '').split('.').map(Number);
  const min = minimumNode();
  for (let i = 0; i < 3; i++) if (v[i] !== min[i]) return v[i] > min[i];
  return true;
}

export function fallbackVersion() {
  const v = pkg.config?.fallbackNode;
  if (!/^\d+\.\d+\.\d+$/.test(String(v))) throw new Error('package.json config.fallbackNode must be an exact Node version such as 24.21.0');
  return v;
}

/**
 * npm, run by the Node running this file. Under `npm start` / `npm test` npm names its own
 * entry in npm_execpath; running that with process.execPath keeps npm (and the install scripts
 * and node-gyp it starts) on the same Node as the command, whatever `node` PATH finds first.
 */
export function npmCommand(args) {
  const cli = process.env.npm_execpath;
  if (cli && /\.c?js$/.test(cli) && existsSync(cli)) return { cmd: process.execPath, args: [cli, ...args] };
  return { cmd: process.platform === 'win32' ? 'npm.cmd' : 'npm', args };
}

/** The registry's package of official Node binaries for this machine (Linux only: none for macOS). */
function nodePackage() {
  if (process.platform !== 'linux') return null;
  if (process.arch !== 'x64' && process.arch !== 'arm64') return null;
  return `node-${process.platform}-${process.arch}`;
}

function versionOf(bin) {
  const r = spawnSync(bin, ['-v'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** The bin directory of Node `version` in .node/v<version>/ when it is there already; null otherwise (nothing fetched). */
export function installedNodeBin(version) {
  const name = nodePackage();
  if (!name) return null;
  const bin = path.join(root, '.node', `v${version}`, 'node_modules', name, 'bin');
  return versionOf(path.join(bin, 'node')) === `v${version}` ? bin : null;
}

/**
 * The bin directory of Node `version` in .node/v<version>/, installed from the npm registry
 * first if it is not there yet (npm checks the package's integrity). The install goes to a
 * temporary folder that is renamed into place, so an interrupted download leaves nothing
 * that looks installed.
 */
export function localNodeBin(version) {
  const name = nodePackage();
  if (!name) throw new Error(`no Node package on the npm registry for ${process.platform}-${process.arch}: install Node ${minimumNode().join('.')} or later yourself`);
  const dir = path.join(root, '.node', `v${version}`);
  const bin = path.join(dir, 'node_modules', name, 'bin');
  if (versionOf(path.join(bin, 'node')) === `v${version}`) return bin;
  process.stderr.write(`fetching Node ${version} from the npm registry (${name}@${version}, about 50 MB) into .node/\n`);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const npm = npmCommand(['install', '--prefix', tmp, '--no-save', '--no-package-lock', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', `${name}@${version}`]);
  // npm's report goes to stderr: stdout is this script's answer (the bin dir).
  const r = spawnSync(npm.cmd, npm.args, { cwd: tmp, stdio: ['ignore', 2, 2] });
  const got = path.join(tmp, 'node_modules', name, 'bin', 'node');
  if (r.status !== 0 || versionOf(got) !== `v${version}`) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`could not install ${name}@${version} from the npm registry (npm exit ${r.status})`);
  }
  // Another command may have installed it meanwhile (two `npm test` at once): keep that one,
  // which may already be running.
  if (versionOf(path.join(bin, 'node')) === `v${version}`) {
    rmSync(tmp, { recursive: true, force: true });
    return bin;
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return bin;
}

/**
 * Runs `node args` as a child with `env` (default: this process's), passing signals on, and
 * ends this process as the child ends (same exit code, or the same signal).
 */
export function relay(node, args, env = process.env) {
  const child = spawn(node, args, { stdio: 'inherit', env });
  const signals = ['SIGTERM', 'SIGINT', 'SIGHUP'];
  const pass = (s) => child.kill(s);
  for (const s of signals) process.on(s, pass);
  child.on('exit', (code, signal) => {
    for (const s of signals) process.off(s, pass);
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}

/**
 * Resolves when this Node satisfies engines.node. Otherwise, outside production, runs this
 * process's script again under the fallback Node and never resolves (the process ends with
 * the child); in production it stops with a message.
 */
export async function ensureSupportedNode() {
  if (isSupported()) return;
  const wanted = `>=${minimumNode().join('.')}`;
  const version = fallbackVersion();
  let bin;
  if (process.env.NODE_ENV === 'production') {
    // Production never downloads a runtime, but one a development command already fetched
    // (the README's PostgreSQL section runs `NODE_ENV=production npm start` in a clone where
    // `npm test` ran first) is the very Node the tests passed under: use it.
    bin = installedNodeBin(version);
    if (!bin) {
      process.stderr.write(`Node ${process.version} is not supported: this project needs Node ${wanted} (package.json engines; the README says why). Install Node 22 or 24 (production never downloads one; outside production the commands fetch Node ${version} into .node/).\n`);
      process.exit(1);
    }
  } else {
    try {
      bin = localNodeBin(version);
    } catch (e) {
      process.stderr.write(`Node ${process.version} is older than this project needs (${wanted}), and ${e.message}\n`);
      process.exit(1);
    }
  }
  process.stderr.write(`Node ${process.version} is older than this project needs (${wanted}): running under Node ${version} from .node/ (README, Node versions)\n`);
  // That Node goes first on PATH, so every child process (npm and its scripts, tsc, the tests'
  // own child processes) runs under it too.
  relay(path.join(bin, 'node'), [...process.execArgv, ...process.argv.slice(1)], {
    ...process.env,
    PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
  });
  // The caller goes no further: this process ends when the child does (relay).
  await new Promise(() => {});
}

const isEntry = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntry) {
  const [cmd, arg] = process.argv.slice(2);
  try {
    if (cmd === 'bin' && arg) process.stdout.write(`${localNodeBin(arg)}\n`);
    else if (cmd === 'effective') process.stdout.write(`${isSupported() ? process.versions.node : fallbackVersion()}\n`);
    else {
      process.stderr.write('usage: node scripts/node-runtime.mjs bin <version> | effective\n');
      process.exit(2);
    }
  } catch (e) {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  }
}
