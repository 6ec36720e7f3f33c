/**
 * `npm test` on a machine without what the suites need (scripts/test-prereqs.mjs): it stops at
 * once with one message naming each missing part, its Debian package and the variable that
 * points elsewhere; on a machine with them (this one: CI installs them) it says nothing.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT } from './support/process.js';

const SCRIPT = path.join(ROOT, 'scripts', 'test-prereqs.mjs');
const check = (env: Record<string, string>) => spawnSync(process.execPath, [SCRIPT], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });

test('with PostgreSQL, Chromium and pgbouncer pointed at nothing, it stops with one message naming each, their packages and variables', () => {
  const r = check({ PG_BIN: '/nonexistent/pg', CHROMIUM_PATH: '/nonexistent/chromium', PGBOUNCER_BIN: '/nonexistent/pgbouncer', COLLAB_TEST_NO_INSTALL: '1' });
  assert.is(r.status, 1, r.stderr);
  for (const part of ['PostgreSQL server binaries', '`postgresql`', 'PG_BIN=/nonexistent/pg', 'Chromium (/nonexistent/chromium)', '`chromium`', 'CHROMIUM_PATH', 'pgbouncer (/nonexistent/pgbouncer', '`pgbouncer`', 'PGBOUNCER_BIN', 'apt-get install postgresql chromium pgbouncer']) {
    assert.ok(r.stderr.includes(part), `the message names ${part}:\n${r.stderr}`);
  }
  assert.is(r.stdout, '');
});

test('on this machine (PostgreSQL, Chromium, pgbouncer, ip and root, as CI has them) it passes silently', () => {
  const r = check({ COLLAB_TEST_NO_INSTALL: '1' });
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stderr, '');
});

test.run();
