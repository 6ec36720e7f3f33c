/**
 * Permission resolution's access index (queries/access-index.ts): it answers as the store
 * does after this process's commits, after another connection's or process's commits (from
 * the next request on, as the read cache), on SQLite and on PostgreSQL (a real server, its
 * checkpoints' versions), past its entry bound, and never for asOf questions. The resolution
 * tables run on both paths too (scripts/test.mjs, TEST_ACCESS_INDEX=off; TEST_STORE=postgres).
 * On PostgreSQL also: what moves the signal and what does not (a projection's commit moves
 * it through its checkpoint and writes nothing more; a shared collection's write leaves it),
 * and two services on one database: a write in one is seen by the other's next resolution,
 * also after a rebuild's switch.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { PostgresReadStore, UNLOGGED_WRITES } from '../src/adapters/postgres-read-store.js';
import type { ReadStore, ReadView } from '../src/ports/read-store.js';
import { ApiError } from '../src/shared/errors.js';
import { AccessIndex, accessIndexOf, attachAccessIndex } from '../queries/access-index.js';
import { resolvePermissions } from '../queries/permissions.js';
import { ORGANIZATIONS, organizationKey } from '../projections/organizations.js';
import { DOCUMENTS, documentKey } from '../projections/documents.js';
import { GRANTS, grantKey } from '../projections/grants.js';
import { harness, postgresEnv, tempDir, type Harness, type Tenant } from './support/app.js';
import { LEASES } from '../src/runtime/lease.js';
import { rebuildReadModels } from '../src/ops/rebuild.js';
import { allProjections } from '../projections/index.js';
import pg from 'pg';
import { NOW } from './support/time.js';
import { freshDatabase } from './support/postgres.js';

const K = 'key';
const O = 'o';
const organization = { _id: organizationKey(K, O), apiKey: K, organizationId: O, organizationName: O, disabled: false, seq: '1', createdAt: 0 };
const document = (documentId: string, disabled = false) => ({
  _id: documentKey(K, O, documentId), apiKey: K, organizationId: O, documentId, documentName: documentId, folderId: null, accessType: 'restricted', disabled, seq: '1', createdAt: 0,
});
const grant = (userId: string, documentId: string, expiresAt: number | null = null) => ({
  _id: grantKey(K, O, userId, 'document', documentId), apiKey: K, organizationId: O, userId, resourceType: 'document', resourceId: documentId, accessRole: 'editor', expiresAt,
});
const entryOf = async (read: ReadStore, userId: string, documentId: string) => {
  read.beginRequest();
  return (await resolvePermissions(read, K, NOW, { organizationId: O, userIds: [userId], documentIds: [documentId] }))[userId]!.documents![documentId];
};
const DENIED = { error: 'User does not have access to document', errorCode: 'permission_denied', accessType: 'restricted' };

/** The cases run on two stores of one database: `writer` is another connection, or process. */
function twoStores(name: string, open: () => Promise<{ writer: ReadStore; reader: ReadStore }>) {
  const stores = suite<{ writer: ReadStore; reader: ReadStore }>(`access index over two ${name}`);
  stores.before.each(async (ctx) => {
    Object.assign(ctx, await open());
    await ctx.writer.transaction(async (tx) => {
      await tx.upsert(ORGANIZATIONS, organization);
      await tx.upsert(DOCUMENTS, document('d'));
    });
  });
  stores.after.each(async ({ writer, reader }) => {
    await writer.close();
    await reader.close();
  });

  stores("the other's commits are seen from the next request on", async ({ writer, reader }) => {
    const index = attachAccessIndex(reader, 1000)!;
    assert.equal(await entryOf(reader, 'u', 'd'), DENIED, 'no grant yet');
    assert.equal(await entryOf(reader, 'u', 'd'), DENIED);
    assert.ok(index.size > 0, 'the index holds what the first request read');
    const kept = await index.organization(K, O);
    await entryOf(reader, 'u', 'd');
    assert.is(await index.organization(K, O), kept, 'nothing committed: nothing dropped (reads move no epoch)');
    await writer.transaction((tx) => tx.upsert(GRANTS, grant('u', 'd')));
    assert.equal(await entryOf(reader, 'u', 'd'), { accessRole: 'editor', accessType: 'restricted' });
    await writer.transaction((tx) => tx.upsert(DOCUMENTS, document('d', true)));
    assert.equal(await entryOf(reader, 'u', 'd'), { ...DENIED, error: 'Document is disabled' });
    await writer.transaction((tx) => tx.delete(DOCUMENTS, documentKey(K, O, 'd')));
    // A missing document fails the whole query (NOT_FOUND), its entry in the details.
    const gone = await entryOf(reader, 'u', 'd').catch((e: ApiError) => e);
    assert.instance(gone, ApiError);
    assert.equal((gone as ApiError).details, { u: { organization: { o: { error: 'User does not have access to organization', errorCode: 'permission_denied' } }, documents: { d: { error: 'Document does not exist', errorCode: 'does_not_exist' } } } });
  });

  stores('past its bound the index is emptied and refilled from the store, answering alike', async ({ writer, reader }) => {
    const index = attachAccessIndex(reader, 3)!;
    await writer.transaction(async (tx) => {
      for (let i = 0; i < 10; i++) await tx.upsert(DOCUMENTS, document(`d${i}`));
      for (let i = 0; i < 10; i += 2) await tx.upsert(GRANTS, grant('u', `d${i}`));
    });
    let oneRequest = 0;
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 10; i++) {
        assert.equal(await entryOf(reader, 'u', `d${i}`), i % 2 === 0 ? { accessRole: 'editor', accessType: 'restricted' } : DENIED, `d${i}`);
        // One request's entries (the organization, a target, the user's groups and two grant
        // slots) pass the bound of 3, so each next request starts from an empty index: the size
        // stays that of one request instead of growing with each document asked about.
        oneRequest ||= index.size;
        assert.ok(oneRequest > 3);
        assert.is(index.size, oneRequest, `d${i}, round ${round}`);
      }
    }
  });

  stores("the other's sweep (deleteBefore, no checkpoint moved) is seen from the next request on", async ({ writer, reader }) => {
    const index = attachAccessIndex(reader, 1000)!;
    // Live at NOW; the sweep below takes it anyway (a sweep's bound is its caller's business).
    await writer.transaction((tx) => tx.upsert(GRANTS, grant('u', 'd', NOW + 60_000)));
    assert.equal(await entryOf(reader, 'u', 'd'), { accessRole: 'editor', accessType: 'restricted', expiresAt: NOW + 60_000 });
    assert.ok(index.size > 0);
    assert.is(await writer.transaction((tx) => tx.deleteBefore(GRANTS, 'expiresAt', NOW + 120_000)), 1);
    assert.equal(await entryOf(reader, 'u', 'd'), DENIED);
  });

  return stores;
}

