/**
 * The habits `npm test` keeps (`npm run lint`, scripts/lint.mjs, runs the same two tools by
 * hand): eslint finds no import cycle, duplicate import, unused variable or production
 * function over 80 lines (eslint.config.mjs), and knip no unused file, export, type or
 * dependency (knip.jsonc). A finding fails the test with the tool's own report.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { resolve, join } from 'node:path';
import { readFileSync } from 'node:fs';

const root = resolve(import.meta.dirname, '..');

/** Runs a tool under this Node and gathers its output (spawn, not spawnSync: other suites' timers keep running). */
function run(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, FORCE_COLOR: '0' } });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b));
    child.stderr.on('data', (b: Buffer) => (output += b));
    child.on('error', fail);
    child.on('close', (code) => done({ code, output }));
  });
}

test('`npm run lint` runs the same two tools (scripts/lint.mjs)', async () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.is(pkg.scripts.lint, 'node scripts/lint.mjs');
  const script = readFileSync(join(root, 'scripts/lint.mjs'), 'utf8');
  for (const tool of ["'eslint', 'bin', 'eslint.js'", "'knip', 'bin', 'knip.js'"]) assert.ok(script.includes(tool), `scripts/lint.mjs runs ${tool}`);
});

test('eslint: no cycle, duplicate import, unused code or function over 80 lines', async () => {
  const { code, output } = await run([join(root, 'node_modules/eslint/bin/eslint.js'), '--max-warnings', '0', '.']);
  assert.is(code, 0, `eslint found:\n${output}`);
});

test('knip: no unused file, export, type or dependency', async () => {
  const { code, output } = await run([join(root, 'node_modules/knip/bin/knip.js'), '--no-progress']);
  assert.is(code, 0, `knip found:\n${output}`);
});

test('the lint configuration still catches what it is for', async () => {
  // Guards the two tests above against a configuration that checks nothing: eslint must find
  // a function over 80 lines in production code, read from stdin as if it were a file there.
  const long = `export function long(): number {\n${Array.from({ length: 85 }, (_, i) => `  const v${i} = ${i};`).join('\n')}\n  return ${Array.from({ length: 85 }, (_, i) => `v${i}`).join(' + ')};\n}\n`;
  const child = spawn(process.execPath, [join(root, 'node_modules/eslint/bin/eslint.js'), '--stdin', '--stdin-filename', 'src/shared/long.ts'], { cwd: root });
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output += b));
  child.stdin.end(long);
  const code = await new Promise<number | null>((done) => child.on('close', done));
  assert.is(code, 1, output);
  assert.match(output, /max-lines-per-function/);
});

test.run();
