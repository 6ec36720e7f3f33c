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
  takeoverWithinMs: 600 + 600 / 3 + 400,
  applyWaitMs: 5000,
});
contract.after(() => fs.rmSync(casesDir, { recursive: true, force: true }));
contract.run();

test('processes: two workers and an API process on one DATA_DIR; kill -9 the lease holder, the other worker takes over, writes stay read-your-writes', async () => {
  const dir = tempDir('collab-lease-proc-');
  const env = { DATA_DIR: dir, LEASE_TTL_MS: '1500' };
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
    assert.ok(Date.now() - killedAt < 1500 + 2000, `visible ${Date.now() - killedAt} ms after the kill`);
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
