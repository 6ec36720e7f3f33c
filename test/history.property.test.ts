/**
 * Access as of a past instant (issue 25) answers what was answered live then. Random
 * histories are driven through the API on a test clock: folders added, moved (under another
 * folder or to the root), their access types set and inherited, deleted (and re-created with
 * the same id); documents the same ways plus disabled and enabled; the organization disabled
 * and enabled; user grants of both roles, permanent and temporary (expiring a second or two
 * later while the clock moves on), with access fields added and removed, replaced and
 * revoked; group grants the same ways; members
 * joining and leaving; and at times the clock only moving, across expiries. Some steps fail
 * (a move under a missing folder, a grant on a deleted document): a failed step must change
 * nothing then either.
 *
 * After each step, at the clock's reading t, every access question is asked live: permissions/
 * get for every user and resource id (NOT_FOUND with its details when one is missing),
 * permissions/explain for each user and resource, resources/get for each user and type and
 * users/get for each resource (read to the end with a small pageSize). Once the history is
 * done, the clock moves on and each question is asked again with `asOf: t` (ISO or Unix ms,
 * alternately), and must answer exactly the same: status, message and data (page tokens
 * aside: they are bound to the instant asked about).
 *
 * HISTORY_PROPERTY_RUNS sets the number of histories (default 12).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { harness, type Harness, type Tenant } from './support/app.js';
import { NOW } from './support/time.js';

const RUNS = Number(process.env.HISTORY_PROPERTY_RUNS ?? 12);

const USERS = ['u0', 'Ü1', 'u"2'];
const FOLDERS = ['f0', 'f1', 'f2'];
const DOCUMENTS = ['d0', 'd1', 'd2'];
const GROUPS = ['g0', 'g1'];
const RESOURCES = [...FOLDERS.map((id) => ['folder', id] as const), ...DOCUMENTS.map((id) => ['document', id] as const)];

const accessType = fc.constantFrom<string | undefined>('public', 'organizationPrivate', 'restricted', undefined);
const role = fc.constantFrom('editor', 'viewer');
/** A grant's expiry: permanent, or 1 or 2 whole seconds after the current one. */
const expiry = fc.constantFrom<number | null>(null, null, 1, 2);
const target = fc.nat(RESOURCES.length); // RESOURCES.length: the organization
const action = fc.oneof(
  fc.record({ kind: fc.constant('addFolder' as const), f: fc.nat(2), parent: fc.nat(3), accessType }),
  fc.record({ kind: fc.constant('moveFolder' as const), f: fc.nat(2), parent: fc.nat(3) }),
  fc.record({ kind: fc.constant('folderAccess' as const), f: fc.nat(2), accessType }),
  fc.record({ kind: fc.constant('deleteFolder' as const), f: fc.nat(2) }),
  fc.record({ kind: fc.constant('addDocument' as const), d: fc.nat(2), folder: fc.nat(3), accessType }),
  fc.record({ kind: fc.constant('moveDocument' as const), d: fc.nat(2), folder: fc.nat(3) }),
  fc.record({ kind: fc.constant('documentAccess' as const), d: fc.nat(2), accessType }),
  fc.record({ kind: fc.constant('disableDocument' as const), d: fc.nat(2), disabled: fc.boolean() }),
  fc.record({ kind: fc.constant('deleteDocument' as const), d: fc.nat(2) }),
  fc.record({ kind: fc.constant('disableOrganization' as const), disabled: fc.boolean() }),
  fc.record({ kind: fc.constant('grant' as const), u: fc.nat(2), r: target, role, expiry, field: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }) }),
  // `field`: only that access field goes (semantics §4a), the grant stays.
  fc.record({ kind: fc.constant('revoke' as const), u: fc.nat(2), r: target, field: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }) }),
  fc.record({ kind: fc.constant('groupGrant' as const), g: fc.nat(1), r: target, role, expiry }),
  fc.record({ kind: fc.constant('groupRevoke' as const), g: fc.nat(1), r: target }),
  fc.record({ kind: fc.constant('join' as const), u: fc.nat(2), g: fc.nat(1) }),
  fc.record({ kind: fc.constant('leave' as const), u: fc.nat(2), g: fc.nat(1) }),
  fc.record({ kind: fc.constant('tick' as const) }),
);
type Action = typeof action extends fc.Arbitrary<infer T> ? T : never;
/** How far the clock moves before a step: same millisecond, 1 ms, a little, past a second. */
const step = fc.record({ action, advance: fc.constantFrom(0, 1, 1, 37, 600, 1000) });

