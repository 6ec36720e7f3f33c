#!/usr/bin/env node
// `npm run build`: compiles the service, the CLI and the background thread to dist/ with tsc
// (tsconfig.build.json), the JavaScript production runs. dist/ is emptied first, so a module
// deleted from the sources does not live on in it.
//
// dist/.build-hash records a SHA-256 of every input (the sources and the tsconfig files) as
// they were when the build started. `npm start` compares it with the sources' and builds again
// when they differ (ensureBuild): contents, not modification times, so a checkout, a copy or
// a clock change can neither force a needless build nor hide an edit.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { root } from './node-runtime.mjs';

const DIST = path.join(root, 'dist');
const STAMP = path.join(DIST, '.build-hash');
const SOURCE_DIRS = ['src', 'commands', 'queries', 'projections'];
const CONFIGS = ['tsconfig.json', 'tsconfig.build.json'];

function files(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...files(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** SHA-256 over every input's path and contents, in a stable order. */
export function sourceHash() {
  const inputs = SOURCE_DIRS.flatMap((d) => files(path.join(root, d))).concat(CONFIGS.map((c) => path.join(root, c)));
  const h = createHash('sha256');
  for (const f of inputs.map((f) => path.relative(root, f).split(path.sep).join('/')).sort()) {
    h.update(`${f}\0`);
    h.update(readFileSync(path.join(root, f)));
    h.update('\0');
  }
  return h.digest('hex');
}

export function typescriptInstalled() {
  return existsSync(path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'));
}

/** Empties dist/, compiles, records the inputs' hash. Exits on a compile error. */
export function build() {
  if (!typescriptInstalled()) {
    process.stderr.write('npm run build needs TypeScript, a devDependency: run `npm ci` first (README, Production).\n');
    process.exit(1);
  }
  const hash = sourceHash();
  rmSync(DIST, { recursive: true, force: true });
  const r = spawnSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.build.json')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) {
    process.stderr.write(`build failed (tsc exit ${r.status})\n`);
    process.exit(r.status ?? 1);
  }
  writeFileSync(STAMP, `${hash}\n`);
}

/** Builds when dist/ is missing or was built from other sources than the ones here. */
export function ensureBuild() {
  const built = existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : null;
  if (built && built === sourceHash()) return;
  const why = built ? 'dist/ was built from other sources' : 'dist/ is missing';
  if (!typescriptInstalled()) {
    process.stderr.write(`${why}, and TypeScript (a devDependency) is not installed to build it: run \`npm ci && npm run build\` before \`npm prune --omit=dev\` (README, Production).\n`);
    process.exit(1);
  }
  process.stderr.write(`${why}: building (npm run build)\n`);
  build();
}

const isEntry = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntry) build();
