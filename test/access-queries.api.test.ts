/**
 * The access queries on a fixed organization (semantics §3 "Access queries"): the worked
 * examples of docs/permissions.md, answer for answer; the read budget ending a page early
 * with a token, never an error; validation, tokens and NOT_FOUND.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { FUTURE, NOW, PAST } from './support/time.js';
import { resourcesPage, usersPage } from '../queries/access.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.ok(url, data, t.headers);
const grant = (userId: string, type: string, id: string, accessRole: string, expiresAt?: number) =>
  post('/v2/auth/permissions/add', {
    userId,
    permissions: { resources: [{ type, id, ...(type !== 'organization' ? { organizationId: 'o' } : {}), accessRole, ...(expiresAt ? { expiresAt } : {}) }] },
  });

test.before(async () => {
  h = await harness({}, { clock: () => NOW });
  t = await h.tenant();
  await post('/v2/organizations/folders/add', {
    organizationId: 'o',
    createOrganization: true,
    folders: [
      { folderId: 'top', accessType: 'restricted' },
      { folderId: 'mid', parentFolderId: 'top' },
      { folderId: 'leaf', parentFolderId: 'mid', accessType: 'organizationPrivate' },
      { folderId: 'pub', accessType: 'public' },
    ],
  });
  await post('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'top', documents: [{ documentId: 'dTop' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'leaf', documents: [{ documentId: 'dLeaf' }, { documentId: 'dOwn', accessType: 'restricted' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'dRoot' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'pub', documents: [{ documentId: 'dPub' }, { documentId: 'dDis' }] });
  await post('/v2/organizations/documents/access/disablestate/update', { organizationId: 'o', documentIds: ['dDis'], disabled: true });
  await grant('alice', 'folder', 'top', 'viewer');
  await grant('bob', 'organization', 'o', 'editor');
  await grant('carol', 'document', 'dLeaf', 'editor', FUTURE);
  await grant('dave', 'folder', 'mid', 'viewer', PAST);
  await grant('erin', 'folder', 'mid', 'editor');
  await grant('erin', 'document', 'dOwn', 'viewer');
});
test.after(async () => h.close());

test('resources/get: the documents alice can open, in creation order, each as permissions/get answers', async () => {
  const r = await post('/v2/auth/resources/get', { organizationId: 'o', userId: 'alice', type: 'document' });
  assert.equal(r.data, [
    { id: 'dTop', accessRole: 'viewer', accessType: 'restricted' },
    { id: 'dLeaf', accessRole: 'viewer', accessType: 'organizationPrivate' },
    { id: 'dOwn', accessRole: 'viewer', accessType: 'restricted' },
    { id: 'dRoot', accessRole: 'editor', accessType: 'public' },
    { id: 'dPub', accessRole: 'editor', accessType: 'public' },
  ]);
  assert.is(r.pageToken, undefined);
  const truth = await post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['alice'], documentIds: ['dTop', 'dLeaf', 'dOwn', 'dRoot', 'dPub', 'dDis'] });
  for (const row of r.data) assert.equal({ id: row.id, ...truth.data.alice.documents[row.id] }, row);
  assert.is(truth.data.alice.documents.dDis.error, 'Document is disabled');

  const editor = await post('/v2/auth/resources/get', { organizationId: 'o', userId: 'alice', type: 'document', minAccessRole: 'editor' });
  assert.equal(editor.data.map((x: { id: string }) => x.id), ['dRoot', 'dPub']);
});

test('resources/get: folders, a subtree, and paging one row at a time', async () => {
  const bob = await post('/v2/auth/resources/get', { organizationId: 'o', userId: 'bob', type: 'folder' });
  // An organization member: not into the restricted folders, into the others as editor.
  assert.equal(bob.data, [
    { id: 'leaf', accessRole: 'editor', accessType: 'organizationPrivate' },
    { id: 'pub', accessRole: 'editor', accessType: 'public' },
  ]);
  const sub = await post('/v2/auth/resources/get', { organizationId: 'o', userId: 'erin', type: 'document', folderId: 'mid' });
  assert.equal(sub.data, [
    { id: 'dLeaf', accessRole: 'editor', accessType: 'organizationPrivate' },
    { id: 'dOwn', accessRole: 'viewer', accessType: 'restricted' },
  ]);
  const folders = await post('/v2/auth/resources/get', { organizationId: 'o', userId: 'erin', type: 'folder', folderId: 'mid' });
  assert.equal(folders.data.map((x: { id: string }) => x.id), ['mid', 'leaf']);

  const seen: string[] = [];
  let token: string | undefined;
  do {
    const page = await post('/v2/auth/resources/get', { organizationId: 'o', userId: 'alice', type: 'document', pageSize: 1, ...(token ? { pageToken: token } : {}) });
    assert.ok(page.data.length <= 1);
    seen.push(...page.data.map((x: { id: string }) => x.id));
    token = page.pageToken;
  } while (token);
  assert.equal(seen, ['dTop', 'dLeaf', 'dOwn', 'dRoot', 'dPub']);
});

test('users/get: who can open dLeaf, each with the grant the role comes from', async () => {
  const r = await post('/v2/auth/users/get', { organizationId: 'o', documentId: 'dLeaf' });
  assert.equal(r.data, {
    accessType: 'organizationPrivate',
    everyone: false,
    users: [
      { userId: 'alice', accessRole: 'viewer', via: { type: 'user', level: 'folder', id: 'top' } },
      { userId: 'bob', accessRole: 'editor', via: { type: 'user', level: 'organization', id: 'o' } },
      { userId: 'carol', accessRole: 'editor', expiresAt: FUTURE, via: { type: 'user', level: 'resource', id: 'dLeaf' } },
      { userId: 'erin', accessRole: 'editor', via: { type: 'user', level: 'folder', id: 'mid' } },
    ],
  });
  assert.is(r.pageToken, undefined);
  // dave's grant expired; on a restricted folder an organization member (bob) is not let in.
  const top = await post('/v2/auth/users/get', { organizationId: 'o', folderId: 'mid', minAccessRole: 'editor' });
  assert.equal(top.data, { accessType: 'restricted', everyone: false, users: [{ userId: 'erin', accessRole: 'editor', via: { type: 'user', level: 'resource', id: 'mid' } }] });
  const pub = await post('/v2/auth/users/get', { organizationId: 'o', documentId: 'dPub' });
  assert.equal(pub.data, { accessType: 'public', everyone: true, users: [{ userId: 'bob', accessRole: 'editor', via: { type: 'user', level: 'organization', id: 'o' } }] });
  const dis = await post('/v2/auth/users/get', { organizationId: 'o', documentId: 'dDis' });
  assert.equal(dis.data, { accessType: 'public', everyone: false, users: [] });
});

test('permissions/explain: an expired grant, a deciding grant, a disabled document', async () => {
  const dave = await post('/v2/auth/permissions/explain', { organizationId: 'o', userId: 'dave', documentId: 'dLeaf' });
  assert.equal(dave.data, {
    entry: { error: 'User does not have access to document', errorCode: 'permission_denied', accessType: 'organizationPrivate' },
    accessType: { value: 'organizationPrivate', from: { level: 'folder', id: 'leaf' } },
    candidates: [{ level: 'folder', id: 'mid', via: 'user', accessRole: 'viewer', expiresAt: PAST, live: false }],
    decidedBy: { rule: '3.4 organizationPrivate' },
  });
  const erin = await post('/v2/auth/permissions/explain', { organizationId: 'o', userId: 'erin', documentId: 'dOwn' });
  assert.equal(erin.data, {
    entry: { accessRole: 'viewer', accessType: 'restricted' },
    accessType: { value: 'restricted', from: { level: 'resource', id: 'dOwn' } },
    candidates: [
      { level: 'resource', id: 'dOwn', via: 'user', accessRole: 'viewer', live: true },
      { level: 'folder', id: 'mid', via: 'user', accessRole: 'editor', live: true },
    ],
    decidedBy: { rule: '3.4 restricted', candidate: 0 },
  });
  const bob = await post('/v2/auth/permissions/explain', { organizationId: 'o', userId: 'bob', folderId: 'mid' });
  assert.equal(bob.data, {
    entry: { error: 'User does not have access to folder', errorCode: 'permission_denied', accessType: 'restricted' },
    accessType: { value: 'restricted', from: { level: 'folder', id: 'top' } },
    candidates: [{ level: 'organization', id: 'o', via: 'user', accessRole: 'editor', live: true }],
    decidedBy: { rule: '3.4 restricted' },
  });
  const dis = await post('/v2/auth/permissions/explain', { organizationId: 'o', userId: 'bob', documentId: 'dDis' });
  assert.equal(dis.data.blocked, 'document disabled');
  assert.equal(dis.data.decidedBy, { rule: '3.2 disabled' });
  assert.equal(dis.data.entry, { error: 'Document is disabled', errorCode: 'permission_denied', accessType: 'public' });
  const anyone = await post('/v2/auth/permissions/explain', { organizationId: 'o', userId: 'nobody', documentId: 'dRoot' });
  assert.equal(anyone.data, {
    entry: { accessRole: 'editor', accessType: 'public' },
    accessType: { value: 'public', from: { level: 'organization', id: 'o' } },
    candidates: [],
    decidedBy: { rule: '3.4 public' },
  });
});

test('a page whose read budget runs out ends early with a token; reading on gives every row once', async () => {
  await post('/v2/organizations/documents/add', {
    organizationId: 'big',
    createOrganization: true,
    documents: Array.from({ length: 80 }, (_, i) => ({ documentId: `b${String(i).padStart(2, '0')}`, accessType: 'restricted' })),
  });
  const wanted = ['b07', 'b41', 'b79'];
  for (const d of wanted) await post('/v2/auth/permissions/add', { userId: 'sparse', permissions: { resources: [{ type: 'document', id: d, organizationId: 'big', accessRole: 'viewer' }] } });
  const users = Array.from({ length: 30 }, (_, i) => `user${String(i).padStart(2, '0')}`);
  for (const u of users) await post('/v2/auth/permissions/add', { userId: u, permissions: { resources: [{ type: 'document', id: 'b00', organizationId: 'big', accessRole: 'editor' }] } });

  const read = h.services.read;
  const rows: string[] = [];
  let token: string | undefined;
  let pages = 0;
  let short = 0;
  do {
    // Batches start at pageSize and double: the budget is checked between them.
    const page = await resourcesPage(read, t.apiKey, NOW, { organizationId: 'big', userId: 'sparse', type: 'document', pageSize: 5, ...(token ? { pageToken: token } : {}) }, 40);
    rows.push(...page.rows.map((r) => r.id));
    token = page.pageToken;
    if (token && page.rows.length < 5) short++;
    assert.ok(++pages < 100, 'every page moves on');
  } while (token);
  assert.equal(rows, wanted);
  assert.ok(short > 1, 'pages ended early on the budget');
  // The route's own budget is far larger: one page holds them all.
  const whole = await post('/v2/auth/resources/get', { organizationId: 'big', userId: 'sparse', type: 'document' });
  assert.equal(whole.data.map((r: { id: string }) => r.id), wanted);
  assert.is(whole.pageToken, undefined);

  const listed: string[] = [];
  pages = 0;
  short = 0;
  do {
    const page = await usersPage(read, t.apiKey, NOW, { organizationId: 'big', documentId: 'b00', pageSize: 100, ...(token ? { pageToken: token } : {}) }, 10);
    listed.push(...page.data.users.map((u) => u.userId));
    token = page.pageToken;
    if (token && page.data.users.length < 100) short++;
    assert.ok(++pages < 100, 'every page moves on');
  } while (token);
  assert.equal(listed, users);
  assert.ok(short > 1, 'pages ended early on the budget');
});

test('a subtree read under a tiny budget: every page moves on, together they list exactly the subtree', async () => {
  // Folders inside A's subtree interleave, in creation order, with folders outside it.
  const folders: Array<{ folderId: string; parentFolderId?: string; accessType?: string }> = [{ folderId: 'A', accessType: 'restricted' }, { folderId: 'Z' }];
  for (let i = 0; i < 20; i++) {
    folders.push({ folderId: `a${i}`, parentFolderId: i < 2 ? 'A' : `a${i - 2}` });
    folders.push({ folderId: `z${i}`, parentFolderId: 'Z' });
  }
  await post('/v2/organizations/folders/add', { organizationId: 'tree', createOrganization: true, folders });
  for (const f of folders) {
    await post('/v2/organizations/documents/add', { organizationId: 'tree', folderId: f.folderId, documents: [{ documentId: `${f.folderId}-1` }, { documentId: `${f.folderId}-2` }] });
  }
  for (const r of ['a3', 'a7-2', 'a12', 'z4', 'A-1']) {
    const type = r.includes('-') ? 'document' : 'folder';
    await post('/v2/auth/permissions/add', { userId: 'walker', permissions: { resources: [{ type, id: r, organizationId: 'tree', accessRole: 'viewer' }] } });
  }
  const read = h.services.read;
  for (const type of ['document', 'folder'] as const) {
    const whole = await post('/v2/auth/resources/get', { organizationId: 'tree', userId: 'walker', type, folderId: 'A', pageSize: 1000 });
    assert.is(whole.pageToken, undefined);
    const rows: unknown[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await resourcesPage(read, t.apiKey, NOW, { organizationId: 'tree', userId: 'walker', type, folderId: 'A', pageSize: 3, ...(token ? { pageToken: token } : {}) }, 15);
      rows.push(...page.rows);
      token = page.pageToken;
      assert.ok(++pages < 200, 'every page moves on');
    } while (token);
    assert.ok(pages > 3, `${type}: the budget split the walk`);
    assert.equal(rows, whole.data, `${type}: the pages together are the one-page answer`);
  }
  const docs = await post('/v2/auth/resources/get', { organizationId: 'tree', userId: 'walker', type: 'document', folderId: 'A', pageSize: 1000 });
  // The grant on a3 opens a3 and everything below it (a5, a7, ...); a7-2 and A-1 by their own grants.
  const below3 = ['a3', 'a5', 'a7', 'a9', 'a11', 'a13', 'a15', 'a17', 'a19'];
  const below12 = ['a12', 'a14', 'a16', 'a18'];
  const expected = ['A-1', ...folders.map((f) => f.folderId).filter((f) => below3.includes(f) || below12.includes(f)).flatMap((f) => [`${f}-1`, `${f}-2`])];
  assert.equal(docs.data.map((r: { id: string }) => r.id).sort(), expected.sort());
});

test('validation, tokens and missing resources', async () => {
  const call = (url: string, data: unknown) => h.post(url, data, t.headers);
  let r = await call('/v2/auth/users/get', { organizationId: 'o' });
  assert.is(r.status, 400);
  assert.match(r.body.error.message, 'data.documentId is required (or data.folderId)');
  r = await call('/v2/auth/permissions/explain', { organizationId: 'o', userId: 'a', documentId: 'dTop', folderId: 'top' });
  assert.is(r.status, 400);
  assert.match(r.body.error.message, 'data.folderId cannot be given with data.documentId');
  r = await call('/v2/auth/resources/get', { organizationId: 'o', userId: 'a', type: 'document', pageSize: 1001 });
  assert.is(r.status, 400);
  assert.match(r.body.error.message, 'data.pageSize must be at most 1000');
  r = await call('/v2/auth/resources/get', { organizationId: 'o', userId: 'a', type: 'organization' });
  assert.is(r.status, 400);
  r = await call('/v2/auth/resources/get', { organizationId: 'o', userId: 'a', type: 'document', minAccessRole: 'owner' });
  assert.is(r.status, 400);
  r = await call('/v2/auth/resources/get', { organizationId: 'o', userId: 'a', type: 'document', pageToken: 'garbled!' });
  assert.is(r.status, 400);
  assert.is(r.body.error.message, 'data.pageToken is not a valid page token for this query.');

  // A token from another query (another user) is refused: it cannot move a cursor elsewhere.
  const page = await post('/v2/auth/resources/get', { organizationId: 'o', userId: 'alice', type: 'document', pageSize: 1 });
  r = await call('/v2/auth/resources/get', { organizationId: 'o', userId: 'bob', type: 'document', pageSize: 1, pageToken: page.pageToken });
  assert.is(r.status, 400);
  const users = await post('/v2/auth/users/get', { organizationId: 'o', documentId: 'dLeaf', pageSize: 1 });
  assert.ok(users.pageToken);
  r = await call('/v2/auth/users/get', { organizationId: 'o', documentId: 'dTop', pageSize: 1, pageToken: users.pageToken });
  assert.is(r.status, 400);

  for (const [url, data, message] of [
    ['/v2/auth/resources/get', { organizationId: 'nope', userId: 'a', type: 'folder' }, 'Organization does not exist.'],
    ['/v2/auth/resources/get', { organizationId: 'o', userId: 'a', type: 'folder', folderId: 'nope' }, 'Folder does not exist.'],
    ['/v2/auth/users/get', { organizationId: 'o', documentId: 'nope' }, 'Document does not exist.'],
    ['/v2/auth/users/get', { organizationId: 'o', folderId: 'nope' }, 'Folder does not exist.'],
    ['/v2/auth/permissions/explain', { organizationId: 'o', userId: 'a', documentId: 'nope' }, 'Document does not exist.'],
    ['/v2/auth/permissions/explain', { organizationId: 'nope', userId: 'a', folderId: 'top' }, 'Organization does not exist.'],
  ] as const) {
    r = await call(url, data);
    assert.is(r.status, 404, `${url} ${JSON.stringify(data)}`);
    assert.is(r.body.error.message, message);
  }
  // Another API key sees none of it.
  const other = await h.tenant();
  r = await h.post('/v2/auth/users/get', { organizationId: 'o', documentId: 'dLeaf' }, other.headers);
  assert.is(r.status, 404);
});

test('group grants (rule 7): who a group lets in, listed once, after the users with grants of their own; explain names the group; leaving takes it away', async () => {
  // A group "design" with an editor grant on folder mid; frank and alice join it (members
  // join with an organization grant, removed again so only the group's grant counts for frank).
  const orgGrant = { permissions: { resources: [{ type: 'organization', id: 'o' }] } };
  await post('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'design', groupName: 'Design' }, { groupId: 'all', groupName: 'All' }] });
  await post('/v2/auth/permissions/add', { userId: 'frank', ...orgGrant });
  await post('/v2/auth/permissions/add', { userId: 'alice', ...orgGrant });
  await post('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'design', userIds: ['frank', 'alice'] });
  await post('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'all', userIds: ['frank'] });
  await post('/v2/auth/permissions/remove', { userId: 'frank', ...orgGrant });
  await post('/v2/auth/permissions/remove', { userId: 'alice', ...orgGrant });
  await post('/v2/auth/permissions/add', { group: { groupId: 'design' }, permissions: { resources: [{ type: 'folder', id: 'mid', organizationId: 'o', accessRole: 'editor' }] } });
  await post('/v2/auth/permissions/add', { group: { groupId: 'all' }, permissions: { resources: [{ type: 'organization', id: 'o', accessRole: 'viewer' }] } });

  const r = await post('/v2/auth/users/get', { organizationId: 'o', documentId: 'dLeaf' });
  assert.equal(r.data.users, [
    // alice holds her own grant on top, so she is listed among the holders; on mid the
    // group's editor grant is more specific than her own on top, so it decides.
    { userId: 'alice', accessRole: 'editor', via: { type: 'group', level: 'folder', id: 'mid', groupId: 'design' } },
    { userId: 'bob', accessRole: 'editor', via: { type: 'user', level: 'organization', id: 'o' } },
    { userId: 'carol', accessRole: 'editor', expiresAt: FUTURE, via: { type: 'user', level: 'resource', id: 'dLeaf' } },
    { userId: 'erin', accessRole: 'editor', via: { type: 'user', level: 'folder', id: 'mid' } },
    // frank only through groups: once, at the first of his groups' grants from dLeaf up.
    { userId: 'frank', accessRole: 'editor', via: { type: 'group', level: 'folder', id: 'mid', groupId: 'design' } },
  ]);
  // The same users one per page: every page moves on, nobody twice.
  const paged: string[] = [];
  let token: string | undefined;
  do {
    const page = await post('/v2/auth/users/get', { organizationId: 'o', documentId: 'dLeaf', pageSize: 1, ...(token ? { pageToken: token } : {}) });
    paged.push(...page.data.users.map((u: { userId: string }) => u.userId));
    token = page.pageToken;
  } while (token);
  assert.equal(paged, ['alice', 'bob', 'carol', 'erin', 'frank']);
  // And under a budget of a few reads per page.
  const budgeted: string[] = [];
  let pages = 0;
  do {
    const page = await usersPage(h.services.read, t.apiKey, NOW, { organizationId: 'o', documentId: 'dLeaf', ...(token ? { pageToken: token } : {}) }, 3);
    budgeted.push(...page.data.users.map((u) => u.userId));
    token = page.pageToken;
    assert.ok(++pages < 200, 'every page moves on');
  } while (token);
  assert.equal(budgeted, paged);
  assert.ok(pages > 2, 'the budget split the walk');

  // On the restricted folder top, the group "all" (organization) lets nobody in.
  const top = await post('/v2/auth/users/get', { organizationId: 'o', folderId: 'top' });
  assert.equal(top.data.users.map((u: { userId: string }) => u.userId), ['alice']);

  const x = await post('/v2/auth/permissions/explain', { organizationId: 'o', userId: 'frank', documentId: 'dOwn' });
  assert.equal(x.data, {
    entry: { accessRole: 'editor', accessType: 'restricted' },
    accessType: { value: 'restricted', from: { level: 'resource', id: 'dOwn' } },
    candidates: [
      { level: 'folder', id: 'mid', via: 'group', groupId: 'design', accessRole: 'editor', live: true },
      { level: 'organization', id: 'o', via: 'group', groupId: 'all', accessRole: 'viewer', live: true },
    ],
    decidedBy: { rule: '3.4 restricted', candidate: 0 },
  });
  const docs = await post('/v2/auth/resources/get', { organizationId: 'o', userId: 'frank', type: 'document', minAccessRole: 'editor' });
  // The public documents let frank in as the group "all" makes him: a viewer.
  assert.equal(docs.data.map((d: { id: string }) => d.id), ['dLeaf', 'dOwn']);

  // Leaving the group takes its access away at once, from every question.
  await post('/v2/organizations/usergroups/users/delete', { organizationId: 'o', organizationUserGroupId: 'design', userIds: ['frank'] });
  const after = await post('/v2/auth/users/get', { organizationId: 'o', documentId: 'dLeaf' });
  assert.equal(after.data.users.find((u: { userId: string }) => u.userId === 'frank'), { userId: 'frank', accessRole: 'viewer', via: { type: 'group', level: 'organization', id: 'o', groupId: 'all' } });
  const gone = await post('/v2/auth/resources/get', { organizationId: 'o', userId: 'frank', type: 'document' });
  // organizationPrivate dLeaf as a member through "all"; restricted dOwn no longer.
  assert.equal(gone.data.map((d: { id: string; accessRole: string }) => `${d.id}:${d.accessRole}`), ['dLeaf:viewer', 'dRoot:viewer', 'dPub:viewer']);
});

test.run();