let h: Harness;
let t: Tenant;
let now = NOW;
let runs = 0;

test.before(async () => {
  h = await harness({}, { clock: () => now });
  t = await h.tenant();
});
test.after(async () => h.close());

const post = (url: string, data: unknown) => h.post(url, data, t.headers);

function resourceOf(o: string, r: number) {
  if (r >= RESOURCES.length) return { type: 'organization', id: o };
  const [type, id] = RESOURCES[r]!;
  return { type, id, organizationId: o };
}

/** Performs one step at the current clock; its outcome does not matter (a refused step changes nothing). */
async function perform(o: string, a: Action): Promise<void> {
  const typed = (x: string | undefined) => (x ? { accessType: x } : {});
  const folderOrRoot = (n: number) => (n >= FOLDERS.length ? 'root' : FOLDERS[n]!);
  const fields = (f: string | undefined) => (f === undefined ? {} : { context: { access: { team: f } } });
  const expiresAt = (e: number | null) => (e === null ? {} : { expiresAt: Math.floor(now / 1000) + e });
  switch (a.kind) {
    case 'addFolder':
      return void (await post('/v2/organizations/folders/add', { organizationId: o, folders: [{ folderId: FOLDERS[a.f], ...(a.parent < FOLDERS.length ? { parentFolderId: FOLDERS[a.parent] } : {}), ...typed(a.accessType) }] }));
    case 'moveFolder':
      return void (await post('/v2/organizations/folders/update', { organizationId: o, folders: [{ folderId: FOLDERS[a.f], parentFolderId: folderOrRoot(a.parent) }] }));
    case 'folderAccess':
      return void (await post('/v2/organizations/folders/access/update', { organizationId: o, folderIds: [FOLDERS[a.f]], ...(a.accessType ? { accessType: a.accessType } : { inheritFromParent: true }) }));
    case 'deleteFolder':
      return void (await post('/v2/organizations/folders/delete', { organizationId: o, folderId: FOLDERS[a.f] }));
    case 'addDocument':
      return void (await post('/v2/organizations/documents/add', { organizationId: o, ...(a.folder < FOLDERS.length ? { folderId: FOLDERS[a.folder] } : {}), documents: [{ documentId: DOCUMENTS[a.d], ...typed(a.accessType) }] }));
    case 'moveDocument':
      return void (await post('/v2/organizations/documents/move', { organizationId: o, documentIds: [DOCUMENTS[a.d]], folderId: folderOrRoot(a.folder) }));
    case 'documentAccess':
      return void (await post('/v2/organizations/documents/access/update', { organizationId: o, documentIds: [DOCUMENTS[a.d]], ...(a.accessType ? { accessType: a.accessType } : { inheritFromParent: true }) }));
    case 'disableDocument':
      return void (await post('/v2/organizations/documents/access/disablestate/update', { organizationId: o, documentIds: [DOCUMENTS[a.d]], disabled: a.disabled }));
    case 'deleteDocument':
      return void (await post('/v2/organizations/documents/delete', { organizationId: o, documentIds: [DOCUMENTS[a.d]] }));
    case 'disableOrganization':
      return void (await post('/v2/organizations/access/disablestate/update', { organizationIds: [o], disabled: a.disabled }));
    case 'grant':
      return void (await post('/v2/auth/permissions/add', { userId: USERS[a.u], permissions: { resources: [{ ...resourceOf(o, a.r), accessRole: a.role, ...expiresAt(a.expiry), ...fields(a.field) }] } }));
    case 'revoke':
      return void (await post('/v2/auth/permissions/remove', { userId: USERS[a.u], permissions: { resources: [{ ...resourceOf(o, a.r), ...fields(a.field) }] } }));
    case 'groupGrant':
      return void (await post('/v2/auth/permissions/add', { group: { groupId: GROUPS[a.g] }, permissions: { resources: [{ ...resourceOf(o, a.r), accessRole: a.role, ...expiresAt(a.expiry) }] } }));
    case 'groupRevoke':
      return void (await post('/v2/auth/permissions/remove', { group: { groupId: GROUPS[a.g] }, permissions: { resources: [resourceOf(o, a.r)] } }));
    case 'join':
      return void (await post('/v2/organizations/usergroups/users/add', { organizationId: o, organizationUserGroupId: GROUPS[a.g], userIds: [USERS[a.u]] }));
    case 'leave':
      return void (await post('/v2/organizations/usergroups/users/delete', { organizationId: o, organizationUserGroupId: GROUPS[a.g], userIds: [USERS[a.u]] }));
    case 'tick':
      return;
  }
}

