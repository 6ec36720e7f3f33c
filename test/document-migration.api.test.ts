/**
 * documents/migrate and documents/migrate/status through the API: a document moves to a new
 * id with its name, folder, access type, disabled flag, users' grants (role, expiry, access
 * fields) and groups' grants, so every user's permissions on the new id are those they had on
 * the old one; the old id is gone; the status route reads the job. Refusals change nothing.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { waiter } from './support/wait.js';
import { RequestContext } from '../src/http/context.js';
import { ApiError } from '../src/shared/errors.js';
import { migrateDocument } from '../src/usecases/document-migration.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown, headers: Record<string, string> = {}) => h.post(url, data, { ...t.headers, ...headers });
const ok = (url: string, data: unknown) => h.ok(url, data, t.headers);
const MIGRATE = '/v2/organizations/documents/migrate';
const STATUS = '/v2/organizations/documents/migrate/status';
const USERS = ['alice', 'bob', 'carol', 'dave', 'erin'];
const inAnHour = Math.floor(Date.now() / 1000) + 3600;

/** Each user's permissions/get entry on `documentId` (role, access type, expiry, access fields, error). */
async function permissionsOn(documentId: string) {
  const r = await ok('/v2/auth/permissions/get', { organizationId: 'o', userIds: USERS, documentIds: [documentId] });
  return Object.fromEntries(USERS.map((u) => [u, r.data[u].documents[documentId]]));
}

/** auth/users/get on `documentId`: who can open it, with which role and through what. */
const whoCanOpen = async (documentId: string) => (await ok('/v2/auth/users/get', { organizationId: 'o', documentId })).data.users;

test.before(async () => {
  h = await harness();
  t = await h.tenant();
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'o' }] });
  await ok('/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'f', folderName: 'F' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'd', documentName: 'Plan', accessType: 'restricted' }, { documentId: 'taken' }] });
  await ok('/v2/organizations/documents/access/disablestate/update', { organizationId: 'o', documentIds: ['d'], disabled: true });
  await ok('/v2/organizations/documents/access/disablestate/update', { organizationId: 'o', documentIds: ['d'], disabled: false });
  await ok('/v2/users/add', { organizationId: 'o', users: USERS.map((userId) => ({ userId, accessRole: 'viewer' })) });
  await ok('/v2/auth/permissions/add', { userId: 'alice', permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'o', accessRole: 'editor', context: { access: { team: 'red' } } }] } });
  await ok('/v2/auth/permissions/add', { userId: 'bob', permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'o', accessRole: 'viewer', expiresAt: inAnHour }] } });
  await ok('/v2/auth/permissions/add', { userId: 'dave', permissions: { resources: [{ type: 'folder', id: 'f', organizationId: 'o', accessRole: 'editor' }] } });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'g' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'g', userIds: ['carol'] });
  await ok('/v2/auth/permissions/add', { group: { groupId: 'g' }, permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'o', accessRole: 'editor' }] } });
});
test.after(async () => h.close());