twoStores('SQLite connections', async () => {
  const file = path.join(tempDir('collab-access-index-'), 'read.db');
  return { writer: new SqliteReadStore(file), reader: new SqliteReadStore(file) };
}).run();

// Two PostgreSQL read stores on one database are two processes: separate pools, each with its
// slot of the change counter.
twoStores('PostgreSQL processes (a real server)', async () => {
  const url = await freshDatabase('access_index');
  return { writer: new PostgresReadStore(url), reader: new PostgresReadStore(url) };
}).run();

/** The checkpoints table as it stands: name -> version. */
async function checkpointVersions(url: string): Promise<Map<string, number>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ name: string; version: string }>('SELECT name, version FROM checkpoints');
    return new Map(r.rows.map((row) => [row.name, Number(row.version)]));
  } finally {
    await c.end();
  }
}

const signal = suite<{ url: string; writer: PostgresReadStore; reader: PostgresReadStore }>('access index on PostgreSQL: what moves its signal');
signal.before.each(async (ctx) => {
  ctx.url = await freshDatabase('access_signal');
  // As the service opens it: the shared collections (here: leases) are exempt.
  ctx.writer = new PostgresReadStore(ctx.url, { signalExempt: [LEASES] });
  ctx.reader = new PostgresReadStore(ctx.url, { signalExempt: [LEASES] });
  await ctx.writer.transaction(async (tx) => {
    await tx.upsert(ORGANIZATIONS, organization);
    await tx.upsert(DOCUMENTS, document('d'));
    await tx.setCheckpoint('grants', '0001', null);
  });
});
signal.after.each(async ({ writer, reader }) => {
  await writer.close();
  await reader.close();
});

