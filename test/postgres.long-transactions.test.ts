/**
 * A transaction left open elsewhere on the server (issue 37, item 3), against the service as a
 * process on the suites' throwaway PostgreSQL server:
 * - a session idle inside a transaction that holds an id holds every follower of the log back:
 *   the write is acknowledged and not visible; /readyz answers 503 naming that session's pid,
 *   the lag metrics count the held-back event, `collab projections status` and the write's
 *   warning name it; once it ends, the write shows and /readyz is ready again (once, /readyz
 *   said ready and the lag read 0 throughout);
 * - a table lock held by a session without a transaction id (it holds nothing back) stalls a
 *   projection batch that needs the table only for LOCK_TIMEOUT_MS at a time: the batch fails
 *   with 55P03, is logged and retried, no event is parked, and the write shows once the lock goes.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { tempDir } from './support/app.js';
import { ROOT, post, startService, waitHealthy, type Service } from './support/process.js';
import { sharedPostgres } from './support/postgres.js';
import { waiter } from './support/wait.js';

const until = waiter(60_000, 100);
const SECRETS_KEY = Buffer.alloc(32, 11).toString('base64');

let url: string;
let dataDir: string;
let svc: Service;
let headers: Record<string, string>;
const holders: pg.Client[] = [];

test.before(async () => {
  const server = await sharedPostgres();
  url = await server.freshDatabase('collab_longtx');
  dataDir = tempDir('collab-pg-longtx-');
  svc = await startService({
    POSTGRES_URL: url,
    SECRETS_KEY,
    DATA_DIR: dataDir,
    METRICS_OPEN: '1',
    // Writes answer soon after their wait gives up, so the test does not wait on it.
    READ_YOUR_WRITES_TIMEOUT_MS: '300',
    LOCK_TIMEOUT_MS: '500',
  });
  await waitHealthy(svc, 60_000);
  const ws = await post(svc, '/v2/workspace/create', { ownerEmail: 'longtx@example.com' });
  assert.is(ws.status, 200, JSON.stringify(ws.body));
  const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
  headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  const add = await post(svc, '/v2/organizations/documents/add', { organizationId: 'acme', createOrganization: true, documents: [{ documentId: 'd0', documentName: 'Zero' }] }, headers);
  assert.is(add.status, 200, JSON.stringify(add.body));
});

test.after(async () => {
  for (const h of holders) await h.end().catch(() => undefined);
  if (svc && svc.child.exitCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function session(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, application_name: 'held-by-test' });
  await c.connect();
  holders.push(c);
  return c;
}

const documents = async () => {
  const got = await post(svc, '/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 100 }, headers);
  assert.is(got.status, 200, JSON.stringify(got.body));
  return got.body.result.data as Array<{ id: string; documentName: string }>;
};

const readyz = async () => {
  const r = await fetch(`${svc.url}/readyz`);
  return { status: r.status, body: (await r.json()) as { error?: { message: string } } };
};

const metric = async (name: string) => {
  const text = await (await fetch(`${svc.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(name))
    .map((l) => Number(l.split(' ').pop()));
};

test('a session idle in a transaction holds writes back: /readyz, the lag metrics, projections status and the log name it; its end lets them through', async () => {
  const holder = await session();
  await holder.query('BEGIN');
  const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_current_xact_id()');
  const pid = rows[0]!.pid;

  const add = await post(svc, '/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'held', documentName: 'Held' }] }, headers);
  assert.is(add.status, 200, 'the write is acknowledged (it is durable)');
  assert.not.ok((await documents()).some((d) => d.id === 'held'), 'not visible while the transaction is open');

  await until('/readyz to answer 503 naming the session', async () => {
    const r = await readyz();
    return r.status === 503 && (r.body.error?.message ?? '').includes(`pid ${pid}`);
  });
  const r = await readyz();
  assert.match(r.body.error!.message, /not yet visible to readers/);
  assert.match(r.body.error!.message, /"held-by-test"/);
  assert.ok((await metric('collab_log_held_back_events'))[0]! >= 1, 'collab_log_held_back_events');
  assert.ok((await metric('collab_log_held_back_seconds'))[0]! > 0, 'collab_log_held_back_seconds');
  assert.ok(Math.min(...(await metric('collab_projection_lag_events{'))) >= 1, 'every projection lags by the held event');
  assert.match(svc.output(), new RegExp(`read models lag behind this write: .*pid ${pid}`));
  const status = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), 'projections', 'status'], {
    cwd: ROOT,
    env: { ...process.env, POSTGRES_URL: url, SECRETS_KEY, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.is(status.status, 0, status.stderr);
  assert.match(status.stdout, new RegExp(`held back: .*pid ${pid}`));

  await holder.query('COMMIT');
  await until('the held write to show', async () => (await documents()).some((d) => d.id === 'held'));
  await until('/readyz to be ready again', async () => (await readyz()).status === 200);
});

test('a table lock held without a transaction id stalls a batch LOCK_TIMEOUT_MS at a time: retried and logged, nothing parked, applied once it goes', async () => {
  const { rows } = await (await session()).query<{ t: string }>(
    "SELECT tablename AS t FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'rm\\_%documents' AND tablename NOT LIKE '%h\\_documents' ORDER BY tablename",
  );
  assert.is(rows.length, 1, JSON.stringify(rows));
  const locker = await session();
  await locker.query('BEGIN');
  await locker.query(`LOCK TABLE ${rows[0]!.t} IN EXCLUSIVE MODE`);
  const xid = await locker.query<{ x: string | null }>('SELECT pg_current_xact_id_if_assigned()::text AS x');
  assert.is(xid.rows[0]!.x, null, 'the lock alone holds no transaction id (it holds nothing back)');

  const before = svc.output().length;
  const renamed = await post(svc, '/v2/organizations/documents/update', { organizationId: 'acme', documents: [{ documentId: 'd0', documentName: 'Renamed' }] }, headers);
  assert.is(renamed.status, 200, JSON.stringify(renamed.body));
  await until('the batch to fail on the lock timeout and be retried', () => /projection batch failed on the store; retrying/.test(svc.output().slice(before)) && /LOCK_TIMEOUT_MS/.test(svc.output().slice(before)));
  assert.is((await documents()).find((d) => d.id === 'd0')?.documentName, 'Zero', 'not applied while the lock is held');

  await locker.query('COMMIT');
  await until('the rename to show', async () => (await documents()).find((d) => d.id === 'd0')?.documentName === 'Renamed');
  const ready = await readyz();
  assert.is(ready.status, 200, JSON.stringify(ready.body));
  assert.is((ready.body as { parkedEvents?: number }).parkedEvents, 0, 'no event parked for a lock');
});

test.run();