test('refused before anything changes: same id, missing organization or document, a new id taken, bad input', async () => {
  const cases: Array<[unknown, number, string, RegExp]> = [
    [{ organizationId: 'o', documentId: 'd', newDocumentId: 'd' }, 400, 'INVALID_ARGUMENT', /^data\.newDocumentId must differ from data\.documentId\.$/],
    [{ organizationId: 'nope', documentId: 'd', newDocumentId: 'd2' }, 404, 'NOT_FOUND', /^Organization does not exist\.$/],
    [{ organizationId: 'o', documentId: 'ghost', newDocumentId: 'd2' }, 404, 'NOT_FOUND', /^Document does not exist$/],
    [{ organizationId: 'o', documentId: 'd', newDocumentId: 'taken' }, 409, 'ALREADY_EXISTS', /^Document "taken" already exists\.$/],
    [{ organizationId: 'o', documentId: 'd' }, 400, 'INVALID_ARGUMENT', /newDocumentId/],
    [{ organizationId: 'o', documentId: 'd', newDocumentId: 'x'.repeat(257) }, 400, 'INVALID_ARGUMENT', /newDocumentId/],
    [{ organizationId: 'o', documentId: ['d'], newDocumentId: 'd2' }, 400, 'INVALID_ARGUMENT', /documentId/],
  ];
  for (const [data, status, code, message] of cases) {
    const r = await post(MIGRATE, data);
    assert.is(r.status, status, JSON.stringify(data));
    assert.is(r.body.error.status, code);
    assert.match(r.body.error.message, message);
  }
  const docs = (await ok('/v2/organizations/documents/get', { organizationId: 'o' })).data.map((d: { id: string }) => d.id).sort();
  assert.equal(docs, ['d', 'taken'], 'no document made or deleted');
  const audit = (await ok('/v2/audit/events/get', { organizationId: 'o', pageSize: 1000 })).data.map((e: { type: string }) => e.type);
  assert.not.ok(audit.some((x: string) => x.startsWith('DocumentMigration')), 'no migration recorded');
});

test('migrate: the new id has the document, its grants and its permissions; the old id is gone', async () => {
  const before = await permissionsOn('d');
  const openersBefore = await whoCanOpen('d');
  assert.is(before.alice.accessRole, 'editor');
  assert.is(before.bob.expiresAt, inAnHour);
  assert.is(before.carol.accessRole, 'editor', 'through the group');
  assert.ok(before.erin.errorCode, 'erin cannot open it');
  const old = (await ok('/v2/organizations/documents/get', { organizationId: 'o', documentIds: ['d'] })).data[0];

  const r = await ok(MIGRATE, { organizationId: 'o', documentId: 'd', newDocumentId: 'd2' });
  assert.is(r.message, 'Document migration started successfully.');
  assert.equal(Object.keys(r.data), ['migrationId']);
  const migrationId = r.data.migrationId as string;

  const after = await permissionsOn('d2');
  assert.equal(after, before, 'every user\'s permissions on the new id are those they had on the old one');
  // The same users, roles and grants; a grant on the document itself now names its new id.
  type Opener = { via: { level: string; id: string } };
  const renamed = openersBefore.map((u: Opener) => (u.via.level === 'resource' ? { ...u, via: { ...u.via, id: 'd2' } } : u));
  assert.equal(await whoCanOpen('d2'), renamed);
  const moved = (await ok('/v2/organizations/documents/get', { organizationId: 'o', documentIds: ['d2'] })).data[0];
  for (const k of ['documentName', 'folderId', 'accessType', 'disabled']) assert.equal(moved[k], old[k], k);
  assert.equal((await ok('/v2/organizations/documents/get', { organizationId: 'o', documentIds: ['d'] })).data, [], 'the old id is gone');
  const gone = await post('/v2/auth/permissions/get', { organizationId: 'o', userIds: USERS, documentIds: ['d'] });
  assert.is(gone.status, 404);
  for (const u of USERS) assert.is(gone.body.error.details[u].documents.d.errorCode, 'does_not_exist', u);

  const s = await ok(STATUS, { organizationId: 'o', migrationId });
  assert.is(s.message, 'Migration status retrieved successfully.');
  assert.equal({ ...s.data, startedAt: 0, completedAt: 0 }, {
    migrationId, status: 'completed', documentId: 'd', newDocumentId: 'd2', startedAt: 0, completedAt: 0, grantsMoved: 2, groupGrantsMoved: 1,
  });
  // The grants left the old id on the write side too: a document made again under it has none of them.
  await ok('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'd' }] });
  assert.equal((await whoCanOpen('d')).filter((u: Opener) => u.via.level === 'resource'), []);
  await ok('/v2/organizations/documents/delete', { organizationId: 'o', documentIds: ['d'] });
  const audit = (await ok('/v2/audit/events/get', { organizationId: 'o', pageSize: 1000 })).data.map((e: { type: string }) => e.type);
  assert.ok(audit.includes('DocumentMigrationStarted') && audit.includes('DocumentMigrationCompleted'), JSON.stringify(audit));
});

test('a disabled document stays disabled, and a document inheriting its access type still inherits', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'e' }] });
  await ok('/v2/organizations/documents/access/disablestate/update', { organizationId: 'o', documentIds: ['e'], disabled: true });
  await ok(MIGRATE, { organizationId: 'o', documentId: 'e', newDocumentId: 'e2' });
  const e2 = (await ok('/v2/organizations/documents/get', { organizationId: 'o', documentIds: ['e2'] })).data[0];
  assert.is(e2.disabled, true);
  await ok('/v2/organizations/folders/access/update', { organizationId: 'o', folderIds: ['f'], accessType: 'public' });
  const now = (await ok('/v2/organizations/documents/get', { organizationId: 'o', documentIds: ['e2'] })).data[0];
  assert.is(now.accessType, 'public', 'inherits the folder\'s new access type');
});

