/**
 * Group grants through the HTTP API (semantics §3 rule 7): permissions/add and remove with
 * `group: { groupId }`, their refusals (a user and a group, neither, `context` with a group,
 * a missing group or resource, a temporary grant over a permanent one, the per-group bound),
 * the write side after a folder's deletion, the bound on groups per user, and the OpenAPI
 * document's request schema.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { MAX_GRANTS_PER_GROUP, MAX_GROUPS_PER_USER } from '../commands/group.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.post(url, data, t.headers);
const ok = (url: string, data: unknown) => h.ok(url, data, t.headers);
const FUTURE = Math.floor(Date.now() / 1000) + 3600;
const doc = (id: string, extra: object = {}, organizationId = 'o') => ({ type: 'document', id, organizationId, ...extra });
const add = (groupId: string, resources: object[]) => post('/v2/auth/permissions/add', { group: { groupId }, permissions: { resources } });
const remove = (groupId: string, resources: object[]) => post('/v2/auth/permissions/remove', { group: { groupId }, permissions: { resources } });
const perm = async (userId: string, documentId: string, organizationId = 'o') =>
  (await ok('/v2/auth/permissions/get', { organizationId, userIds: [userId], documentIds: [documentId] })).data[userId].documents[documentId];
const denied = { error: 'User does not have access to document', errorCode: 'permission_denied', accessType: 'restricted' };

test.before(async () => {
  h = await harness();
  t = await h.tenant();
  await ok('/v2/organizations/folders/add', { organizationId: 'o', createOrganization: true, folders: [{ folderId: 'f', accessType: 'restricted' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'd' }, { documentId: 'e' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }, { groupId: 'h', groupName: 'H' }] });
  await ok('/v2/users/add', { organizationId: 'o', users: [{ userId: 'm' }, { userId: 'n' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'g', userIds: ['m'] });
  await ok('/v2/organizations/documents/add', { organizationId: 'p', createOrganization: true, documents: [{ documentId: 'x', accessType: 'restricted' }] });
});
test.after(async () => h.close());

test('add with group: the hosted answer without data; every member gets the grant', async () => {
  const r = await add('g', [doc('d', { accessRole: 'viewer' })]);
  assert.equal(r.body, { result: { status: 'success', message: 'Permissions added successfully.' } });
  assert.equal(await perm('m', 'd'), { accessRole: 'viewer', accessType: 'restricted' });
  assert.equal(await perm('n', 'd'), denied, 'not in the group');
});

test('remove with group: the grant goes from every member; again: "Permission does not exist." (still a success)', async () => {
  await ok('/v2/auth/permissions/add', { group: { groupId: 'g' }, permissions: { resources: [doc('e')] } });
  assert.equal(await perm('m', 'e'), { accessRole: 'editor', accessType: 'restricted' });
  let r = await remove('g', [doc('e')]);
  assert.equal(r.body, { result: { status: 'success', message: 'Permissions removed successfully.' } });
  assert.equal(await perm('m', 'e'), denied);
  r = await remove('g', [doc('e')]);
  assert.equal(r.body, { result: { status: 'success', message: 'Permissions removed successfully.' } });
});

const refusals: Array<[string, string, object, RegExp]> = [
  ['a user and a group', '/v2/auth/permissions/add', { userId: 'm', group: { groupId: 'g' }, permissions: { resources: [doc('d')] } }, /^data\.group cannot be combined with data\.userId or data\.user/],
  ['user.userId and a group', '/v2/auth/permissions/remove', { user: { userId: 'm' }, group: { groupId: 'g' }, permissions: { resources: [doc('d')] } }, /^data\.group cannot be combined/],
  ['neither a user nor a group', '/v2/auth/permissions/add', { permissions: { resources: [doc('d')] } }, /^data\.userId is required \(or data\.user\.userId, or data\.group\.groupId for a group\)/],
  ['neither, on remove', '/v2/auth/permissions/remove', { permissions: { resources: [doc('d')] } }, /^data\.userId is required/],
  ['a group without groupId', '/v2/auth/permissions/add', { group: {}, permissions: { resources: [doc('d')] } }, /data\.group\.groupId/],
  ['an empty groupId', '/v2/auth/permissions/add', { group: { groupId: '' }, permissions: { resources: [doc('d')] } }, /data\.group\.groupId/],
  ['a groupId of 257 characters', '/v2/auth/permissions/add', { group: { groupId: 'g'.repeat(257) }, permissions: { resources: [doc('d')] } }, /data\.group\.groupId must be at most 256 characters/],
  ['context with a group', '/v2/auth/permissions/add', { group: { groupId: 'g' }, permissions: { resources: [doc('e'), doc('d', { context: { access: { team: 'a' } } })] } }, /^data\.permissions\.resources\[1\]\.context is not accepted with data\.group: group grants carry no access fields/],
  ['context with a group, on remove', '/v2/auth/permissions/remove', { group: { groupId: 'g' }, permissions: { resources: [doc('d', { context: { access: { team: 'a' } } })] } }, /^data\.permissions\.resources\[0\]\.context is not accepted with data\.group/],
];
for (const [name, url, data, message] of refusals) {
  test(`refused before anything is stored: ${name}`, async () => {
    const before = await h.services.events.headPosition();
    const r = await post(url, data);
    assert.is(r.status, 400, JSON.stringify(r.body));
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
    assert.match(r.body.error.message, message);
    assert.is(await h.services.events.headPosition(), before, 'nothing appended');
  });
}

test('a group that does not exist in the resources\' organization fails those resources, the others go through', async () => {
  // `g` exists in o, not in p.
  const r = await add('g', [doc('d', { accessRole: 'viewer' }), doc('x', {}, 'p')]);
  assert.is(r.status, 200);
  assert.equal(r.body.result.data, {
    d: { success: true, type: 'document', message: 'Permission added.' },
    x: { success: false, type: 'document', message: 'Organization user group does not exist.' },
  });
  const none = await add('nope', [doc('d'), { type: 'organization', id: 'o' }]);
  assert.equal(none.body.result.data, {
    d: { success: false, type: 'document', message: 'Organization user group does not exist.' },
    o: { success: false, type: 'organization', message: 'Organization user group does not exist.' },
  });
  const gone = await remove('nope', [doc('d')]);
  assert.equal(gone.body.result.data, { d: { success: false, type: 'document', message: 'Organization user group does not exist.' } });
});

test('a missing resource or organization fails alone, as for a user', async () => {
  const r = await add('g', [doc('d', { accessRole: 'viewer' }), doc('missing'), { type: 'folder', id: 'nofolder', organizationId: 'o' }, doc('y', {}, 'no-org'), { type: 'organization', id: 'no-org' }]);
  assert.equal(r.body.result.data, {
    d: { success: true, type: 'document', message: 'Permission added.' },
    missing: { success: false, type: 'document', message: 'Document does not exist.' },
    nofolder: { success: false, type: 'folder', message: 'Folder does not exist.' },
    y: { success: false, type: 'document', message: 'Organization does not exist.' },
    'no-org': { success: false, type: 'organization', message: 'Organization does not exist.' },
  });
  const rm = await remove('g', [doc('missing')]);
  assert.equal(rm.body.result.data, { missing: { success: false, type: 'document', message: 'Document does not exist.' } });
});

test('a temporary group grant never replaces a permanent one: that resource fails', async () => {
  await ok('/v2/auth/permissions/add', { group: { groupId: 'h' }, permissions: { resources: [doc('d')] } });
  const r = await add('h', [doc('d', { accessRole: 'viewer', expiresAt: FUTURE }), doc('e', { expiresAt: FUTURE })]);
  assert.equal(r.body.result.data, {
    d: { success: false, type: 'document', message: 'The group already has permanent access; a temporary grant does not replace it.' },
    e: { success: true, type: 'document', message: 'Permission added.' },
  });
});

test('users/delete without a scope takes the user out of the groups: their access goes', async () => {
  await ok('/v2/users/add', { organizationId: 'o', users: [{ userId: 'leaver' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'h', userIds: ['leaver'] });
  assert.equal(await perm('leaver', 'd'), { accessRole: 'editor', accessType: 'restricted' });
  await ok('/v2/users/delete', { organizationId: 'o', userIds: ['leaver'] });
  assert.equal(await perm('leaver', 'd'), denied);
});

test('a folder deleted and made again: the old permanent group grant is gone on the write side too', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'tmp', accessType: 'restricted' }] });
  await ok('/v2/auth/permissions/add', { group: { groupId: 'g' }, permissions: { resources: [{ type: 'folder', id: 'tmp', organizationId: 'o' }] } });
  await ok('/v2/organizations/folders/delete', { organizationId: 'o', folderId: 'tmp' });
  await h.services.cascade.settle();
  await ok('/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'tmp', accessType: 'restricted' }] });
  const r = await add('g', [{ type: 'folder', id: 'tmp', organizationId: 'o', accessRole: 'viewer', expiresAt: FUTURE }]);
  assert.equal(r.body, { result: { status: 'success', message: 'Permissions added successfully.' } }, 'not refused by the old permanent grant');
  const got = await ok('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['m'], folderIds: ['tmp'] });
  assert.equal(got.data.m.folders.tmp, { accessRole: 'viewer', accessType: 'restricted', expiresAt: FUTURE });
});

test(`a group holds at most ${MAX_GRANTS_PER_GROUP} grants: one more resource fails, naming the bound`, async () => {
  const ids = Array.from({ length: MAX_GRANTS_PER_GROUP + 1 }, (_, i) => `b${i}`);
  await ok('/v2/organizations/documents/add', { organizationId: 'big', createOrganization: true, documents: ids.slice(0, 1000).map((documentId) => ({ documentId })) });
  await ok('/v2/organizations/documents/add', { organizationId: 'big', documents: ids.slice(1000).map((documentId) => ({ documentId })) });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'big', organizationUserGroups: [{ groupId: 'many', groupName: 'Many' }] });
  const first = await add('many', ids.slice(0, MAX_GRANTS_PER_GROUP).map((id) => doc(id, {}, 'big')));
  assert.equal(first.body, { result: { status: 'success', message: 'Permissions added successfully.' } });
  const r = await add('many', [doc(ids[MAX_GRANTS_PER_GROUP]!, {}, 'big'), doc('b0', { accessRole: 'viewer' }, 'big')]);
  assert.is(r.body.result.data[ids[MAX_GRANTS_PER_GROUP]!].success, false);
  assert.match(r.body.result.data[ids[MAX_GRANTS_PER_GROUP]!].message, `a group holds at most ${MAX_GRANTS_PER_GROUP}`);
  assert.equal(r.body.result.data.b0, { success: true, type: 'document', message: 'Permission added.' }, 'a replacement is not one more');
});

test(`a user joins at most ${MAX_GROUPS_PER_USER} groups of one organization`, async () => {
  const groups = Array.from({ length: MAX_GROUPS_PER_USER + 1 }, (_, i) => `k${i}`);
  await ok('/v2/organizations/usergroups/add', { organizationId: 'lots', createOrganization: true, organizationUserGroups: groups.map((groupId) => ({ groupId, groupName: groupId })) });
  await ok('/v2/users/add', { organizationId: 'lots', users: [{ userId: 'joiner' }, { userId: 'other' }] });
  for (const g of groups.slice(0, MAX_GROUPS_PER_USER)) {
    await ok('/v2/organizations/usergroups/users/add', { organizationId: 'lots', organizationUserGroupId: g, userIds: ['joiner'] });
  }
  const r = await ok('/v2/organizations/usergroups/users/add', { organizationId: 'lots', organizationUserGroupId: groups[MAX_GROUPS_PER_USER], userIds: ['joiner', 'other'] });
  assert.is(r.data.joiner.success, false);
  assert.match(r.data.joiner.message, `at most ${MAX_GROUPS_PER_USER} groups in one organization`);
  assert.is(r.data.other.success, true);
  const again = await ok('/v2/organizations/usergroups/users/add', { organizationId: 'lots', organizationUserGroupId: groups[0], userIds: ['joiner'] });
  assert.is(again.data.joiner.success, true, 'already in that group');
  await ok('/v2/organizations/usergroups/users/delete', { organizationId: 'lots', organizationUserGroupId: groups[0], userIds: ['joiner'] });
  const room = await ok('/v2/organizations/usergroups/users/add', { organizationId: 'lots', organizationUserGroupId: groups[MAX_GROUPS_PER_USER], userIds: ['joiner'] });
  assert.is(room.data.joiner.success, true, 'leaving one makes room');
});

test('the OpenAPI document describes the group form of permissions/add and remove', async () => {
  const res = await h.app.inject({ method: 'GET', url: '/openapi.json' });
  const doc = JSON.parse(res.body);
  for (const path of ['/v2/auth/permissions/add', '/v2/auth/permissions/remove']) {
    const op = doc.paths[path].post;
    const body = op.requestBody.content['application/json'].schema;
    const data = body.properties?.data ?? body;
    const text = JSON.stringify(data);
    assert.ok(text.includes('"group"') && text.includes('"groupId"'), `${path}: ${text.slice(0, 300)}`);
    assert.match(op.description, 'group: { groupId }');
  }
});

test.run();
