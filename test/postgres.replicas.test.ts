/**
 * Read replicas (POSTGRES_REPLICA_URLS, src/adapters/postgres-replicas.ts) on real PostgreSQL:
 * a primary and two hot standbys made with `pg_basebackup -R` (streaming replication), the
 * service given both standbys. Which server answered is read from the service's own counters
 * (GET /metrics, collab_read_replica_requests_total), and what it answered is checked against
 * what was written: a read carrying a write's consistency token never misses that write, even
 * with a standby whose replay is paused; a standby stopped is left out (reads go on) and taken
 * back once started; a standby whose replay lags past POSTGRES_REPLICA_MAX_LAG_MS is left out
 * until it catches up.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import pg from 'pg';
import { tempDir } from './support/app.js';
import { post, startService, waitHealthy, type Service } from './support/process.js';
import { startPostgres, type PostgresServer } from './support/postgres.js';
import { waiter } from './support/wait.js';
import { relay } from './support/relay.js';

const until = waiter(90_000, 100);
const SECRETS_KEY = Buffer.alloc(32, 23).toString('base64');
const TOKEN = 'x-consistency-token';

let primary: PostgresServer;
let standbys: PostgresServer[] = [];
/** The service reaches the first standby through this relay (a read there can be held unanswered). */
let relayed: Awaited<ReturnType<typeof relay>>;
let svc: Service;
let dataDir: string;
let db: string;
/** The writer's headers, and a second API key's that only reads. */
let writer: Record<string, string>;
let reader: Record<string, string>;

/** A standby's name in the service's metrics: the address the service has for it. */
const name = (s: PostgresServer) => `127.0.0.1:${s === standbys[0] ? relayed.port : s.port}`;

/** The service's read-replica metrics: requests by target, admission by replica. */
async function metrics(): Promise<{ requests: Map<string, number>; up: Map<string, number>; fallbacks: Map<string, number> }> {
  const text = await (await fetch(`${svc.url}/metrics`)).text();
  const requests = new Map<string, number>();
  const up = new Map<string, number>();
  const fallbacks = new Map<string, number>();
  for (const m of text.matchAll(/^collab_read_replica_fallbacks_total\{replica="([^"]+)"\} (\d+)/gm)) fallbacks.set(m[1]!, Number(m[2]));
  for (const m of text.matchAll(/^collab_read_replica_requests_total\{target="([^"]+)"\} (\d+)/gm)) requests.set(m[1]!, Number(m[2]));
  for (const m of text.matchAll(/^collab_read_replica_up\{replica="([^"]+)"\} (\d+)/gm)) up.set(m[1]!, Number(m[2]));
  return { requests, up, fallbacks };
}
const servedBy = async (s: PostgresServer | 'primary') => (await metrics()).requests.get(s === 'primary' ? 'primary' : name(s)) ?? 0;
const admitted = async (s: PostgresServer) => (await metrics()).up.get(name(s)) === 1;

async function onStandby<T>(s: PostgresServer, sql: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: s.url(db) });
  await c.connect();
  try {
    return (await c.query(sql)).rows as T[];
  } finally {
    await c.end();
  }
}

async function workspaceKey(email: string): Promise<Record<string, string>> {
  const ws = await post(svc, '/v2/workspace/create', { ownerEmail: email });
  assert.is(ws.status, 200, JSON.stringify(ws.body));
  const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
  return { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
}

async function addDocument(id: string): Promise<string> {
  const r = await fetch(`${svc.url}/v2/organizations/documents/add`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...writer },
    body: JSON.stringify({ data: { organizationId: 'acme', documents: [{ documentId: id, documentName: id }] } }),
  });
  assert.is(r.status, 200, await r.text());
  const token = r.headers.get(TOKEN);
  assert.ok(token, 'a write answers a consistency token');
  return token!;
}