test('sent again: the old id is gone, NOT_FOUND, nothing changes; with an Idempotency-Key the first answer again', async () => {
  const again = await post(MIGRATE, { organizationId: 'o', documentId: 'd', newDocumentId: 'd2' });
  assert.is(again.status, 404);
  assert.is(again.body.error.message, 'Document does not exist');
  const headers = { 'idempotency-key': 'migrate-x-1' };
  await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'x' }] });
  const first = await post(MIGRATE, { organizationId: 'o', documentId: 'x', newDocumentId: 'x2' }, headers);
  assert.is(first.status, 200);
  const second = await post(MIGRATE, { organizationId: 'o', documentId: 'x', newDocumentId: 'x2' }, headers);
  assert.is(second.status, 200);
  assert.is(second.body.result.data.migrationId, first.body.result.data.migrationId);
});

test('status: an unknown migration, another organization\'s or another key\'s is NOT_FOUND', async () => {
  const r = await ok(MIGRATE, { organizationId: 'o', documentId: 'taken', newDocumentId: 'taken2' });
  const migrationId = r.data.migrationId;
  const unknown = await post(STATUS, { organizationId: 'o', migrationId: 'yourMigrationId' });
  assert.is(unknown.status, 404);
  assert.is(unknown.body.error.message, 'Migration does not exist.');
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'p' }] });
  assert.is((await post(STATUS, { organizationId: 'p', migrationId })).status, 404);
  const t2 = await h.tenant();
  await h.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, t2.headers);
  assert.is((await h.post(STATUS, { organizationId: 'o', migrationId }, t2.headers)).status, 404);
  assert.is((await post(STATUS, { organizationId: 'o' })).status, 400);
  assert.is((await post(STATUS, { organizationId: 'nope', migrationId })).body.error.message, 'Organization does not exist.');
});

/**
 * A request context whose commands of the `refused` types are refused with `err` (the others
 * run), to stop a migration at a chosen step as a taken id, a crash or a lost store would.
 */
function refusing(refused: (command: { type: string; data: Record<string, unknown> }) => boolean, err = new ApiError('ALREADY_EXISTS', 'Document already exists')) {
  const silent = { info() {}, warn() {}, error() {} };
  const real = new RequestContext(h.services, 'req-stopped', h.services.clock(), silent, 'test', { apiKey: t.apiKey, workspaceId: t.workspaceId, type: 'testing' });
  return Object.assign(Object.create(real) as RequestContext, {
    execute: ((decider, stream, command) =>
      refused(command as { type: string; data: Record<string, unknown> }) ? Promise.reject(err) : real.execute(decider, stream, command)) as RequestContext['execute'],
  });
}

