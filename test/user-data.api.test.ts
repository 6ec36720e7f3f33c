/**
 * Personal data (GDPR): users/data/get, users/data/delete and its status route, and the
 * crypto-shredding behind them (docs/privacy.md): after a deletion the user's name and
 * e-mail are in no store file, no rebuild and no audit entry, while the log keeps their id.
 */
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { userDecider, userStream } from '../commands/user.js';
import { rebuildReadModels } from '../src/ops/rebuild.js';
import { allProjections } from '../projections/index.js';
import { openSecretStore } from '../src/secrets/store.js';
import { processedPayload, rawPayload } from '../src/webhooks/payloads.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.post(url, data, t.headers);
const ok = (url: string, data: unknown) => h.ok(url, data, t.headers);

const NAME = 'Zebulon Quixtaverne';
const EMAIL = 'zebulon.quixtaverne@example.org';
/** Not personal, kept in clear: what shows that the search reads the stores' bytes. */
const GROUP_NAME = 'Quarterly Wombat Gardeners';

test.before(async () => {
  h = await harness();
  t = await h.tenant();
});
test.after(async () => h.close());

/** Every file under DATA_DIR (SQLite databases, their WAL and shared memory) that holds `needle`, as UTF-8 bytes. */
function filesHolding(needle: string): string[] {
  const bytes = Buffer.from(needle, 'utf8');
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (fs.readFileSync(p).includes(bytes)) out.push(path.relative(h.dataDir, p));
    }
  };
  walk(h.dataDir);
  return out;
}

const sqlite = () => process.env.TEST_STORE !== 'postgres';

async function seed(userId: string, name = NAME, email = EMAIL) {
  await ok('/v2/users/add', { organizationId: 'o1', users: [{ userId, name, email }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'd1' }] });
  await ok('/v2/users/add', { organizationId: 'o1', documentId: 'd1', users: [{ userId, accessRole: 'viewer' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'o1', organizationUserGroups: [{ groupId: 'g1', groupName: GROUP_NAME }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o1', organizationUserGroupId: 'g1', userIds: [userId] });
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'o2', organizationName: 'Two' }] });
  await ok('/v2/auth/generate_token', { userId, userProperties: { name, email }, permissions: { resources: [{ type: 'organization', id: 'o2' }] } });
  await ok('/v2/presence/add', { organizationId: 'o1', documentId: 'd1', users: [{ userId, name, email }] });
  // Rewritten entries leave their old bytes in the stores' free space: sealed, they do not matter.
  await ok('/v2/presence/update', { organizationId: 'o1', documentId: 'd1', users: [{ userId, status: 'away' }] });
  await ok('/v2/presence/add', { organizationId: 'o1', documentId: 'd1', users: [{ userId, name, email }] });
}

test('users/data/get: the profile, grants, groups and presence held about a user', async () => {
  await seed('u1');
  const r = await ok('/v2/users/data/get', { organizationId: 'o1', userId: 'u1' });
  assert.is(r.message, 'Data fetched successfully.');
  assert.equal(r.data.profile, { name: NAME, email: EMAIL, initial: 'ZQ' });
  assert.equal(r.data.grants.map((g: any) => [g.resourceType, g.resourceId, g.accessRole]).sort(), [['document', 'd1', 'viewer'], ['organization', 'o1', 'editor']]);
  assert.equal(r.data.groups, ['g1']);
  assert.equal(r.data.presence.map((p: any) => [p.documentId, p.name, p.email]), [['d1', NAME, EMAIL]]);
  for (const k of ['comments', 'reactions', 'recordings', 'notifications']) assert.equal(r.data[k], []);
  assert.is(r.pageToken, undefined);
  const other = await ok('/v2/users/data/get', { organizationId: 'o2', userId: 'u1' });
  assert.equal(other.data.grants.map((g: any) => g.resourceId), ['o2']);
  const nobody = await ok('/v2/users/data/get', { organizationId: 'o1', userId: 'nobody' });
  assert.is(nobody.data.profile, null);
  assert.equal(nobody.data.grants, []);
  assert.is((await post('/v2/users/data/get', { organizationId: 'missing', userId: 'u1' })).status, 404);
});

