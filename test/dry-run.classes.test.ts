/**
 * A dry run over many documents is exact (issue 38): accessChanges resolves one document per
 * class (documents without grants of their own whose targets are equal before and after,
 * src/usecases/access-changes.ts) and makes the changes of the others only for the page it
 * answers. Here a folder of 900 documents whose classes differ in every way resolution reads
 * (their own access type, disabled, a subfolder, a user's or a group's grant of their own) is
 * moved, retyped and split; the counts and every page, followed by x-dry-run-page-token, must
 * equal the difference of permissions/get measured before and after the same write done for
 * real. Small enough to seed on a loaded machine; large enough to need several pages.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { accessDifferences, roleOf } from './support/access-diff.js';
import { harness, type Harness, type Tenant } from './support/app.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown, headers: Record<string, string> = {}) => h.post(url, data, { ...t.headers, ...headers });
const ok = (url: string, data: unknown) => h.ok(url, data, t.headers);

const USERS = Array.from({ length: 10 }, (_, i) => `u${i}`);
const FOLDERS = ['dst', 'src', 'sub'];
const DOCS = Array.from({ length: 900 }, (_, i) => `d${String(i).padStart(3, '0')}`);

/**
 * dst (restricted) at the root; src (organizationPrivate) at the root with sub below it. The
 * documents: a third in sub, the rest in src; every fifth restricted, every fifth public,
 * every seventh disabled; every eleventh granted to u5 (editor), every thirteenth to the group
 * g (editor). Users: u0 and u1 members (editor, viewer); u2 and u3 granted on dst (editor,
 * viewer); u4 a viewer of src; u5 of documents only; u6, u7 and u8 members (viewer, editor,
 * viewer) in g, which views dst and sub; u9 a viewer of the first document only.
 */
