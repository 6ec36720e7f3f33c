/** API tests for users, user groups and permissions add/remove. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.post(url, data, t.headers);
const ok = (url: string, data: unknown) => h.ok(url, data, t.headers);
const perm = async (userId: string, kind: 'documents' | 'folders', id: string) =>
  (await ok('/v2/auth/permissions/get', { organizationId: 'o', userIds: [userId], [kind === 'documents' ? 'documentIds' : 'folderIds']: [id] })).data[userId][kind][id];

test.before(async () => {
  h = await harness();
  t = await h.tenant();
});
test.after(async () => h.close());

test('users/add: creates the organization, profile with derived initial, grant at each scope', async () => {
  let r = await ok('/v2/users/add', { organizationId: 'o', users: [{ userId: 'u1', name: 'Ada Lovelace', email: 'ada@example.com' }, { userId: 'u2', name: 'Bob', accessRole: 'viewer' }] });
  assert.is(r.message, 'User(s) processed successfully.');
  assert.equal(r.data.u1, { success: true, id: 'u1', message: 'User added.' });
  r = await ok('/v2/users/get', { organizationId: 'o' });
  assert.is(r.message, 'User(s) retrieved successfully.');
  assert.equal(r.data, [
    { userId: 'u1', name: 'Ada Lovelace', email: 'ada@example.com', initial: 'AL', accessRole: 'editor' },
    { userId: 'u2', name: 'Bob', initial: 'B', accessRole: 'viewer' },
  ]);
  r = await ok('/v2/users/add', { organizationId: 'o', folderId: 'F', createFolder: true, users: [{ userId: 'u3', name: 'Cy' }] });
  assert.is(r.data.u3.success, true);
  r = await ok('/v2/users/add', { organizationId: 'o', folderId: 'F', documentId: 'D', createDocument: true, users: [{ userId: 'u4', name: 'Di' }] });
  assert.is(r.data.u4.success, true);
  assert.equal((await ok('/v2/users/get', { organizationId: 'o', folderId: 'F' })).data.map((u: any) => u.userId), ['u3']);
  assert.equal((await ok('/v2/users/get', { organizationId: 'o', documentId: 'D' })).data.map((u: any) => u.userId), ['u4']);
  assert.equal((await ok('/v2/users/get', { organizationId: 'o' })).data.map((u: any) => u.userId), ['u1', 'u2'], 'folder and document users are not org members');
  const d = (await ok('/v2/organizations/documents/get', { organizationId: 'o', documentIds: ['D'] })).data[0];
  assert.is(d.folderId, 'F');
  const missing = await post('/v2/users/add', { organizationId: 'o', folderId: 'nope', users: [{ userId: 'x' }] });
  assert.is(missing.status, 404);
  assert.is(missing.body.error.message, 'Folder does not exist.');
});

test('users/get: userIds filter and paging with tokens', async () => {
  let r = await ok('/v2/users/get', { organizationId: 'o', userIds: ['u2', 'zz', 'u3'] });
  assert.equal(r.data.map((u: any) => u.userId), ['u2']);
  r = await ok('/v2/users/get', { organizationId: 'o', pageSize: 1 });
  assert.equal(r.data.map((u: any) => u.userId), ['u1']);
  assert.is(r.nextPageToken, r.pageToken);
  r = await ok('/v2/users/get', { organizationId: 'o', pageSize: 1, pageToken: r.pageToken });
  assert.equal(r.data.map((u: any) => u.userId), ['u2']);
  assert.is(r.pageToken, undefined);
  assert.is((await post('/v2/users/get', { organizationId: 'o', userIds: Array(31).fill('a') })).status, 400);
});

test('users/update: profile and role; a user without access at the scope does not exist', async () => {
  const r = await ok('/v2/users/update', { organizationId: 'o', users: [{ userId: 'u2', name: 'Bobby Tables', accessRole: 'editor' }, { userId: 'u3', name: 'x' }] });
  assert.is(r.message, 'User(s) processed successfully.');
  assert.equal(r.data.u2, { success: true, id: 'u2', message: 'User updated.' });
  assert.equal(r.data.u3, { success: false, message: 'User does not exist.', id: 'u3' });
  const u2 = (await ok('/v2/users/get', { organizationId: 'o', userIds: ['u2'] })).data[0];
  assert.equal(u2, { userId: 'u2', name: 'Bobby Tables', initial: 'BT', accessRole: 'editor' }, 'an e-mail never given is absent, not ""');
});

test('groups: add, add users (members only), delete users, deleteAll, users/get by group', async () => {
  let r = await ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }, { groupId: 'h', groupName: 'H' }] });
  assert.is(r.message, 'Organization User Groups added successfully.');
  assert.equal(r.data.g, { success: true, id: 'g', message: 'Organization user group added.' });
  r = await ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
  assert.equal(r.data.g, { success: false, id: 'g', message: 'Organization user group already exists.' });
  r = await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'g', userIds: ['u1', 'u2', 'u3'] });
  assert.is(r.message, 'Added organization users to group successfully.');
  assert.equal(r.data.u1, { success: true, organizationUserGroupId: 'g', message: 'User added to organization user group.' });
  assert.equal(r.data.u3, { success: false, organizationUserGroupId: 'g', message: 'User is not a member of the organization.' });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'h', userIds: ['u1', 'u2'] });
  assert.equal((await ok('/v2/users/get', { organizationId: 'o', organizationUserGroupIds: ['g'] })).data.map((u: any) => u.userId), ['u1', 'u2']);
  r = await ok('/v2/organizations/usergroups/users/delete', { organizationId: 'o', organizationUserGroupId: 'g', userIds: ['u2', 'u9'] });
  assert.is(r.message, 'Deleted users from group successfully.');
  assert.equal(r.data.u2, { success: true, organizationUserGroupId: 'g', message: 'User deleted from organization user group.' });
  assert.is(r.data.u9.success, false);
  r = await ok('/v2/organizations/usergroups/users/delete', { organizationId: 'o', organizationUserGroupId: 'g', deleteAll: true });
  assert.equal(Object.keys(r.data), ['u1']);
  assert.equal((await ok('/v2/users/get', { organizationId: 'o', organizationUserGroupIds: ['g'] })).data, []);
  const neither = await post('/v2/organizations/usergroups/users/delete', { organizationId: 'o', organizationUserGroupId: 'g' });
  assert.is(neither.status, 400);
  const noGroup = await post('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'zz', userIds: ['u1'] });
  assert.is(noGroup.status, 404);
});

test('users/delete: scope removal, and whole-organization removal takes grants and groups too', async () => {
  await ok('/v2/users/add', { organizationId: 'o', documentId: 'D', users: [{ userId: 'u1' }] });
  let r = await ok('/v2/users/delete', { organizationId: 'o', documentId: 'D', userIds: ['u4', 'u2'] });
  assert.is(r.message, 'User(s) deleted successfully.');
  assert.equal(r.data.u4, { success: true, message: 'User removed.' });
  assert.equal(r.data.u2, { success: false, message: 'User does not exist.' });
  r = await ok('/v2/users/delete', { organizationId: 'o', userIds: ['u1', 'ghost'] });
  assert.equal(r.data.u1, { success: true, message: 'User removed.' });
  assert.equal(r.data.ghost, { success: false, message: 'User does not exist.' });
  assert.equal((await ok('/v2/users/get', { organizationId: 'o' })).data.map((u: any) => u.userId), ['u2']);
  assert.equal((await ok('/v2/users/get', { organizationId: 'o', documentId: 'D' })).data, [], 'document grant went too');
  assert.equal((await ok('/v2/users/get', { organizationId: 'o', organizationUserGroupIds: ['h'] })).data.map((u: any) => u.userId), ['u2']);
});

test('permissions/add and remove: both userId shapes, per-resource results, missing resources fail', async () => {
  await ok('/v2/organizations/folders/access/update', { organizationId: 'o', folderIds: ['F'], accessType: 'restricted' });
  assert.is((await perm('p', 'folders', 'F')).errorCode, 'permission_denied');
  let r = await ok('/v2/auth/permissions/add', {
    user: { userId: 'p' },
    permissions: { resources: [{ type: 'folder', id: 'F', organizationId: 'o', accessRole: 'viewer' }, { type: 'document', id: 'nope', organizationId: 'o' }, { type: 'organization', id: 'no-org' }] },
  });
  assert.is(r.message, 'Permissions added successfully.');
  assert.equal(r.data.F, { success: true, type: 'folder', message: 'Permission added.' });
  assert.equal(r.data.nope, { success: false, type: 'document', message: 'Document does not exist.' });
  assert.equal(r.data['no-org'], { success: false, type: 'organization', message: 'Organization does not exist.' });
  assert.equal(await perm('p', 'folders', 'F'), { accessRole: 'viewer', accessType: 'restricted' });
  r = await ok('/v2/auth/permissions/remove', { userId: 'p', permissions: { resources: [{ type: 'folder', id: 'F', organizationId: 'o' }, { type: 'folder', id: 'nof', organizationId: 'o' }] } });
  assert.is(r.message, 'Permissions removed successfully.');
  assert.equal(r.data.F, { success: true, type: 'folder', message: 'Permission removed.' });
  assert.equal(r.data.nof, { success: false, type: 'folder', message: 'Folder does not exist.' });
  assert.is((await perm('p', 'folders', 'F')).errorCode, 'permission_denied');
  for (const bad of [
    { permissions: { resources: [{ type: 'organization', id: 'o' }] } },
    { userId: 'p', permissions: { resources: [{ type: 'folder', id: 'F' }] } },
    { userId: 'p', permissions: { resources: [{ type: 'team', id: 'F' }] } },
    { userId: 'p', permissions: { resources: [{ type: 'organization', id: 'o', expiresAt: 'soon' }] } },
    { userId: { $gt: '' }, permissions: { resources: [{ type: 'organization', id: 'o' }] } },
    { userId: 'p', permissions: { resources: Array(1001).fill({ type: 'organization', id: 'o' }) } },
  ]) {
    for (const url of ['/v2/auth/permissions/add', '/v2/auth/permissions/remove']) {
      const res = await post(url, bad);
      assert.is(res.status, 400, `${url} ${JSON.stringify(bad).slice(0, 100)} ${JSON.stringify(res.body)}`);
      assert.is(res.body.error.status, 'INVALID_ARGUMENT');
    }
  }
});

test('bad input on users and groups endpoints gets the failure envelope', async () => {
  const long = 'x'.repeat(5000);
  const gt = { $gt: '' };
  const cases: Array<[string, unknown]> = [
    ['/v2/users/add', { organizationId: 'o' }],
    ['/v2/users/add', { organizationId: 'o', users: [{ userId: long }] }],
    ['/v2/users/add', { organizationId: 'o', users: [{ userId: gt }] }],
    ['/v2/users/add', { organizationId: 'o', users: [{ userId: 'a', email: 'not-an-email' }] }],
    ['/v2/users/add', { organizationId: 'o', users: [{ userId: 'a', accessRole: 'owner' }] }],
    ['/v2/users/add', { organizationId: 'o', users: Array.from({ length: 1001 }, (_, i) => ({ userId: `u${i}` })) }],
    ['/v2/users/update', { organizationId: 'o', users: [{ userId: 'a', name: 5 }] }],
    ['/v2/users/delete', { organizationId: 'o', userIds: [long] }],
    ['/v2/users/delete', { organizationId: gt, userIds: ['a'] }],
    ['/v2/users/get', { organizationId: 'o', pageSize: 5000 }],
    ['/v2/users/get', { organizationId: 'o', pageToken: 'bogus' }],
    ['/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupName: 'G' }] }],
    ['/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: gt, groupName: 'x' }] }],
    ['/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: long, userIds: ['a'] }],
    ['/v2/organizations/usergroups/users/delete', { organizationId: 'o', organizationUserGroupId: 'g', userIds: 'a' }],
    ['/v2/organizations/usergroups/users/delete', { organizationId: 'o', organizationUserGroupId: 'g', deleteAll: 'yes' }],
  ];
  for (const [url, data] of cases) {
    const r = await post(url, data);
    assert.is(r.status, 400, `${url}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
    assert.match(r.body.error.message, /data\./);
  }
});

test.run();