test('users/data/get pages grants by 100', async () => {
  const documents = Array.from({ length: 101 }, (_, i) => ({ documentId: `p${String(i).padStart(3, '0')}` }));
  await ok('/v2/organizations/documents/add', { organizationId: 'op', createOrganization: true, documents });
  await ok('/v2/auth/permissions/add', {
    user: { userId: 'pager' },
    permissions: { resources: documents.map((d) => ({ type: 'document', id: d.documentId, organizationId: 'op' })) },
  });
  const first = await ok('/v2/users/data/get', { organizationId: 'op', userId: 'pager' });
  assert.is(first.data.grants.length, 100);
  assert.type(first.nextPageToken, 'string');
  assert.is(first.pageToken, first.nextPageToken);
  const second = await ok('/v2/users/data/get', { organizationId: 'op', userId: 'pager', pageToken: first.pageToken });
  assert.is(second.data.grants.length, 1);
  assert.is(second.nextPageToken, undefined);
  const all = [...first.data.grants, ...second.data.grants].map((g: any) => g.resourceId).sort();
  assert.equal(all, documents.map((d) => d.documentId));
});

test('the log holds the personal fields sealed, never in clear', async () => {
  const events = await h.services.events.readStream(userStream(t.apiKey, 'u1'));
  const added = events.find((e) => e.type === 'UserAdded')!;
  const data = added.data as Record<string, string>;
  assert.is(data.userId, 'u1');
  for (const f of ['name', 'email', 'initial']) assert.ok(data[f]!.startsWith('enc:v1:'), `${f}: ${data[f]}`);
  assert.not.ok(JSON.stringify(events).includes(NAME));
  // Webhooks say that a profile changed, never to what (nor ciphertext of it).
  const raw = rawPayload(added);
  assert.equal([(raw.data as any).name, (raw.data as any).email, (raw.data as any).userId], ['__redacted__', '__redacted__', 'u1']);
  assert.is(processedPayload(added).message, 'User added: u1.');
  const presence = (await ok('/v2/presence/get', { organizationId: 'o1', documentId: 'd1' })).data;
  assert.equal(presence.map((p: any) => [p.userId, p.name, p.email]), [['u1', NAME, EMAIL]]);
  if (sqlite()) {
    assert.ok(filesHolding(GROUP_NAME).length > 0, 'the search sees what the stores hold in clear');
    assert.equal([...filesHolding(NAME), ...filesHolding(EMAIL)], [], 'the stores hold the name and e-mail sealed only');
  }
});

test('users/data/delete: erased everywhere, the id and what happened kept', async () => {
  const r = await ok('/v2/users/data/delete', { userIds: ['u1', 'u1'] });
  assert.is(r.message, 'Data deletion process has been initiated.');
  assert.is(r.data.tasksCount, 1);
  const status = await ok('/v2/users/data/delete/status', { jobId: r.data.jobId });
  assert.equal({ ...status.data, lastTaskCompletedTime: typeof status.data.lastTaskCompletedTime }, { isDeleteCompleted: true, tasksLeft: 0, lastTaskCompletedTime: 'number' });
  assert.is((await post('/v2/users/data/delete/status', { jobId: 'nope' })).status, 404);

  // Access, groups, presence and profile are gone.
  assert.equal((await ok('/v2/users/get', { organizationId: 'o1' })).data, []);
  const data = await ok('/v2/users/data/get', { organizationId: 'o1', userId: 'u1' });
  assert.equal([data.data.profile, data.data.grants, data.data.groups, data.data.presence], [null, [], [], []]);
  assert.equal((await ok('/v2/users/data/get', { organizationId: 'o2', userId: 'u1' })).data.grants, []);

  // The log still says what happened to u1; its personal fields no longer open.
  const events = await h.services.events.readStream(userStream(t.apiKey, 'u1'));
  assert.equal(events.map((e) => e.type), ['UserAdded', 'UserErased']);
  const sealed = events[0]!.data as Record<string, string>;
  const opened = await h.services.secrets.personal.open(t.apiKey, 'u1', { name: sealed.name, email: sealed.email });
  assert.equal(opened, { name: null, email: null });

  // An audit replay shows the id, never the name.
  const audit = await ok('/v2/audit/events/get', { types: ['UserAdded', 'UserErased'] });
  const mine = audit.data.filter((e: any) => e.data.userId === 'u1');
  assert.equal(mine.map((e: any) => e.type), ['UserAdded', 'UserErased']);
  assert.equal([mine[0].data.name, mine[0].data.email], ['__redacted__', '__redacted__']);
  assert.not.ok(JSON.stringify(audit).includes(NAME) || JSON.stringify(audit).includes(EMAIL));

  // The access history keeps u1's interval on d1, closed by the deletion, in ids only.
  const intervals = (await ok('/v2/auth/access/history', { organizationId: 'o1', documentId: 'd1' })).data;
  const u1 = intervals.filter((i: any) => i.userId === 'u1');
  assert.ok(u1.length > 0 && u1.every((i: any) => i.to !== null), JSON.stringify(intervals));
  assert.not.ok(JSON.stringify(intervals).includes(NAME));

  if (sqlite()) assert.equal([...filesHolding(NAME), ...filesHolding(EMAIL)], [], 'no store file holds the name or e-mail');
});

