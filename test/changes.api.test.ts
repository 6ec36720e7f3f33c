/**
 * `/v2/changes/get` (issue 36): a key's changes in log order after a token, from the audit
 * index: families and their filter, paging under concurrent writes (no gap, no duplicate),
 * `since` as a write's consistency token, names of live users and never of erased ones,
 * never a secret, never another key's change.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

const CHANGES = '/v2/changes/get';

interface Change {
  token: string;
  type: string;
  family: string;
  time: number;
  actor: string;
  organizationId?: string;
  resourceType?: string;
  resourceId?: string;
  data: Record<string, any>;
}

let h: Harness;
let t: Tenant;
let other: Tenant;
const ok = (url: string, data: unknown, headers = t.headers) => h.ok(url, data, headers);

/** Every page from `since` to the first empty one. */
async function drain(data: { since?: string; pageSize?: number; types?: string[] }, headers = t.headers): Promise<{ changes: Change[]; nextToken: string }> {
  const out: Change[] = [];
  let since = data.since;
  for (;;) {
    const r = await ok(CHANGES, { ...data, ...(since ? { since } : {}) }, headers);
    since = r.data.nextToken;
    if (r.data.changes.length === 0) return { changes: out, nextToken: since! };
    out.push(...r.data.changes);
  }
}

test.before(async () => {
  h = await harness();
  t = await h.tenant();
  other = await h.tenant();
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'acme', organizationName: 'Acme' }] });
  await ok('/v2/organizations/folders/add', { organizationId: 'acme', folders: [{ folderId: 'f1', folderName: 'One' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'd1', documentName: 'Doc', folderId: 'f1' }] });
  await ok('/v2/users/add', { organizationId: 'acme', documentId: 'd1', users: [{ userId: 'u1', name: 'Livia Present', email: 'livia@example.org', accessRole: 'viewer' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'acme', organizationUserGroups: [{ groupId: 'g1', groupName: 'Team' }] });
  await ok('/v2/agents/create', { agentId: 'bot', name: 'Bot', contextGathering: { strategies: ['web'], strategyOptions: { web: { apiKey: 'sk-very-secret' } } } });
  await ok('/v2/workspace/emailconfig/update', { useEmailService: true, emailServiceConfig: { type: 'sendgrid', apiKey: 'SG.top-secret', fromEmail: 'no-reply@example.com' } });
  // Same ids under another key: never in this key's feed.
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'acme', organizationName: 'Other Acme' }] }, other.headers);
  await ok('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'd1', documentName: 'Other doc' }] }, other.headers);
});
test.after(async () => h.close());

test('from the start: every change of the key in log order, each with its family, ids and actor', async () => {
  const { changes } = await drain({});
  const types = changes.map((c) => c.type);
  assert.equal(types.slice(0, 2), ['ApiKeyCreated', 'ApiKeyAuthTokenCreated']);
  for (const expected of ['OrganizationCreated', 'FolderAdded', 'DocumentAdded', 'UserAdded', 'GrantAdded', 'UserGroupAdded', 'AgentCreated', 'ApiKeyServiceConfigUpdated']) {
    assert.ok(types.includes(expected), `${expected} in ${types}`);
  }
  // The same order as the audit of the key (log order).
  const audit = await ok('/v2/audit/events/get', { pageSize: 1000 });
  assert.equal(types, audit.data.map((e: { type: string }) => e.type));
  const by = (type: string) => changes.find((c) => c.type === type)!;
  assert.equal([by('FolderAdded').family, by('FolderAdded').organizationId, by('FolderAdded').resourceType, by('FolderAdded').resourceId], ['folder', 'acme', 'folder', 'f1']);
  assert.equal([by('DocumentAdded').family, by('DocumentAdded').resourceType, by('DocumentAdded').resourceId], ['document', 'document', 'd1']);
  const docGrant = changes.find((c) => c.type === 'GrantAdded' && c.data.resourceType === 'document')!;
  assert.equal([docGrant.family, docGrant.organizationId, docGrant.resourceType, docGrant.resourceId, docGrant.data.userId], ['grant', 'acme', 'document', 'd1', 'u1']);
  assert.is(by('UserGroupAdded').family, 'group');
  assert.is(by('AgentCreated').family, 'agent');
  assert.is(by('ApiKeyServiceConfigUpdated').family, 'apiKey');
  assert.is(by('DocumentAdded').actor, `apikey:${t.apiKey}`);
  assert.type(by('DocumentAdded').time, 'number');
  assert.is(new Set(changes.map((c) => c.token)).size, changes.length, 'a token per change');
  assert.not.ok(JSON.stringify(changes).includes('Other'), 'nothing of another key');
});

