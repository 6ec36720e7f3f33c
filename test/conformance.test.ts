/**
 * Spec-conformance tests: one named test per rule of the contract
 * (docs/contract/collaboration-rest-api.md and docs/contract/semantics.md, §-numbers
 * below), through the HTTP API. Each organization id is fresh per test, so tests do not
 * depend on one another.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { settleCascades } from '../src/http/routes/cascade.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.post(url, data, t.headers);
const ok = async (url: string, data: unknown) => {
  const result = await h.ok(url, data, t.headers);
  assert.is(result.status, 'success');
  return result;
};
const perm = async (org: string, userId: string, kind: 'documents' | 'folders', id: string) =>
  (await ok('/v2/auth/permissions/get', { organizationId: org, userIds: [userId], [kind === 'documents' ? 'documentIds' : 'folderIds']: [id] })).data[userId][kind][id];
const denied = (accessType: string, what = 'document') => ({ error: `User does not have access to ${what}`, errorCode: 'permission_denied', accessType });

test.before(async () => {
  h = await harness();
  t = await h.tenant();
});
test.after(async () => h.close());

// ---- §0/§7 success messages (the hosted API's, character for character) and §1 batch shapes ----

test('§0 folders: top-level and per-item messages, data keyed by folderId with id echoed', async () => {
  let r = await ok('/v2/organizations/folders/add', { organizationId: 'm1', createOrganization: true, folders: [{ folderId: 'a' }, { folderId: 'b', parentFolderId: 'a' }] });
  assert.is(r.message, 'Folder created successfully.');
  assert.equal(r.data, { a: { success: true, id: 'a', message: 'Folder added.' }, b: { success: true, id: 'b', message: 'Folder added.' } });
  r = await ok('/v2/organizations/folders/add', { organizationId: 'm1', folders: [{ folderId: 'a' }, { folderId: 'c', parentFolderId: 'zz' }] });
  assert.is(r.data.a.success, false);
  assert.is(r.data.a.id, 'a');
  assert.match(r.data.a.message, /^Folder already exists/);
  assert.is(r.data.c.success, false, 'unknown parentFolderId is a per-item failure');
  r = await ok('/v2/organizations/folders/update', { organizationId: 'm1', folders: [{ folderId: 'b', folderName: 'B' }] });
  assert.is(r.message, 'Folder Updated successfully.');
  assert.equal(r.data.b, { success: true, id: 'b', message: 'Folder Updated.' });
  r = await ok('/v2/organizations/folders/access/update', { organizationId: 'm1', folderIds: ['a'], accessType: 'restricted' });
  assert.is(r.message, 'Updated access for folders successfully.');
  assert.equal(r.data.a, { success: true, accessType: 'restricted', message: 'Folder access type updated.' });
  r = await ok('/v2/organizations/folders/access/update', { organizationId: 'm1', folderIds: ['b'], inheritFromParent: true });
  assert.is(r.message, 'Folder access type updated.');
  assert.equal(r.data.b, { success: true, accessType: null, inheritFromParent: true, message: 'Folder access type updated.' });
  r = await ok('/v2/organizations/folders/delete', { organizationId: 'm1', folderId: 'a' });
  assert.equal(r, { status: 'success', message: 'Folder deletion initiated successfully.', data: null });
});

test('§0 documents: top-level and per-item messages, data keyed by documentId with id echoed', async () => {
  let r = await ok('/v2/organizations/documents/add', { organizationId: 'm2', createOrganization: true, documents: [{ documentId: 'd1' }, { documentId: 'd2' }] });
  assert.is(r.message, 'Document(s) added successfully.');
  assert.equal(r.data.d1, { success: true, id: 'd1', message: 'Added Successfully' });
  r = await ok('/v2/organizations/documents/add', { organizationId: 'm2', documents: [{ documentId: 'd1' }] });
  assert.equal(r.data.d1, { success: false, id: 'd1', message: 'Document already exists', code: 'already-exists' });
  r = await ok('/v2/organizations/documents/update', { organizationId: 'm2', documents: [{ documentId: 'd1', documentName: 'One' }, { documentId: 'nx' }] });
  assert.is(r.message, 'Document(s) updated successfully.');
  assert.equal(r.data.d1, { success: true, id: 'd1', message: 'Updated Successfully' });
  assert.equal(r.data.nx, { success: false, id: 'nx', message: 'Document does not exist', code: 'not-found' });
  r = await ok('/v2/organizations/documents/access/update', { organizationId: 'm2', documentIds: ['d1'], accessType: 'restricted' });
  assert.is(r.message, 'Updated access for documents successfully.');
  assert.equal(r.data.d1, { success: true, accessType: 'restricted', message: 'Document access type updated.' });
  r = await ok('/v2/organizations/documents/access/disablestate/update', { organizationId: 'm2', documentIds: ['d1'], disabled: true });
  assert.is(r.message, 'Updated disable state for documents successfully.');
  assert.equal(r.data.d1, { success: true, disabled: true, message: 'Document disabled state updated.' });
  r = await ok('/v2/organizations/documents/get', { organizationId: 'm2' });
  assert.is(r.message, 'Document(s) retrieved successfully.');
  r = await ok('/v2/organizations/documents/delete', { organizationId: 'm2', documentIds: ['d1', 'nx'] });
  assert.is(r.message, 'Document(s) deleted successfully.');
  assert.equal(r.data.d1, { success: true, id: 'd1', message: 'Deleted Successfully' });
  assert.equal(r.data.nx, { success: true, id: 'nx', message: 'Document does not exist' }, 'spec: missing document is success true');
});

test('§0 users and groups: top-level and per-item messages', async () => {
  let r = await ok('/v2/users/add', { organizationId: 'm3', users: [{ userId: 'u1', name: 'Ann' }, { userId: 'u2' }] });
  assert.is(r.message, 'User(s) processed successfully.');
  assert.equal(r.data.u1, { success: true, id: 'u1', message: 'User added.' });
  r = await ok('/v2/users/update', { organizationId: 'm3', users: [{ userId: 'u1', name: 'Anne' }, { userId: 'nx' }] });
  assert.is(r.message, 'User(s) processed successfully.');
  assert.is(r.data.u1.message, 'User updated.');
  assert.is(r.data.nx.success, false);
  assert.is(r.data.nx.message, 'User does not exist.');
  r = await ok('/v2/organizations/usergroups/add', { organizationId: 'm3', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
  assert.is(r.message, 'Organization User Groups added successfully.');
  assert.equal(r.data.g, { success: true, id: 'g', message: 'Organization user group added.' });
  r = await ok('/v2/organizations/usergroups/users/add', { organizationId: 'm3', organizationUserGroupId: 'g', userIds: ['u1', 'u2'] });
  assert.is(r.message, 'Added organization users to group successfully.');
  assert.is(r.data.u1.message, 'User added to organization user group.');
  r = await ok('/v2/organizations/usergroups/users/delete', { organizationId: 'm3', organizationUserGroupId: 'g', userIds: ['u1'] });
  assert.is(r.message, 'Deleted users from group successfully.');
  assert.equal(r.data.u1, { success: true, organizationUserGroupId: 'g', message: 'User deleted from organization user group.' });
  r = await ok('/v2/users/delete', { organizationId: 'm3', userIds: ['u1', 'nx'] });
  assert.is(r.message, 'User(s) deleted successfully.');
  assert.is(r.data.u1.success, true);
  assert.is(r.data.u1.message, 'User removed.');
  assert.is(r.data.nx.success, false);
  assert.is(r.data.nx.message, 'User does not exist.');
});

test('§0/§7 permissions, token, presence, agents messages', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'm4', createOrganization: true, documents: [{ documentId: 'd' }] });
  let r = await ok('/v2/auth/permissions/add', { user: { userId: 'u' }, permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'm4' }] } });
  assert.equal(r, { status: 'success', message: 'Permissions added successfully.' }, 'no data when every resource went through');
  r = await ok('/v2/auth/permissions/get', { organizationId: 'm4', userIds: ['u'], documentIds: ['d'] });
  assert.is(r.message, 'User permissions retrieved successfully.');
  r = await ok('/v2/auth/permissions/remove', { userId: 'u', permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'm4' }] } });
  assert.equal(r, { status: 'success', message: 'Permissions removed successfully.' });
  r = await ok('/v2/auth/generate_token', { userId: 'u', userProperties: { name: 'U', email: 'u@example.com' }, permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'm4' }] } });
  assert.is(r.message, 'Token generated successfully.');
  assert.type(r.data.token, 'string');
  r = await ok('/v2/presence/delete', { organizationId: 'm4', documentId: 'd', userIds: ['u'] });
  assert.equal(r, { status: 'success', message: 'Presence deleted successfully.', data: { success: true } });
  r = await ok('/v2/agents/get', {});
  assert.is(r.message, 'Agents fetched successfully'); // the hosted API's words (semantics §0, §7)
  assert.ok(Array.isArray(r.data.agents));
});

// ---- §4 folders and documents ----

test('§4 folders/delete of a missing folder answers { error: { code: "not-found", message: "Folder not found." } }', async () => {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'fd' }] });
  const r = await post('/v2/organizations/folders/delete', { organizationId: 'fd', folderId: 'nope' });
  assert.is(r.body.error.code, 'not-found');
  assert.is(r.body.error.message, 'Folder not found.');
});

test('§4 folders/update: parentFolderId "root" and null both move a folder to the root (rows say parentFolderId "root", ancestors ["root"])', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'rt', createOrganization: true, folders: [{ folderId: 'p' }, { folderId: 'c1', parentFolderId: 'p' }, { folderId: 'c2', parentFolderId: 'p' }] });
  await ok('/v2/organizations/folders/update', { organizationId: 'rt', folders: [{ folderId: 'c1', parentFolderId: 'root' }, { folderId: 'c2', parentFolderId: null }] });
  const rows = (await ok('/v2/organizations/folders/get', { organizationId: 'rt' })).data;
  for (const id of ['c1', 'c2']) {
    const f = rows.find((x: any) => (x.id ?? x.folderId) === id);
    assert.ok(f, id);
    assert.is(f.parentFolderId, 'root', `${id} is at the root`);
    assert.equal(f.ancestors, ['root'], `${id} is at the root`);
  }
});

test('§4 folders/update: a move under itself or a descendant fails that item ("would create a cycle")', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'cy', createOrganization: true, folders: [{ folderId: 'a' }, { folderId: 'b', parentFolderId: 'a' }, { folderId: 'x' }] });
  const r = await ok('/v2/organizations/folders/update', { organizationId: 'cy', folders: [{ folderId: 'a', parentFolderId: 'b' }, { folderId: 'x', parentFolderId: 'a' }, { folderId: 'a', folderName: 'ignored dup' }] });
  assert.is(r.data.a.success, false);
  assert.match(r.data.a.message, /would create a cycle/);
  assert.is(r.data.x.success, true, 'one bad item never fails the others');
});

test('§4 documents/add: unknown folderId without createFolder is a per-item failure; createFolder creates it', async () => {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'da' }] });
  let r = await ok('/v2/organizations/documents/add', { organizationId: 'da', folderId: 'nf', documents: [{ documentId: 'd' }] });
  assert.is(r.data.d.success, false);
  assert.is(r.data.d.id, 'd');
  r = await ok('/v2/organizations/documents/add', { organizationId: 'da', folderId: 'nf', createFolder: true, documents: [{ documentId: 'd' }] });
  assert.equal(r.data.d, { success: true, id: 'd', message: 'Added Successfully' });
  const row = (await ok('/v2/organizations/documents/get', { organizationId: 'da', documentIds: ['d'] })).data[0];
  assert.equal(row, { id: 'd', documentName: 'd', disabled: false, accessType: 'public', folderId: 'nf', documentId: 'd' });
});

test('§4 createOrganization: documents/add, folders/add, usergroups/add create a missing organization; without it NOT_FOUND', async () => {
  for (const [url, data] of [
    ['/v2/organizations/documents/add', { documents: [{ documentId: 'd' }] }],
    ['/v2/organizations/folders/add', { folders: [{ folderId: 'f' }] }],
    ['/v2/organizations/usergroups/add', { organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] }],
  ] as const) {
    const org = `co-${url.split('/').slice(-2).join('-')}`;
    const r = await post(url, { organizationId: org, ...data });
    assert.is(r.status, 404, url);
    assert.equal(r.body, { error: { status: 'NOT_FOUND', message: 'Organization does not exist.' } });
    await ok(url, { organizationId: org, createOrganization: true, ...data });
    assert.is((await ok('/v2/organizations/get', { organizationIds: [org] })).data.length, 1, url);
  }
});

test('§4 documents/move: answers without data; moving a missing document fails the whole call, nothing moves', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'mv', createOrganization: true, folders: [{ folderId: 'dst', accessType: 'restricted' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'mv', documents: [{ documentId: 'a' }, { documentId: 'b' }] });
  let r = await post('/v2/organizations/documents/move', { organizationId: 'mv', documentIds: ['a', 'ghost'], folderId: 'dst' });
  assert.is(r.status, 400);
  assert.is(r.body.error.status, 'INVALID_ARGUMENT');
  assert.match(r.body.error.message, /ghost/);
  let rows = (await ok('/v2/organizations/documents/get', { organizationId: 'mv' })).data;
  assert.is(rows.find((d: any) => d.id === 'a').folderId, undefined, 'no partial move');
  const res = await ok('/v2/organizations/documents/move', { organizationId: 'mv', documentIds: ['a', 'b'], folderId: 'dst' });
  assert.equal(res, { status: 'success', message: 'Documents moved successfully.' });
  rows = (await ok('/v2/organizations/documents/get', { organizationId: 'mv' })).data;
  assert.equal(rows.map((d: any) => [d.id, d.folderId, d.accessType]), [['a', 'dst', 'restricted'], ['b', 'dst', 'restricted']], 'moving recomputes the effective type');
  r = await post('/v2/organizations/documents/move', { organizationId: 'mv', documentIds: ['a'], folderId: 'nowhere' });
  assert.is(r.body.error !== undefined, true, 'destination must exist');
});

test('§1/§4 limits: 30 ids on documents/get and documents/move, pageSize 1..1000, 100 users on permissions/get, 1000 items elsewhere', async () => {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'lim' }] });
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `d${i}`);
  for (const [url, data] of [
    ['/v2/organizations/documents/get', { documentIds: ids(31) }],
    ['/v2/organizations/documents/move', { documentIds: ids(31), folderId: 'root' }],
    ['/v2/organizations/documents/get', { pageSize: 0 }],
    ['/v2/organizations/documents/get', { pageSize: 1001 }],
    ['/v2/organizations/documents/delete', { documentIds: ids(1001) }],
    ['/v2/auth/permissions/get', { userIds: ids(101) }],
  ] as const) {
    const r = await post(url, { organizationId: 'lim', ...data });
    assert.is(r.status, 400, `${url} ${JSON.stringify(data).slice(0, 40)}`);
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
  }
  assert.is((await post('/v2/organizations/documents/get', { organizationId: 'lim', documentIds: ids(30) })).status, 200);
  assert.is((await post('/v2/organizations/documents/get', { organizationId: 'lim', pageSize: 1000 })).status, 200);
});

test('§4 documents/get: creation order, pageToken only when more rows exist, tokens bound to their query', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'pg', createOrganization: true, folders: [{ folderId: 'f' }] });
  for (const d of ['d1', 'd2', 'd3', 'd4']) await ok('/v2/organizations/documents/add', { organizationId: 'pg', documents: [{ documentId: d }] });
  let r = await ok('/v2/organizations/documents/get', { organizationId: 'pg', pageSize: 2 });
  assert.equal(r.data.map((d: any) => d.id), ['d1', 'd2']);
  assert.type(r.pageToken, 'string');
  const token = r.pageToken;
  r = await ok('/v2/organizations/documents/get', { organizationId: 'pg', pageSize: 2, pageToken: token });
  assert.equal(r.data.map((d: any) => d.id), ['d3', 'd4']);
  assert.is('pageToken' in r, false, 'no token on the last page, even when it is full');
  r = await ok('/v2/organizations/documents/get', { organizationId: 'pg', pageSize: 4 });
  assert.is('pageToken' in r, false);
  const other = await post('/v2/organizations/documents/get', { organizationId: 'pg', folderId: 'f', pageSize: 2, pageToken: token });
  assert.is(other.status, 400);
  assert.is(other.body.error.status, 'INVALID_ARGUMENT');
  const garbled = await post('/v2/organizations/documents/get', { organizationId: 'pg', pageSize: 2, pageToken: 'x' + token });
  assert.is(garbled.status, 400);
  assert.is(garbled.body.error.status, 'INVALID_ARGUMENT');
  r = await ok('/v2/organizations/documents/get', { organizationId: 'pg', documentIds: ['d4', 'd2', 'zz'] });
  assert.equal(r.data.map((d: any) => d.id), ['d2', 'd4'], 'documentIds filter, creation order');
});

test('§4a organizations/get and users/get: nextPageToken equals pageToken; neither on the last page', async () => {
  await ok('/v2/users/add', { organizationId: 'np', users: [{ userId: 'a' }, { userId: 'b' }] });
  let r = await ok('/v2/users/get', { organizationId: 'np', pageSize: 1 });
  assert.type(r.pageToken, 'string');
  assert.is(r.nextPageToken, r.pageToken);
  r = await ok('/v2/users/get', { organizationId: 'np', pageSize: 1, pageToken: r.pageToken });
  assert.is('pageToken' in r, false);
  assert.is('nextPageToken' in r, false);
  r = await ok('/v2/organizations/get', { organizationIds: ['np'] });
  assert.is('pageToken' in r, false);
  assert.is('nextPageToken' in r, false);
});

// ---- §3 access resolution ----

test('§3 rule 5: documents/access/update inheritFromParent clears the document type (follows its folder again)', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'ih', createOrganization: true, folders: [{ folderId: 'f', accessType: 'restricted' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'ih', folderId: 'f', documents: [{ documentId: 'd', accessType: 'public' }] });
  assert.equal(await perm('ih', 'nobody', 'documents', 'd'), { accessRole: 'editor', accessType: 'public' });
  const r = await ok('/v2/organizations/documents/access/update', { organizationId: 'ih', documentIds: ['d'], inheritFromParent: true });
  assert.equal(r.data.d, { success: true, accessType: null, inheritFromParent: true, message: 'Document access type updated.' });
  assert.equal(await perm('ih', 'nobody', 'documents', 'd'), denied('restricted'));
  await ok('/v2/organizations/folders/access/update', { organizationId: 'ih', folderIds: ['f'], accessType: 'public' });
  assert.equal(await perm('ih', 'nobody', 'documents', 'd'), { accessRole: 'editor', accessType: 'public' });
});

test('§3 rule 5: moving a folder recomputes the effective type of every subfolder and document under it', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'deep', createOrganization: true, folders: [
    { folderId: 'R', accessType: 'restricted' }, { folderId: 'a' }, { folderId: 'b', parentFolderId: 'a' }, { folderId: 'c', parentFolderId: 'b' },
  ] });
  await ok('/v2/organizations/documents/add', { organizationId: 'deep', folderId: 'c', documents: [{ documentId: 'd' }] });
  assert.equal(await perm('deep', 'n', 'documents', 'd'), { accessRole: 'editor', accessType: 'public' });
  await ok('/v2/organizations/folders/update', { organizationId: 'deep', folders: [{ folderId: 'a', parentFolderId: 'R' }] });
  assert.equal(await perm('deep', 'n', 'documents', 'd'), denied('restricted'));
  assert.equal(await perm('deep', 'n', 'folders', 'c'), denied('restricted', 'folder'));
  const c = (await ok('/v2/organizations/folders/get', { organizationId: 'deep', folderId: 'c' })).data[0];
  assert.equal(c.ancestors, ['root', 'R', 'a', 'b']);
});

test('§3 rule 4 public: the most specific grant decides the role (document viewer beats organization editor)', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'sp', createOrganization: true, documents: [{ documentId: 'd' }] });
  await ok('/v2/users/add', { organizationId: 'sp', users: [{ userId: 'u' }] });
  await ok('/v2/users/add', { organizationId: 'sp', documentId: 'd', users: [{ userId: 'u', accessRole: 'viewer' }] });
  assert.equal(await perm('sp', 'u', 'documents', 'd'), { accessRole: 'viewer', accessType: 'public' });
});

test('§3 rule 7: user groups are membership lists that grant nothing by themselves', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'gr', createOrganization: true, documents: [{ documentId: 'd', accessType: 'restricted' }] });
  await ok('/v2/users/add', { organizationId: 'gr', users: [{ userId: 'm' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'gr', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'gr', organizationUserGroupId: 'g', userIds: ['m'] });
  // Being in a group without grants changes nothing: the member is what their own grants make them.
  assert.equal(await perm('gr', 'm', 'documents', 'd'), denied('restricted'));
  assert.equal(await perm('gr', 'other', 'documents', 'd'), denied('restricted'));
});

test('§3 rule 7: a group may hold grants; each member has them, their own grant at the same level decides, leaving takes them away', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'gg', createOrganization: true, folders: [{ folderId: 'f', accessType: 'restricted' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'gg', folderId: 'f', documents: [{ documentId: 'd' }] });
  await ok('/v2/users/add', { organizationId: 'gg', users: [{ userId: 'm' }, { userId: 'own' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'gg', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'gg', organizationUserGroupId: 'g', userIds: ['m', 'own'] });
  await ok('/v2/auth/permissions/add', { group: { groupId: 'g' }, permissions: { resources: [{ type: 'folder', id: 'f', organizationId: 'gg' }] } });
  await ok('/v2/auth/permissions/add', { userId: 'own', permissions: { resources: [{ type: 'folder', id: 'f', organizationId: 'gg', accessRole: 'viewer' }] } });
  assert.equal(await perm('gg', 'm', 'documents', 'd'), { accessRole: 'editor', accessType: 'restricted' });
  assert.equal(await perm('gg', 'own', 'documents', 'd'), { accessRole: 'viewer', accessType: 'restricted' });
  assert.equal(await perm('gg', 'other', 'documents', 'd'), denied('restricted'));
  await ok('/v2/organizations/usergroups/users/delete', { organizationId: 'gg', organizationUserGroupId: 'g', userIds: ['m'] });
  assert.equal(await perm('gg', 'm', 'documents', 'd'), denied('restricted'));
});

test('§3 rule 1: a missing folder or document fails the query with NOT_FOUND and per-user details', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'nf', createOrganization: true, documents: [{ documentId: 'd' }] });
  const r = await post('/v2/auth/permissions/get', { organizationId: 'nf', userIds: ['u'], documentIds: ['d', 'gone'], folderIds: ['nofolder'] });
  assert.is(r.status, 404);
  assert.is(r.body.error.status, 'NOT_FOUND');
  assert.equal(r.body.error.details.u.documents.gone.errorCode, 'does_not_exist');
  assert.equal(r.body.error.details.u.folders.nofolder.errorCode, 'does_not_exist');
  assert.equal(r.body.error.details.u.documents.d, { accessRole: 'editor', accessType: 'public' });
  const o = await post('/v2/auth/permissions/get', { organizationId: 'nf-missing', userIds: ['u'] });
  assert.is(o.status, 404);
});

test('§3 grants: an expired grant counts as absent; a permanent grant replaces a temporary one', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'ex', createOrganization: true, documents: [{ documentId: 'd', accessType: 'restricted' }] });
  const past = Math.floor(Date.now() / 1000) - 60;
  const future = Math.floor(Date.now() / 1000) + 3600;
  const add = (expiresAt?: number, accessRole = 'viewer') =>
    ok('/v2/auth/permissions/add', { userId: 'u', permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'ex', accessRole, ...(expiresAt ? { expiresAt } : {}) }] } });
  await add(past);
  assert.equal(await perm('ex', 'u', 'documents', 'd'), denied('restricted'));
  await add(future);
  assert.equal(await perm('ex', 'u', 'documents', 'd'), { accessRole: 'viewer', accessType: 'restricted', expiresAt: future });
  await add(undefined, 'editor');
  assert.equal(await perm('ex', 'u', 'documents', 'd'), { accessRole: 'editor', accessType: 'restricted' });
  const r = await add(future);
  assert.is(r.data.d.success, false, 'a temporary grant never replaces a permanent one');
  assert.equal(await perm('ex', 'u', 'documents', 'd'), { accessRole: 'editor', accessType: 'restricted' });
});

// ---- §4a permissions add/remove ----

test('§4a permissions/add and remove accept both user.userId and userId; missing resources fail per resource', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'pa', createOrganization: true, documents: [{ documentId: 'd', accessType: 'restricted' }] });
  for (const shape of [{ userId: 'u' }, { user: { userId: 'u' } }]) {
    let r = await ok('/v2/auth/permissions/add', { ...shape, permissions: { resources: [
      { type: 'document', id: 'd', organizationId: 'pa' }, { type: 'document', id: 'ghost', organizationId: 'pa' }, { type: 'folder', id: 'nof', organizationId: 'pa' },
    ] } });
    assert.is(r.data.d.success, true);
    assert.is(r.data.ghost.success, false);
    assert.is(r.data.nof.success, false);
    assert.equal(await perm('pa', 'u', 'documents', 'd'), { accessRole: 'editor', accessType: 'restricted' });
    r = await ok('/v2/auth/permissions/remove', { ...shape, permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'pa' }] } });
    assert.is(r.data, undefined, 'every resource went through: the hosted shape, no data');
    assert.equal(await perm('pa', 'u', 'documents', 'd'), denied('restricted'));
  }
});

// ---- §5 users and groups ----

test('§5 users/add: initial derived from the name; re-adding updates profile and grant', async () => {
  await ok('/v2/users/add', { organizationId: 'ua', users: [{ userId: 'u', name: 'grace hopper', email: 'g@example.com' }] });
  let u = (await ok('/v2/users/get', { organizationId: 'ua' })).data[0];
  assert.equal(u, { userId: 'u', name: 'grace hopper', email: 'g@example.com', initial: 'GH', accessRole: 'editor' });
  await ok('/v2/users/add', { organizationId: 'ua', users: [{ userId: 'u', name: 'Ada Byron', accessRole: 'viewer' }] });
  u = (await ok('/v2/users/get', { organizationId: 'ua' })).data[0];
  assert.equal(u, { userId: 'u', name: 'Ada Byron', email: 'g@example.com', initial: 'AB', accessRole: 'viewer' });
  await ok('/v2/users/add', { organizationId: 'ua', users: [{ userId: 'u', initial: 'Z' }] });
  u = (await ok('/v2/users/get', { organizationId: 'ua' })).data[0];
  assert.is(u.initial, 'Z');
});

test('§5 users/delete without scope removes membership, every grant in the organization and group memberships', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'ud', createOrganization: true, folders: [{ folderId: 'f', accessType: 'restricted' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'ud', documents: [{ documentId: 'd', accessType: 'restricted' }] });
  await ok('/v2/users/add', { organizationId: 'ud', users: [{ userId: 'u' }, { userId: 'v' }] });
  await ok('/v2/users/add', { organizationId: 'ud', folderId: 'f', users: [{ userId: 'u' }] });
  await ok('/v2/users/add', { organizationId: 'ud', documentId: 'd', users: [{ userId: 'u' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'ud', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'ud', organizationUserGroupId: 'g', userIds: ['u', 'v'] });
  await ok('/v2/users/delete', { organizationId: 'ud', userIds: ['u'] });
  assert.equal(await perm('ud', 'u', 'documents', 'd'), denied('restricted'));
  assert.equal(await perm('ud', 'u', 'folders', 'f'), denied('restricted', 'folder'));
  const org = (await ok('/v2/auth/permissions/get', { organizationId: 'ud', userIds: ['u'] })).data.u.organization.ud;
  assert.is(org.errorCode, 'permission_denied');
  const members = (await ok('/v2/users/get', { organizationId: 'ud', organizationUserGroupIds: ['g'] })).data.map((x: any) => x.userId);
  assert.equal(members, ['v']);
});

test('§5 users/delete with documentId removes only that document grant', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'us', createOrganization: true, documents: [{ documentId: 'd', accessType: 'restricted' }, { documentId: 'e', accessType: 'restricted' }] });
  await ok('/v2/users/add', { organizationId: 'us', users: [{ userId: 'u' }] });
  await ok('/v2/users/add', { organizationId: 'us', documentId: 'd', users: [{ userId: 'u' }] });
  await ok('/v2/users/add', { organizationId: 'us', documentId: 'e', users: [{ userId: 'u' }] });
  const r = await ok('/v2/users/delete', { organizationId: 'us', documentId: 'd', userIds: ['u'] });
  assert.is(r.data.u.success, true);
  assert.equal(await perm('us', 'u', 'documents', 'd'), denied('restricted'));
  assert.equal(await perm('us', 'u', 'documents', 'e'), { accessRole: 'editor', accessType: 'restricted' });
  const org = (await ok('/v2/auth/permissions/get', { organizationId: 'us', userIds: ['u'] })).data.u.organization.us;
  assert.equal(org, { accessRole: 'editor' });
});

test('§5 usergroups/users/add: only organization members can join (per-user result)', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'gm', createOrganization: true, documents: [{ documentId: 'd' }] });
  await ok('/v2/users/add', { organizationId: 'gm', users: [{ userId: 'm' }] });
  await ok('/v2/users/add', { organizationId: 'gm', documentId: 'd', users: [{ userId: 'docOnly' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'gm', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
  const r = await ok('/v2/organizations/usergroups/users/add', { organizationId: 'gm', organizationUserGroupId: 'g', userIds: ['m', 'docOnly', 'stranger'] });
  assert.is(r.data.m.success, true);
  assert.is(r.data.docOnly.success, false);
  assert.is(r.data.stranger.success, false);
});

test('§5 usergroups/users/delete needs userIds or deleteAll; deleteAll empties the group', async () => {
  await ok('/v2/users/add', { organizationId: 'ga', users: [{ userId: 'a' }, { userId: 'b' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'ga', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'ga', organizationUserGroupId: 'g', userIds: ['a', 'b'] });
  const bad = await post('/v2/organizations/usergroups/users/delete', { organizationId: 'ga', organizationUserGroupId: 'g' });
  assert.is(bad.status, 400);
  assert.is(bad.body.error.status, 'INVALID_ARGUMENT');
  const r = await ok('/v2/organizations/usergroups/users/delete', { organizationId: 'ga', organizationUserGroupId: 'g', deleteAll: true });
  assert.equal(Object.keys(r.data).sort(), ['a', 'b']);
  assert.equal((await ok('/v2/users/get', { organizationId: 'ga', organizationUserGroupIds: ['g'] })).data, []);
});

test('§4 folders/delete: subfolders and documents disappear from reads, grants on them go too', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'del', createOrganization: true, folders: [{ folderId: 'F', accessType: 'restricted' }, { folderId: 'G', parentFolderId: 'F' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'del', folderId: 'G', documents: [{ documentId: 'd' }] });
  await ok('/v2/users/add', { organizationId: 'del', folderId: 'F', users: [{ userId: 'u' }] });
  await ok('/v2/organizations/folders/delete', { organizationId: 'del', folderId: 'F' });
  assert.equal((await ok('/v2/organizations/documents/get', { organizationId: 'del' })).data, []);
  assert.is((await post('/v2/auth/permissions/get', { organizationId: 'del', userIds: ['u'], folderIds: ['G'] })).status, 404);
  // Re-created with the same ids, nothing of the old grants comes back.
  await ok('/v2/organizations/folders/add', { organizationId: 'del', folders: [{ folderId: 'F', accessType: 'restricted' }] });
  assert.equal(await perm('del', 'u', 'folders', 'F'), denied('restricted', 'folder'));
  assert.equal((await ok('/v2/users/get', { organizationId: 'del', folderId: 'F' })).data, []);
});

test('§4 folders/delete: grants on the deleted folders go on the write side too (a re-created folder starts with none)', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'rg', createOrganization: true, folders: [{ folderId: 'F', accessType: 'restricted' }, { folderId: 'G', parentFolderId: 'F' }] });
  await ok('/v2/users/add', { organizationId: 'rg', folderId: 'F', users: [{ userId: 'u' }] });
  await ok('/v2/users/add', { organizationId: 'rg', folderId: 'G', users: [{ userId: 'u' }, { userId: 'w' }] });
  await ok('/v2/organizations/folders/delete', { organizationId: 'rg', folderId: 'F' });
  await settleCascades(h.services);
  await ok('/v2/organizations/folders/add', { organizationId: 'rg', folders: [{ folderId: 'F', accessType: 'restricted' }, { folderId: 'G', parentFolderId: 'F' }] });
  // users/update at a scope where the user has no grant: "User does not exist.", and no access comes back.
  let r = await ok('/v2/users/update', { organizationId: 'rg', folderId: 'F', users: [{ userId: 'u', accessRole: 'viewer' }] });
  assert.equal(r.data.u, { success: false, id: 'u', message: 'User does not exist.' });
  assert.equal(await perm('rg', 'u', 'folders', 'F'), denied('restricted', 'folder'));
  r = await ok('/v2/users/delete', { organizationId: 'rg', folderId: 'G', userIds: ['w'] });
  assert.equal(r.data.w, { success: false, message: 'User does not exist.' });
  // A temporary grant on the new folder is not refused by the old folder's permanent grant.
  const future = Math.floor(Date.now() / 1000) + 3600;
  r = await ok('/v2/auth/permissions/add', { userId: 'u', permissions: { resources: [{ type: 'folder', id: 'G', organizationId: 'rg', accessRole: 'viewer', expiresAt: future }] } });
  assert.is(r.data, undefined, JSON.stringify(r.data));
  assert.equal(await perm('rg', 'u', 'folders', 'G'), { accessRole: 'viewer', accessType: 'restricted', expiresAt: future });
});

test('§4 documents/delete: grants on the deleted document go on the write side too (a re-added document starts with none)', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'rd', createOrganization: true, documents: [{ documentId: 'd', accessType: 'restricted' }, { documentId: 'e', accessType: 'restricted' }] });
  await ok('/v2/users/add', { organizationId: 'rd', documentId: 'd', users: [{ userId: 'u' }] });
  await ok('/v2/users/add', { organizationId: 'rd', documentId: 'e', users: [{ userId: 'u' }] });
  await ok('/v2/organizations/documents/delete', { organizationId: 'rd', documentIds: ['d'] });
  await settleCascades(h.services);
  await ok('/v2/organizations/documents/add', { organizationId: 'rd', documents: [{ documentId: 'd', accessType: 'restricted' }] });
  const r = await ok('/v2/users/update', { organizationId: 'rd', documentId: 'd', users: [{ userId: 'u', accessRole: 'viewer' }] });
  assert.equal(r.data.u, { success: false, id: 'u', message: 'User does not exist.' });
  assert.equal(await perm('rd', 'u', 'documents', 'd'), denied('restricted'));
  assert.equal(await perm('rd', 'u', 'documents', 'e'), { accessRole: 'editor', accessType: 'restricted' }, 'grants on other documents stay');
});

test('§4a permissions/remove: a missing resource is a per-resource failure, like permissions/add', async () => {
  await ok('/v2/organizations/documents/add', { organizationId: 'pr', createOrganization: true, documents: [{ documentId: 'd' }] });
  await ok('/v2/auth/permissions/add', { userId: 'u', permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'pr' }] } });
  const r = await ok('/v2/auth/permissions/remove', { user: { userId: 'u' }, permissions: { resources: [
    { type: 'document', id: 'd', organizationId: 'pr' },
    { type: 'document', id: 'ghost', organizationId: 'pr' },
    { type: 'folder', id: 'nof', organizationId: 'pr' },
    { type: 'organization', id: 'no-org' },
  ] } });
  assert.is(r.message, 'Permissions removed successfully.');
  assert.equal(r.data.d, { success: true, type: 'document', message: 'Permission removed.' });
  assert.equal(r.data.ghost, { success: false, type: 'document', message: 'Document does not exist.' });
  assert.equal(r.data.nof, { success: false, type: 'folder', message: 'Folder does not exist.' });
  assert.equal(r.data['no-org'], { success: false, type: 'organization', message: 'Organization does not exist.' });
});

// ---- §1 wire conventions and §2 authentication ----

test('§1 envelopes: unknown route NOT_FOUND, body without object data INVALID_ARGUMENT naming it, unknown fields ignored', async () => {
  let r = await post('/v2/nowhere', {});
  assert.is(r.status, 404);
  assert.is(r.body.error.status, 'NOT_FOUND');
  const get = await h.app.inject({ method: 'GET', url: '/v2/users/add', headers: t.headers });
  assert.ok(get.statusCode === 404 || get.statusCode === 405);
  assert.type(JSON.parse(get.body).error.message, 'string');
  for (const body of ['{}', '{"data":[]}', '{"data":null}', '[]']) {
    r = await h.raw('/v2/organizations/get', body, t.headers);
    assert.is(r.status, 400, body);
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
    assert.match(r.body.error.message, /data/);
  }
  r = await post('/v2/users/add', { organizationId: 'wire', users: [{ userId: 'a' }, { userId: 'b' }, { userId: 'c', email: 'nope' }] });
  assert.is(r.status, 400);
  assert.match(r.body.error.message, /data\.users\[2\]\.email must be a valid email/);
  await ok('/v2/organizations/documents/add', { organizationId: 'wire', createOrganization: true, extra: 1, documents: [{ documentId: 'd', secret: 'x' }] });
  const row = (await ok('/v2/organizations/documents/get', { organizationId: 'wire' })).data[0];
  assert.equal(Object.keys(row).sort(), ['accessType', 'disabled', 'documentId', 'documentName', 'id']);
});

test('§2 authentication: missing headers UNAUTHENTICATED (401), a wrong pair PERMISSION_DENIED (403)', async () => {
  let r = await h.post('/v2/organizations/get', {});
  assert.is(r.status, 401);
  assert.is(r.body.error.status, 'UNAUTHENTICATED');
  r = await h.post('/v2/organizations/get', {}, { ...t.headers, 'x-service-auth-token': 'wrong' });
  assert.is(r.status, 403);
  assert.is(r.body.error.status, 'PERMISSION_DENIED');
  r = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'a@example.com', type: 'testing' }, { ...t.workspaceHeaders, 'x-service-workspace-auth-token': 'wrong' });
  assert.is(r.status, 403);
  assert.is(r.body.error.status, 'PERMISSION_DENIED');
  r = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'a@example.com', type: 'testing', realtimeDBRegion: '' }, t.workspaceHeaders);
  assert.is(r.status, 400);
  assert.is(r.body.error.status, 'INVALID_ARGUMENT');
  r = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'a@example.com', type: 'testing', createAuthToken: true }, t.workspaceHeaders);
  assert.is(r.body.result.message, 'API key created successfully.');
  assert.type(r.body.result.data.apiKey, 'string');
  assert.type(r.body.result.data.authToken, 'string');
  r = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'a@example.com', type: 'production' }, t.workspaceHeaders);
  assert.is(r.status, 403, 'production keys need the workspace flag first');
});

test('§4/spec users/add rule 5: createDocument with an unknown folderId (no createFolder) fails; nothing is created at the root', async () => {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'uf' }] });
  const r = await post('/v2/users/add', { organizationId: 'uf', folderId: 'nf', documentId: 'nd', createDocument: true, users: [{ userId: 'u' }] });
  assert.is(r.status, 404, JSON.stringify(r.body));
  assert.equal(r.body, { error: { status: 'NOT_FOUND', message: 'Folder does not exist.' } });
  assert.equal((await ok('/v2/organizations/documents/get', { organizationId: 'uf' })).data, []);
  await ok('/v2/users/add', { organizationId: 'uf', folderId: 'nf', createFolder: true, documentId: 'nd', createDocument: true, users: [{ userId: 'u' }] });
  const row = (await ok('/v2/organizations/documents/get', { organizationId: 'uf' })).data[0];
  assert.is(row.folderId, 'nf');
});

test('§5 users/delete without scope takes a user out of the organization groups even when no grant is left', async () => {
  await ok('/v2/users/add', { organizationId: 'ug', users: [{ userId: 'u' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'ug', organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'ug', organizationUserGroupId: 'g', userIds: ['u'] });
  await ok('/v2/auth/permissions/remove', { userId: 'u', permissions: { resources: [{ type: 'organization', id: 'ug' }] } });
  const r = await ok('/v2/users/delete', { organizationId: 'ug', userIds: ['u'] });
  assert.equal(r.data.u, { success: true, message: 'User removed.' });
  const left = await ok('/v2/organizations/usergroups/users/delete', { organizationId: 'ug', organizationUserGroupId: 'g', deleteAll: true });
  assert.equal(left.data, {}, 'no one is left in the group');
});

test.run();