test('a rebuild after the deletion shows the id only', async () => {
  await rebuildReadModels({ events: h.services.events, generations: h.services.generations, projections: allProjections });
  await h.services.cascade.settle();
  assert.equal((await ok('/v2/users/data/get', { organizationId: 'o1', userId: 'u1' })).data.profile, null);
  const audit = await ok('/v2/audit/events/get', { types: ['UserAdded'] });
  assert.ok(audit.data.some((e: any) => e.data.userId === 'u1'));
  assert.not.ok(JSON.stringify(audit).includes(NAME));
  if (sqlite()) assert.equal([...filesHolding(NAME), ...filesHolding(EMAIL)], []);
});

test('a user added again after a deletion gets a fresh key: the new profile shows, the old one stays erased', async () => {
  await ok('/v2/users/add', { organizationId: 'o1', users: [{ userId: 'u1', name: 'New Person', email: 'new@example.com' }] });
  const rows = (await ok('/v2/users/get', { organizationId: 'o1' })).data;
  assert.equal(rows, [{ userId: 'u1', name: 'New Person', email: 'new@example.com', initial: 'NP', accessRole: 'editor' }]);
  const events = await h.services.events.readStream(userStream(t.apiKey, 'u1'));
  const first = events[0]!.data as Record<string, string>;
  assert.equal(await h.services.secrets.personal.open(t.apiKey, 'u1', { name: first.name }), { name: null });
});

test('a profile in clear from before sealing shows as it is, and deletion removes its row', async () => {
  // What users/add wrote before sealing: the command with clear fields.
  const now = Date.now();
  await h.services.commands.handle(userDecider, userStream(t.apiKey, 'legacy'), {
    type: 'SaveUser', data: { userId: 'legacy', name: 'Old Timer', email: 'old@example.com' }, metadata: { now },
  }, { requestId: 'test', actor: 'test', time: now, apiKey: t.apiKey });
  // The next request waits for its own write, after this one.
  await ok('/v2/users/add', { organizationId: 'o1', users: [{ userId: 'legacy' }] });
  const row = (await ok('/v2/users/get', { organizationId: 'o1', userIds: ['legacy'] })).data[0];
  assert.equal(row, { userId: 'legacy', name: 'Old Timer', email: 'old@example.com', initial: 'OT', accessRole: 'editor' });
  await ok('/v2/users/data/delete', { userIds: ['legacy'], organizationIds: ['o1'] });
  assert.equal((await ok('/v2/users/data/get', { organizationId: 'o1', userId: 'legacy' })).data.profile, null);
});