signal("a projection's commit moves it through its own checkpoint, with no write of its own", async ({ url, writer, reader }) => {
  const index = attachAccessIndex(reader, 1000)!;
  assert.equal(await entryOf(reader, 'u', 'd'), DENIED);
  const unlogged = (await checkpointVersions(url)).get(UNLOGGED_WRITES);
  // As a projection batch commits: its read model and its checkpoint in one transaction.
  await writer.transaction(async (tx) => {
    await tx.upsert(GRANTS, grant('u', 'd'));
    await tx.setCheckpoint('grants', '0002', '0001');
  });
  assert.equal(await entryOf(reader, 'u', 'd'), { accessRole: 'editor', accessType: 'restricted' });
  const after = await checkpointVersions(url);
  assert.is(after.get(UNLOGGED_WRITES), unlogged, 'the batch moved no row but its checkpoint');
  assert.is(after.get('grants'), 2);
  assert.ok(index.size > 0);
});

signal("a shared collection's write leaves it, and what the index keeps, alone", async ({ url, writer, reader }) => {
  const index = attachAccessIndex(reader, 1000)!;
  assert.equal(await entryOf(reader, 'u', 'd'), DENIED);
  const kept = await index.organization(K, O);
  const before = await checkpointVersions(url);
  await writer.transaction((tx) => tx.upsert(LEASES, { _id: 'projections', holder: 'A', expiresAt: 1 }));
  await writer.transaction((tx) => tx.deleteBefore(LEASES, 'expiresAt', 2));
  assert.equal(await checkpointVersions(url), before, 'no checkpoint row written');
  await entryOf(reader, 'u', 'd');
  assert.is(await index.organization(K, O), kept, 'the same entries: nothing dropped');
  // And a write to a read model without a checkpoint (a parked event applied again) moves it.
  await writer.transaction((tx) => tx.upsert(GRANTS, grant('u', 'd')));
  assert.is((await checkpointVersions(url)).get(UNLOGGED_WRITES), (before.get(UNLOGGED_WRITES) ?? 0) + 1);
  assert.equal(await entryOf(reader, 'u', 'd'), { accessRole: 'editor', accessType: 'restricted' });
});

signal('a dropped read model moves it; a dropped shared collection does not', async ({ url, writer, reader }) => {
  const index = attachAccessIndex(reader, 1000)!;
  await writer.transaction((tx) => tx.upsert(GRANTS, grant('u', 'd')));
  assert.equal(await entryOf(reader, 'u', 'd'), { accessRole: 'editor', accessType: 'restricted' });
  const kept = await index.organization(K, O);
  const before = (await checkpointVersions(url)).get(UNLOGGED_WRITES)!;
  await writer.transaction((tx) => tx.upsert(LEASES, { _id: 'x', expiresAt: 1 }));
  await writer.dropCollection(LEASES);
  assert.is((await checkpointVersions(url)).get(UNLOGGED_WRITES), before);
  await entryOf(reader, 'u', 'd');
  assert.is(await index.organization(K, O), kept);
  await writer.dropCollection(GRANTS);
  assert.is((await checkpointVersions(url)).get(UNLOGGED_WRITES), before + 1);
  assert.equal(await entryOf(reader, 'u', 'd'), DENIED);
});

