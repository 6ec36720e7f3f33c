#!/usr/bin/env node
// `npm run build:console`: the console (docs/console.md) from console/src/ to console/dist/.
// 1. tsc checks the sources (console/tsconfig.json: strict, DOM, Preact's JSX);
// 2. esbuild bundles console/src/main.tsx with Preact and the typed client of
//    clients/typescript/src into one minified ES module, console.js;
// 3. index.html, console.css and favicon.svg are copied beside it;
// 4. the bundle budget is checked: over it, the build fails.
// console/dist/ is committed: production serves it as it is and never runs this (esbuild and
// Preact are devDependencies). test/console.build.test.ts builds into a temporary folder with
// `--out` and requires the committed files byte for byte, so a stale bundle fails `npm test`.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The budget (docs/console.md): the script as served, and gzipped as a proxy would send it. */
export const BUDGET = { scriptBytes: 80 * 1024, scriptGzipBytes: 30 * 1024, totalBytes: 100 * 1024 };

export async function buildConsole(outDir = path.join(root, 'console', 'dist')) {
  const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'console', 'tsconfig.json')], { encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`the console's sources do not typecheck:\n${tsc.stdout}${tsc.stderr}`);
  const { build } = await import('esbuild');
  mkdirSync(outDir, { recursive: true });
  await build({
    absWorkingDir: root,
    entryPoints: ['console/src/main.tsx'],
    outfile: path.join(outDir, 'console.js'),
    tsconfig: 'console/tsconfig.json',
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    charset: 'utf8',
    logLevel: 'silent',
  });
  for (const f of ['index.html', 'console.css', 'favicon.svg']) copyFileSync(path.join(root, 'console', 'src', f), path.join(outDir, f));
  const sizes = Object.fromEntries(['console.js', 'console.css', 'index.html', 'favicon.svg'].map((f) => [f, readFileSync(path.join(outDir, f)).length]));
  const script = readFileSync(path.join(outDir, 'console.js'));
  const measured = { scriptBytes: script.length, scriptGzipBytes: gzipSync(script, { level: 9 }).length, totalBytes: Object.values(sizes).reduce((a, b) => a + b, 0) };
  const over = Object.entries(BUDGET).filter(([k, max]) => measured[k] > max);
  if (over.length) throw new Error(`the console is over its budget: ${over.map(([k, max]) => `${k} ${measured[k]} > ${max}`).join(', ')}`);
  return measured;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--out');
  const out = i > 0 ? path.resolve(process.argv[i + 1]) : undefined;
  try {
    const m = await buildConsole(out);
    process.stdout.write(`console built: console.js ${m.scriptBytes} B (${m.scriptGzipBytes} B gzipped), ${m.totalBytes} B in all; budget ${JSON.stringify(BUDGET)}\n`);
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