test('a key destroyed elsewhere: what another instance cached of it no longer opens', async () => {
  const mine = h.services.secrets.personal;
  const other = (await openSecretStore(h.services.read, h.services.config, Date.now)).personal;
  const sealed = (await mine.sealer(t.apiKey, 'c1'))('Cached Name');
  assert.equal(await other.open(t.apiKey, 'c1', { name: sealed }), { name: 'Cached Name' });
  assert.equal(await other.open(t.apiKey, 'c1', { name: sealed }), { name: 'Cached Name' }, 'from its cache');
  await mine.shred(t.apiKey, 'c1');
  assert.equal(await other.open(t.apiKey, 'c1', { name: sealed }), { name: null });
  assert.equal(await mine.open(t.apiKey, 'c1', { name: sealed }), { name: null });
  // Bound to its user: the same ciphertext is not another user's value.
  const fresh = (await mine.sealer(t.apiKey, 'c2'))('Other');
  assert.equal(await mine.open(t.apiKey, 'c3', { name: fresh }), { name: null });
});

test('deleting the API key destroys its users\' keys too', async () => {
  const other = await h.tenant();
  await h.ok('/v2/users/add', { organizationId: 'o', users: [{ userId: 'k1', name: 'Keyed Person' }] }, other.headers);
  const sealed = (await h.services.events.readStream(userStream(other.apiKey, 'k1')))[0]!.data as Record<string, string>;
  assert.equal(await h.services.secrets.personal.open(other.apiKey, 'k1', { name: sealed.name }), { name: 'Keyed Person' });
  await h.ok('/v2/workspace/apikey/delete', { apiKey: other.apiKey }, other.workspaceHeaders);
  assert.equal(await h.services.secrets.personal.open(other.apiKey, 'k1', { name: sealed.name }), { name: null });
  // Another key's users keep theirs.
  assert.is((await ok('/v2/users/get', { organizationId: 'o1', userIds: ['u1'] })).data[0].name, 'New Person');
});

test('a user with nothing personal gets no key', async () => {
  await ok('/v2/users/add', { organizationId: 'o1', users: [{ userId: 'bare' }, { userId: 'named', name: 'Named One' }] });
  const docs = await h.services.read.find('secret_keys', {});
  const people = docs.map((d) => d._id).filter((id) => id.includes('"person"'));
  assert.ok(people.some((id) => id.includes('"named"')));
  assert.not.ok(people.some((id) => id.includes('"bare"')));
});

/**
 * Issue 33, finding 3. users/data/delete finds where the user is through the read models; a
 * write acknowledged before them (READ_YOUR_WRITES_TIMEOUT_MS passed on a loaded host) was
 * not there yet, so the erasure reported itself completed while that access stayed, and came
 * into sight in permissions/get as soon as the read models caught up. A process whose read
 * models move only when the test says so (`follow: false`) makes that lag exact.
 */