const until = waiter(5000, 10);
/** The id of the newest migration of `documentId` whose events include `type`, once the audit read model has it. */
async function migrationOf(documentId: string, type: string): Promise<string> {
  let id = '';
  await until(`${type} of ${documentId} in the audit`, async () => {
    const rows = (await ok('/v2/audit/events/get', { organizationId: 'o', pageSize: 1000 })).data as { type: string; data: { migrationId: string; documentId?: string } }[];
    const started = new Set(rows.filter((e) => e.type === 'DocumentMigrationStarted' && e.data.documentId === documentId).map((e) => e.data.migrationId));
    const hit = rows.filter((e) => e.type === type && started.has(e.data.migrationId)).pop();
    if (hit) id = hit.data.migrationId;
    return hit !== undefined;
  });
  return id;
}

test('stopped among the moves: in_progress; sent again it finishes the same migration, and the permissions are the old ones', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'r', documentName: 'Resumed', accessType: 'restricted' }] });
  for (const [userId, accessRole] of [['alice', 'viewer'], ['bob', 'editor'], ['erin', 'viewer']]) {
    await ok('/v2/auth/permissions/add', { userId, permissions: { resources: [{ type: 'document', id: 'r', organizationId: 'o', accessRole }] } });
  }
  const before = await permissionsOn('r');
  // bob's move is refused (the store went away): alice's is done, erin's is not yet.
  const stopped = refusing((c) => c.type === 'MoveGrant' && c.data.userId === 'bob', new ApiError('UNAVAILABLE', 'The event store is unavailable.'));
  try {
    await migrateDocument(stopped, { organizationId: 'o', documentId: 'r', newDocumentId: 'r2' });
    assert.unreachable('the migration went through');
  } catch (err) {
    assert.is((err as ApiError).status, 'UNAVAILABLE');
  }
  const migrationId = await migrationOf('r', 'DocumentMigrationStarted');
  assert.is((await ok(STATUS, { organizationId: 'o', migrationId })).data.status, 'in_progress');
  const r = await ok(MIGRATE, { organizationId: 'o', documentId: 'r', newDocumentId: 'r2' });
  assert.is(r.data.migrationId, migrationId, 'the same migration, finished');
  const s = (await ok(STATUS, { organizationId: 'o', migrationId })).data;
  assert.is(s.status, 'completed');
  assert.is(s.grantsMoved, 2, 'bob and erin, moved by the run that finished it');
  assert.equal(await permissionsOn('r2'), before);
  assert.equal((await ok('/v2/organizations/documents/get', { organizationId: 'o', documentIds: ['r', 'r2'] })).data.map((d: { id: string }) => d.id), ['r2']);
});

test('an unfinished migration whose new id became another document meanwhile is refused when sent again, recorded failed; the old document keeps its grants and can be migrated elsewhere', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'z' }] });
  await ok('/v2/auth/permissions/add', { userId: 'alice', permissions: { resources: [{ type: 'document', id: 'z', organizationId: 'o', accessRole: 'editor' }] } });
  // Stopped after it started, before its document was made, and before it could record that (a crash).
  const crashed = refusing((c) => c.type === 'AddDocument' || c.type === 'FailDocumentMigration', new ApiError('UNAVAILABLE', 'gone'));
  await migrateDocument(crashed, { organizationId: 'o', documentId: 'z', newDocumentId: 'z2' }).then(() => assert.unreachable('went through'), () => undefined);
  const migrationId = await migrationOf('z', 'DocumentMigrationStarted');
  await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'z2' }] });
  const again = await post(MIGRATE, { organizationId: 'o', documentId: 'z', newDocumentId: 'z2' });
  assert.is(again.status, 409);
  assert.is(again.body.error.message, 'Document "z2" already exists.');
  // It can never finish: recorded failed, and its claim on z released. A refused request does
  // not wait for the read models (only a successful write does): wait for the status.
  let status: { status: string; error?: string } = { status: '' };
  await until('the migration recorded failed', async () => {
    status = (await ok(STATUS, { organizationId: 'o', migrationId })).data;
    return status.status !== 'in_progress';
  });
  assert.equal([status.status, status.error], ['failed', 'Document "z2" already exists.']);
  assert.is((await permissionsOn('z')).alice.accessRole, 'editor', 'nothing moved into another\'s document');
  assert.equal((await whoCanOpen('z2')).filter((u: { via: { level: string } }) => u.via.level === 'resource'), []);
  await ok(MIGRATE, { organizationId: 'o', documentId: 'z', newDocumentId: 'z3' });
  assert.is((await permissionsOn('z3')).alice.accessRole, 'editor');
});