/** One question and its answer: status, message and data, without page tokens. */
type Asked = { url: string; data: Record<string, unknown>; answer: unknown };

/** Reads a paged question to the end. */
async function allPages(url: string, data: Record<string, unknown>): Promise<unknown> {
  const pages: unknown[] = [];
  let pageToken: string | undefined;
  for (let n = 0; ; n++) {
    assert.ok(n < 50, `${url} ends`);
    const r = await post(url, { ...data, ...(pageToken ? { pageToken } : {}) });
    if (r.status !== 200) return { status: r.status, body: r.body };
    pages.push(r.body.result.data);
    pageToken = r.body.result.pageToken;
    if (!pageToken) return { status: 200, pages };
  }
}

async function once(url: string, data: Record<string, unknown>): Promise<unknown> {
  const r = await post(url, data);
  return { status: r.status, body: r.body };
}

/** Every access question about the organization, answered (live, or as of `asOf`). */
async function askAll(o: string, asOf?: string | number): Promise<Asked[]> {
  const at = asOf === undefined ? {} : { asOf };
  const out: Asked[] = [];
  const ask = async (url: string, data: Record<string, unknown>, paged: boolean) => {
    const answer = await (paged ? allPages : once)(url, { ...data, ...at });
    out.push({ url, data, answer });
  };
  await ask('/v2/auth/permissions/get', { organizationId: o, userIds: USERS }, false);
  await ask('/v2/auth/permissions/get', { organizationId: o, userIds: USERS, folderIds: FOLDERS, documentIds: DOCUMENTS }, false);
  for (const [type, id] of RESOURCES) {
    const ref = type === 'folder' ? { folderId: id } : { documentId: id };
    await ask('/v2/auth/users/get', { organizationId: o, ...ref, pageSize: 2 }, true);
    for (const userId of USERS) await ask('/v2/auth/permissions/explain', { organizationId: o, userId, ...ref }, false);
  }
  for (const userId of USERS) {
    for (const type of ['folder', 'document']) await ask('/v2/auth/resources/get', { organizationId: o, userId, type, pageSize: 2 }, true);
  }
  return out;
}

type Interval = { userId: string; accessRole: string; from: number; to: number | null; via: object; openedBy: { type: string; time: number; actor: string }; closedBy: { type: string; time: number; actor: string } | null };

/**
 * access/history of each resource agrees with users/get as answered live at every recorded
 * instant: the users with an interval holding then are exactly those listed, with the same
 * role and grant, which is permissions/get's role then; each interval's changes carry its
 * bounds' times and who made them.
 */
