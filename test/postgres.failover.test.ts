/**
 * Failover by URL (issue 37, item 4): a primary and a synchronous hot standby made with
 * `pg_basebackup -R`, the service given both in one POSTGRES_URL
 * (`host1,host2/db?target_session_attrs=read-write`, which node-postgres once refused as an
 * invalid URL). Under a stream of writes the primary is stopped as a crash would (`-m
 * immediate`) and the standby promoted; the same running service goes on writing to it without
 * a restart, and every write it acknowledged, before or after, is there.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import pg from 'pg';
import { tempDir } from './support/app.js';
import { post, startService, waitHealthy, type Service } from './support/process.js';
import { startPostgres, type PostgresServer } from './support/postgres.js';
import { waiter } from './support/wait.js';

const until = waiter(90_000, 100);
const SECRETS_KEY = Buffer.alloc(32, 17).toString('base64');

let primary: PostgresServer;
let standby: PostgresServer;
let svc: Service | undefined;
let dataDir: string;

test.after(async () => {
  if (svc && svc.child.exitCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  await primary?.close().catch(() => undefined);
  await standby?.close().catch(() => undefined);
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

test('a multi-host POSTGRES_URL follows the primary through a promotion: the running service writes on, no acknowledged write lost', async () => {
  primary = await startPostgres();
  const db = new URL(await primary.freshDatabase('collab_failover')).pathname.slice(1);
  standby = await startPostgres({ standbyOf: primary });
  // Synchronous: a commit is acknowledged once the standby has it, so a promotion loses none.
  const admin = new pg.Client({ connectionString: primary.url() });
  await admin.connect();
  try {
    await admin.query("ALTER SYSTEM SET synchronous_standby_names = '*'");
    await admin.query('SELECT pg_reload_conf()');
    await until('the standby to replicate synchronously', async () => (await admin.query("SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'")).rowCount === 1);
  } finally {
    await admin.end();
  }

  dataDir = tempDir('collab-pg-failover-');
  const user = new URL(primary.url()).username;
  const url = `postgres://${user}@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/${db}?target_session_attrs=read-write`;
  svc = await startService({ POSTGRES_URL: url, SECRETS_KEY, DATA_DIR: dataDir });
  await waitHealthy(svc, 60_000);
  const ws = await post(svc, '/v2/workspace/create', { ownerEmail: 'failover@example.com' });
  assert.is(ws.status, 200, JSON.stringify(ws.body));
  const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  assert.is((await post(svc, '/v2/organizations/add', { organizations: [{ organizationId: 'acme' }] }, headers)).status, 200);

  // One writer, one document at a time; every acknowledged id is recorded.
  const acked: string[] = [];
  const refused: number[] = [];
  let stop = false;
  let n = 0;
  const writer = (async () => {
    while (!stop) {
      const id = `d${n++}`;
      const r = await post(svc!, '/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: id, documentName: id }] }, headers).catch(() => ({ status: 0 }));
      if (r.status === 200) acked.push(id);
      else refused.push(r.status);
    }
  })();
  await until('writes before the failover', () => acked.length >= 20);
  const before = acked.length;
  await primary.stop('immediate');
  await standby.promote();
  await until(() => `writes after the promotion (${acked.length - before} so far; refused meanwhile: ${JSON.stringify(refused.slice(-5))})`, () => acked.length >= before + 20);
  stop = true;
  await writer;

  const ids = new Set<string>();
  let pageToken: string | undefined;
  do {
    const got = await post(svc, '/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 100, ...(pageToken ? { pageToken } : {}) }, headers);
    assert.is(got.status, 200, JSON.stringify(got.body));
    for (const d of got.body.result.data as Array<{ id: string }>) ids.add(d.id);
    pageToken = got.body.result.pageToken;
  } while (pageToken);
  const lost = acked.filter((id) => !ids.has(id));
  assert.equal(lost, [], `acknowledged and lost: ${lost.length} of ${acked.length}`);
});

test.run();
