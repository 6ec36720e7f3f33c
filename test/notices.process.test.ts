/**
 * Cross-process notices (src/runtime/notices.ts) on real process trees: the process that
 * applies projections is woken by another process's append, and the API process by the
 * applier's progress, without waiting for either poll.
 *
 * How the test tells a notice from a poll, without timing anything: both polls are set far
 * longer than the test may run (PROJECTION_POLL_MS, CHECKPOINT_POLL_MS), so only a notice can
 * get a write applied and answered within READ_YOUR_WRITES_TIMEOUT_MS. Without one, every
 * write waits out that timeout, the API process logs "read models lag behind this write", and
 * the read right after it does not show the write.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tempDir } from './support/app.js';
import { freshDatabase } from './support/postgres.js';
import { post, startService, waitHealthy, type Service } from './support/process.js';
import { waiter } from './support/wait.js';

const POLLS_OFF = {
  PROJECTION_POLL_MS: '600000',
  CHECKPOINT_POLL_MS: '600000',
  // Long enough for a loaded CI machine to apply a write; far shorter than the polls.
  READ_YOUR_WRITES_TIMEOUT_MS: '15000',
};

const until = waiter(30_000, 50);

/** Writes and reads back: each write's document is there on the very next read. */
async function writesReadBack(s: Service, label: string) {
  const ws = await post(s, '/v2/workspace/create', { ownerEmail: `${label}@example.com` });
  assert.is(ws.status, 200, JSON.stringify(ws.body));
  const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
  const h = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  for (let i = 0; i < 5; i++) {
    const w = await post(s, '/v2/organizations/documents/add', { organizationId: 'o', createOrganization: i === 0, documents: [{ documentId: `d${i}` }] }, h);
    assert.is(w.status, 200, JSON.stringify(w.body));
    const r = await post(s, '/v2/organizations/documents/get', { organizationId: 'o' }, h);
    assert.is(r.status, 200, JSON.stringify(r.body));
    assert.equal(
      r.body.result.data.map((d: { id: string }) => d.id).sort(),
      Array.from({ length: i + 1 }, (_, k) => `d${k}`),
      `write ${i} read back`,
    );
  }
  assert.not.match(s.output(), /read models lag behind this write/);
}

async function stopAll(procs: Service[]) {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  const exits = await Promise.all(procs.map((p) => p.exited));
  return exits;
}

test('serve --workers 2, polls off: the primary relays the API process\'s append to the background process and its progress back', async () => {
  const dir = tempDir('collab-notices-cluster-');
  let s: Service | null = null;
  try {
    s = await startService({ DATA_DIR: dir, LOG_LEVEL: 'info', ...POLLS_OFF }, 'src/server.ts', ['--workers', '2']);
    await until('every child serving', () => /serving with 2 API processes/.test(s!.output()) || s!.child.exitCode !== null);
    await waitHealthy(s);
    await writesReadBack(s, 'cluster');
    const [exit] = await stopAll([s]);
    assert.is(exit!.code, 0, s.output().slice(-3000));
  } finally {
    if (s && s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill('SIGKILL');
      await s.exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('--role worker and --role api started separately on one DATA_DIR, polls off: files touched in DATA_DIR after each commit wake the other side', async () => {
  const dir = tempDir('collab-notices-dir-');
  const procs: Service[] = [];
  try {
    const worker = await startService({ DATA_DIR: dir, ...POLLS_OFF }, 'src/server.ts', ['--role', 'worker']);
    procs.push(worker);
    await waitHealthy(worker);
    const api = await startService({ DATA_DIR: dir, ...POLLS_OFF }, 'src/server.ts', ['--role', 'api']);
    procs.push(api);
    await waitHealthy(api);
    await writesReadBack(api, 'separate');
    for (const [i, exit] of (await stopAll(procs)).entries()) assert.is(exit.code, 0, procs[i]!.output().slice(-3000));
  } finally {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('--role worker and --role api on one PostgreSQL database, polls off: pg_notify at commit wakes the other side (LISTEN)', async () => {
  const dir = tempDir('collab-notices-pg-');
  const procs: Service[] = [];
  try {
    const env = { DATA_DIR: dir, POSTGRES_URL: await freshDatabase('notices'), SECRETS_KEY: randomBytes(32).toString('base64'), ...POLLS_OFF };
    const worker = await startService(env, 'src/server.ts', ['--role', 'worker']);
    procs.push(worker);
    await waitHealthy(worker);
    const api = await startService(env, 'src/server.ts', ['--role', 'api']);
    procs.push(api);
    await waitHealthy(api);
    await writesReadBack(api, 'postgres');
    for (const [i, exit] of (await stopAll(procs)).entries()) assert.is(exit.code, 0, procs[i]!.output().slice(-3000));
    // Nothing of the service in DATA_DIR: both ports and the notices went through PostgreSQL.
    assert.not.ok(fs.readdirSync(dir).some((f) => f.endsWith('.db')), fs.readdirSync(dir).join(', '));
  } finally {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
