/** /v2/audit/events/get: the caller's own history, in order, filtered, paged, secrets redacted. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

let h: Harness;
let t: Tenant;
let other: Tenant;
const AUDIT = '/v2/audit/events/get';
const ok = (url: string, data: unknown, headers = t.headers) => h.ok(url, data, headers);
const types = (rows: Array<{ type: string }>) => rows.map((r) => r.type);

test.before(async () => {
  h = await harness();
  t = await h.tenant();
  other = await h.tenant();
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'acme', organizationName: 'Acme' }] });
  await ok('/v2/organizations/folders/add', { organizationId: 'acme', folders: [{ folderId: 'f1', folderName: 'One' }, { folderId: 'f2', parentFolderId: 'f1' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'd1', documentName: 'Doc', folderId: 'f1' }] });
  await ok('/v2/organizations/documents/update', { organizationId: 'acme', documents: [{ documentId: 'd1', documentName: 'Doc 2' }] });
  await ok('/v2/organizations/folders/update', { organizationId: 'acme', folders: [{ folderId: 'f1', folderName: 'Uno' }] });
  await ok('/v2/agents/create', { agentId: 'bot', name: 'Bot', contextGathering: { strategies: ['web'], strategyOptions: { web: { apiKey: 'sk-very-secret' } } } });
  await ok('/v2/workspace/emailconfig/update', { useEmailService: true, emailServiceConfig: { type: 'sendgrid', apiKey: 'SG.top-secret', fromEmail: 'no-reply@example.com' } });
  // Same ids under another key: never in this key's history.
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'acme' }] }, other.headers);
  await ok('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'd1' }] }, other.headers);
});
test.after(async () => h.close());

test('a document history: its events in order, with metadata', async () => {
  const r = await ok(AUDIT, { organizationId: 'acme', documentId: 'd1' });
  assert.is(r.message, 'Audit events retrieved successfully.');
  assert.equal(types(r.data), ['DocumentAdded', 'DocumentRenamed']);
  const [added] = r.data;
  assert.equal(added.stream, { category: 'document', ids: ['acme', 'd1'] });
  assert.is(added.revision, 0);
  assert.is(added.actor, `apikey:${t.apiKey}`);
  assert.type(added.requestId, 'string');
  assert.type(added.time, 'number');
  assert.is(added.data.documentName, 'Doc');
  assert.ok(r.data[0].position < r.data[1].position);
  assert.is(r.pageToken, undefined);
});

test('organization, folder, agent and key histories', async () => {
  const org = await ok(AUDIT, { organizationId: 'acme' });
  assert.equal(types(org.data), ['OrganizationCreated', 'FolderAdded', 'FolderAdded', 'DocumentAdded', 'DocumentRenamed', 'FolderRenamed']);
  const folder = await ok(AUDIT, { organizationId: 'acme', folderId: 'f1' });
  assert.equal(types(folder.data), ['FolderAdded', 'FolderRenamed']);
  const agent = await ok(AUDIT, { agentId: 'bot' });
  assert.equal(types(agent.data), ['AgentCreated']);
  const all = await ok(AUDIT, {});
  assert.ok(types(all.data).includes('ApiKeyCreated'), 'the key history starts with its creation');
  assert.ok(types(all.data).includes('AgentCreated'));
  assert.ok(types(all.data).includes('ApiKeyServiceConfigUpdated'));
  for (let i = 1; i < all.data.length; i++) assert.ok(all.data[i].position > all.data[i - 1].position, 'in log order');
});

test('secrets never appear', async () => {
  const all = await ok(AUDIT, {});
  const text = JSON.stringify(all.data);
  for (const secret of ['sk-very-secret', 'SG.top-secret']) assert.not.ok(text.includes(secret), secret);
  assert.ok(text.includes('__redacted__'));
  const created = all.data.find((e: { type: string }) => e.type === 'ApiKeyAuthTokenCreated');
  assert.is(created.data.tokenHash, '__redacted__');
});

test('another key sees only its own history, for the same ids', async () => {
  const r = await ok(AUDIT, { organizationId: 'acme', documentId: 'd1' }, other.headers);
  assert.equal(types(r.data), ['DocumentAdded']);
  assert.is(r.data[0].actor, `apikey:${other.apiKey}`);
  const none = await ok(AUDIT, { agentId: 'bot' }, other.headers);
  assert.equal(none.data, []);
});

test('filters: types and time range', async () => {
  const renamed = await ok(AUDIT, { organizationId: 'acme', types: ['FolderRenamed', 'DocumentRenamed'] });
  assert.equal(types(renamed.data), ['DocumentRenamed', 'FolderRenamed']);
  const all = (await ok(AUDIT, { organizationId: 'acme' })).data;
  const future = await ok(AUDIT, { organizationId: 'acme', fromTime: Date.now() + 60_000 });
  assert.equal(future.data, []);
  const upTo = await ok(AUDIT, { organizationId: 'acme', fromTime: all[0].time, toTime: all.at(-1).time });
  assert.is(upTo.data.length, all.length);
});

test('a folder history merges the events it is the target of with its subject rows, in order, across pages', async () => {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'merge' }] });
  await ok('/v2/organizations/folders/add', { organizationId: 'merge', folders: [{ folderId: 'p' }, { folderId: 'c', parentFolderId: 'p' }] });
  await ok('/v2/organizations/folders/update', { organizationId: 'merge', folders: [{ folderId: 'c', folderName: 'Child' }] });
  await ok('/v2/organizations/folders/delete', { organizationId: 'merge', folderId: 'p' });
  const all = await ok(AUDIT, { organizationId: 'merge', folderId: 'c' });
  // Added and renamed name c first (its target); the deletion names p first and c in its subtree (a row).
  assert.equal(types(all.data).slice(-2), ['FolderRenamed', 'FolderDeleted']);
  assert.ok(all.data.length >= 3);
  const paged: string[] = [];
  let pageToken: string | undefined;
  do {
    const r = await ok(AUDIT, { organizationId: 'merge', folderId: 'c', pageSize: 1, ...(pageToken ? { pageToken } : {}) });
    paged.push(...r.data.map((e: { position: string }) => e.position));
    pageToken = r.pageToken;
  } while (pageToken);
  assert.equal(paged, all.data.map((e: { position: string }) => e.position));
  for (const chunk of [1, 2]) {
    const { scanAudit, subjectOf } = await import('../queries/audit.js');
    const r = await scanAudit(h.services.read, subjectOf({ apiKey: t.apiKey, organizationId: 'merge', folderId: 'c' }).subject, {}, { want: 100, scanLimit: 100, chunk });
    assert.equal(r.events.map((e) => e.event.position), paged, `chunk ${chunk}`);
  }
});

test('a document and a folder history hold the grants on them: a user\'s and a group\'s', async () => {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'grants' }] });
  await ok('/v2/organizations/folders/add', { organizationId: 'grants', folders: [{ folderId: 'gf' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'grants', folderId: 'gf', documents: [{ documentId: 'gd' }] });
  await ok('/v2/users/add', { organizationId: 'grants', users: [{ userId: 'u' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'grants', organizationUserGroups: [{ groupId: 'team', groupName: 'Team' }] });
  const on = (type: 'document' | 'folder', id: string) => ({ type, id, organizationId: 'grants', accessRole: 'viewer' });
  await ok('/v2/auth/permissions/add', { user: { userId: 'u' }, permissions: { resources: [on('document', 'gd'), on('folder', 'gf')] } });
  await ok('/v2/auth/permissions/add', { group: { groupId: 'team' }, permissions: { resources: [on('document', 'gd'), on('folder', 'gf')] } });
  await ok('/v2/auth/permissions/remove', { group: { groupId: 'team' }, permissions: { resources: [on('document', 'gd')] } });
  const doc = await ok(AUDIT, { organizationId: 'grants', documentId: 'gd' });
  assert.equal(types(doc.data), ['DocumentAdded', 'GrantAdded', 'GroupAccessGranted', 'GroupAccessRevoked']);
  const folder = await ok(AUDIT, { organizationId: 'grants', folderId: 'gf' });
  assert.equal(types(folder.data), ['FolderAdded', 'GrantAdded', 'GroupAccessGranted']);
});

test('paging with pageToken; tokens are bound to the query', async () => {
  const seen: string[] = [];
  let pageToken: string | undefined;
  let pages = 0;
  do {
    const r = await ok(AUDIT, { organizationId: 'acme', pageSize: 4, ...(pageToken ? { pageToken } : {}) });
    seen.push(...types(r.data));
    pageToken = r.pageToken;
    pages++;
  } while (pageToken);
  assert.is(pages, 2);
  assert.equal(seen, ['OrganizationCreated', 'FolderAdded', 'FolderAdded', 'DocumentAdded', 'DocumentRenamed', 'FolderRenamed']);
  const first = await ok(AUDIT, { organizationId: 'acme', pageSize: 2 });
  const wrong = await h.post(AUDIT, { organizationId: 'acme', documentId: 'd1', pageToken: first.pageToken }, t.headers);
  assert.is(wrong.status, 400);
  assert.is(wrong.body.error.status, 'INVALID_ARGUMENT');
  const foreign = await h.post(AUDIT, { organizationId: 'acme', pageSize: 2, pageToken: first.pageToken }, other.headers);
  assert.is(foreign.status, 400, 'a token never moves into another key');
});

test('bad input and no credentials get the failure envelope', async () => {
  for (const [data, message] of [
    [{ documentId: 'd1' }, /organizationId is required/],
    [{ organizationId: 'acme', folderId: 'f1', documentId: 'd1' }, /not both/],
    [{ agentId: 'bot', organizationId: 'acme' }, /cannot be combined/],
    [{ pageSize: 0 }, /pageSize/],
    [{ fromTime: 'yesterday' }, /fromTime/],
    [{ types: 'DocumentAdded' }, /types/],
    [{ pageToken: 'garbage!' }, /pageToken/],
  ] as const) {
    const r = await h.post(AUDIT, data, t.headers);
    assert.is(r.status, 400, JSON.stringify(data));
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
    assert.match(r.body.error.message, message);
  }
  const anon = await h.post(AUDIT, {});
  assert.is(anon.status, 401);
  assert.is(anon.body.error.status, 'UNAUTHENTICATED');
});

test.run();
