/**
 * A dry run's accessChanges are exact (issue 38): for random small states (an organization,
 * folders in a tree, documents, users, groups with members, user and group grants, access
 * types) and a random write among grants and revocations, access type changes, disabled flags,
 * moves of folders and documents, group membership, deletions, users added or updated with a
 * role and a user's data erased, the changes a dry run
 * predicts equal the difference of permissions/get measured before and after performing the
 * same write for real.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { accessDifferences, roleOf } from './support/access-diff.js';
import { harness, type Harness, type Tenant } from './support/app.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown, headers: Record<string, string> = {}) => h.post(url, data, { ...t.headers, ...headers });
const ok = (url: string, data: unknown) => h.ok(url, data, t.headers);

const USERS = ['u0', 'u1', 'u2', 'u3'];
const FOLDERS = ['f0', 'f1', 'f2'];
const DOCS = ['d0', 'd1', 'd2', 'd3'];
const GROUPS = ['g0', 'g1'];
const access = fc.constantFrom('organizationPrivate', 'restricted', 'public');
const role = fc.constantFrom('editor', 'viewer');
const resource = fc.oneof(
  fc.constant({ type: 'organization' }),
  fc.constantFrom(...FOLDERS).map((id) => ({ type: 'folder', id })),
  fc.constantFrom(...DOCS).map((id) => ({ type: 'document', id })),
);
const holder = fc.oneof(fc.constantFrom(...USERS).map((userId) => ({ userId })), fc.constantFrom(...GROUPS).map((groupId) => ({ group: { groupId } })));

const state = fc.record({
  // Folder i's parent: the root or an earlier folder.
  parents: fc.tuple(fc.constant(null), fc.constantFrom(null, 'f0'), fc.constantFrom(null, 'f0', 'f1')),
  folderAccess: fc.tuple(fc.option(access), fc.option(access), fc.option(access)),
  docs: fc.tuple(...DOCS.map(() => fc.record({ folder: fc.constantFrom(null, ...FOLDERS), accessType: fc.option(access) }))),
  members: fc.array(fc.tuple(fc.constantFrom(...GROUPS), fc.constantFrom(...USERS)), { maxLength: 4 }),
  grants: fc.array(fc.tuple(holder, resource, role), { maxLength: 6 }),
});

type Write = [string, (o: string) => object];
const write: fc.Arbitrary<Write> = fc.oneof(
  fc.tuple(holder, resource, role).map(([who, r, accessRole]): Write => ['/v2/auth/permissions/add', (o) => ({ ...who, permissions: { resources: [{ ...res(r, o), accessRole }] } })]),
  fc.tuple(holder, resource).map(([who, r]): Write => ['/v2/auth/permissions/remove', (o) => ({ ...who, permissions: { resources: [res(r, o)] } })]),
  fc.tuple(fc.constantFrom(...FOLDERS), access).map(([f, a]): Write => ['/v2/organizations/folders/access/update', (o) => ({ organizationId: o, folderIds: [f], accessType: a })]),
  fc.tuple(fc.constantFrom(...DOCS), access).map(([d, a]): Write => ['/v2/organizations/documents/access/update', (o) => ({ organizationId: o, documentIds: [d], accessType: a })]),
  fc.tuple(fc.constantFrom(...DOCS), fc.boolean()).map(([d, disabled]): Write => ['/v2/organizations/documents/access/disablestate/update', (o) => ({ organizationId: o, documentIds: [d], disabled })]),
  fc.boolean().map((disabled): Write => ['/v2/organizations/access/disablestate/update', (o) => ({ organizationIds: [o], disabled })]),
  fc.tuple(fc.constantFrom(...DOCS), fc.constantFrom(...FOLDERS)).map(([d, f]): Write => ['/v2/organizations/documents/move', (o) => ({ organizationId: o, documentIds: [d], folderId: f })]),
  fc.tuple(fc.constantFrom('f1', 'f2'), fc.constantFrom(null, ...FOLDERS)).map(([f, p]): Write => ['/v2/organizations/folders/update', (o) => ({ organizationId: o, folders: [{ folderId: f, parentFolderId: p }] })]),
  fc.tuple(fc.constantFrom(...GROUPS), fc.constantFrom(...USERS)).map(([g, u]): Write => ['/v2/organizations/usergroups/users/add', (o) => ({ organizationId: o, organizationUserGroupId: g, userIds: [u] })]),
  fc.tuple(fc.constantFrom(...GROUPS), fc.constantFrom(...USERS)).map(([g, u]): Write => ['/v2/organizations/usergroups/users/delete', (o) => ({ organizationId: o, organizationUserGroupId: g, userIds: [u] })]),
  fc.constantFrom(...USERS).map((u): Write => ['/v2/users/delete', (o) => ({ organizationId: o, userIds: [u] })]),
  // users/add and users/update give or change a grant on their scope (the organization, a folder or a document).
  fc.tuple(fc.constantFrom(...USERS), resource, fc.option(role), fc.boolean()).map(([u, r, accessRole, named]): Write => ['/v2/users/add', (o) => ({ ...scope(r, o), users: [{ userId: u, ...(named ? { name: `Name ${u}` } : {}), ...(accessRole ? { accessRole } : {}) }] })]),
  fc.tuple(fc.constantFrom(...USERS), resource, role).map(([u, r, accessRole]): Write => ['/v2/users/update', (o) => ({ ...scope(r, o), users: [{ userId: u, accessRole }] })]),
  // An erasure revokes every grant and membership of the user, in every organization of the key.
  fc.constantFrom(...USERS).map((u): Write => ['/v2/users/data/delete', () => ({ userIds: [u] })]),
  fc.constantFrom(...DOCS).map((d): Write => ['/v2/organizations/documents/delete', (o) => ({ organizationId: o, documentIds: [d] })]),
  fc.constantFrom(...FOLDERS).map((f): Write => ['/v2/organizations/folders/delete', (o) => ({ organizationId: o, folderId: f })]),
  fc.constant<Write>(['/v2/organizations/delete', (o) => ({ organizationIds: [o] })]),
);

function res(r: { type: string; id?: string }, o: string) {
  return { type: r.type, id: r.id ?? o, organizationId: o };
}

/** A users route's scope for `r`: the organization alone, a folder, or a document. */
function scope(r: { type: string; id?: string }, o: string) {
  return { organizationId: o, ...(r.type === 'folder' ? { folderId: r.id } : r.type === 'document' ? { documentId: r.id } : {}) };
}


