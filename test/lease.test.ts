/**
 * Leases: one projection runner applies at a time; when it stops renewing (crash), another
 * takes over within the lease time; no event is ever applied twice. In process, on the
 * embedded store (the cases of test/contract/lease.contract.ts, which PostgreSQL runs too),
 * then as real processes: `serve --role worker` twice and `serve --role api`, the holder killed -9.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { tempDir } from './support/app.js';
import { ROOT, post, startService, waitHealthy, type Service } from './support/process.js';
import { leaseContract } from './contract/lease.contract.js';

const casesDir = tempDir('collab-lease-');
let n = 0;
const contract = leaseContract({
  name: 'embedded SQLite',
  // In one process the runners share one read-store object: two SQLite connections in one
  // thread would block each other while a transaction awaits (separate processes do not; the
  // process test below runs those).
  async open() {
    const at = path.join(casesDir, `case-${n++}`);
    fs.mkdirSync(at);
    const read = new SqliteReadStore(path.join(at, 'readmodels.db'));
    const opened: SqliteEventStore[] = [];
    return {
      events: () => {
        const events = new SqliteEventStore(path.join(at, 'events.db'));
        opened.push(events);
        return events;
      },
      read: () => read,
      close: async () => {
        await Promise.all(opened.map((e) => e.close()));
        await read.close();
      },
    };
  },
  ttlMs: 600,
  // The lease time, B's retry interval (TTL/3), and 1.5 s for a loaded machine: a B that
  // never takes over fails at applyWaitMs, one that waits for anything but the lease's lapse is late.
  takeoverWithinMs: 600 + 600 / 3 + 1500,
  applyWaitMs: 5000,
});
contract.after(() => fs.rmSync(casesDir, { recursive: true, force: true }));
contract.run();

/**
 * The survivor tries every TTL/3 and gets the lease once the victim's lapses: the write is
 * visible about TTL + TTL/3 after the kill (2 s). A survivor that never takes over leaves it
 * unapplied for the 30 s read-your-writes wait; 5 s of slack lets process scheduling and
 * SQLite on a loaded machine finish, and stays far below that.
 */
const TTL_MS = 1500;
const VISIBLE_SLACK_MS = 5000;

test('processes: two workers and an API process on one DATA_DIR; kill -9 the lease holder, the other worker takes over, writes stay read-your-writes', async () => {
  const dir = tempDir('collab-lease-proc-');
  // A write waits (read-your-writes) up to 30 s for the takeover instead of answering
  // unapplied after 5 s, so a late takeover shows as the time below, not as a missing read.
  const env = { DATA_DIR: dir, LEASE_TTL_MS: String(TTL_MS), READ_YOUR_WRITES_TIMEOUT_MS: '30000' };
  const started: Service[] = [];
  const start = async (role: string) => {
    const s = await startService(env, 'src/cli.ts', ['serve', '--role', role]);
    started.push(s);
    await waitHealthy(s);
    return s;
  };
  const status = () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), 'projections', 'status', '--json'], { cwd: ROOT, env: { ...process.env, DATA_DIR: dir }, encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { leases: Array<{ name: string; holder: string; held: boolean }> };
  };
  try {
    const w1 = await start('worker');
    const w2 = await start('worker');
    const api = await start('api');

    const bad = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), 'serve', '--role', 'cook'], { cwd: ROOT, env: { ...process.env, DATA_DIR: dir }, encoding: 'utf8' });
    assert.is(bad.status, 2);
    assert.match(bad.stderr, /--role: must be api, worker or all/);
    const onWorker = await post(w1, '/v2/agents/get', {});
    assert.is(onWorker.status, 404, 'workers serve no API');
    assert.is((await fetch(`${w1.url}/readyz`)).status, 200);

    const ws = await post(api, '/v2/workspace/create', { ownerEmail: 'o@example.com' });
    assert.is(ws.status, 200, JSON.stringify(ws.body));
    const [apiKey, k] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken };
    const addAndRead = async (id: string) => {
      const added = await post(api, '/v2/organizations/documents/add', { organizationId: 'acme', createOrganization: true, documents: [{ documentId: id }] }, headers);
      assert.is(added.status, 200, JSON.stringify(added.body));
      const got = await post(api, '/v2/organizations/documents/get', { organizationId: 'acme', documentIds: [id] }, headers);
      return got.body.result?.data?.length === 1;
    };
    assert.ok(await addAndRead('before'), 'the API process sees what a worker applied (read-your-writes)');

    const holder = status().leases.find((l) => l.name === 'projections' && l.held)!.holder;
    const victim = [w1, w2].find((w) => holder.includes(`:${w.child.pid}:`))!;
    const survivor = victim === w1 ? w2 : w1;
    assert.ok(victim, `holder ${holder} is one of the workers`);
    victim.child.kill('SIGKILL');
    await victim.exited;
    const killedAt = Date.now();
    assert.ok(await addAndRead('after'), 'a write after the kill is applied by the other worker');
    assert.ok(Date.now() - killedAt < TTL_MS + VISIBLE_SLACK_MS, `visible ${Date.now() - killedAt} ms after the kill`);
    const now = status().leases.find((l) => l.name === 'projections')!;
    assert.match(now.holder, new RegExp(`:${survivor.child.pid}:`));
    assert.ok(now.held);
    for (let i = 0; i < 5; i++) assert.ok(await addAndRead(`more-${i}`));
  } finally {
    for (const s of started) {
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGTERM');
      await s.exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