test('users/data/delete after a write the read models lag behind: refused until they catch up; then every access ends, as events', async () => {
  const lag = await harness({ READ_YOUR_WRITES_TIMEOUT_MS: '0' }, { follow: false });
  try {
    const tenant = await lag.tenant();
    const caughtUp = () => lag.services.projections.catchUp();
    await caughtUp();
    const run = async (url: string, data: unknown) => {
      const r = await lag.ok(url, data, tenant.headers);
      await caughtUp();
      return r;
    };
    // In o: a member (editor), a folder grant, a document grant, a group holding a folder grant.
    await run('/v2/organizations/folders/add', { organizationId: 'o', createOrganization: true, folders: [{ folderId: 'f', accessType: 'restricted' }, { folderId: 'gf', accessType: 'restricted' }] });
    await run('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'd', accessType: 'restricted' }, { documentId: 'od', accessType: 'organizationPrivate' }] });
    await run('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'fd' }] });
    await run('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'gf', documents: [{ documentId: 'gd' }] });
    await run('/v2/users/add', { organizationId: 'o', users: [{ userId: 'eve', name: 'Eve Erased' }] });
    await run('/v2/auth/permissions/add', { userId: 'eve', permissions: { resources: [{ type: 'folder', id: 'f', organizationId: 'o', accessRole: 'viewer' }, { type: 'document', id: 'd', organizationId: 'o' }] } });
    await run('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
    await run('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'g', userIds: ['eve'] });
    await run('/v2/auth/permissions/add', { group: { groupId: 'g' }, permissions: { resources: [{ type: 'folder', id: 'gf', organizationId: 'o' }] } });
    await run('/v2/organizations/documents/add', { organizationId: 'o2', createOrganization: true, documents: [{ documentId: 'o2d', accessType: 'organizationPrivate' }] });
    // In o2: a membership acknowledged while the read models are behind.
    await lag.ok('/v2/users/add', { organizationId: 'o2', users: [{ userId: 'eve' }] }, tenant.headers);

    const early = await lag.post('/v2/users/data/delete', { userIds: ['eve'] }, tenant.headers);
    assert.is(early.status, 503, JSON.stringify(early.body));
    assert.is(early.body.error.status, 'UNAVAILABLE');
    assert.match(early.body.error.message, /^The read models are behind the log.*Nothing was erased; send the request again\.$/);
    await caughtUp();
    const types = (await lag.services.events.readAll()).map((e) => e.type);
    assert.not.ok(types.includes('UserErased') || types.includes('GrantRevoked'), 'nothing erased');

    // Sent again while the read models catch up: it waits for them, then erases everything.
    const pending = lag.post('/v2/users/data/delete', { userIds: ['eve'] }, tenant.headers);
    await caughtUp();
    const r = await pending;
    assert.is(r.status, 200, JSON.stringify(r.body));
    await caughtUp();
    const status = await lag.ok('/v2/users/data/delete/status', { jobId: r.body.result.data.jobId }, tenant.headers);
    assert.is(status.data.isDeleteCompleted, true);

    const perms = async (organizationId: string, q: Record<string, string[]>) =>
      (await lag.ok('/v2/auth/permissions/get', { organizationId, userIds: ['eve'], ...q }, tenant.headers)).data.eve;
    const roles = (entries: Record<string, { accessRole?: string }>) => Object.values(entries).map((e) => e.accessRole ?? 'denied');
    const inO = await perms('o', { folderIds: ['f', 'gf'], documentIds: ['d', 'od', 'fd', 'gd'] });
    assert.equal([...roles(inO.organization), ...roles(inO.folders), ...roles(inO.documents)], Array(7).fill('denied'), JSON.stringify(inO));
    const inO2 = await perms('o2', { documentIds: ['o2d'] });
    assert.equal([...roles(inO2.organization), ...roles(inO2.documents)], ['denied', 'denied'], JSON.stringify(inO2));

    // The access history: each interval ends at the erasure, closed by its revocation event.
    const erasedAt = status.data.lastTaskCompletedTime;
    for (const [organizationId, documentId, closedBy] of [['o', 'd', 'GrantRevoked'], ['o', 'od', 'GrantRevoked'], ['o', 'fd', 'GrantRevoked'], ['o', 'gd', 'UserGroupMemberRemoved'], ['o2', 'o2d', 'GrantRevoked']] as const) {
      const intervals = (await lag.ok('/v2/auth/access/history', { organizationId, documentId, userId: 'eve' }, tenant.headers)).data;
      const last = intervals[intervals.length - 1];
      assert.ok(last && last.to !== null && last.to <= erasedAt, `${documentId}: ${JSON.stringify(intervals)}`);
      assert.is(last.closedBy.type, closedBy, `${documentId}: ${JSON.stringify(last)}`);
    }

    // The same id added again starts with what that call gives, nothing of before.
    await run('/v2/users/add', { organizationId: 'o', users: [{ userId: 'eve' }] });
    const again = await perms('o', { folderIds: ['f', 'gf'], documentIds: ['d', 'fd', 'gd'] });
    assert.equal([...roles(again.organization), ...roles(again.folders), ...roles(again.documents)], ['editor', 'denied', 'denied', 'denied', 'denied', 'denied'], JSON.stringify(again));
    const data = (await lag.ok('/v2/users/data/get', { organizationId: 'o', userId: 'eve' }, tenant.headers)).data;
    assert.equal([data.grants.map((g: { resourceId: string }) => g.resourceId), data.groups], [['o'], []]);
    assert.equal(roles((await perms('o2', { documentIds: ['o2d'] })).documents), ['denied']);
  } finally {
    await lag.close();
  }
});

test('users/data/delete: bounds', async () => {
  const many = Array.from({ length: 101 }, (_, i) => `u${i}`);
  const r = await post('/v2/users/data/delete', { userIds: many });
  assert.is(r.status, 400);
  assert.is((await post('/v2/users/data/delete', { userIds: [] })).status, 400);
});

test.run();