/** permissions/get for every user, one resource at a time (a missing one, or organization, is denied). */
async function measure(o: string) {
  const out = new Map<string, string | undefined>();
  const cells: Array<[string, string, object]> = [['organization', o, {}], ...FOLDERS.map((f) => ['folder', f, { folderIds: [f] }] as [string, string, object]), ...DOCS.map((d) => ['document', d, { documentIds: [d] }] as [string, string, object])];
  for (const [type, id, ask] of cells) {
    const r = await post('/v2/auth/permissions/get', { organizationId: o, userIds: USERS, ...ask });
    for (const u of USERS) {
      const entries = r.status === 200 ? r.body.result.data[u] : undefined;
      out.set(JSON.stringify([type, id, u]), roleOf(type === 'organization' ? entries?.organization?.[o] : entries?.[`${type}s`]?.[id]));
    }
  }
  return out;
}


async function build(o: string, s: any) {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: o, organizationName: o }] });
  await ok('/v2/users/add', { organizationId: o, users: USERS.map((userId) => ({ userId })) });
  for (let i = 0; i < FOLDERS.length; i++) {
    await ok('/v2/organizations/folders/add', { organizationId: o, folders: [{ folderId: FOLDERS[i], ...(s.parents[i] ? { parentFolderId: s.parents[i] } : {}), ...(s.folderAccess[i] ? { accessType: s.folderAccess[i] } : {}) }] });
  }
  for (let i = 0; i < DOCS.length; i++) {
    const d = s.docs[i];
    await ok('/v2/organizations/documents/add', { organizationId: o, ...(d.folder ? { folderId: d.folder } : {}), documents: [{ documentId: DOCS[i], ...(d.accessType ? { accessType: d.accessType } : {}) }] });
  }
  await ok('/v2/organizations/usergroups/add', { organizationId: o, organizationUserGroups: GROUPS.map((groupId) => ({ groupId, groupName: groupId })) });
  for (const [g, u] of s.members) await ok('/v2/organizations/usergroups/users/add', { organizationId: o, organizationUserGroupId: g, userIds: [u] });
  for (const [who, r, accessRole] of s.grants) await post('/v2/auth/permissions/add', { ...who, permissions: { resources: [{ ...res(r, o), accessRole }] } });
}

