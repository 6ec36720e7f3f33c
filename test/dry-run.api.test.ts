/**
 * `x-dry-run: true` on the mutating routes (issue 38, the mechanism): a dry run answers what
 * the real call then answers (status, data, per-item outcomes, refusals), and leaves the log's
 * head and the read models as they were; the Idempotency-Key is neither read nor stored; any
 * other value of the header is INVALID_ARGUMENT; the routes that do more than append refuse
 * it with FAILED_PRECONDITION and change nothing; every mutating route is classified.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { accessDifferences, roleOf, ORDER } from './support/access-diff.js';
import { harness, type Harness, type Tenant } from './support/app.js';
import { allRoutes } from '../src/app.js';
import { allProjections } from '../projections/index.js';
import { DRY_RUN_CHANGES_PAGE, DRY_RUN_PREVIEWS, DRY_RUN_REFUSALS } from '../src/http/dry-run.js';

let h: Harness;
let t: Tenant;
const DRY = { 'x-dry-run': 'true' };
const post = (url: string, data: unknown, headers: Record<string, string> = {}) => h.post(url, data, { ...t.headers, ...headers });
const ok = (url: string, data: unknown) => h.ok(url, data, t.headers);
const doc = (id: string, extra: object = {}) => ({ type: 'document', id, organizationId: 'o', ...extra });
const USERS = ['m', 'n', 'p'];
const DOCS = ['d', 'e', 'x', 'y', 'new'];

/** What a client can read of organization o: the read models' answers the writes below change. */
async function observe() {
  const reads: Array<[string, object]> = [
    ['/v2/organizations/get', { organizationIds: ['o', 'o2'] }],
    ['/v2/organizations/folders/get', { organizationId: 'o' }],
    ['/v2/organizations/documents/get', { organizationId: 'o' }],
    ['/v2/organizations/usergroups/get', { organizationId: 'o' }],
    ['/v2/auth/permissions/get', { organizationId: 'o', userIds: USERS, documentIds: DOCS }],
  ];
  const out: Record<string, unknown> = { head: await h.services.events.headPosition() };
  for (const [url, data] of reads) {
    const r = await post(url, data);
    out[url] = [r.status, r.body];
  }
  return out;
}

test.before(async () => {
  h = await harness();
  t = await h.tenant();
  await ok('/v2/organizations/folders/add', { organizationId: 'o', createOrganization: true, folders: [{ folderId: 'f', accessType: 'restricted' }, { folderId: 'g' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'd' }, { documentId: 'e' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'x', accessType: 'restricted' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'gr', groupName: 'G' }] });
  await ok('/v2/users/add', { organizationId: 'o', users: USERS.map((userId) => ({ userId })) });
  await ok('/v2/auth/permissions/add', { userId: 'm', permissions: { resources: [doc('d', { accessRole: 'viewer' })] } });
});
test.after(async () => h.close());

test('every mutating route either previews or refuses, and the lists name only mutating routes', () => {
  const mutating = allRoutes(h.services).filter((r) => r.mutates).map((r) => r.path);
  for (const path of mutating) {
    const previews = DRY_RUN_PREVIEWS.has(path);
    const refuses = path in DRY_RUN_REFUSALS;
    assert.ok(previews !== refuses, `${path}: previews ${previews}, refuses ${refuses} (exactly one)`);
  }
  for (const path of [...DRY_RUN_PREVIEWS, ...Object.keys(DRY_RUN_REFUSALS)]) assert.ok(mutating.includes(path), `${path} is a mutating route`);
});

const FOLDER_IDS = ['f', 'g', 'h', 'h2'];

/** The cascade worker idle and the read models at the log's head. */
async function settled() {
  await h.services.cascade.settle();
  await h.services.projections.waitFor(await h.services.events.headPosition(), 5_000);
}

/**
 * Access as permissions/get answers it, measured one resource at a time (a missing resource
 * fails the whole question: it is denied here), keyed by resource type, id and user.
 */
