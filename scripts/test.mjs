#!/usr/bin/env node
// Runs the uvu suites under test/ (TypeScript through tsx) and ends with the line
// `N passed, N failed` that CI reads. Extra arguments are passed to uvu (a file pattern).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureSupportedNode } from './node-runtime.mjs';

// On a Node older than package.json's engines, runs again under the fallback Node (README,
// Node versions): better-sqlite3 13 would crash there.
await ensureSupportedNode();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = process.env.TEST_DIR || 'test';
const pattern = process.argv[2] || '\\.test\\.ts$';
// Every answer of every API test is checked against its route's declared schemas
// (src/http/response-check.ts); each mismatch is a line in this file, and each distinct one
// counts as a failed test below. Apps in child processes (the server tests) inherit it.
const checkFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'collab-response-check-')), 'mismatches.log');

// The second pass: suites that run on whatever store the harness opens, again on a real
// PostgreSQL server (TEST_STORE=postgres: test/support/app.ts gives each harness a database of
// its own on a server the pass starts, test/support/postgres.ts). It runs with the whole suite,
// or alone with TEST_STORE=postgres and a pattern.
const POSTGRES_PASS = '^(retention\\.api|webhooks\\.fairness|audit\\.api|access-queries\\.api|access-context\\.api|rebuild|runtime|group-grants\\.api|users\\.api|user-data\\.api|document-migration\\.api|usergroups-get\\.api|advanced-webhooks\\.api|secrets\\.lifecycle|idempotency|changes\\.api|changes\\.stream|changes\\.stream\\.process|consistency\\.api|dry-run\\.api|dry-run\\.classes|parked|parked\\.followers|operations\\.api)\\.test\\.ts$';

/** Suites on a fixed test clock whose access questions, asked as of that clock (test/support/app.ts), must answer alike. */
const AS_OF_PASS = '^(permissions\\.resolution|permissions\\.groups\\.resolution|access-queries\\.api|access-context\\.resolution)\\.test\\.ts$';

/**
 * Permission resolution answers from the access index (queries/access-index.ts) by default; the
 * resolution suites run again without it (TEST_ACCESS_INDEX=off), so both paths answer alike.
 */
const INDEX_OFF_PASS = '^(permissions\\.resolution|permissions\\.groups\\.resolution|access-context\\.resolution|access-queries\\.property)\\.test\\.ts$';

/**
 * uvu prints a failure's details where its file ran, which in a 20-minute log is far above the
 * end; CI often keeps only the end. Each failure is repeated before the last line: the file it
 * ran in, uvu's FAIL line and the assertion under it (up to the stack).
 */
function failureBlocks(plain) {
  const blocks = [];
  let file = '';
  const lines = plain.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (/^\S+\.test\.ts$/.test(lines[i].trim())) file = lines[i].trim();
    if (!/^\s+FAIL\s/.test(lines[i])) continue;
    const block = [`${file}: ${lines[i].trim()}`];
    for (let j = i + 1; j < lines.length && j < i + 16 && !/^\s+at /.test(lines[j]); j++) {
      if (lines[j].trim()) block.push(`    ${lines[j].trim()}`);
    }
    blocks.push(block.join('\n'));
  }
  return blocks;
}

/** One uvu run; resolves to its counts. */
function pass(filePattern, extraEnv) {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(root, 'node_modules', 'uvu', 'bin.js'), dir, filePattern],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { COLLAB_RESPONSE_CHECK: checkFile, ...process.env, ...extraEnv, FORCE_COLOR: process.env.CI ? '0' : '1' },
      },
    );
    let out = '';
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      out += chunk.toString();
    });
    child.on('close', (code) => {
      const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
      const total = Number(/Total:\s+(\d+)/.exec(plain)?.[1] ?? 0);
      const passed = Number(/Passed:\s+(\d+)/.exec(plain)?.[1] ?? 0);
      const skipped = Number(/Skipped:\s+(\d+)/.exec(plain)?.[1] ?? 0);
      let failed = Math.max(0, total - passed - skipped);
      // A crash before uvu's summary (a file that throws at import) is a failure too.
      if (code !== 0 && failed === 0) failed = 1;
      resolve({ passed, failed, skipped, code, failures: failureBlocks(plain) });
    });
  });
}

const runs = [await pass(pattern, {})];
if (!process.argv[2] && !process.env.TEST_STORE) {
  process.stdout.write('\n== the same suites on a real PostgreSQL server (TEST_STORE=postgres)\n');
  runs.push(await pass(POSTGRES_PASS, { TEST_STORE: 'postgres' }));
}
if (!process.argv[2] && !process.env.TEST_AS_OF) {
  process.stdout.write('\n== the resolution suites asked as of the clock\'s reading, from the history read models (TEST_AS_OF=now)\n');
  runs.push(await pass(AS_OF_PASS, { TEST_AS_OF: 'now' }));
}
if (!process.argv[2] && !process.env.TEST_ACCESS_INDEX) {
  process.stdout.write('\n== the resolution suites without the access index (TEST_ACCESS_INDEX=off)\n');
  runs.push(await pass(INDEX_OFF_PASS, { TEST_ACCESS_INDEX: 'off' }));
}
{
  const passed = runs.reduce((n, r) => n + r.passed, 0);
  const skipped = runs.reduce((n, r) => n + r.skipped, 0);
  let failed = runs.reduce((n, r) => n + r.failed, 0);
  const code = runs.every((r) => r.code === 0) ? 0 : 1;
  const mismatches = fs.existsSync(checkFile) ? [...new Set(fs.readFileSync(checkFile, 'utf8').split('\n').filter(Boolean))] : [];
  fs.rmSync(path.dirname(checkFile), { recursive: true, force: true });
  if (mismatches.length > 0) {
    process.stdout.write(`\nAnswers that do not match their route's declared schema (src/http/schema.ts):\n${mismatches.map((m) => `  ${m}`).join('\n')}\n`);
    failed += mismatches.length;
  }
  const failures = runs.flatMap((r) => r.failures);
  if (failures.length > 0) process.stdout.write(`\nFailed, as printed above:\n${failures.join('\n')}\n`);
  process.stdout.write(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  process.exit(failed === 0 && code === 0 ? 0 : 1);
}