async function historyAgrees(o: string, recorded: Map<number, { step: number; answers: Asked[] }>) {
  for (const [type, id] of RESOURCES) {
    const ref = type === 'folder' ? { folderId: id } : { documentId: id };
    const h = (await allPages('/v2/auth/access/history', { organizationId: o, ...ref, pageSize: 3 })) as { status: number; pages: Interval[][] };
    assert.is(h.status, 200, `access/history of ${id}: ${JSON.stringify(h)}`);
    const intervals = h.pages.flat();
    for (const [k, iv] of intervals.entries()) {
      assert.is(iv.openedBy.time, iv.from, 'opened at its start');
      assert.is(iv.closedBy?.time ?? null, iv.to, 'closed at its end');
      for (const c of [iv.openedBy, iv.closedBy]) if (c) assert.ok(c.actor.startsWith('apikey:') || c.actor === 'expiry' || c.actor.startsWith('system:'), `an actor: ${c.actor}`);
      const prev = intervals[k - 1];
      if (prev) assert.ok(prev.from < iv.from || (prev.from === iv.from && Buffer.compare(Buffer.from(prev.userId), Buffer.from(iv.userId)) < 0), 'ordered by from, then userId');
    }
    for (const [at, { step: i, answers }] of recorded) {
      const live = answers.find((a) => a.url === '/v2/auth/users/get' && (a.data.folderId ?? a.data.documentId) === id)!.answer as { status: number; pages?: Array<{ users: Interval[] }> };
      const byUser = (a: { userId: string }, b: { userId: string }) => (a.userId < b.userId ? -1 : 1);
      const expected = (live.status === 200 ? live.pages!.flatMap((p) => p.users) : [])
        .map((u: any) => ({ userId: u.userId, accessRole: u.accessRole, via: { level: u.via.level, id: u.via.id, ...(u.via.groupId ? { groupId: u.via.groupId } : {}) } }))
        .sort(byUser);
      const holding = intervals.filter((iv) => iv.from <= at && (iv.to === null || iv.to > at)).map((iv) => ({ userId: iv.userId, accessRole: iv.accessRole, via: iv.via })).sort(byUser);
      assert.equal(holding, expected, `access/history of ${id} at ${at} (after step ${i}) holds what users/get answered then`);
      // And each role is permissions/get's entry of then (its details when a resource was missing).
      const perm = answers.find((a) => a.url === '/v2/auth/permissions/get' && a.data.documentIds)!.answer as { status: number; body: any };
      const entries = perm.status === 200 ? perm.body.result.data : perm.body.error.details;
      for (const iv of holding) {
        const entry = entries[iv.userId][type === 'folder' ? 'folders' : 'documents'][id];
        assert.is(entry.accessRole, iv.accessRole, `${iv.userId} on ${id} at ${at}: permissions/get's role then`);
      }
    }
  }
}

test('every access question asked as of a past instant answers what it answered live then', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
      const o = `org-${runs++}`;
      now += 1000;
      assert.is((await post('/v2/organizations/add', { organizations: [{ organizationId: o, organizationName: o }] })).status, 200);
      // Groups exist from the start; a member must belong to the organization, so every user has a grant on it that the history may revoke.
      await post('/v2/organizations/usergroups/add', { organizationId: o, organizationUserGroups: GROUPS.map((groupId) => ({ groupId, groupName: groupId })) });
      for (const userId of USERS) await post('/v2/auth/permissions/add', { userId, permissions: { resources: [{ type: 'organization', id: o, accessRole: 'viewer' }] } });
      // By instant: steps in one millisecond are one moment as of which all of them happened,
      // so the answers after the last of them are the ones an asOf then must give.
      const recorded = new Map<number, { step: number; answers: Asked[] }>();
      for (const [i, s] of steps.entries()) {
        now += s.advance;
        await perform(o, s.action);
        recorded.set(now, { step: i, answers: await askAll(o) });
      }
      // Later: the past is asked about from a present that moved on.
      now += 5000;
      for (const [at, { step: i, answers }] of recorded) {
        const asOf = i % 2 === 0 ? new Date(at).toISOString() : at;
        const past = await askAll(o, asOf);
        for (const [j, live] of answers.entries()) {
          assert.equal(past[j]!.answer, live.answer, `after step ${i} (${JSON.stringify(steps[i])}) at ${at}: ${live.url} ${JSON.stringify(live.data)} as of then`);
        }
      }
      await historyAgrees(o, recorded);
    }),
    { numRuns: RUNS },
  );
});

