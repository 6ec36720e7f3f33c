#!/usr/bin/env node
// Installs dependencies when they are missing or older than package-lock.json, so that on a
// fresh clone `npm start` and `npm test` are the only commands needed. Node built-ins only.
import { existsSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const lock = path.join(root, 'package-lock.json');
const installed = path.join(root, 'node_modules', '.package-lock.json');

const stale = !existsSync(installed) || (existsSync(lock) && statSync(lock).mtimeMs > statSync(installed).mtimeMs + 1000);
if (stale) {
  const args = existsSync(lock) ? ['ci', '--no-audit', '--no-fund'] : ['install', '--no-audit', '--no-fund'];
  process.stderr.write(`dependencies missing or stale: npm ${args.join(' ')} (builds better-sqlite3 from source where no prebuilt binary can be fetched; about a minute)\n`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) {
    process.stderr.write(`npm ${args[0]} failed (exit ${r.status})\n`);
    process.exit(r.status ?? 1);
  }
}
