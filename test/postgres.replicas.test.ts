/**
 * Read replicas (POSTGRES_REPLICA_URLS, src/adapters/postgres-replicas.ts) on real PostgreSQL:
 * a primary and two hot standbys made with `pg_basebackup -R` (streaming replication), the
 * service given both standbys. Which server answered is read from the service's own counters
 * (GET /metrics, collab_read_replica_requests_total), and what it answered is checked against
 * what was written: a read carrying a write's consistency token never misses that write, even
 * with a standby whose replay is paused; a standby stopped is left out (reads go on) and taken
 * back once started; a standby whose replay lags past POSTGRES_REPLICA_MAX_LAG_MS is left out
 * until it catches up; a standby whose WAL stops arriving (replay lag cannot see that) is left
 * out within the bound, so a deleted API key is refused on every read. A read a standby answers
 * asks the primary nothing (answered while the link to the primary is frozen), and resolves
 * permissions from that standby's own access index, exact by its own change signal.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import pg from 'pg';
import { tempDir } from './support/app.js';
import { logLines, post, startService, waitHealthy, type Service } from './support/process.js';
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
/** And the primary through this one (a read routed to a standby must not need it). */
let primaryLink: Awaited<ReturnType<typeof relay>>;
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

/** A new workspace: its first API key's headers and its own. */
async function newWorkspace(email: string): Promise<{ key: Record<string, string>; workspace: Record<string, string> }> {
  const ws = await post(svc, '/v2/workspace/create', { ownerEmail: email });
  assert.is(ws.status, 200, JSON.stringify(ws.body));
  const d = ws.body.result.data;
  const [apiKey, key] = Object.entries(d.apiKeyList)[0] as [string, { authToken: string }];
  return {
    key: { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken },
    workspace: { 'x-service-workspace-id': d.id, 'x-service-workspace-auth-token': d.authToken },
  };
}

const workspaceKey = async (email: string) => (await newWorkspace(email)).key;