test('its new document refused: the migration is recorded failed with the message, which is the answer; nothing else changed', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'y' }] });
  // The new document's append is refused (as when another request took the id meanwhile).
  const failing = refusing((c) => c.type === 'AddDocument');
  try {
    await migrateDocument(failing, { organizationId: 'o', documentId: 'y', newDocumentId: 'y2' });
    assert.unreachable('the migration went through');
  } catch (err) {
    assert.instance(err, ApiError);
    assert.is((err as ApiError).message, 'Document already exists');
  }
  const migrationId = await migrationOf('y', 'DocumentMigrationFailed');
  const s = (await ok(STATUS, { organizationId: 'o', migrationId })).data;
  assert.is(s.status, 'failed');
  assert.is(s.error, 'Document already exists');
  assert.is(s.grantsMoved, undefined);
  assert.equal((await ok('/v2/organizations/documents/get', { organizationId: 'o', documentIds: ['y'] })).data.map((d: { id: string }) => d.id), ['y'], 'the document stays where it was');
});

test('two migrations of one document at once, to two new ids: exactly one moves it, the other is refused; no copy (10 rounds)', async () => {
  for (let round = 0; round < 10; round++) {
    const source = `race${round}`;
    await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: source, accessType: 'restricted' }] });
    await ok('/v2/auth/permissions/add', { userId: 'alice', permissions: { resources: [{ type: 'document', id: source, organizationId: 'o', accessRole: 'editor' }] } });
    const targets = [`${source}-a`, `${source}-b`];
    const answers = await Promise.all(targets.map((newDocumentId) => post(MIGRATE, { organizationId: 'o', documentId: source, newDocumentId })));
    const won = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status !== 200);
    assert.is(won.length, 1, `round ${round}: ${answers.map((r) => `${r.status} ${JSON.stringify(r.body)}`).join(' | ')}`);
    const loser = refused[0]!;
    // Refused at its claim (the winner holds the document), or, when the winner had already
    // finished, at its first check (the document is gone from its old id).
    if (loser.status === 400) {
      assert.is(loser.body.error.status, 'FAILED_PRECONDITION');
      assert.match(loser.body.error.message, new RegExp(`^Document "${source}" is being migrated to "${source}-[ab]" \\(migration [^)]+\\); it cannot be migrated again\\.$`));
    } else {
      assert.is(loser.status, 404, JSON.stringify(loser.body));
      assert.is(loser.body.error.message, 'Document does not exist');
    }
    const winner = targets[answers.indexOf(won[0]!)]!;
    const other = targets.find((x) => x !== winner)!;
    const docs = (await ok('/v2/organizations/documents/get', { organizationId: 'o', documentIds: [source, ...targets] })).data.map((d: { id: string }) => d.id);
    assert.equal(docs, [winner], `round ${round}: one document, at the winner's id`);
    assert.is((await permissionsOn(winner)).alice.accessRole, 'editor', 'the grant moved with it');
    const held = (await ok('/v2/users/data/get', { organizationId: 'o', userId: 'alice' })).data.grants.map((g: { resourceId: string }) => g.resourceId);
    assert.ok(held.includes(winner) && !held.includes(other) && !held.includes(source), `round ${round}: alice's grants ${held.join(', ')}`);
  }
});

test('an organization\'s deletion takes its migrations', async () => {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'q' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'q', documents: [{ documentId: 'a' }] });
  const { migrationId } = (await ok(MIGRATE, { organizationId: 'q', documentId: 'a', newDocumentId: 'b' })).data;
  await ok('/v2/organizations/delete', { organizationIds: ['q'] });
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'q' }] });
  assert.is((await post(STATUS, { organizationId: 'q', migrationId })).status, 404);
});

test.run();