async function measure(organizationId: string): Promise<Map<string, string | undefined>> {
  const out = new Map<string, string | undefined>();
  const cells: Array<[string, string, object]> = [['organization', organizationId, {}], ...FOLDER_IDS.map((f) => ['folder', f, { folderIds: [f] }] as [string, string, object]), ...DOCS.map((d) => ['document', d, { documentIds: [d] }] as [string, string, object])];
  for (const [type, id, ask] of cells) {
    const r = await post('/v2/auth/permissions/get', { organizationId, userIds: USERS, ...ask });
    for (const u of USERS) {
      const entries = r.status === 200 ? r.body.result.data[u] : undefined;
      const e = type === 'organization' ? entries?.organization?.[organizationId] : entries?.[`${type}s`]?.[id];
      out.set(JSON.stringify([type, id, u]), roleOf(e));
    }
  }
  return out;
}


/**
 * The writes previewed: each is sent with the header, must leave everything as it was, and
 * must answer what the same write then answers for real (which changes the state for the next).
 */
const writes: Array<[string, string, object]> = [
  ['a grant', '/v2/auth/permissions/add', { userId: 'n', permissions: { resources: [doc('e', { accessRole: 'viewer' }), doc('x')] } }],
  ['a batch with per-item outcomes: one new, one existing', '/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'new' }, { documentId: 'd' }] }],
  ['a folder and its child in one batch (the second decision sees the first)', '/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'h' }, { folderId: 'h2', parentFolderId: 'h' }] }],
  ['an organization created with its documents', '/v2/organizations/documents/add', { organizationId: 'o2', createOrganization: true, documents: [{ documentId: 'y' }] }],
  ['a folder\'s access type', '/v2/organizations/folders/access/update', { organizationId: 'o', folderIds: ['f'], accessType: 'organizationPrivate' }],
  ['a document\'s access type', '/v2/organizations/documents/access/update', { organizationId: 'o', documentIds: ['x', 'missing'], accessType: 'public' }],
  ['a move', '/v2/organizations/documents/move', { organizationId: 'o', documentIds: ['e'], folderId: 'g' }],
  ['a group member', '/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'gr', userIds: ['p'] }],
  ['a group grant', '/v2/auth/permissions/add', { group: { groupId: 'gr' }, permissions: { resources: [doc('d')] } }],
  ['a revocation', '/v2/auth/permissions/remove', { userId: 'm', permissions: { resources: [doc('d')] } }],
  ['a user added with a role on a document (a grant, a profile sealed)', '/v2/users/add', { organizationId: 'o', documentId: 'x', users: [{ userId: 'p', name: 'Pat', email: 'pat@example.org', accessRole: 'viewer' }, { userId: 'n', accessRole: 'editor' }] }],
  ['a user\'s role changed through users/update', '/v2/users/update', { organizationId: 'o', documentId: 'x', users: [{ userId: 'p', name: 'Pat P', accessRole: 'editor' }, { userId: 'm', accessRole: 'viewer' }] }],
  ['a user\'s data erased (every grant and membership revoked)', '/v2/users/data/delete', { userIds: ['p'] }],
  // Known again (an erased user has no profile row, and a dry run compares the key's known users).
  ['a user added again after an erasure', '/v2/users/add', { organizationId: 'o', users: [{ userId: 'p' }] }],
  ['a refusal (unknown organization)', '/v2/organizations/documents/delete', { organizationId: 'nope', documentIds: ['d'] }],
  ['a user removed', '/v2/users/delete', { organizationId: 'o', userIds: ['n'] }],
  ['a disabled flag', '/v2/organizations/access/disablestate/update', { organizationIds: ['o'], disabled: true }],
  ['a document deleted', '/v2/organizations/documents/delete', { organizationId: 'o', documentIds: ['d', 'missing'] }],
  ['a folder deleted', '/v2/organizations/folders/delete', { organizationId: 'o', folderId: 'g' }],
  ['an organization deleted', '/v2/organizations/delete', { organizationIds: ['o2'] }],
];
for (const [name, url, data] of writes) {
  test(`dry run of ${name} (${url}): answers what the real call answers, changes nothing`, async () => {
    // A folder's or organization's deletion goes on in the cascade worker after its answer: let the previous one end.
    await settled();
    const before = await observe();
    const accessBefore = await measure('o');
    const dry = await post(url, data, DRY);
    assert.is(dry.headers['x-dry-run'], 'true');
    assert.equal(await observe(), before, 'log head and read models as they were');
    const real = await post(url, data);
    assert.is(real.status, name.startsWith('a refusal') ? 404 : 200, JSON.stringify(real.body));
    assert.is(dry.status, real.status, JSON.stringify({ dry: dry.body, real: real.body }));
    const { accessChanges, ...answer } = dry.body.result ?? {};
    // An erasure answers a new job id each time: the dry run's names no job (nothing was stored).
    const job = (b: any) => (b.result?.data?.jobId ? { ...b, result: { ...b.result, data: { ...b.result.data, jobId: 'job' } } } : b);
    assert.equal(job(dry.body.result ? { result: answer } : dry.body), job(real.body));
    if (real.status !== 200) return;
    await settled();
    assert.not.equal(await observe(), before, 'the real call changed something');
    // What the dry run predicted for organization o is what permissions/get measures.
    const expected = accessDifferences('o', accessBefore, await measure('o'));
    const predicted = accessChanges.changes.filter((c: any) => c.organizationId === 'o').map(({ via: _, ...c }: any) => c);
    for (const c of accessChanges.changes) if (c.change !== 'lose' && c.resourceType !== 'organization') assert.type(c.via?.rule, 'string', JSON.stringify(c));
    assert.equal(predicted, expected, JSON.stringify({ predicted, expected }));
    const counts = { gain: 0, lose: 0, role: 0 };
    for (const c of accessChanges.changes) counts[c.change as 'gain']++;
    assert.equal(accessChanges.counts, counts);
  });
}

test('a dry run of an erasure lists every access the user loses, in every organization, and only that', async () => {
  await ok('/v2/users/add', { organizationId: 'e1', createOrganization: true, users: [{ userId: 'ez', name: 'Ezra' }, { userId: 'ey' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'e1', documents: [{ documentId: 'ed', accessType: 'restricted' }] });
  await ok('/v2/users/add', { organizationId: 'e1', documentId: 'ed', users: [{ userId: 'ez', accessRole: 'viewer' }] });
  await ok('/v2/users/add', { organizationId: 'e2', createOrganization: true, users: [{ userId: 'ez', accessRole: 'viewer' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'e2', documents: [{ documentId: 'ee', accessType: 'restricted' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'e2', organizationUserGroups: [{ groupId: 'eg', groupName: 'E' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'e2', organizationUserGroupId: 'eg', userIds: ['ez'] });
  await ok('/v2/auth/permissions/add', { group: { groupId: 'eg' }, permissions: { resources: [{ type: 'document', id: 'ee', organizationId: 'e2', accessRole: 'editor' }] } });
  await settled();
  /** ez's and ey's roles in e1 and e2 as permissions/get answers them, in a dry run's order. */
  const roles = async () => {
    const out: any[] = [];
    for (const [organizationId, documentId] of [['e1', 'ed'], ['e2', 'ee']] as const) {
      const r = await ok('/v2/auth/permissions/get', { organizationId, userIds: ['ey', 'ez'], documentIds: [documentId] });
      for (const [userId, e] of Object.entries<any>(r.data)) {
        out.push({ resourceType: 'organization', resourceId: organizationId, organizationId, userId, role: roleOf(e.organization[organizationId]) });
        out.push({ resourceType: 'document', resourceId: documentId, organizationId, userId, role: roleOf(e.documents[documentId]) });
      }
    }
    const order = (c: any) => `${c.organizationId}/${ORDER.indexOf(c.resourceType)}/${c.userId}`;
    return out.filter((c) => c.role !== undefined).sort((a, b) => (order(a) < order(b) ? -1 : 1));
  };
  const before = await roles();
  // ez can open both organizations and both (restricted) documents: by own grants, and ee through the group.
  assert.equal(before.filter((c) => c.userId === 'ez').map((c) => [c.resourceId, c.role]), [['e1', 'editor'], ['ed', 'viewer'], ['e2', 'viewer'], ['ee', 'editor']]);
  const dry = await post('/v2/users/data/delete', { userIds: ['ez'] }, DRY);
  assert.is(dry.status, 200, JSON.stringify(dry.body));
  const lost = before.filter((c) => c.userId === 'ez').map(({ role, ...c }) => ({ ...c, change: 'lose', before: role }));
  assert.equal(dry.body.result.accessChanges.changes.map(({ via: _, ...c }: any) => c), lost);
  assert.equal(dry.body.result.accessChanges.counts, { gain: 0, lose: 4, role: 0 });
  // Nothing was erased: the name still opens, the membership and every access still hold.
  assert.is((await ok('/v2/users/data/get', { organizationId: 'e1', userId: 'ez' })).data.profile.name, 'Ezra');
  assert.equal((await ok('/v2/users/data/get', { organizationId: 'e2', userId: 'ez' })).data.groups, ['eg']);
  assert.equal(await roles(), before);
  // The real erasure takes exactly what the dry run listed: ey keeps hers.
  await ok('/v2/users/data/delete', { userIds: ['ez'] });
  await settled();
  assert.equal(await roles(), before.filter((c) => c.userId !== 'ez'));
});

test('the changes are paged: counts whole, the first page, the rest with x-dry-run-page-token', async () => {
  const users = Array.from({ length: 30 }, (_, i) => `pu${i}`);
  const docs = Array.from({ length: 40 }, (_, i) => ({ documentId: `pd${i}` }));
  await ok('/v2/organizations/documents/add', { organizationId: 'paged', createOrganization: true, documents: docs });
  await ok('/v2/users/add', { organizationId: 'paged', users: users.map((userId) => ({ userId })) });
  const data = { organizationId: 'paged', documentIds: docs.map((d) => d.documentId), accessType: 'restricted' };
  const first = await post('/v2/organizations/documents/access/update', data, DRY);
  assert.is(first.status, 200, JSON.stringify(first.body).slice(0, 500));
  const a = first.body.result.accessChanges;
  assert.is(a.changes.length, DRY_RUN_CHANGES_PAGE);
  assert.type(a.pageToken, 'string');
  const second = await post('/v2/organizations/documents/access/update', data, { ...DRY, 'x-dry-run-page-token': a.pageToken });
  const b = second.body.result.accessChanges;
  assert.equal(b.counts, a.counts);
  assert.is(b.pageToken, undefined);
  const all = [...a.changes, ...b.changes];
  assert.is(all.length, a.counts.gain + a.counts.lose + a.counts.role);
  assert.is(new Set(all.map((c: any) => JSON.stringify(c))).size, all.length, 'no change twice');
  // A token opens only for the same route and body.
  const other = await post('/v2/organizations/documents/access/update', { ...data, accessType: 'organizationPrivate' }, { ...DRY, 'x-dry-run-page-token': a.pageToken });
  assert.is(other.status, 400);
  assert.match(other.body.error.message, /x-dry-run-page-token/);
});

/** Every read-store collection but the leases (renewed on a timer), every projection's checkpoint, and the log's head. */
async function snapshot() {
  const out: Record<string, unknown> = { head: await h.services.events.headPosition() };
  for (const c of await h.services.read.listCollections()) if (c !== 'leases') out[c] = await h.services.read.find(c, {});
  for (const p of allProjections) out[`checkpoint:${p.name}`] = await h.services.read.getCheckpoint(p.name);
  return JSON.stringify(out);
}

test('dry runs leave the log, every read-store collection (idempotency records, outbox, cascade work) and the checkpoints as they were', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'snap', createOrganization: true, folders: [{ folderId: 'sf' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'snap', folderId: 'sf', documents: [{ documentId: 'sd' }] });
  // A user with a data key, a group and presence: what an erasure would destroy outside the log.
  await ok('/v2/users/add', { organizationId: 'snap', users: [{ userId: 'sq', name: 'Quinn', email: 'quinn@example.org' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'snap', organizationUserGroups: [{ groupId: 'sg', groupName: 'S' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'snap', organizationUserGroupId: 'sg', userIds: ['sq'] });
  await ok('/v2/presence/add', { organizationId: 'snap', documentId: 'sd', users: [{ userId: 'sq', name: 'Quinn' }] });
  await settled();
  const before = await snapshot();
  const key = (k: string) => ({ ...DRY, 'idempotency-key': k });
  const runs: Array<[string, object]> = [
    ['/v2/auth/permissions/add', { userId: 'm', permissions: { resources: [{ type: 'document', id: 'sd', organizationId: 'snap' }] } }],
    ['/v2/organizations/documents/add', { organizationId: 'snap', documents: [{ documentId: 'sd2' }] }],
    ['/v2/organizations/folders/delete', { organizationId: 'snap', folderId: 'sf' }],
    ['/v2/organizations/delete', { organizationIds: ['snap'] }],
    ['/v2/users/delete', { organizationId: 'snap', userIds: ['m'] }],
    // A new user with personal fields (a data key would be created) and one who has a key.
    ['/v2/users/add', { organizationId: 'snap', documentId: 'sd', users: [{ userId: 'sr', name: 'Robin', email: 'robin@example.org', accessRole: 'viewer' }, { userId: 'sq', name: 'Quinn Q' }] }],
    ['/v2/users/update', { organizationId: 'snap', users: [{ userId: 'sq', name: 'Quinn R', accessRole: 'viewer' }] }],
    // The erasure: its data key, presence rows, grants, membership and profile all stay.
    ['/v2/users/data/delete', { userIds: ['sq'] }],
  ];
  for (const [i, [url, data]] of runs.entries()) assert.is((await post(url, data, key(`snap-${i}`))).status, 200, url);
  await settled();
  assert.is(await snapshot(), before);
});

test('the Idempotency-Key of a dry run is neither read nor stored', async () => {
  const data = { organizationId: 'o', documents: [{ documentId: 'idem' }] };
  const key = { 'idempotency-key': 'dry-run-key-1' };
  const dry = await post('/v2/organizations/documents/add', data, { ...DRY, ...key });
  assert.is(dry.status, 200);
  assert.is(dry.headers['idempotent-replayed'], undefined);
  const real = await post('/v2/organizations/documents/add', data, key);
  assert.is(real.headers['idempotent-replayed'], undefined, 'the real call ran: no record was stored by the dry run');
  assert.equal(real.body.result.data, dry.body.result.data);
  // A dry run after the real call is decided anew (the document exists now), not replayed.
  const again = await post('/v2/organizations/documents/add', data, { ...DRY, ...key });
  assert.is(again.headers['idempotent-replayed'], undefined);
  assert.not.equal(again.body, real.body, 'decided on the current state');
  const replay = await post('/v2/organizations/documents/add', data, key);
  assert.is(replay.headers['idempotent-replayed'], 'true');
});

test('any other value of x-dry-run is INVALID_ARGUMENT, nothing stored', async () => {
  for (const value of ['false', 'yes', '1', 'TRUE', '']) {
    const head = await h.services.events.headPosition();
    const r = await post('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: `bad-${value}` }] }, { 'x-dry-run': value });
    assert.is(r.status, 400, `${value}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
    assert.match(r.body.error.message, /x-dry-run/);
    assert.is(await h.services.events.headPosition(), head);
  }
});

test('a read ignores the header (it changes nothing anyway)', async () => {
  const r = await post('/v2/organizations/documents/get', { organizationId: 'o' }, DRY);
  assert.is(r.status, 200);
});

test('authentication comes first: a dry run without credentials is 401', async () => {
  const r = await h.post('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'z' }] }, DRY);
  assert.is(r.status, 401);
});

test('every refusing route refuses with FAILED_PRECONDITION and a reason, and nothing is stored', async () => {
  const routes = allRoutes(h.services).filter((r) => r.path in DRY_RUN_REFUSALS);
  for (const route of routes) {
    const headers = route.auth === 'apiKey' ? t.headers : route.auth === 'workspace' ? t.workspaceHeaders : {};
    const before = await observe();
    const r = await h.post(route.path, route.doc.example ?? {}, { ...headers, ...DRY });
    assert.is(r.status, 400, `${route.path}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.error.status, 'FAILED_PRECONDITION', route.path);
    assert.ok(r.body.error.message.includes(DRY_RUN_REFUSALS[route.path]!), `${route.path}: ${r.body.error.message}`);
    assert.equal(await observe(), before, `${route.path} changed nothing`);
  }
  // The tenant still works with its credentials: no key was rotated or deleted for real.
  assert.is((await post('/v2/organizations/documents/get', { organizationId: 'o' })).status, 200);
});

test.run();
