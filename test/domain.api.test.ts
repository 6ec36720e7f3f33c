/** API tests for organizations, folders and documents: success shapes, per-item failures, bad input. */
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

test.before(async () => {
  h = await harness();
  t = await h.tenant();
});
test.after(async () => h.close());

test('organizations: add, get, update, disable, delete', async () => {
  let r = await ok('/v2/organizations/add', { organizations: [{ organizationId: 'a1', organizationName: 'A' }, { organizationId: 'a2' }] });
  assert.is(r.message, 'Organization(s) added successfully.');
  assert.equal(r.data.a1, { success: true, id: 'a1', message: 'Added Successfully' });
  // The hosted API: adding an existing organization updates its metadata.
  r = await ok('/v2/organizations/add', { organizations: [{ organizationId: 'a1' }] });
  assert.equal(r.data.a1, { success: true, id: 'a1', message: 'Added Successfully' });
  r = await ok('/v2/organizations/add', { organizations: [{ organizationId: 'a1', organizationName: 'A1' }] });
  assert.equal((await ok('/v2/organizations/get', { organizationIds: ['a1'] })).data[0].organizationName, 'A1');
  r = await ok('/v2/organizations/update', { organizations: [{ organizationId: 'a1', organizationName: 'AA' }, { organizationId: 'zz', organizationName: 'x' }] });
  assert.is(r.message, 'Organization(s) updated successfully.');
  assert.equal(r.data.a1, { success: true, id: 'a1', message: 'Updated Successfully' });
  assert.equal(r.data.zz, { success: false, id: 'zz', message: 'Organization does not exist' });
  r = await ok('/v2/organizations/access/disablestate/update', { organizationIds: ['a2', 'zz'], disabled: true });
  assert.is(r.message, 'Updated disable state for Organization(s) successfully.');
  assert.equal(r.data.a2, { success: true, id: 'a2', message: 'Updated disable state for organization Successfully' });
  assert.equal(r.data.zz, { success: false, id: 'zz', message: 'Organization does not exist' });
  r = await ok('/v2/organizations/get', { organizationIds: ['a1', 'a2', 'zz'] });
  assert.equal(r.data.map(({ createdAt, ...rest }: any) => (assert.type(createdAt, 'number'), rest)), [
    { id: 'a1', organizationId: 'a1', organizationName: 'AA', disabled: false },
    { id: 'a2', organizationId: 'a2', organizationName: 'a2', disabled: true },
  ]);
  r = await ok('/v2/organizations/get', { pageSize: 1 });
  assert.is(r.data.length, 1);
  assert.type(r.pageToken, 'string');
  assert.is(r.nextPageToken, r.pageToken);
  const r2 = await ok('/v2/organizations/get', { pageSize: 1, pageToken: r.pageToken });
  assert.is(r2.data[0].id, 'a2');
  assert.is(r2.pageToken, undefined);
  r = await ok('/v2/organizations/delete', { organizationIds: ['a2', 'zz'] });
  assert.is(r.message, 'Organization(s) deleted successfully.');
  assert.equal(r.data.a2, { success: true, id: 'a2', message: 'Deleted Successfully' });
  assert.equal(r.data.zz, { success: false, id: 'zz', message: 'Organization does not exist' });
  assert.equal((await ok('/v2/organizations/get', { organizationIds: ['a2'] })).data, []);
});

test('a call on a missing organization is NOT_FOUND unless createOrganization', async () => {
  const r = await post('/v2/organizations/folders/add', { organizationId: 'nope', folders: [{ folderId: 'f' }] });
  assert.is(r.status, 404);
  assert.equal(r.body, { error: { status: 'NOT_FOUND', message: 'Organization does not exist.' } });
  for (const [url, data] of [
    ['/v2/organizations/documents/add', { organizationId: 'nope', documents: [{ documentId: 'd' }] }],
    ['/v2/organizations/documents/get', { organizationId: 'nope' }],
    ['/v2/organizations/folders/get', { organizationId: 'nope' }],
    ['/v2/organizations/documents/delete', { organizationId: 'nope', documentIds: ['d'] }],
  ] as const) {
    assert.is((await post(url, data)).status, 404, url);
  }
  const made = await ok('/v2/organizations/documents/add', { organizationId: 'made', createOrganization: true, documents: [{ documentId: 'd' }] });
  assert.is(made.data.d.success, true);
});