signal.run();

/** Two services on one PostgreSQL database: two processes' pools, stores and indexes. */
const services = suite<{ a: Harness; b: Harness; t: Tenant }>('access index on PostgreSQL: two services on one database');
services.before(async (ctx) => {
  const env = await postgresEnv();
  ctx.a = await harness(env);
  ctx.b = await harness(env);
  ctx.t = await ctx.a.tenant();
});
services.after(async ({ a, b }) => {
  await b.close();
  await a.close();
});

services("a write in one is seen by the other's next resolution, also after a rebuild's switch", async ({ a, b, t }) => {
  const ask = async (h: Harness) => (await h.ok('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['u'], documentIds: ['d'] }, t.headers)).data.u.documents.d;
  await a.ok('/v2/organizations/folders/add', { organizationId: 'o', createOrganization: true, folders: [{ folderId: 'f', accessType: 'restricted' }] }, t.headers);
  await a.ok('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'd' }] }, t.headers);
  assert.is((await ask(b)).errorCode, 'permission_denied');
  const index = accessIndexOf(b.services.read)!;
  assert.ok(index && index.size > 0, "b answers from its index");
  const kept = await index.organization(t.apiKey, 'o');
  assert.is((await ask(b)).errorCode, 'permission_denied');
  assert.is(await index.organization(t.apiKey, 'o'), kept, 'nothing committed: kept');
  // a's write returns once its read models have it (read-your-writes): b's next request sees it.
  await a.ok('/v2/users/add', { organizationId: 'o', documentId: 'd', users: [{ userId: 'u', accessRole: 'viewer' }] }, t.headers);
  assert.equal(await ask(b), { accessRole: 'viewer', accessType: 'restricted' });
  await a.ok('/v2/auth/permissions/remove', { userId: 'u', permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'o' }] } }, t.headers);
  assert.is((await ask(b)).errorCode, 'permission_denied');
  await a.ok('/v2/users/add', { organizationId: 'o', documentId: 'd', users: [{ userId: 'u', accessRole: 'editor' }] }, t.headers);
  assert.equal(await ask(b), { accessRole: 'editor', accessType: 'restricted' });

  // The rebuild switch: the live generation loses the grant behind the log's back (b sees it
  // gone: a write without a checkpoint moves the signal), then a rebuild in a replays the log
  // into a new generation, which has it. Once b has seen the switch (its refresh, made here
  // rather than waited for), its next resolution answers from the new generation.
  const live = a.services.generations;
  const grantId = grantKey(t.apiKey, 'o', 'u', 'document', 'd');
  assert.ok(await live.get(GRANTS, grantId), 'the grant, as the live generation holds it');
  await live.transaction((tx) => tx.delete(GRANTS, grantId).then(() => undefined));
  assert.is((await ask(b)).errorCode, 'permission_denied');
  const r = await rebuildReadModels({ events: a.services.events, generations: live, projections: allProjections });
  assert.is(await b.services.generations.refresh(), r.to);
  assert.equal(await ask(b), { accessRole: 'editor', accessType: 'restricted' });
});

services.run();

const stores = suite('access index: its signal');
stores('without the store signal there is no index: a store without a read cache', async () => {
  const memory = new SqliteReadStore(':memory:');
  assert.is(attachAccessIndex(memory, 1000), null);
  assert.is(attachAccessIndex(new SqliteReadStore(path.join(tempDir('collab-access-index-'), 'r.db')), 0), null);
  await memory.close();
});