async function build(o: string) {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: o, organizationName: o }] });
  await ok('/v2/organizations/folders/add', { organizationId: o, folders: [{ folderId: 'dst', accessType: 'restricted' }, { folderId: 'src', accessType: 'organizationPrivate' }] });
  await ok('/v2/organizations/folders/add', { organizationId: o, folders: [{ folderId: 'sub', parentFolderId: 'src' }] });
  const place = (i: number) => (i % 3 === 0 ? 'sub' : 'src');
  for (const folderId of ['src', 'sub']) {
    const documents = DOCS.flatMap((documentId, i) => {
      if (place(i) !== folderId) return [];
      const accessType = i % 5 === 1 ? 'restricted' : i % 5 === 2 ? 'public' : undefined;
      return [{ documentId, ...(accessType ? { accessType } : {}) }];
    });
    await ok('/v2/organizations/documents/add', { organizationId: o, folderId, documents });
  }
  await ok('/v2/organizations/documents/access/disablestate/update', { organizationId: o, documentIds: DOCS.filter((_, i) => i % 7 === 3), disabled: true });
  await ok('/v2/users/add', { organizationId: o, users: [['u0', 'editor'], ['u1', 'viewer'], ['u6', 'viewer'], ['u7', 'editor'], ['u8', 'viewer']].map(([userId, accessRole]) => ({ userId, accessRole })) });
  await ok('/v2/users/add', { organizationId: o, folderId: 'dst', users: [{ userId: 'u2', accessRole: 'editor' }] });
  await ok('/v2/users/add', { organizationId: o, folderId: 'dst', users: [{ userId: 'u3', accessRole: 'viewer' }] });
  await ok('/v2/users/add', { organizationId: o, folderId: 'src', users: [{ userId: 'u4', accessRole: 'viewer' }] });
  await ok('/v2/users/add', { organizationId: o, documentId: DOCS[0], users: ['u5', 'u9'].map((userId) => ({ userId, accessRole: 'viewer' })) });
  await ok('/v2/auth/permissions/add', { userId: 'u5', permissions: { resources: everyNth(o, 11, 4, 'editor') } });
  await ok('/v2/organizations/usergroups/add', { organizationId: o, organizationUserGroups: [{ groupId: 'g', groupName: 'G' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: o, organizationUserGroupId: 'g', userIds: ['u6', 'u7', 'u8'] });
  await ok('/v2/auth/permissions/add', { group: { groupId: 'g' }, permissions: { resources: [...everyNth(o, 13, 6, 'editor'), ...['dst', 'sub'].map((id) => ({ type: 'folder', id, organizationId: o, accessRole: 'viewer' }))] } });
}


/** Every user's role on the organization, its folders and documents, from permissions/get (one call: 10 x 903 cells). */
async function measure(o: string) {
  const r = await ok('/v2/auth/permissions/get', { organizationId: o, userIds: USERS, folderIds: FOLDERS, documentIds: DOCS });
  const out = new Map<string, string | undefined>();
  for (const u of USERS) {
    const e = r.data[u];
    out.set(JSON.stringify(['organization', o, u]), roleOf(e.organization[o]));
    for (const f of FOLDERS) out.set(JSON.stringify(['folder', f, u]), roleOf(e.folders[f]));
    for (const d of DOCS) out.set(JSON.stringify(['document', d, u]), roleOf(e.documents[d]));
  }
  return out;
}


/** The dry run's counts and all its pages' changes, following x-dry-run-page-token. */
async function dryRun(url: string, data: unknown) {
  const changes: any[] = [];
  let counts: unknown;
  let token: string | undefined;
  let pages = 0;
  do {
    const r = await post(url, data, { 'x-dry-run': 'true', ...(token ? { 'x-dry-run-page-token': token } : {}) });
    assert.is(r.status, 200, JSON.stringify(r.body));
    const a = r.body.result.accessChanges;
    if (counts !== undefined) assert.equal(a.counts, counts, 'the counts are the same on every page');
    counts = a.counts;
    changes.push(...a.changes);
    token = a.pageToken;
    pages++;
  } while (token);
  return { counts, changes, pages };
}

const everyNth = (o: string, every: number, from: number, accessRole?: string) =>
  DOCS.filter((_, i) => i % every === from).map((id) => ({ type: 'document', id, organizationId: o, ...(accessRole ? { accessRole } : {}) }));

/** The writes, and whether each changes enough to need several pages. */
const WRITES: Array<[string, string, (o: string) => unknown, boolean]> = [
  ['move src under dst', '/v2/organizations/folders/update', (o) => ({ organizationId: o, folders: [{ folderId: 'src', parentFolderId: 'dst' }] }), true],
  ['src made restricted', '/v2/organizations/folders/access/update', (o) => ({ organizationId: o, folderIds: ['src'], accessType: 'restricted' }), true],
  ['move sub under dst', '/v2/organizations/folders/update', (o) => ({ organizationId: o, folders: [{ folderId: 'sub', parentFolderId: 'dst' }] }), true],
  ['organization disabled', '/v2/organizations/access/disablestate/update', (o) => ({ organizationIds: [o], disabled: true }), false],
  // Who holds grants on documents changes: a member joins g; u3 gets grants; g loses its own.
  ['u1 joins g', '/v2/organizations/usergroups/users/add', (o) => ({ organizationId: o, organizationUserGroupId: 'g', userIds: ['u1'] }), false],
  ['u3 granted every 17th document', '/v2/auth/permissions/add', (o) => ({ userId: 'u3', permissions: { resources: everyNth(o, 17, 2, 'editor') } }), false],
  ["g's document grants revoked", '/v2/auth/permissions/remove', (o) => ({ group: { groupId: 'g' }, permissions: { resources: everyNth(o, 13, 6) } }), false],
];

test.before(async () => {
  h = await harness();
  t = await h.tenant();
});
test.after(async () => h.close());

let n = 0;
for (const [name, url, data, paged] of WRITES) {
  test(`a dry run over 900 documents in classes is exact: ${name}`, async () => {
    const o = `org${n++}`;
    await build(o);
    const before = await measure(o);
    const dry = await dryRun(url, data(o));
    await ok(url, data(o));
    const expected = accessDifferences(o, before, await measure(o));
    const counts = { gain: 0, lose: 0, role: 0 };
    for (const c of expected) counts[c.change as keyof typeof counts]++;
    assert.equal(dry.counts, counts);
    assert.equal(dry.changes.map(({ via: _, ...c }: any) => c), expected);
    // Not vacuous: the write changes many cells, across pages, in documents of many kinds.
    if (paged) {
      assert.ok(dry.pages >= 2, `${dry.pages} pages of ${expected.length} changes`);
      assert.ok(new Set(expected.map((c) => c.userId)).size >= 4, 'several users change');
    } else assert.ok(expected.length > 0, 'the write changes access');
    // `via` is permissions/explain's after the real write, for every document's change of one user.
    for (const c of dry.changes.filter((x: any) => x.resourceType === 'document' && x.userId === dry.changes.at(-1).userId)) {
      const r = await post('/v2/auth/permissions/explain', { organizationId: o, userId: c.userId, documentId: c.resourceId });
      assert.is(r.status, 200, JSON.stringify(r.body));
      const d = r.body.result.data.decidedBy;
      const grant = d.candidate !== undefined ? r.body.result.data.candidates[d.candidate] : undefined;
      assert.equal(c.via, { rule: d.rule, ...(grant ? { grant } : {}) }, JSON.stringify(c));
    }
  });
}

test.run();