/** Read-only requests answered by the standbys so far, both together. */
const servedByStandbys = async () => (await servedBy(standbys[0]!)) + (await servedBy(standbys[1]!));

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
  primaryLink = await relay('127.0.0.1', primary.port);
  dataDir = tempDir('collab-pg-replicas-');
  const user = new URL(primary.url()).username;
  svc = await startService({
    POSTGRES_URL: `postgres://${user}@127.0.0.1:${primaryLink.port}/${db}`,
    POSTGRES_REPLICA_URLS: standbys.map((s) => `postgres://${user}@${name(s)}/${db}`).join(', '),
    // A statement's answer is given up 5 s after this (postgres-common.ts): the held read below.
    STATEMENT_TIMEOUT_MS: '3000',
    POSTGRES_REPLICA_MAX_LAG_MS: '3000',
    // A deleted key's reads are refused over and over below: not throttled as guesses.
    AUTH_FAILURE_BURST: '1000000',
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
  await primaryLink?.close();
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

test('a read a standby answers asks the primary nothing: answered while the link to the primary is frozen', async () => {
  await until('both standbys admitted', async () => (await admitted(standbys[0]!)) && (await admitted(standbys[1]!)));
  const ask = { organizationId: 'acme', userIds: ['u'], documentIds: ['d'] };
  const primaryBefore = await servedBy('primary');
  const standbysBefore = await servedByStandbys();
  // Nothing the primary is asked from now on is answered until the thaw: a read that needed it
  // (its authentication, the read cache's signal, a read model) would wait past its deadline.
  // A few reads only: with no answer from the primary the standbys are left out after
  // POSTGRES_REPLICA_MAX_LAG_MS (what the primary applied is then unknown).
  primaryLink.freeze();
  try {
    for (let i = 0; i < 3; i++) {
      assert.equal(await documentIds(reader), []);
      // Resolved, from the organization and document read models: there is no such document.
      const perm = await post(svc, '/v2/auth/permissions/get', ask, reader);
      assert.is(perm.status, 404, JSON.stringify(perm.body));
      assert.is(perm.body.error.details.u.documents.d.errorCode, 'does_not_exist');
    }
  } finally {
    primaryLink.thaw();
  }
  assert.is((await servedBy('primary')) - primaryBefore, 0, 'a read went to the primary');
  assert.is((await servedByStandbys()) - standbysBefore, 6);
});

test("permissions/get answered by a standby follows each grant and revocation: the standby's own access index, exact by its own signal", async () => {
  const granter = await workspaceKey('granter@example.com');
  const write = async (route: string, data: unknown) => {
    const r = await fetch(`${svc.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...granter }, body: JSON.stringify({ data }) });
    assert.is(r.status, 200, await r.text());
    return r.headers.get(TOKEN)!;
  };
  await write('/v2/organizations/folders/add', { organizationId: 'perm', createOrganization: true, folders: [{ folderId: 'f', accessType: 'restricted' }] });
  await write('/v2/organizations/documents/add', { organizationId: 'perm', folderId: 'f', documents: [{ documentId: 'd' }] });
  const rounds: Array<[string, unknown]> = [];
  for (const role of ['viewer', 'editor', 'viewer']) {
    rounds.push([`/v2/users/add`, { organizationId: 'perm', documentId: 'd', users: [{ userId: 'u', accessRole: role }] }]);
    rounds.push(['/v2/auth/permissions/remove', { userId: 'u', permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'perm' }] } }]);
  }
  for (const [route, data] of rounds) {
    const token = await write(route, data);
    const want = route === '/v2/users/add' ? { accessRole: (data as { users: Array<{ accessRole: string }> }).users[0]!.accessRole, accessType: 'restricted' } : undefined;
    // Every answer must be the new one, whoever gives it; asked until a standby gave it (one
    // whose index, warm from the round before, held the old answer until its signal moved).
    await until(`${route}: an answer from a standby`, async () => {
      const before = await servedByStandbys();
      const got = await post(svc, '/v2/auth/permissions/get', { organizationId: 'perm', userIds: ['u'], documentIds: ['d'] }, { ...granter, [TOKEN]: token });
      assert.is(got.status, 200, JSON.stringify(got.body));
      const d = got.body.result.data.u.documents.d;
      if (want) assert.equal(d, want, `${route}: the answer misses the grant`);
      else assert.is(d.errorCode, 'permission_denied', `${route}: the answer misses the revocation: ${JSON.stringify(d)}`);
      return (await servedByStandbys()) > before;
    });
  }
  // A user token's read is authenticated on a standby too: its signing key is read there.
  const issued = await post(svc, '/v2/auth/generate_token', { userId: 'u', userProperties: { name: 'U', email: 'u@example.com' } }, granter);
  assert.is(issued.status, 200, JSON.stringify(issued.body));
  const bearer = { authorization: `Bearer ${issued.body.result.data.token}` };
  await until('a user token read answered by a standby', async () => {
    const before = await servedByStandbys();
    const got = await post(svc, '/v2/auth/permissions/get', { organizationId: 'perm', userIds: ['u'], documentIds: ['d'] }, bearer);
    assert.is(got.status, 200, JSON.stringify(got.body));
    assert.is(got.body.result.data.u.documents.d.errorCode, 'permission_denied');
    return (await servedByStandbys()) > before;
  });
});

test("a standby whose WAL stops arriving is left out within POSTGRES_REPLICA_MAX_LAG_MS: a deleted API key is refused on every read", async () => {
  const cut = standbys[1]!;
  const owner = await newWorkspace('revoked@example.com');
  const doomed = owner.key;
  await until('both standbys admitted, and reading with the new key', async () => {
    if (!((await admitted(standbys[0]!)) && (await admitted(cut)))) return false;
    return (await post(svc, '/v2/organizations/get', { organizationIds: ['none'] }, doomed)).status === 200;
  });
  // The standby keeps answering but stops receiving the primary's WAL: it has replayed all it
  // received, so its replay lag reads 0 while it falls further behind.
  const [{ conninfo }] = await onStandby<{ conninfo: string }>(cut, "SELECT current_setting('primary_conninfo') AS conninfo");
  await onStandby(cut, "ALTER SYSTEM SET primary_conninfo = ''");
  await onStandby(cut, 'SELECT pg_reload_conf()');
  try {
    await until('its WAL receiver stopped', async () => (await onStandby(cut, 'SELECT 1 FROM pg_stat_wal_receiver')).length === 0);
    const deleted = await post(svc, '/v2/workspace/apikey/delete', { apiKey: doomed['x-service-api-key'] }, owner.workspace);
    assert.is(deleted.status, 200, JSON.stringify(deleted.body));
    // Bounded: POSTGRES_REPLICA_MAX_LAG_MS (3 s) and a probe interval, with room for a loaded machine.
    await until(
      'the deleted key refused by every read',
      async () => {
        for (let i = 0; i < 6; i++) if ((await post(svc, '/v2/organizations/get', { organizationIds: ['none'] }, doomed)).status !== 403) return false;
        return true;
      },
      15_000,
    );
    assert.not.ok(await admitted(cut), 'the standby cut off from the WAL is left out');
    await until('the log names why the standby was left out', async () =>
      logLines(svc).some((l) => String(l.msg).startsWith(`read replica ${name(cut)} left out`) && String(l.reason).startsWith('behind what the primary had applied')),
    );
  } finally {
    await onStandby(cut, `ALTER SYSTEM SET primary_conninfo = '${conninfo.replace(/'/g, "''")}'`);
    await onStandby(cut, 'SELECT pg_reload_conf()');
  }
  await until('the standby taken back once it receives WAL again', () => admitted(cut));
});

test.run();