test('folders: add, update (rename, move, cycle), access, get, delete', async () => {
  let r = await ok('/v2/organizations/folders/add', {
    organizationId: 'f',
    createOrganization: true,
    folders: [{ folderId: 'a', folderName: 'A', accessType: 'restricted' }, { folderId: 'b', parentFolderId: 'a' }, { folderId: 'a' }, { folderId: 'c', parentFolderId: 'missing' }],
  });
  assert.is(r.message, 'Folder created successfully.');
  assert.equal(r.data, {
    a: { id: 'a', success: true, message: 'Folder added.' },
    b: { id: 'b', success: true, message: 'Folder added.' },
    c: { id: 'c', success: false, message: 'Parent folder "missing" does not exist.' },
  });
  r = await ok('/v2/organizations/folders/add', { organizationId: 'f', folders: [{ folderId: 'a' }] });
  assert.equal(r.data.a, { id: 'a', success: false, message: 'Folder already exists' });
  r = await ok('/v2/organizations/folders/update', { organizationId: 'f', folders: [{ folderId: 'a', parentFolderId: 'b' }, { folderId: 'b', folderName: 'B' }, { folderId: 'q' }] });
  assert.is(r.message, 'Folder Updated successfully.');
  assert.equal(r.data.a, { id: 'a', success: false, message: 'Moving the folder under itself or one of its subfolders would create a cycle.' });
  assert.equal(r.data.b, { id: 'b', success: true, message: 'Folder Updated.' });
  assert.equal(r.data.q, { id: 'q', success: false, message: 'Folder does not exist.' });
  r = await ok('/v2/organizations/folders/get', { organizationId: 'f', folderId: 'a' });
  assert.is(r.message, 'Folder(s) retrieved successfully.');
  const times = (row: any): any => {
    const { createdAt, lastUpdated, subFolders, ...rest } = row;
    assert.type(createdAt, 'number');
    assert.ok(lastUpdated >= createdAt);
    return subFolders ? { ...rest, subFolders: subFolders.map(times) } : rest;
  };
  const base = { organizationId: 'f', apiKey: t.apiKey };
  assert.equal(r.data.map(times), [{
    folderId: 'a', folderName: 'A', ...base, parentFolderId: 'root', ancestors: ['root'], accessType: 'restricted', inheritAccessFromParent: false,
    subFolders: [{ folderId: 'b', folderName: 'B', ...base, parentFolderId: 'a', ancestors: ['root', 'a'], accessType: 'restricted', inheritAccessFromParent: true }],
  }]);
  r = await ok('/v2/organizations/folders/access/update', { organizationId: 'f', folderIds: ['b', 'q'], accessType: 'organizationPrivate' });
  assert.is(r.message, 'Updated access for folders successfully.');
  assert.equal(r.data.b, { success: true, accessType: 'organizationPrivate', message: 'Folder access type updated.' });
  assert.equal(r.data.q, { success: false, accessType: 'organizationPrivate', message: 'Folder does not exist.' });
  r = await ok('/v2/organizations/folders/access/update', { organizationId: 'f', folderIds: ['b'], inheritFromParent: true });
  assert.is(r.message, 'Folder access type updated.');
  assert.equal(r.data.b, { success: true, accessType: null, inheritFromParent: true, message: 'Folder access type updated.' });
  r = await ok('/v2/organizations/folders/access/update', { organizationId: 'f', folderIds: ['a'] });
  assert.is(r.data.a.accessType, 'public', 'accessType defaults to public');
  r = await ok('/v2/organizations/folders/update', { organizationId: 'f', folders: [{ folderId: 'b', parentFolderId: null }] });
  r = await ok('/v2/organizations/folders/get', { organizationId: 'f', pageSize: 1 });
  assert.is(r.message, 'Folders retrieved successfully.');
  assert.is(r.data.length, 1);
  assert.type(r.pageToken, 'string');
  const moved = (await ok('/v2/organizations/folders/get', { organizationId: 'f', folderId: 'b', maxDepth: 0 })).data;
  assert.equal(moved.map((x: any) => [x.folderId, x.parentFolderId, x.ancestors, 'subFolders' in x]), [['b', 'root', ['root'], false]], 'maxDepth 0: the folder alone');
  await ok('/v2/organizations/documents/add', { organizationId: 'f', folderId: 'a', documents: [{ documentId: 'in-a' }] });
  r = await ok('/v2/organizations/folders/delete', { organizationId: 'f', folderId: 'a' });
  assert.equal(r, { status: 'success', message: 'Folder deletion initiated successfully.', data: null });
  assert.equal((await ok('/v2/organizations/documents/get', { organizationId: 'f' })).data, []);
  const missing = await post('/v2/organizations/folders/delete', { organizationId: 'f', folderId: 'a' });
  assert.is(missing.status, 404);
  assert.is(missing.body.error.code, 'not-found');
  assert.is(missing.body.error.message, 'Folder not found.');
  await settleCascades(h.services);
  const events = await h.services.events.readAll();
  const deleted = events.filter((e) => e.type === 'DocumentDeleted' && e.data.documentId === 'in-a');
  assert.is(deleted.length, 1, 'the cascade appended the per-document event');
  assert.is(deleted[0]!.data.reason, 'folderDeleted');
  assert.is(deleted[0]!.metadata.actor, 'system:cascade');
});

