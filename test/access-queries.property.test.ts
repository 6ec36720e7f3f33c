/**
 * The access queries agree with permissions/get (semantics §3 "Access queries"), on
 * generated organizations: a random folder tree with access types set, inherited and
 * changed, folder moves, documents at the root and in folders (some with their own type,
 * some disabled, some moved), users with direct grants of both roles, permanent, temporary
 * and already expired at the test clock, replaced and revoked, user groups holding grants
 * the same ways (semantics §3 rule 7), members joining and leaving, and sometimes the whole
 * organization disabled. Everything is built through the API.
 *
 * Then, with permissions/get's answer for every user and resource as the truth:
 * - resources/get, read page by page with a small pageSize, lists exactly the resources
 *   permissions/get lets the user into with at least minAccessRole, each row exactly that
 *   entry (both types, inside a subtree too, with minAccessRole variants);
 * - users/get lists exactly the users permissions/get lets in among those holding a live
 *   grant, their own or one of their groups', on the resource, a folder above it or the
 *   organization, each once and as permissions/get answers, with `via` naming a grant that
 *   gives that role; `everyone` says whether a user without any grant gets in;
 * - explain's entry is permissions/get's, its candidates are the user's grants and their
 *   groups' there (most specific first; at a level their own, then the groups' by role,
 *   expiry and groupId; expired ones marked), and the grant it says decides carries the role.
 *
 * Organizations are built BATCH at a time, concurrently (a write waits for the read models;
 * many in flight share that wait). The first organization of each batch is asked through
 * HTTP (app.inject: every answer also checked against the route's declared schema by the
 * test runner); the others call the same routes' validation and handlers in process, the
 * next nine checking each answer against that schema here, which keeps 200 organizations
 * fast.
 *
 * ACCESS_PROPERTY_RUNS sets the number of organizations (npm test: 200).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { harness, type Harness, type Tenant } from './support/app.js';
import { FUTURE, NOW, PAST } from './support/time.js';
import { RequestContext } from '../src/http/context.js';
import { answersOf } from '../src/http/schema.js';
import { checkAnswer } from '../src/http/response-check.js';
import { parseBody } from '../src/http/validation.js';
import { domainRoutes } from '../src/http/routes/domain-routes.js';
import type { AnyRoute } from '../src/http/route.js';

const RUNS = Number(process.env.ACCESS_PROPERTY_RUNS ?? 200);
const BATCH = 50;

type AccessType = 'public' | 'organizationPrivate' | 'restricted';
type Role = 'editor' | 'viewer';

const accessType = fc.option(fc.constantFrom<AccessType>('public', 'organizationPrivate', 'restricted'), { nil: undefined });
const role = fc.constantFrom<Role>('editor', 'viewer');
const minRole = fc.constantFrom<Role | undefined>(undefined, 'viewer', 'editor');
/** Ids that sort differently in UTF-16 and UTF-8, and ones that need escaping. */
const USERS = ['u0', 'u1', 'Ü2', '\u{1F600}3', '\uFF5E4', 'u"5'];