stores('an epoch settling after a newer one is served from what the newer one kept', async () => {
  // Two round trips of one process (PostgreSQL) may settle out of order: the older answer
  // must neither drop what the newer one kept nor label it older.
  const answers: number[] = [];
  const index = new AccessIndex({ readEpoch: async () => answers.shift() }, 1000);
  answers.push(8);
  const newer = (await index.organization(K, O))!;
  // Reading the organization (absent here) keeps an entry.
  await newer.organization({ get: async () => null } as unknown as ReadView);
  const kept = index.size;
  assert.ok(kept > 0);
  answers.push(7);
  assert.is(await index.organization(K, O), newer, 'the same entries');
  assert.is(index.size, kept);
  answers.push(8);
  assert.is(await index.organization(K, O), newer, 'still labelled 8');
  answers.push(9);
  assert.is.not(await index.organization(K, O), newer, 'a commit since: dropped');
  assert.is(index.size, 0);
});

stores('a store read from several servers keeps one index per server, each by its own epoch', async () => {
  // Read replicas: a standby's signal counts what it replayed, on a scale of its own; its
  // values must neither drop the primary's entries nor be served from them.
  const primary = {};
  const standby = {};
  let source: object = primary;
  const epochs = new Map<object, number>([[primary, 40], [standby, 3]]);
  const index = new AccessIndex({ readEpoch: async () => epochs.get(source), readSource: () => (source === primary ? undefined : source) }, 1000);
  const onPrimary = (await index.organization(K, O))!;
  source = standby;
  const onStandby = (await index.organization(K, O))!;
  assert.is.not(onStandby, onPrimary, "the standby's entries are its own");
  source = primary;
  assert.is(await index.organization(K, O), onPrimary, "the standby's lower epoch dropped nothing of the primary's");
  source = standby;
  epochs.set(standby, 4);
  const replayed = (await index.organization(K, O))!;
  assert.is.not(replayed, onStandby, 'the standby replayed a commit: its entries dropped');
  source = primary;
  assert.is(await index.organization(K, O), onPrimary, "and the primary's kept");
});

stores.run();

const api = suite<{ h: Harness; t: Tenant }>('access index in the service');
/** The service's clock; the test moves it so asOf can name an instant between two changes. */
let clock = NOW;
api.before(async (ctx) => {
  ctx.h = await harness({}, { clock: () => clock });
  ctx.t = await ctx.h.tenant();
});
api.after(async ({ h }) => h.close());

api('own commits are answered at once; asOf questions read the history models, not the index', async ({ h, t }) => {
  const post = (url: string, data: unknown) => h.ok(url, data, t.headers);
  const ask = async (asOf?: number) =>
    (await post('/v2/auth/permissions/get', { organizationId: 'o2', userIds: ['u'], documentIds: ['d'], ...(asOf !== undefined ? { asOf } : {}) })).data.u.documents.d;
  await post('/v2/organizations/folders/add', { organizationId: 'o2', createOrganization: true, folders: [{ folderId: 'f', accessType: 'restricted' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'o2', folderId: 'f', documents: [{ documentId: 'd' }] });
  assert.is((await ask()).errorCode, 'permission_denied');
  const index = accessIndexOf(h.services.read);
  if (process.env.TEST_ACCESS_INDEX === 'off') assert.is(index, undefined);
  else assert.ok(index && index.size > 0, 'the live store answers from the index');
  clock += 10_000;
  await post('/v2/users/add', { organizationId: 'o2', documentId: 'd', users: [{ userId: 'u', accessRole: 'viewer' }] });
  const granted = clock;
  assert.equal(await ask(), { accessRole: 'viewer', accessType: 'restricted' });
  clock += 10_000;
  await post('/v2/auth/permissions/remove', { userId: 'u', permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'o2' }] } });
  assert.is((await ask()).errorCode, 'permission_denied');
  // The index now holds the grant as absent; asked as of when it held, the history models answer.
  assert.equal(await ask(granted), { accessRole: 'viewer', accessType: 'restricted' });
  assert.is((await ask()).errorCode, 'permission_denied');
});

api.run();