test('documents: add, get (paging), update, access, disable, move, delete', async () => {
  await ok('/v2/organizations/folders/add', { organizationId: 'd', createOrganization: true, folders: [{ folderId: 'f1', accessType: 'restricted' }, { folderId: 'f2' }] });
  let r = await ok('/v2/organizations/documents/add', {
    organizationId: 'd',
    folderId: 'f1',
    documents: [{ documentId: 'x1', documentName: 'One' }, { documentId: 'x2', accessType: 'public' }, { documentId: 'x1' }],
  });
  assert.is(r.message, 'Document(s) added successfully.');
  assert.equal(r.data, { x1: { success: true, id: 'x1', message: 'Added Successfully' }, x2: { success: true, id: 'x2', message: 'Added Successfully' } });
  r = await ok('/v2/organizations/documents/add', { organizationId: 'd', documents: [{ documentId: 'x1' }, { documentId: 'x3' }] });
  assert.equal(r.data.x1, { success: false, id: 'x1', message: 'Document already exists', code: 'already-exists' });
  r = await ok('/v2/organizations/documents/add', { organizationId: 'd', folderId: 'nofolder', documents: [{ documentId: 'x9' }] });
  assert.equal(r.data.x9, { success: false, id: 'x9', message: 'Folder does not exist', code: 'not-found' });
  r = await ok('/v2/organizations/documents/add', { organizationId: 'd', folderId: 'newf', createFolder: true, documents: [{ documentId: 'x4' }] });
  assert.is(r.data.x4.success, true);

  r = await ok('/v2/organizations/documents/get', { organizationId: 'd' });
  assert.is(r.message, 'Document(s) retrieved successfully.');
  assert.equal(r.data, [
    { id: 'x1', documentName: 'One', disabled: false, accessType: 'restricted', folderId: 'f1', documentId: 'x1' },
    { id: 'x2', documentName: 'x2', disabled: false, accessType: 'public', folderId: 'f1', documentId: 'x2' },
    { id: 'x3', documentName: 'x3', disabled: false, accessType: 'public', documentId: 'x3' },
    { id: 'x4', documentName: 'x4', disabled: false, accessType: 'public', folderId: 'newf', documentId: 'x4' },
  ]);
  assert.is(r.pageToken, undefined);
  const seen: string[] = [];
  let token: string | undefined;
  do {
    r = await ok('/v2/organizations/documents/get', { organizationId: 'd', pageSize: 1, ...(token ? { pageToken: token } : {}) });
    seen.push(...r.data.map((d: { id: string }) => d.id));
    token = r.pageToken;
  } while (token);
  assert.equal(seen, ['x1', 'x2', 'x3', 'x4']);
  assert.equal((await ok('/v2/organizations/documents/get', { organizationId: 'd', folderId: 'f1' })).data.map((d: { id: string }) => d.id), ['x1', 'x2']);
  assert.equal((await ok('/v2/organizations/documents/get', { organizationId: 'd', documentIds: ['x3', 'x1', 'zz'] })).data.map((d: { id: string }) => d.id), ['x1', 'x3']);
  const first = await ok('/v2/organizations/documents/get', { organizationId: 'd', pageSize: 1 });
  const reused = await post('/v2/organizations/documents/get', { organizationId: 'd', folderId: 'f1', pageSize: 1, pageToken: first.pageToken });
  assert.is(reused.status, 400, 'a token of another query is rejected');
  assert.is(reused.body.error.status, 'INVALID_ARGUMENT');
  for (const garbled of ['%%%', 'abc', Buffer.from('{"q":1}').toString('base64url')]) {
    assert.is((await post('/v2/organizations/documents/get', { organizationId: 'd', pageToken: garbled })).body.error.status, 'INVALID_ARGUMENT');
  }
  const other = await h.tenant();
  const foreign = await h.post('/v2/organizations/documents/get', { organizationId: 'd', pageToken: first.pageToken }, other.headers);
  assert.is(foreign.status, 404, 'another tenant does not see the organization');

  r = await ok('/v2/organizations/documents/update', { organizationId: 'd', documents: [{ documentId: 'x3', documentName: 'Three' }, { documentId: 'zz', documentName: 'q' }] });
  assert.is(r.message, 'Document(s) updated successfully.');
  assert.equal(r.data.x3, { success: true, id: 'x3', message: 'Updated Successfully' });
  assert.equal(r.data.zz, { success: false, id: 'zz', message: 'Document does not exist', code: 'not-found' });
  r = await ok('/v2/organizations/documents/access/update', { organizationId: 'd', documentIds: ['x1', 'zz'], accessType: 'organizationPrivate' });
  assert.is(r.message, 'Updated access for documents successfully.');
  assert.equal(r.data.x1, { success: true, accessType: 'organizationPrivate', message: 'Document access type updated.' });
  assert.equal(r.data.zz, { success: false, accessType: 'organizationPrivate', message: 'Document does not exist', code: 'not-found' });
  r = await ok('/v2/organizations/documents/access/update', { organizationId: 'd', documentIds: ['x1'], inheritFromParent: true });
  assert.equal(r.data.x1, { success: true, accessType: null, inheritFromParent: true, message: 'Document access type updated.' });
  r = await ok('/v2/organizations/documents/access/disablestate/update', { organizationId: 'd', documentIds: ['x2', 'zz'], disabled: true });
  assert.is(r.message, 'Updated disable state for documents successfully.');
  assert.equal(r.data.x2, { success: true, disabled: true, message: 'Document disabled state updated.' });
  assert.equal(r.data.zz, { success: false, disabled: true, message: 'Document does not exist', code: 'not-found' });

  r = await ok('/v2/organizations/documents/move', { organizationId: 'd', documentIds: ['x3'], folderId: 'f2' });
  assert.equal(r, { status: 'success', message: 'Documents moved successfully.' });
  const bad = await post('/v2/organizations/documents/move', { organizationId: 'd', documentIds: ['x1', 'nope'], folderId: 'f2' });
  assert.is(bad.status, 400);
  assert.match(bad.body.error.message, /"nope"/);
  assert.is((await post('/v2/organizations/documents/move', { organizationId: 'd', documentIds: ['x1'], folderId: 'nofolder' })).status, 404);
  r = await ok('/v2/organizations/documents/get', { organizationId: 'd', documentIds: ['x1', 'x2', 'x3'] });
  assert.equal(r.data, [
    { id: 'x1', documentName: 'One', disabled: false, accessType: 'restricted', folderId: 'f1', documentId: 'x1' },
    { id: 'x2', documentName: 'x2', disabled: true, accessType: 'public', folderId: 'f1', documentId: 'x2' },
    { id: 'x3', documentName: 'Three', disabled: false, accessType: 'public', folderId: 'f2', documentId: 'x3' },
  ]);

  r = await ok('/v2/organizations/documents/delete', { organizationId: 'd', documentIds: ['x3', 'zz'] });
  assert.is(r.message, 'Document(s) deleted successfully.');
  assert.equal(r.data.x3, { success: true, id: 'x3', message: 'Deleted Successfully' });
  assert.equal(r.data.zz, { success: true, id: 'zz', message: 'Document does not exist' });
  r = await ok('/v2/organizations/documents/add', { organizationId: 'd', documents: [{ documentId: 'x3' }] });
  assert.is(r.data.x3.success, true, 'a deleted id can be added again');
});