test('asOf and access/history: the boundaries of an event and of an expiry, and refused values', async () => {
  const o = `org-${runs++}`;
  now += 1000;
  await post('/v2/organizations/add', { organizations: [{ organizationId: o, organizationName: o }] });
  now += 10;
  const created = now;
  await post('/v2/organizations/documents/add', { organizationId: o, documents: [{ documentId: 'd', accessType: 'restricted' }] });
  now = Math.ceil(now / 1000) * 1000 + 7;
  const granted = now;
  const expiresAt = Math.floor(now / 1000) + 2;
  await post('/v2/auth/permissions/add', { userId: 'u', permissions: { resources: [{ type: 'document', id: 'd', organizationId: o, accessRole: 'editor', expiresAt }] } });
  now = expiresAt * 1000 + 5000;
  const entry = async (asOf: number | string) => {
    const r = await post('/v2/auth/permissions/get', { organizationId: o, userIds: ['u'], documentIds: ['d'], asOf });
    return r.status === 200 ? r.body.result.data.u.documents.d : r.body.error.details.u.documents.d;
  };
  assert.equal(await entry(created - 1), { error: 'Document does not exist', errorCode: 'does_not_exist' }, 'not yet created 1 ms before');
  assert.is((await entry(created)).errorCode, 'permission_denied', 'created at its own time');
  assert.is((await entry(granted - 1)).errorCode, 'permission_denied', 'no grant 1 ms before it');
  assert.equal(await entry(granted), { accessRole: 'editor', expiresAt, accessType: 'restricted' }, 'the grant counts from its own time');
  assert.equal(await entry(new Date(expiresAt * 1000 - 1).toISOString()), { accessRole: 'editor', expiresAt, accessType: 'restricted' }, 'until 1 ms before expiresAt');
  assert.is((await entry(expiresAt * 1000)).errorCode, 'permission_denied', 'not at expiresAt');
  assert.is((await entry(now)).errorCode, 'permission_denied', 'now is allowed');
  for (const [asOf, words] of [[now + 1, 'after now'], ['2026-11-25T15:04:05Z', 'ISO 8601'], ['2026-02-30T00:00:00.000Z', 'ISO 8601'], [-1, 'Unix milliseconds'], [1.5, 'Unix milliseconds'], ['yesterday', 'ISO 8601']] as const) {
    for (const [url, data] of [
      ['/v2/auth/permissions/get', { organizationId: o, userIds: ['u'] }],
      ['/v2/auth/permissions/explain', { organizationId: o, userId: 'u', documentId: 'd' }],
      ['/v2/auth/resources/get', { organizationId: o, userId: 'u', type: 'document' }],
      ['/v2/auth/users/get', { organizationId: o, documentId: 'd' }],
    ] as const) {
      const r = await post(url, { ...data, asOf });
      assert.is(r.status, 400, `${url} asOf ${JSON.stringify(asOf)}: ${JSON.stringify(r.body)}`);
      assert.is(r.body.error.status, 'INVALID_ARGUMENT');
      assert.match(r.body.error.message, 'data.asOf');
      assert.match(r.body.error.message, words);
    }
  }
  // access/history: the temporary grant's interval, opened by its grant, closed by its expiry.
  const hist = await post('/v2/auth/access/history', { organizationId: o, documentId: 'd', userId: 'u' });
  assert.is(hist.status, 200, JSON.stringify(hist.body));
  const [iv, ...more] = hist.body.result.data;
  assert.is(more.length, 0, 'one interval');
  assert.equal({ ...iv, openedBy: { ...iv.openedBy, actor: iv.openedBy.actor.split(':')[0] } }, {
    userId: 'u', accessRole: 'editor', from: granted, to: expiresAt * 1000, via: { level: 'resource', id: 'd' },
    openedBy: { type: 'GrantAdded', time: granted, actor: 'apikey' },
    closedBy: { type: 'expired', time: expiresAt * 1000, actor: 'expiry' },
  });
  const window = async (from: number, to: number) => (await post('/v2/auth/access/history', { organizationId: o, documentId: 'd', from, to })).body.result.data.length;
  assert.is(await window(granted - 10, granted), 0, 'an interval begun at `to` is not in [from, to)');
  assert.is(await window(expiresAt * 1000, now), 0, 'one ended at `from` is not either');
  assert.is(await window(expiresAt * 1000 - 1, now), 1, 'one ended 1 ms after `from` is');
  for (const [data, field] of [[{ from: 'soon' }, 'data.from'], [{ to: 1.5 }, 'data.to'], [{ from: 10, to: 10 }, 'data.to']] as const) {
    const r = await post('/v2/auth/access/history', { organizationId: o, documentId: 'd', ...data });
    assert.is(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.error.message, field);
  }

  // A page token is bound to the instant: a live one does not go on an asOf page.
  await post('/v2/organizations/documents/add', { organizationId: o, documents: [{ documentId: 'd2', accessType: 'public' }, { documentId: 'd3', accessType: 'public' }] });
  const live = await post('/v2/auth/resources/get', { organizationId: o, userId: 'u', type: 'document', pageSize: 1 });
  assert.ok(live.body.result.pageToken, 'a live page with more to come');
  const reused = await post('/v2/auth/resources/get', { organizationId: o, userId: 'u', type: 'document', pageSize: 1, pageToken: live.body.result.pageToken, asOf: now });
  assert.is(reused.status, 400, 'a live token refused with asOf');
});