test('types: only those families; a grant on a document is a grant, not a document', async () => {
  const all = (await drain({})).changes;
  const docs = (await drain({ types: ['document'] })).changes;
  assert.equal(docs.map((c) => c.type), ['DocumentAdded']);
  const grants = (await drain({ types: ['grant'] })).changes;
  assert.ok(grants.some((c) => c.data.resourceType === 'document') && grants.every((c) => c.family === 'grant' && c.type === 'GrantAdded'), JSON.stringify(grants.map((c) => c.type)));
  const both = (await drain({ types: ['grant', 'document', 'folder'], pageSize: 1 })).changes;
  assert.equal(both.map((c) => c.token), all.filter((c) => ['grant', 'document', 'folder'].includes(c.family)).map((c) => c.token), 'the merge of families is in log order');
  const refused = await h.post(CHANGES, { types: ['documents'] }, t.headers);
  assert.is(refused.status, 400);
  assert.match(refused.body.error.message, /data\.types\[0\]/);
});

test('since: a write\'s consistency token gives exactly the changes after it; an empty page ends the feed and its nextToken waits there', async () => {
  const w = await h.post('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'since-1' }] }, t.headers);
  const token = w.headers['x-consistency-token'] as string;
  const before = await drain({});
  assert.is(before.changes.at(-1)!.token, token, 'the write\'s token is its last change\'s token');
  let r = await ok(CHANGES, { since: token });
  assert.equal(r.data.changes, []);
  const end = r.data.nextToken;
  await ok('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'since-2' }, { documentId: 'since-3' }] });
  r = await ok(CHANGES, { since: end });
  assert.equal(r.data.changes.map((c: Change) => c.resourceId), ['since-2', 'since-3']);
  r = await ok(CHANGES, { since: r.data.changes[0].token });
  assert.equal(r.data.changes.map((c: Change) => c.resourceId), ['since-3'], 'strictly after a change\'s own token');
  // Another key's token, a changed one: refused, naming the field.
  const foreign = (await h.post('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'x' }] }, other.headers)).headers['x-consistency-token'] as string;
  for (const since of [foreign, `${end.slice(0, -2)}${end.endsWith('AA') ? 'BB' : 'AA'}`]) {
    const bad = await h.post(CHANGES, { since }, t.headers);
    assert.is(bad.status, 400);
    assert.match(bad.body.error.message, /^data\.since is not a consistency or change token of this caller/);
  }
});

test('over 1,000 changes paged 50 at a time while writes go on: every change exactly once, in log order, filtered or not', async () => {
  const start = (await drain({})).nextToken;
  const ROUNDS = 70;
  let writing = true;
  const writer = (async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const docs = Array.from({ length: 5 }, (_, j) => `c${i}-${j}`);
      await ok('/v2/organizations/documents/add', { organizationId: 'acme', documents: docs.map((documentId) => ({ documentId })) });
      await ok('/v2/users/add', { organizationId: 'acme', documentId: docs[0], users: Array.from({ length: 5 }, (_, j) => ({ userId: `cu${i}-${j}`, accessRole: 'editor' })) });
    }
    writing = false;
  })();
  /** Pages of `pageSize` from `start` while the writer runs, then to the first empty page after it stopped. */
  const follow = async (pageSize: number, types?: string[]) => {
    const out: Change[] = [];
    let since = start;
    for (;;) {
      const done = !writing;
      const r = await ok(CHANGES, { since, pageSize, ...(types ? { types } : {}) });
      out.push(...r.data.changes);
      since = r.data.nextToken;
      if (done && r.data.changes.length === 0) return out;
      if (r.data.changes.length === 0) await new Promise((res) => setTimeout(res, 5));
    }
  };
  const [all, grantsAndDocs, docs, small] = await Promise.all([follow(50), follow(50, ['grant', 'document']), follow(50, ['document']), follow(7, ['user', 'grant']), writer]);
  assert.ok(all.length >= ROUNDS * 15, `${all.length} changes`);
  assert.is(new Set(all.map((c) => c.token)).size, all.length, 'no duplicate');
  const expected = Array.from({ length: ROUNDS }, (_, i) => Array.from({ length: 5 }, (_, j) => `c${i}-${j}`)).flat();
  assert.equal(all.filter((c) => c.type === 'DocumentAdded').map((c) => c.resourceId), expected, 'no gap, in order');
  assert.equal(docs.map((c) => c.token), all.filter((c) => c.family === 'document').map((c) => c.token));
  assert.equal(grantsAndDocs.map((c) => c.token), all.filter((c) => c.family === 'grant' || c.family === 'document').map((c) => c.token));
  assert.equal(small.map((c) => c.token), all.filter((c) => c.family === 'user' || c.family === 'grant').map((c) => c.token));
  // The same changes as one read after the writes.
  assert.equal(all.map((c) => c.token), (await drain({ since: start, pageSize: 1000 })).changes.map((c) => c.token));
});

test('a live user\'s name and e-mail; an erased user\'s never again; secrets never', async () => {
  await ok('/v2/users/add', { organizationId: 'acme', users: [{ userId: 'gone', name: 'Quentin Erasmus', email: 'quentin.erasmus@example.org' }] });
  await ok('/v2/users/update', { organizationId: 'acme', users: [{ userId: 'gone', name: 'Quentin E. Erasmus' }] });
  let feed = (await drain({ types: ['user'] })).changes;
  const live = feed.find((c) => c.type === 'UserAdded' && c.data.userId === 'u1')!;
  assert.equal([live.data.name, live.data.email, live.data.initial], ['Livia Present', 'livia@example.org', 'LP']);
  const added = feed.find((c) => c.type === 'UserAdded' && c.data.userId === 'gone')!;
  assert.equal([added.data.name, added.data.email], ['Quentin Erasmus', 'quentin.erasmus@example.org']);
  const updated = feed.find((c) => c.type === 'UserProfileUpdated' && c.data.userId === 'gone')!;
  assert.is(updated.data.name, 'Quentin E. Erasmus', 'each change with its own value');

  await ok('/v2/users/data/delete', { userIds: ['gone'] });
  feed = (await drain({})).changes;
  const text = JSON.stringify(feed);
  for (const s of ['Quentin', 'Erasmus', 'quentin.erasmus@example.org']) assert.not.ok(text.includes(s), `${s} is gone from the feed`);
  const still = feed.find((c) => c.type === 'UserAdded' && c.data.userId === 'gone')!;
  assert.ok(still, 'the change itself stays, by id');
  assert.is(still.data.name, undefined);
  assert.is(still.data.email, undefined);
  assert.ok(feed.some((c) => c.type === 'UserErased' && c.data.userId === 'gone'));
  assert.ok(text.includes('Livia Present'), 'another user keeps theirs');

  for (const secret of ['sk-very-secret', 'SG.top-secret']) assert.not.ok(text.includes(secret), secret);
  assert.ok(text.includes('__redacted__'));
  assert.is(feed.find((c) => c.type === 'ApiKeyAuthTokenCreated')!.data.tokenHash, '__redacted__');
});

test('since ahead of the read models: waits, then 503 naming the wait', async () => {
  const lagging = await harness({ READ_YOUR_WRITES_TIMEOUT_MS: '0', CONSISTENCY_WAIT_MS: '200' }, { follow: false });
  try {
    const tl = await lagging.tenant();
    await lagging.services.projections.catchUp();
    await lagging.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o1' }] }, tl.headers);
    const since = (await lagging.post('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'd' }] }, tl.headers)).headers['x-consistency-token'];
    const r = await lagging.post(CHANGES, { since }, tl.headers);
    assert.is(r.status, 503);
    assert.match(r.body.error.message, /data\.since after waiting 200 ms \(CONSISTENCY_WAIT_MS\)/);
    // Nothing past what every read model applied is served: the feed ends before the unapplied write.
    const before = (await lagging.ok(CHANGES, {}, tl.headers)).data.changes.map((c: Change) => c.type);
    assert.not.ok(before.includes('DocumentAdded'), JSON.stringify(before));
    await lagging.services.projections.catchUp();
    const after = (await lagging.ok(CHANGES, {}, tl.headers)).data.changes.map((c: Change) => c.type);
    assert.ok(after.includes('DocumentAdded'));
  } finally {
    await lagging.close();
  }
});

test.run();