test('re-sending a whole batch converges', async () => {
  const batch = { organizationId: 'conv', createOrganization: true, documents: [{ documentId: 'a' }, { documentId: 'b' }] };
  await ok('/v2/organizations/documents/add', batch);
  const again = await ok('/v2/organizations/documents/add', batch);
  assert.equal(Object.values(again.data).map((o: any) => o.message), ['Document already exists', 'Document already exists']);
  const folders = { organizationId: 'conv', folders: [{ folderId: 'p' }, { folderId: 'q', parentFolderId: 'p' }] };
  await ok('/v2/organizations/folders/add', folders);
  await ok('/v2/organizations/folders/add', folders);
  const up = { organizationId: 'conv', folders: [{ folderId: 'p', folderName: 'P', parentFolderId: 'root' }] };
  assert.is((await ok('/v2/organizations/folders/update', up)).data.p.success, true);
  assert.is((await ok('/v2/organizations/folders/update', up)).data.p.success, true);
  assert.is((await ok('/v2/organizations/folders/get', { organizationId: 'conv' })).data.length, 2);
});

test('unusual ids are stored and keyed safely', async () => {
  const ids = ['__proto__', 'a"b', '["x"]', 'ü ✓ \u0000', 'x'.repeat(256)];
  const r = await ok('/v2/organizations/documents/add', { organizationId: 'ids', createOrganization: true, documents: ids.map((documentId) => ({ documentId })) });
  assert.equal(Object.keys(r.data).sort(), [...ids].sort());
  const got = await ok('/v2/organizations/documents/get', { organizationId: 'ids' });
  assert.equal(got.data.map((d: { id: string }) => d.id), ids);
});