test('asOf under a user token: the user is checked as of then, on what it could open then', async () => {
  const o = `org-${runs++}`;
  now += 1000;
  await post('/v2/organizations/add', { organizations: [{ organizationId: o, organizationName: o }] });
  await post('/v2/organizations/documents/add', { organizationId: o, documents: [{ documentId: 'd', accessType: 'restricted' }] });
  now += 10;
  await post('/v2/auth/permissions/add', { userId: 'tu', permissions: { resources: [{ type: 'document', id: 'd', organizationId: o, accessRole: 'viewer' }] } });
  const then = now;
  now += 10;
  await post('/v2/auth/permissions/remove', { userId: 'tu', permissions: { resources: [{ type: 'document', id: 'd', organizationId: o }] } });
  now += 10;
  const token = await post('/v2/auth/generate_token', { userId: 'tu', userProperties: { name: 'tu', email: 'tu@example.com' } });
  assert.is(token.status, 200, JSON.stringify(token.body));
  const bearer = { authorization: `Bearer ${token.body.result.data.token}` };
  const explain = (asOf?: number) => h.post('/v2/auth/permissions/explain', { organizationId: o, userId: 'tu', documentId: 'd', ...(asOf ? { asOf } : {}) }, bearer);
  const past = await explain(then);
  assert.is(past.status, 200, JSON.stringify(past.body));
  assert.equal(past.body.result.data.entry, { accessRole: 'viewer', accessType: 'restricted' });
  assert.is((await explain()).status, 403, 'not now');
  assert.is((await explain(then - 1)).status, 403, 'nor before the grant');
  const get = await h.post('/v2/auth/permissions/get', { organizationId: o, userIds: ['tu'], documentIds: ['d'], asOf: then }, bearer);
  assert.equal(get.body.result.data.tu.documents.d, { accessRole: 'viewer', accessType: 'restricted' });
});

test.run();
