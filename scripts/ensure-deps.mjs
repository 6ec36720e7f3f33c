#!/usr/bin/env node
// Installs dependencies when they are missing or older than package-lock.json, so that on a
// fresh clone `npm start` and `npm test` are the only commands needed. Node built-ins only.
//
// "Missing" also covers a node_modules pruned for production (`npm prune --omit=dev`) that a
// development command needs: devDependencies are required unless NODE_ENV=production.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { npmCommand, root } from './node-runtime.mjs';

const lock = path.join(root, 'package-lock.json');
const installed = path.join(root, 'node_modules', '.package-lock.json');

function missingPackages(dev) {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const names = Object.keys(pkg.dependencies ?? {}).concat(dev ? Object.keys(pkg.devDependencies ?? {}) : []);
  return names.filter((n) => !existsSync(path.join(root, 'node_modules', n, 'package.json')));
}

function staleReason(dev) {
  if (!existsSync(installed)) return 'not installed';
  if (existsSync(lock) && statSync(lock).mtimeMs > statSync(installed).mtimeMs + 1000) return 'older than package-lock.json';
  const missing = missingPackages(dev);
  if (missing.length) return `missing ${missing.join(', ')}`;
  return null;
}

/** Installs with `npm ci` (or `npm install` without a lock) when needed; exits on failure. */
export function ensureDeps({ dev = process.env.NODE_ENV !== 'production' } = {}) {
  const reason = staleReason(dev);
  if (!reason) return;
  // Under NODE_ENV=production npm leaves devDependencies out; a development command asks for them.
  const args = [existsSync(lock) ? 'ci' : 'install', '--no-audit', '--no-fund', ...(dev ? ['--include=dev'] : [])];
  process.stderr.write(`dependencies ${reason}: npm ${args.join(' ')}\n`);
  const npm = npmCommand(args);
  const r = spawnSync(npm.cmd, npm.args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) {
    process.stderr.write(`npm ${args[0]} failed (exit ${r.status})\n`);
    process.exit(r.status ?? 1);
  }
  const still = missingPackages(dev);
  if (still.length) {
    process.stderr.write(`npm ${args[0]} left ${still.join(', ')} missing\n`);
    process.exit(1);
  }
}

const isEntry = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntry) ensureDeps();