const long = 'x'.repeat(5000);
const gt = { $gt: '' };
const many = (n: number) => Array.from({ length: n }, (_, i) => `id${i}`);
const badInputs: Array<[string, unknown]> = [
  ['/v2/organizations/add', {}],
  ['/v2/organizations/add', { organizations: [] }],
  ['/v2/organizations/add', { organizations: [{ organizationId: gt }] }],
  ['/v2/organizations/add', { organizations: [{ organizationId: long }] }],
  ['/v2/organizations/add', { organizations: many(1001).map((organizationId) => ({ organizationId })) }],
  ['/v2/organizations/get', { organizationIds: many(31) }],
  ['/v2/organizations/get', { pageSize: 0 }],
  ['/v2/organizations/get', { pageSize: 1001 }],
  ['/v2/organizations/get', { pageSize: '10' }],
  ['/v2/organizations/update', { organizations: [{ organizationId: 'a', organizationName: 5 }] }],
  ['/v2/organizations/delete', { organizationIds: 'a' }],
  ['/v2/organizations/delete', { organizationIds: [gt] }],
  ['/v2/organizations/access/disablestate/update', { organizationIds: ['a'] }],
  ['/v2/organizations/access/disablestate/update', { organizationIds: ['a'], disabled: 'yes' }],
  ['/v2/organizations/folders/add', { organizationId: 'f', folders: [{ folderName: 'x' }] }],
  ['/v2/organizations/folders/add', { organizationId: 'f', folders: [{ folderId: 'x', accessType: 'secret' }] }],
  ['/v2/organizations/folders/add', { organizationId: gt, folders: [{ folderId: 'x' }] }],
  ['/v2/organizations/folders/add', { organizationId: 'f', folders: [{ folderId: long }] }],
  ['/v2/organizations/folders/add', { organizationId: 'f', folders: many(1001).map((folderId) => ({ folderId })) }],
  ['/v2/organizations/folders/update', { organizationId: 'f', folders: [{ folderId: 'a', parentFolderId: gt }] }],
  ['/v2/organizations/folders/update', { organizationId: 'f' }],
  ['/v2/organizations/folders/delete', { organizationId: 'f' }],
  ['/v2/organizations/folders/delete', { organizationId: 'f', folderId: gt }],
  ['/v2/organizations/folders/delete', { organizationId: 'f', folderId: long }],
  ['/v2/organizations/folders/access/update', { organizationId: 'f', folderIds: ['a'], accessType: 'open' }],
  ['/v2/organizations/folders/access/update', { organizationId: 'f', folderIds: many(1001) }],
  ['/v2/organizations/folders/access/update', { organizationId: 'f', folderIds: ['a'], inheritFromParent: 'true' }],
  ['/v2/organizations/folders/get', { organizationId: 'f', maxDepth: -1 }],
  ['/v2/organizations/folders/get', { organizationId: 'f', folderId: long }],
  ['/v2/organizations/documents/add', { organizationId: 'd' }],
  ['/v2/organizations/documents/add', { organizationId: 'd', documents: [{ documentId: 7 }] }],
  ['/v2/organizations/documents/add', { organizationId: 'd', documents: [{ documentId: gt }] }],
  ['/v2/organizations/documents/add', { organizationId: 'd', documents: [{ documentId: long }] }],
  ['/v2/organizations/documents/add', { organizationId: 'd', documents: [{ documentId: 'a', disabled: 'no' }] }],
  ['/v2/organizations/documents/add', { organizationId: 'd', folderId: gt, documents: [{ documentId: 'a' }] }],
  ['/v2/organizations/documents/add', { organizationId: 'd', documents: many(1001).map((documentId) => ({ documentId })) }],
  ['/v2/organizations/documents/get', { organizationId: 'd', documentIds: many(31) }],
  ['/v2/organizations/documents/get', { organizationId: 'd', pageSize: 1001 }],
  ['/v2/organizations/documents/get', { organizationId: 'd', pageSize: 0 }],
  ['/v2/organizations/documents/get', { organizationId: 'd', pageSize: 1.5 }],
  ['/v2/organizations/documents/get', { organizationId: 'd', pageToken: gt }],
  ['/v2/organizations/documents/get', { organizationId: 'd', pageToken: 'garbage' }],
  ['/v2/organizations/documents/get', { organizationId: long }],
  ['/v2/organizations/documents/update', { organizationId: 'd', documents: [{ documentId: 'a', documentName: gt }] }],
  ['/v2/organizations/documents/delete', { organizationId: 'd', documentIds: [long] }],
  ['/v2/organizations/documents/delete', { organizationId: 'd', documentIds: many(1001) }],
  ['/v2/organizations/documents/delete', { organizationId: 'd', documentIds: [] }],
  ['/v2/organizations/documents/move', { organizationId: 'd', documentIds: many(31), folderId: 'f' }],
  ['/v2/organizations/documents/move', { organizationId: 'd', documentIds: ['a'] }],
  ['/v2/organizations/documents/move', { organizationId: 'd', documentIds: ['a'], folderId: gt }],
  ['/v2/organizations/documents/access/update', { organizationId: 'd', documentIds: ['a'], accessType: 'everyone' }],
  ['/v2/organizations/documents/access/update', { organizationId: 'd', documentIds: [gt] }],
  ['/v2/organizations/documents/access/disablestate/update', { organizationId: 'd', documentIds: ['a'], disabled: 1 }],
  ['/v2/organizations/documents/access/disablestate/update', { organizationId: 'd', documentIds: many(1001) }],
];

test('bad input always gets the INVALID_ARGUMENT failure envelope naming the field', async () => {
  for (const [url, data] of badInputs) {
    const r = await post(url, data);
    assert.is(r.status, 400, `${url} ${JSON.stringify(data).slice(0, 80)}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    assert.is(r.body.error.status, 'INVALID_ARGUMENT', url);
    assert.match(r.body.error.message, /data\./, url);
    assert.is(r.body.result, undefined);
  }
  for (const url of ['/v2/organizations/documents/get', '/v2/organizations/folders/add']) {
    const r = await h.raw(url, '{"data": [1]}', t.headers);
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
    assert.is((await h.post(url, { organizationId: 'd' }, {})).body.error.status, 'UNAUTHENTICATED');
  }
});

test.run();