test.before(async () => {
  h = await harness();
  t = await h.tenant();
});
test.after(async () => h.close());

let run = 0;
let changed = 0;
let answered = 0;
test('predicted access changes equal the measured difference of permissions/get', async () => {
  await fc.assert(
    fc.asyncProperty(state, write, async (s, [url, data]) => {
      const o = `org${run++}`;
      await build(o, s);
      await h.services.cascade.settle();
      const before = await measure(o);
      const dry = await post(url, data(o), { 'x-dry-run': 'true' });
      const real = await post(url, data(o));
      assert.is(dry.status, real.status, JSON.stringify({ dry: dry.body, real: real.body }));
      if (real.status !== 200) return;
      answered++;
      // A folder's or organization's deletion goes on in the cascade worker: compare with the end state.
      await h.services.cascade.settle();
      const expected = accessDifferences(o, before, await measure(o));
      // An erasure reaches the user's earlier organizations too (earlier runs'): only o is measured here.
      const all = dry.body.result.accessChanges.changes;
      if (url !== '/v2/users/data/delete') assert.ok(all.every((c: any) => c.organizationId === o), JSON.stringify(all));
      const changes = all.filter((c: any) => c.organizationId === o);
      const predicted = changes.map(({ via: _, ...c }: any) => c);
      assert.equal(predicted, expected, JSON.stringify({ url, data: data(o), predicted, expected }));
      // `via` is what permissions/explain answers after the real write.
      for (const c of changes) {
        if (c.resourceType === 'organization') continue;
        const ref = c.resourceType === 'document' ? { documentId: c.resourceId } : { folderId: c.resourceId };
        const r = await post('/v2/auth/permissions/explain', { organizationId: o, userId: c.userId, ...ref });
        if (r.status === 404) {
          assert.is(c.via, undefined, 'no via for a resource gone after the write');
          continue;
        }
        assert.is(r.status, 200, JSON.stringify(r.body));
        const d = r.body.result.data.decidedBy;
        const grant = d.candidate !== undefined ? r.body.result.data.candidates[d.candidate] : undefined;
        assert.equal(c.via, { rule: d.rule, ...(grant ? { grant } : {}) }, JSON.stringify({ change: c, explain: r.body.result.data }));
      }
      if (expected.length > 0) changed++;
    }),
    { numRuns: Number(process.env.DRY_RUN_PROPERTY_RUNS ?? 40) },
  );
  // The property is not vacuous: most writes succeed, and many change someone's access.
  assert.ok(answered >= run / 2, `${answered} of ${run} writes answered 200`);
  assert.ok(changed >= run / 5, `${changed} of ${run} writes changed access`);
  if (process.env.DRY_RUN_PROPERTY_STATS) (await import('node:fs')).writeFileSync(process.env.DRY_RUN_PROPERTY_STATS, JSON.stringify({ run, answered, changed }));
});

test.run();