const scenario = fc.record({
  folders: fc.array(fc.record({ parent: fc.nat(), accessType }), { maxLength: 5 }),
  documents: fc.array(fc.record({ folder: fc.nat(), accessType, disabled: fc.nat(4).map((n) => n === 0) }), { maxLength: 5 }),
  users: fc.subarray(USERS, { minLength: 1, maxLength: 4 }),
  grants: fc.array(fc.record({ user: fc.nat(), resource: fc.nat(), role, expiry: fc.constantFrom('permanent', 'permanent', 'future', 'past') }), { maxLength: 8 }),
  revoke: fc.option(fc.nat(), { nil: undefined }),
  folderMove: fc.option(fc.record({ folder: fc.nat(), parent: fc.nat() }), { nil: undefined }),
  documentMove: fc.option(fc.record({ document: fc.nat(), folder: fc.nat() }), { nil: undefined }),
  accessChange: fc.option(fc.record({ folder: fc.nat(), accessType }), { nil: undefined }),
  groups: fc.array(fc.array(fc.nat(), { maxLength: 3 }), { maxLength: 3 }),
  groupGrants: fc.array(fc.record({ group: fc.nat(), resource: fc.nat(), role, expiry: fc.constantFrom('permanent', 'permanent', 'future', 'past') }), { maxLength: 5 }),
  groupRevoke: fc.option(fc.nat(), { nil: undefined }),
  leave: fc.option(fc.record({ group: fc.nat(), member: fc.nat() }), { nil: undefined }),
  organizationDisabled: fc.nat(5).map((n) => n === 0),
  // How the queries are asked.
  pageSize: fc.integer({ min: 1, max: 3 }),
  minRoles: fc.array(minRole, { minLength: 4, maxLength: 4 }),
  subtree: fc.nat(),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

let h: Harness;
let t: Tenant;
let runs = 0;
/** What the generated organizations exercised: a run that never lets anyone in through a group proves nothing about rule 7. */
const seen = { viaGroup: 0, groupOverOwn: 0, groupCandidates: 0 };

const post = (url: string, data: unknown) => h.ok(url, data, t.headers);

let routes: Map<string, AnyRoute>;
const quiet = { info() {}, warn() {}, error() {} };

/**
 * How a read is asked: through HTTP; or the route's validation and handler in process, the
 * answer checked against the route's declared schema (`checked`) or not (`direct`: the
 * check costs as much as the query).
 */
type Via = 'http' | 'checked' | 'direct';

/** A read route's `{ data, pageToken }`. */
async function ask(via: Via, url: string, data: Record<string, unknown>): Promise<{ data: any; pageToken?: string }> {
  if (via === 'http') return post(url, data);
  const route = routes.get(url)!;
  const ctx = new RequestContext(h.services, 'property', NOW, quiet, 'property', { apiKey: t.apiKey, workspaceId: t.workspaceId, type: 'testing' });
  const out = await route.handler(parseBody(route.schema, { data }), ctx);
  const body = JSON.parse(JSON.stringify({ result: { status: 'success', message: out.message, data: out.data, pageToken: out.pageToken } }));
  if (via === 'checked') assert.is(checkAnswer(answersOf(route), 200, body), null, `${url}: the answer matches the route's declared schema`);
  return body.result;
}

test.before(async () => {
  h = await harness({}, { clock: () => NOW });
  t = await h.tenant();
  routes = new Map(domainRoutes(h.services).map((r) => [r.path, r]));
});
test.after(async () => h.close());

interface Grant {
  role: Role;
  expiresAt: number | null;
}

/** The organization as built: tree, types, and the grants the API kept (semantics §3 "Grants"). */
class Model {
  folders: string[] = [];
  parent: Array<number | null> = [];
  folderType: Array<AccessType | null> = [];
  documents: string[] = [];
  docFolder: Array<number | null> = [];
  docType: Array<AccessType | null> = [];
  disabled: boolean[] = [];
  organizationDisabled = false;
  grants = new Map<string, Grant>();
  /** Group grants, keyed like `grants` with the groupId in the user's place. */
  groupGrants = new Map<string, Grant>();
  /** groupId -> its members. */
  members = new Map<string, Set<string>>();
  constructor(readonly organizationId: string) {}

  static key = (userId: string, type: string, id: string) => JSON.stringify([userId, type, id]);

  /** A temporary grant never replaces a permanent one; otherwise the new one replaces. */
  grant(userId: string, type: string, id: string, g: Grant, grants = this.grants) {
    const current = grants.get(Model.key(userId, type, id));
    if (g.expiresAt !== null && current && current.expiresAt === null) return;
    grants.set(Model.key(userId, type, id), g);
  }

  groupsOf(userId: string) {
    return [...this.members].filter(([, m]) => m.has(userId)).map(([g]) => g);
  }

  /** Folder indexes above folder `f`, nearest first. */
  above(f: number): number[] {
    const out: number[] = [];
    for (let p = this.parent[f]!; p !== null; p = this.parent[p]!) out.push(p);
    return out;
  }

  /** The folders a grant for R may sit on, nearest first. */
  foldersAbove(kind: 'folder' | 'document', i: number): number[] {
    if (kind === 'folder') return this.above(i);
    const f = this.docFolder[i]!;
    return f === null ? [] : [f, ...this.above(f)];
  }

  inSubtree(root: number, f: number) {
    return f === root || this.above(f).includes(root);
  }

  /**
   * The user's candidate grants for R as explain lists them: per level their own, then
   * their groups' (editor first, then the later expiry, permanent first, then groupId).
   */
  candidates(userId: string, kind: 'folder' | 'document', i: number) {
    const id = kind === 'folder' ? this.folders[i]! : this.documents[i]!;
    const levels: Array<[string, string, string]> = [
      ['resource', kind, id],
      ...this.foldersAbove(kind, i).map((f): [string, string, string] => ['folder', 'folder', this.folders[f]!]),
      ['organization', 'organization', this.organizationId],
    ];
    const out: object[] = [];
    const live = (g: Grant) => g.expiresAt === null || g.expiresAt * 1000 > NOW;
    const expiry = (g: Grant) => (g.expiresAt !== null ? { expiresAt: g.expiresAt } : {});
    for (const [level, type, rid] of levels) {
      const g = this.grants.get(Model.key(userId, type, rid));
      if (g) out.push({ level, id: rid, via: 'user', accessRole: g.role, ...expiry(g), live: live(g) });
      const groups = this.groupsOf(userId)
        .flatMap((groupId) => {
          const gg = this.groupGrants.get(Model.key(groupId, type, rid));
          return gg ? [{ groupId, g: gg }] : [];
        })
        .sort((a, b) =>
          (a.g.role === b.g.role ? 0 : a.g.role === 'editor' ? -1 : 1) ||
          (b.g.expiresAt ?? Infinity) - (a.g.expiresAt ?? Infinity) ||
          (a.groupId < b.groupId ? -1 : 1));
      for (const { groupId, g: gg } of groups) out.push({ level, id: rid, via: 'group', groupId, accessRole: gg.role, ...expiry(gg), live: live(gg) });
    }
    return out as Array<{ level: string; id: string; via: 'user' | 'group'; groupId?: string; accessRole: Role; expiresAt?: number; live: boolean }>;
  }

  /** Where R's effective type is set. */
  typeFrom(kind: 'folder' | 'document', i: number) {
    const own = kind === 'folder' ? this.folderType[i] : this.docType[i];
    if (own !== null) return { level: 'resource', id: kind === 'folder' ? this.folders[i] : this.documents[i] };
    const f = this.foldersAbove(kind, i).find((x) => this.folderType[x] !== null);
    return f === undefined ? { level: 'organization', id: this.organizationId } : { level: 'folder', id: this.folders[f] };
  }
}

/** The folders, documents, moves, access changes and groups of one organization (created already). */
async function buildTree(s: Scenario, m: Model) {
  const o = m.organizationId;
  // A folder's parent is an earlier folder, so any move to an earlier folder keeps the tree a tree.
  s.folders.forEach((f, i) => {
    const p = f.parent % (i + 1);
    m.folders.push(`f${i}`);
    m.parent.push(p === i ? null : p);
    m.folderType.push(f.accessType ?? null);
  });
  if (m.folders.length) {
    await post('/v2/organizations/folders/add', {
      organizationId: o,
      folders: m.folders.map((folderId, i) => ({
        folderId,
        ...(m.parent[i] !== null ? { parentFolderId: m.folders[m.parent[i]!] } : {}),
        ...(m.folderType[i] ? { accessType: m.folderType[i] } : {}),
      })),
    });
  }
  s.documents.forEach((d, i) => {
    const f = d.folder % (m.folders.length + 1);
    m.documents.push(`d${i}`);
    m.docFolder.push(f === m.folders.length ? null : f);
    m.docType.push(d.accessType ?? null);
    m.disabled.push(d.disabled);
  });
  for (const f of [null, ...m.folders.keys()]) {
    const here = m.documents.map((documentId, i) => ({ documentId, i })).filter(({ i }) => m.docFolder[i] === f);
    if (!here.length) continue;
    await post('/v2/organizations/documents/add', {
      organizationId: o,
      ...(f !== null ? { folderId: m.folders[f] } : {}),
      documents: here.map(({ documentId, i }) => ({ documentId, ...(m.docType[i] ? { accessType: m.docType[i] } : {}) })),
    });
  }
  const disabled = m.documents.filter((_, i) => m.disabled[i]);
  if (disabled.length) await post('/v2/organizations/documents/access/disablestate/update', { organizationId: o, documentIds: disabled, disabled: true });
  if (s.folderMove && m.folders.length) {
    const f = s.folderMove.folder % m.folders.length;
    const p = s.folderMove.parent % (f + 1);
    m.parent[f] = p === f ? null : p;
    await post('/v2/organizations/folders/update', { organizationId: o, folders: [{ folderId: m.folders[f], parentFolderId: p === f ? 'root' : m.folders[p] }] });
  }
  if (s.documentMove && m.documents.length) {
    const d = s.documentMove.document % m.documents.length;
    const f = s.documentMove.folder % (m.folders.length + 1);
    m.docFolder[d] = f === m.folders.length ? null : f;
    await post('/v2/organizations/documents/move', { organizationId: o, documentIds: [m.documents[d]], folderId: f === m.folders.length ? 'root' : m.folders[f] });
  }
  if (s.accessChange && m.folders.length) {
    const f = s.accessChange.folder % m.folders.length;
    m.folderType[f] = s.accessChange.accessType ?? null;
    await post('/v2/organizations/folders/access/update', {
      organizationId: o,
      folderIds: [m.folders[f]],
      ...(s.accessChange.accessType ? { accessType: s.accessChange.accessType } : { inheritFromParent: true }),
    });
  }
  // Groups and their members (their grants come with the users').
  if (s.groups.length) {
    await post('/v2/organizations/usergroups/add', { organizationId: o, organizationUserGroups: s.groups.map((_, g) => ({ groupId: `g${g}`, groupName: `g${g}` })) });
  }
  // Only organization members join a group (semantics §5): each joins with an own
  // organization grant, which is then removed, so what lets them in is exactly the grants
  // generated below (applied after this).
  const joining = s.groups.map((members) => [...new Set(members.map((i) => s.users[i % s.users.length]!))]);
  const orgGrant = { permissions: { resources: [{ type: 'organization', id: o }] } };
  const everyJoiner = [...new Set(joining.flat())];
  await Promise.all(everyJoiner.map((userId) => post('/v2/auth/permissions/add', { userId, ...orgGrant })));
  for (const [g, userIds] of joining.entries()) {
    m.members.set(`g${g}`, new Set(userIds));
    if (!userIds.length) continue;
    const joined = await post('/v2/organizations/usergroups/users/add', { organizationId: o, organizationUserGroupId: `g${g}`, userIds });
    for (const userId of userIds) assert.ok(joined.data[userId].success, `${userId} joins g${g}`);
  }
  await Promise.all(everyJoiner.map((userId) => post('/v2/auth/permissions/remove', { userId, ...orgGrant })));
}

/**
 * Builds a batch of organizations: each one's tree concurrently with the others', then the
 * grants of every organization in one permissions/add per user (in the generated order:
 * within one organization a call applies its resources one after the other, as separate
 * calls would), one permissions/remove per user, and the disabled organizations in one call.
 */
async function buildBatch(batch: Scenario[]): Promise<Model[]> {
  const models = batch.map(() => new Model(`org-${runs++}`));
  await post('/v2/organizations/add', { organizations: models.map((m) => ({ organizationId: m.organizationId, organizationName: m.organizationId })) });
  await Promise.all(batch.map((s, i) => buildTree(s, models[i]!)));

  type Item = { type: string; id: string; organizationId?: string; accessRole?: Role; expiresAt?: number };
  const adds = new Map<string, Item[]>();
  const removes = new Map<string, Item[]>();
  batch.forEach((s, k) => {
    const m = models[k]!;
    const o = m.organizationId;
    const resources: Array<[string, string]> = [['organization', o], ...m.folders.map((f): [string, string] => ['folder', f]), ...m.documents.map((d): [string, string] => ['document', d])];
    const applied: Array<[string, string, string]> = [];
    for (const g of s.grants) {
      const userId = s.users[g.user % s.users.length]!;
      const [type, id] = resources[g.resource % resources.length]!;
      const expiresAt = g.expiry === 'future' ? FUTURE : g.expiry === 'past' ? PAST : null;
      adds.set(userId, [...(adds.get(userId) ?? []), { type, id, ...(type !== 'organization' ? { organizationId: o } : {}), accessRole: g.role, ...(expiresAt !== null ? { expiresAt } : {}) }]);
      m.grant(userId, type, id, { role: g.role, expiresAt });
      applied.push([userId, type, id]);
    }
    if (s.revoke !== undefined && applied.length) {
      const [userId, type, id] = applied[s.revoke % applied.length]!;
      removes.set(userId, [...(removes.get(userId) ?? []), { type, id, ...(type !== 'organization' ? { organizationId: o } : {}) }]);
      m.grants.delete(Model.key(userId, type, id));
    }
  });
  await Promise.all([...adds].map(([userId, resources]) => post('/v2/auth/permissions/add', { userId, permissions: { resources } })));
  await Promise.all([...removes].map(([userId, resources]) => post('/v2/auth/permissions/remove', { userId, permissions: { resources } })));
  // Group grants: one permissions/add per (organization, group), then a revocation and a
  // member leaving, so an answer must follow both at once.
  const groupCalls: Array<Promise<unknown>> = [];
  batch.forEach((s, k) => {
    const m = models[k]!;
    const o = m.organizationId;
    if (!s.groups.length) return;
    const resources: Array<[string, string]> = [['organization', o], ...m.folders.map((f): [string, string] => ['folder', f]), ...m.documents.map((d): [string, string] => ['document', d])];
    const byGroup = new Map<string, Item[]>();
    const applied: Array<[string, string, string]> = [];
    for (const g of s.groupGrants) {
      const groupId = `g${g.group % s.groups.length}`;
      const [type, id] = resources[g.resource % resources.length]!;
      const expiresAt = g.expiry === 'future' ? FUTURE : g.expiry === 'past' ? PAST : null;
      byGroup.set(groupId, [...(byGroup.get(groupId) ?? []), { type, id, ...(type !== 'organization' ? { organizationId: o } : {}), accessRole: g.role, ...(expiresAt !== null ? { expiresAt } : {}) }]);
      m.grant(groupId, type, id, { role: g.role, expiresAt }, m.groupGrants);
      applied.push([groupId, type, id]);
    }
    groupCalls.push((async () => {
      for (const [groupId, items] of byGroup) await post('/v2/auth/permissions/add', { group: { groupId }, permissions: { resources: items } });
      if (s.groupRevoke !== undefined && applied.length) {
        const [groupId, type, id] = applied[s.groupRevoke % applied.length]!;
        m.groupGrants.delete(Model.key(groupId, type, id));
        await post('/v2/auth/permissions/remove', { group: { groupId }, permissions: { resources: [{ type, id, ...(type !== 'organization' ? { organizationId: o } : {}) }] } });
      }
      if (s.leave) {
        const groupId = `g${s.leave.group % s.groups.length}`;
        const userId = s.users[s.leave.member % s.users.length]!;
        if (m.members.get(groupId)!.delete(userId)) {
          await post('/v2/organizations/usergroups/users/delete', { organizationId: o, organizationUserGroupId: groupId, userIds: [userId] });
        }
      }
    })());
  });
  await Promise.all(groupCalls);
  const off = models.filter((_, k) => batch[k]!.organizationDisabled);
  for (const m of off) m.organizationDisabled = true;
  if (off.length) await post('/v2/organizations/access/disablestate/update', { organizationIds: off.map((m) => m.organizationId), disabled: true });
  return models;
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

type Entry = { accessRole?: Role; accessType?: AccessType; expiresAt?: number; error?: string; errorCode?: string };
const allows = (e: Entry, min: Role | undefined) => e.accessRole !== undefined && (min !== 'editor' || e.accessRole === 'editor');

/** Every page of a paged query; each page at most `pageSize` rows; the last without a token. */
async function allPages<T>(http: Via, url: string, data: Record<string, unknown>, rowsOf: (d: any) => T[], pageSize: number, most: number) {
  const rows: T[] = [];
  let token: string | undefined;
  let first: any;
  for (let pages = 0; ; pages++) {
    assert.ok(pages <= most + 1, `${url}: more pages than rows (${JSON.stringify(data)})`);
    const r = await ask(http, url, { ...data, pageSize, ...(token ? { pageToken: token } : {}) });
    first ??= r.data;
    const page = rowsOf(r.data);
    assert.ok(page.length <= pageSize, `${url}: a page holds at most pageSize rows`);
    rows.push(...page);
    token = r.pageToken;
    if (!token) return { rows, first };
  }
}

async function check(s: Scenario, m: Model, http: Via) {
  const o = m.organizationId;
  const users = s.users;
  const everyone = [...users, 'nobody'];
  const truth = (await ask(http, '/v2/auth/permissions/get', {
    organizationId: o,
    userIds: everyone,
    ...(m.folders.length ? { folderIds: m.folders } : {}),
    ...(m.documents.length ? { documentIds: m.documents } : {}),
  })).data as Record<string, { folders?: Record<string, Entry>; documents?: Record<string, Entry> }>;
  const entryOf = (u: string, kind: 'folder' | 'document', id: string) => (kind === 'folder' ? truth[u]!.folders! : truth[u]!.documents!)[id]!;
  const ids = (kind: 'folder' | 'document') => (kind === 'folder' ? m.folders : m.documents);

  // resources/get: whole organization, and inside one folder's subtree.
  for (const u of everyone) {
    for (const [k, kind] of (['document', 'folder'] as const).entries()) {
      const min = s.minRoles[k];
      const { rows } = await allPages(http, `/v2/auth/resources/get`, { organizationId: o, userId: u, type: kind, ...(min ? { minAccessRole: min } : {}) }, (d: any[]) => d, s.pageSize, ids(kind).length);
      const expected = ids(kind).filter((id) => allows(entryOf(u, kind, id), min)).map((id) => ({ id, ...entryOf(u, kind, id) }));
      assert.equal([...rows].sort(byId), expected.sort(byId), `resources/get ${kind} for ${u} (min ${min}) in ${o}`);
    }
    if (m.folders.length) {
      const root = s.subtree % m.folders.length;
      for (const [k, kind] of (['document', 'folder'] as const).entries()) {
        const min = s.minRoles[k + 2];
        const { rows } = await allPages(http, `/v2/auth/resources/get`, { organizationId: o, userId: u, type: kind, folderId: m.folders[root], ...(min ? { minAccessRole: min } : {}) }, (d: any[]) => d, s.pageSize, ids(kind).length);
        const inside = (i: number) => (kind === 'folder' ? m.inSubtree(root, i) : m.docFolder[i] !== null && m.inSubtree(root, m.docFolder[i]!));
        const expected = ids(kind).filter((id, i) => inside(i) && allows(entryOf(u, kind, id), min)).map((id) => ({ id, ...entryOf(u, kind, id) }));
        assert.equal([...rows].sort(byId), expected.sort(byId), `resources/get ${kind} under ${m.folders[root]} for ${u} (min ${min}) in ${o}`);
      }
    }
  }

  // users/get and explain, on every folder and document.
  for (const kind of ['folder', 'document'] as const) {
    for (const [i, id] of ids(kind).entries()) {
      const ref = kind === 'folder' ? { folderId: id } : { documentId: id };
      const min = s.minRoles[i % 4];
      const { rows, first } = await allPages(http, `/v2/auth/users/get`, { organizationId: o, ...ref, ...(min ? { minAccessRole: min } : {}) }, (d) => d.users, s.pageSize, users.length);
      const nobody = entryOf('nobody', kind, id);
      assert.is(first.accessType, nobody.accessType, `users/get ${id}: accessType`);
      assert.is(first.everyone, nobody.accessRole !== undefined, `users/get ${id}: everyone`);
      const expected = users
        .filter((u) => m.candidates(u, kind, i).some((c) => c.live) && allows(entryOf(u, kind, id), min))
        .sort();
      assert.equal(rows.map((r: any) => r.userId).sort(), expected, `users/get ${kind} ${id} (min ${min}) in ${o}`);
      assert.is(new Set(rows.map((r: any) => r.userId)).size, rows.length, 'each user once');
      for (const r of rows as any[]) {
        const e = entryOf(r.userId, kind, id);
        assert.equal({ accessRole: r.accessRole, ...(r.expiresAt !== undefined ? { expiresAt: r.expiresAt } : {}) },
          { accessRole: e.accessRole, ...(e.expiresAt !== undefined ? { expiresAt: e.expiresAt } : {}) }, `users/get ${id}: ${r.userId} as permissions/get`);
        const c = m.candidates(r.userId, kind, i).find((x) => x.level === r.via.level && x.id === r.via.id && x.via === r.via.type && x.groupId === r.via.groupId);
        assert.ok(c && c.live && c.accessRole === r.accessRole && c.expiresAt === r.expiresAt, `users/get ${id}: ${r.userId}'s via ${JSON.stringify(r.via)} is a live grant with that role`);
        if (r.via.type === 'group') {
          seen.viaGroup++;
          if (m.candidates(r.userId, kind, i).some((x) => x.via === 'user')) seen.groupOverOwn++;
        }
      }

      for (const u of everyone) {
        const x = (await ask(http, '/v2/auth/permissions/explain', { organizationId: o, userId: u, ...ref })).data;
        const e = entryOf(u, kind, id);
        assert.equal(x.entry, e, `explain ${u} on ${id}: the permissions/get entry`);
        assert.equal(x.candidates, m.candidates(u, kind, i), `explain ${u} on ${id}: candidates`);
        seen.groupCandidates += x.candidates.filter((c: any) => c.via === 'group').length;
        assert.equal(x.accessType, { value: e.accessType, from: m.typeFrom(kind, i) }, `explain ${u} on ${id}: access type`);
        const blocked = kind === 'document' ? (m.disabled[i] ? 'document disabled' : m.organizationDisabled ? 'organization disabled' : undefined) : undefined;
        assert.is(x.blocked, blocked);
        assert.is(x.decidedBy.rule, blocked ? '3.2 disabled' : `3.4 ${e.accessType}`);
        if (x.decidedBy.candidate !== undefined) {
          const c = x.candidates[x.decidedBy.candidate];
          assert.ok(e.accessRole !== undefined && c.live && c.accessRole === e.accessRole && c.expiresAt === e.expiresAt, `explain ${u} on ${id}: the deciding grant gives the entry`);
        } else if (e.accessRole !== undefined) {
          assert.ok(e.accessType === 'public' && e.accessRole === 'editor' && !x.candidates.some((c: any) => c.live), `explain ${u} on ${id}: allowed without a grant only when public`);
        }
      }
    }
  }
}

test(`access queries agree with permissions/get on ${RUNS} generated organizations`, async () => {
  const size = Math.min(BATCH, RUNS);
  await fc.assert(
    fc.asyncProperty(fc.array(scenario, { minLength: size, maxLength: size }), async (batch) => {
      const built = await buildBatch(batch);
      for (const [i, s] of batch.entries()) {
        try {
          await check(s, built[i]!, i === 0 ? 'http' : i < 10 ? 'checked' : 'direct');
        } catch (error) {
          // The batch's other organizations passed: name the one that failed, and how it was built.
          (error as Error).message += `\n  organization ${built[i]!.organizationId} was built from ${JSON.stringify(s)}`;
          throw error;
        }
      }
    }),
    { numRuns: Math.ceil(RUNS / size) },
  );
  // Over 50 organizations or more, groups let users in, sometimes alongside a grant of their own.
  if (RUNS >= 50) {
    assert.ok(seen.viaGroup > 0 && seen.groupOverOwn > 0 && seen.groupCandidates > 0, `group grants exercised: ${JSON.stringify(seen)}`);
  }
  console.log(`  access property: ${JSON.stringify(seen)}`);
});

test.run();