/** The ids of acme's documents as a read answers them (one page is enough here). */
async function documentIds(headers: Record<string, string>): Promise<string[]> {
  const got = await post(svc, '/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 1000 }, headers);
  assert.is(got.status, 200, JSON.stringify(got.body));
  return (got.body.result.data as Array<{ id: string }>).map((d) => d.id);
}

test.before(async () => {
  primary = await startPostgres();
  db = new URL(await primary.freshDatabase('collab_replicas')).pathname.slice(1);
  standbys = [await startPostgres({ standbyOf: primary }), await startPostgres({ standbyOf: primary })];
  relayed = await relay('127.0.0.1', standbys[0]!.port);
  dataDir = tempDir('collab-pg-replicas-');
  const user = new URL(primary.url()).username;
  svc = await startService({
    POSTGRES_URL: `postgres://${user}@127.0.0.1:${primary.port}/${db}`,
    POSTGRES_REPLICA_URLS: standbys.map((s) => `postgres://${user}@${name(s)}/${db}`).join(', '),
    // A statement's answer is given up 5 s after this (postgres-common.ts): the held read below.
    STATEMENT_TIMEOUT_MS: '3000',
    POSTGRES_REPLICA_MAX_LAG_MS: '3000',
    SECRETS_KEY,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
  });
  await waitHealthy(svc, 60_000);
  writer = await workspaceKey('writer@example.com');
  assert.is((await post(svc, '/v2/organizations/add', { organizations: [{ organizationId: 'acme' }] }, writer)).status, 200);
  reader = await workspaceKey('reader@example.com');
  assert.is((await post(svc, '/v2/organizations/add', { organizations: [{ organizationId: 'acme' }] }, reader)).status, 200);
});

test.after(async () => {
  if (svc && svc.child.exitCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  await relayed?.close();
  for (const s of standbys) await s.close().catch(() => undefined);
  await primary?.close().catch(() => undefined);
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

test('reads without a token are answered by both standbys, not the primary', async () => {
  await until('both standbys admitted', async () => (await admitted(standbys[0]!)) && (await admitted(standbys[1]!)));
  const primaryBefore = await servedBy('primary');
  let seen = '';
  await until(
    () => `reads served by each standby (requests by target: ${seen})`,
    async () => {
      assert.equal(await documentIds(reader), []);
      seen = JSON.stringify([...(await metrics()).requests]);
      return (await servedBy(standbys[0]!)) > 0 && (await servedBy(standbys[1]!)) > 0;
    },
  );
  // The reader's reads needed nothing a standby lacked once both had caught up: a handful may
  // have gone to the primary while its organization's write was being replayed, no more.
  const extra = (await servedBy('primary')) - primaryBefore;
  assert.ok(extra <= 5, `reads answered by the primary: ${extra}`);
  // The change feed is not routed: a page read from a standby behind this process's applied
  // position would move its cursor past changes the standby had not replayed.
  const counts = async () => JSON.stringify([...(await metrics()).requests].sort());
  const before = await counts();
  for (let i = 0; i < 5; i++) assert.is((await post(svc, '/v2/changes/get', {}, reader)).status, 200);
  assert.is(await counts(), before, 'changes/get went through the replica routing');
});

test('a read with the consistency token of a write, or by the writer itself, never misses it', async () => {
  const written: string[] = [];
  for (let i = 0; i < 40; i++) {
    const id = `t${i}`;
    const token = await addDocument(id);
    written.push(id);
    // With the token, from the writer's key and from another process's point of view alike.
    const withToken = await post(svc, '/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 1000 }, { ...writer, [TOKEN]: token });
    assert.is(withToken.status, 200, JSON.stringify(withToken.body));
    assert.ok((withToken.body.result.data as Array<{ id: string }>).some((d) => d.id === id), `round ${i}: the token's read misses ${id}`);
    // Without the token: the writer's own last write, remembered by this process.
    assert.ok((await documentIds(writer)).includes(id), `round ${i}: the writer's next read misses ${id}`);
  }
  assert.equal((await documentIds(writer)).filter((id) => id.startsWith('t')).sort(), written.sort());
});

test('a standby whose replay is paused answers no read that needs newer positions; past the lag bound it is left out, and taken back', async () => {
  const paused = standbys[0]!;
  await until('both standbys admitted', async () => (await admitted(standbys[0]!)) && (await admitted(standbys[1]!)));
  await onStandby(paused, 'SELECT pg_wal_replay_pause()');
  try {
    await until('replay paused', async () => (await onStandby<{ s: string }>(paused, 'SELECT pg_get_wal_replay_pause_state() AS s'))[0]!.s === 'paused');
    const before = await servedBy(paused);
    for (let i = 0; i < 20; i++) {
      const id = `p${i}`;
      const token = await addDocument(id);
      // The writer's own next read, without its token, first: the paused standby is still admitted for a while.
      assert.ok((await documentIds(writer)).includes(id), `round ${i}: the writer's next read misses ${id} (answered by the paused standby?)`);
      const got = await post(svc, '/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 1000 }, { ...writer, [TOKEN]: token });
      assert.is(got.status, 200, JSON.stringify(got.body));
      assert.ok((got.body.result.data as Array<{ id: string }>).some((d) => d.id === id), `round ${i}: the token's read misses ${id} (answered by the paused standby?)`);
    }
    assert.is(await servedBy(paused), before, 'the paused standby answered a read that needed a newer position');
    // Its replay lag (the last replayed commit's age while WAL waits) passes 3 s: left out for every read.
    await addDocument('p-last');
    await until('the paused standby left out past POSTGRES_REPLICA_MAX_LAG_MS', async () => !(await admitted(paused)));
  } finally {
    await onStandby(paused, 'SELECT pg_wal_replay_resume()');
  }
  await until('the standby taken back once it replayed', () => admitted(paused));
  const after = await servedBy(paused);
  await until('token-less reads on the standby again', async () => {
    await documentIds(reader);
    return (await servedBy(paused)) > after;
  });
});

test('a read that fails on a standby is asked again of the primary: no error reaches the client', async () => {
  const s = standbys[0]!;
  const fallbacks = async () => (await metrics()).fallbacks.get(name(s)) ?? 0;
  await until('the standby admitted', () => admitted(s));
  const before = await fallbacks();
  // The link to the standby stops answering: reads sent there (round robin: one of two in a
  // row) fail when the service gives their answer up, and are asked of the primary.
  relayed.freeze();
  try {
    const reads = await Promise.all([0, 1, 2, 3].map(() => documentIds(reader)));
    for (const ids of reads) assert.equal(ids, []);
    assert.ok((await fallbacks()) > before, 'a read failed on the standby and was answered from the primary');
  } finally {
    relayed.thaw();
  }
  await until('the standby taken back', () => admitted(s));
});

test('a stopped standby is left out, reads go on, and it is taken back after a restart', async () => {
  const stopped = standbys[1]!;
  await until('both standbys admitted', async () => (await admitted(standbys[0]!)) && (await admitted(standbys[1]!)));
  await stopped.stop('fast');
  // Reads go on while the service finds out (a failed read is asked again of the primary).
  for (let i = 0; i < 20; i++) assert.equal(await documentIds(reader), []);
  await until('the stopped standby left out', async () => !(await admitted(stopped)));
  for (let i = 0; i < 10; i++) assert.equal(await documentIds(reader), []);
  await stopped.start();
  await until('the standby taken back after its restart', () => admitted(stopped));
  const after = await servedBy(stopped);
  await until('reads on the restarted standby', async () => {
    assert.equal(await documentIds(reader), []);
    return (await servedBy(stopped)) > after;
  });
});

test.run();
