/**
 * Crash safety (issue 7.1). The real service runs as a child process on a temp DATA_DIR.
 * Workers send a mixed load of writes (users, folders, documents, folder and document moves,
 * access changes, grants and revokes, deletions), each acknowledged answer updating a model
 * of what must be there; at a random moment the process gets kill -9. It restarts on the
 * same DATA_DIR and then:
 * - every acknowledged write is visible through the queries (folders/get, documents/get,
 *   users/get); a write that was in flight at the kill may be there or not, but nothing
 *   else may differ;
 * - the read models equal a fresh rebuild from the log (test/support/rebuild.ts).
 * Each round adds load to the same data and ends in another kill.
 *
 * Knobs: CRASH_ROUNDS (kill points, default 1; `npm run test:reliability`: 5),
 * CRASH_MIN_MS / CRASH_MAX_MS (load before the kill, default 300..1200 ms), CRASH_WORKERS (4),
 * CRASH_SEED (the random sequence; printed on every run, so a failure can be replayed).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { tempDir } from './support/app.js';
import { startService, waitHealthy, type Service } from './support/process.js';
import { compareWithRebuild } from './support/rebuild.js';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 1);
const MIN_MS = Number(process.env.CRASH_MIN_MS ?? 300);
const MAX_MS = Number(process.env.CRASH_MAX_MS ?? 1200);
const WORKERS = Number(process.env.CRASH_WORKERS ?? 4);
const SEED = Number(process.env.CRASH_SEED ?? Date.now() % 1_000_000);

/** mulberry32: a small seeded generator, so a failing run can be replayed with CRASH_SEED. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick<T>(xs: readonly T[]): T | undefined {
      return xs.length ? xs[Math.floor(next() * xs.length)] : undefined;
    },
  };
}
const R = rng(SEED);

const ACCESS = ['public', 'organizationPrivate', 'restricted', null] as const;
const ROLES = ['editor', 'viewer'] as const;

/**
 * What must be visible. Keys: `folder:<id>` -> { parent, access } (own access type, null =
 * inherits), `doc:<id>` -> { folderId, access }, `user:<id>` -> org role, `grant:<u>|<d>`
 * -> role. Absent = undefined. A key touched by a request in flight at the kill holds every
 * value it may now have, until the next restart shows which one.
 */
type Value = unknown;
class Model {
  readonly certain = new Map<string, Value>();
  readonly uncertain = new Map<string, Value[]>();
  get(key: string) {
    return this.certain.get(key);
  }
  isCertain(key: string) {
    return !this.uncertain.has(key);
  }
  set(key: string, v: Value) {
    if (v === undefined) this.certain.delete(key);
    else this.certain.set(key, v);
  }
  keys(prefix: string): string[] {
    return [...new Set([...this.certain.keys(), ...this.uncertain.keys()])].filter((k) => k.startsWith(prefix));
  }
  /** Certain entities of a kind that exist (safe to act on). */
  live(prefix: string): string[] {
    return [...this.certain.keys()].filter((k) => k.startsWith(prefix) && !this.uncertain.has(k)).map((k) => k.slice(prefix.length));
  }
  inFlight(changes: Array<[string, Value]>) {
    for (const [k, v] of changes) {
      const was = this.uncertain.get(k) ?? [this.certain.get(k)];
      this.uncertain.set(k, [...was, v]);
    }
  }
}

interface Org {
  id: string;
  model: Model;
  counter: number;
}

type Post = (route: string, data: unknown) => Promise<{ status: number; body: any }>;

/** One operation: the request, and the changes it makes when acknowledged (per item). */
interface Op {
  route: string;
  data: unknown;
  /** Changes if every item succeeds (the in-flight alternatives). */
  changes: Array<[string, Value]>;
  /** Applies an acknowledged answer to the model. */
  ack(body: any, m: Model): void;
}

const odd = (n: number) => (n % 7 === 3 ? `"q/${n}"\u00e9` : n % 11 === 5 ? `__proto__${n}` : String(n));

function nextOp(o: Org): Op | null {
  const m = o.model;
  const folders = m.live('folder:');
  const docs = m.live('doc:');
  const users = m.live('user:');
  const n = ++o.counter;
  const roll = R.int(100);
  if (roll < 14 || folders.length < 2) {
    const folderId = `f${odd(n)}`;
    const parent = R.next() < 0.6 ? R.pick(folders) ?? null : null;
    const access = R.pick(ACCESS)!;
    const v = { parent, access };
    return {
      route: '/v2/organizations/folders/add',
      data: { organizationId: o.id, createOrganization: true, folders: [{ folderId, ...(parent ? { parentFolderId: parent } : {}), ...(access ? { accessType: access } : {}) }] },
      changes: [[`folder:${folderId}`, v]],
      ack: (b, mm) => b.result.data[folderId].success && mm.set(`folder:${folderId}`, v),
    };
  }
  if (roll < 30) {
    const documentId = `d${odd(n)}`;
    const folderId = R.next() < 0.7 ? R.pick(folders) ?? null : null;
    const access = R.next() < 0.3 ? R.pick(ACCESS)! : null;
    const v = { folderId, access };
    return {
      route: '/v2/organizations/documents/add',
      data: { organizationId: o.id, createOrganization: true, ...(folderId ? { folderId } : {}), documents: [{ documentId, ...(access ? { accessType: access } : {}) }] },
      changes: [[`doc:${documentId}`, v]],
      ack: (b, mm) => b.result.data[documentId].success && mm.set(`doc:${documentId}`, v),
    };
  }
  if (roll < 40) {
    const userIds = [`u${odd(n)}`, ...(R.next() < 0.3 && users.length ? [R.pick(users)!] : [])];
    const role = R.pick(ROLES)!;
    return {
      route: '/v2/users/add',
      data: { organizationId: o.id, users: userIds.map((u) => ({ userId: u, name: `User ${u}`, email: `u${n}@example.com`, accessRole: role })) },
      changes: userIds.map((u) => [`user:${u}`, role]),
      ack: (b, mm) => userIds.forEach((u) => b.result.data[u].success && mm.set(`user:${u}`, role)),
    };
  }
  if (roll < 52 && folders.length >= 2) {
    const f = R.pick(folders)!;
    const to = R.next() < 0.2 ? null : R.pick(folders.filter((x) => x !== f))!;
    const cur = m.get(`folder:${f}`) as { parent: string | null; access: string | null };
    const v = { ...cur, parent: to };
    return {
      route: '/v2/organizations/folders/update',
      data: { organizationId: o.id, folders: [{ folderId: f, parentFolderId: to ?? 'root' }] },
      changes: [[`folder:${f}`, v]],
      // A move under its own descendant fails for that item ("would create a cycle").
      ack: (b, mm) => b.result.data[f].success && mm.set(`folder:${f}`, v),
    };
  }
  if (roll < 60 && docs.length) {
    const ds = [...new Set([R.pick(docs)!, R.pick(docs)!])];
    const to = R.next() < 0.2 ? null : R.pick(folders) ?? null;
    const changes: Array<[string, Value]> = ds.map((d) => [`doc:${d}`, { ...(m.get(`doc:${d}`) as object), folderId: to }]);
    return {
      route: '/v2/organizations/documents/move',
      data: { organizationId: o.id, documentIds: ds, folderId: to ?? 'root' },
      changes,
      ack: (_b, mm) => changes.forEach(([k, v]) => mm.set(k, v)),
    };
  }
  if (roll < 68 && folders.length) {
    const fs_ = [...new Set([R.pick(folders)!, R.pick(folders)!])];
    const access = R.pick(ACCESS)!;
    const changes: Array<[string, Value]> = fs_.map((f) => [`folder:${f}`, { ...(m.get(`folder:${f}`) as object), access }]);
    return {
      route: '/v2/organizations/folders/access/update',
      data: { organizationId: o.id, folderIds: fs_, ...(access ? { accessType: access } : { inheritFromParent: true }) },
      changes,
      ack: (b, mm) => changes.forEach(([k, v], i) => b.result.data[fs_[i]!].success && mm.set(k, v)),
    };
  }
  if (roll < 76 && docs.length) {
    const ds = [...new Set([R.pick(docs)!, R.pick(docs)!])];
    const access = R.pick(ACCESS)!;
    const changes: Array<[string, Value]> = ds.map((d) => [`doc:${d}`, { ...(m.get(`doc:${d}`) as object), access }]);
    return {
      route: '/v2/organizations/documents/access/update',
      data: { organizationId: o.id, documentIds: ds, ...(access ? { accessType: access } : { inheritFromParent: true }) },
      changes,
      ack: (b, mm) => changes.forEach(([k, v], i) => b.result.data[ds[i]!].success && mm.set(k, v)),
    };
  }
  if (roll < 90 && docs.length && users.length) {
    const u = R.pick(users)!;
    const d = R.pick(docs)!;
    const grant = R.next() < 0.65;
    const role = R.pick(ROLES)!;
    const key = `grant:${u}|${d}`;
    const v = grant ? role : undefined;
    return {
      route: grant ? '/v2/auth/permissions/add' : '/v2/auth/permissions/remove',
      data: { userId: u, permissions: { resources: [{ type: 'document', id: d, organizationId: o.id, ...(grant ? { accessRole: role } : {}) }] } },
      changes: [[key, v]],
      // No `data` when every resource went through (the hosted shape); per-resource outcomes otherwise.
      ack: (b, mm) => (b.result.data === undefined || b.result.data[d].success) && mm.set(key, v),
    };
  }
  if (roll < 95 && docs.length > 3) {
    const d = R.pick(docs)!;
    const changes: Array<[string, Value]> = [[`doc:${d}`, undefined], ...m.keys('grant:').filter((k) => k.endsWith(`|${d}`)).map((k): [string, Value] => [k, undefined])];
    return {
      route: '/v2/organizations/documents/delete',
      data: { organizationId: o.id, documentIds: [d] },
      changes,
      ack: (_b, mm) => changes.forEach(([k, v]) => mm.set(k, v)),
    };
  }
  if (folders.length > 4) {
    // A leaf folder (no subfolders in the model): it and its documents (and their grants) go.
    const parents = new Set(m.keys('folder:').map((k) => (m.get(k) as { parent?: string } | undefined)?.parent));
    const uncertainParents = [...m.uncertain].filter(([k]) => k.startsWith('folder:')).flatMap(([, vs]) => vs.map((v) => (v as { parent?: string } | undefined)?.parent));
    const leaf = R.pick(folders.filter((f) => !parents.has(f) && !uncertainParents.includes(f)));
    if (leaf) {
      const inside = m.keys('doc:').filter((k) => (m.get(k) as { folderId?: string } | undefined)?.folderId === leaf || (m.uncertain.get(k) ?? []).some((v) => (v as { folderId?: string } | undefined)?.folderId === leaf));
      const gone = new Set(inside.map((k) => k.slice(4)));
      const changes: Array<[string, Value]> = [
        [`folder:${leaf}`, undefined],
        ...inside.map((k): [string, Value] => [k, undefined]),
        ...m.keys('grant:').filter((k) => gone.has(k.slice(k.indexOf('|') + 1))).map((k): [string, Value] => [k, undefined]),
      ];
      return {
        route: '/v2/organizations/folders/delete',
        data: { organizationId: o.id, folderId: leaf },
        changes,
        ack: (_b, mm) => changes.forEach(([k, v]) => mm.set(k, v)),
      };
    }
  }
  return null;
}

/** Runs until `stop` is set; returns the number of acknowledged writes. */
async function worker(o: Org, post: Post, stop: { now: boolean }): Promise<number> {
  let acked = 0;
  while (!stop.now) {
    const op = nextOp(o);
    if (!op) continue;
    let res: { status: number; body: any };
    try {
      res = await post(op.route, op.data);
    } catch {
      // No answer: the process died with this request in flight. Either outcome is fine.
      o.model.inFlight(op.changes);
      return acked;
    }
    assert.is(res.status, 200, `${op.route} ${JSON.stringify(op.data)} -> ${res.status} ${JSON.stringify(res.body)}`);
    op.ack(res.body, o.model);
    acked++;
  }
  return acked;
}

async function pages(post: Post, route: string, data: Record<string, unknown>): Promise<any[]> {
  const rows: any[] = [];
  let pageToken: string | undefined;
  do {
    const r = await post(route, { ...data, pageSize: 1000, ...(pageToken ? { pageToken } : {}) });
    if (r.status === 404) return rows;
    assert.is(r.status, 200, `${route} ${JSON.stringify(r.body)}`);
    rows.push(...r.body.result.data);
    pageToken = r.body.result.pageToken;
  } while (pageToken);
  return rows;
}

/** Canonical JSON (sorted keys): key order never counts. */
const canon = (v: unknown) =>
  JSON.stringify(v, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x));
const same = (a: unknown, b: unknown) => canon(a) === canon(b);

/** Checks what the queries show against the model; settles the uncertain keys. Returns the number of facts checked. */
async function verify(o: Org, post: Post): Promise<number> {
  const m = o.model;
  const actual = new Map<string, Value>();
  for (const f of await pages(post, '/v2/organizations/folders/get', { organizationId: o.id })) {
    // Rows name the organization root "root" (the hosted API's shape); the model says null.
    actual.set(`folder:${f.folderId}`, { parent: f.parentFolderId === 'root' ? null : f.parentFolderId, access: f.inheritAccessFromParent ? null : f.accessType, effective: f.accessType });
  }
  for (const d of await pages(post, '/v2/organizations/documents/get', { organizationId: o.id })) {
    actual.set(`doc:${d.id}`, { folderId: d.folderId ?? null, effective: d.accessType });
  }
  for (const u of await pages(post, '/v2/users/get', { organizationId: o.id })) actual.set(`user:${u.userId}`, u.accessRole);
  const docsWithGrants = new Set(m.keys('grant:').map((k) => k.slice(k.indexOf('|') + 1)));
  for (const d of docsWithGrants) {
    if (!actual.has(`doc:${d}`)) continue;
    for (const u of await pages(post, '/v2/users/get', { organizationId: o.id, documentId: d })) actual.set(`grant:${u.userId}|${d}`, u.accessRole);
  }
  const strip = (k: string, v: Value) => {
    if (v === undefined || !(k.startsWith('folder:') || k.startsWith('doc:'))) return v;
    const { effective: _e, ...rest } = v as Record<string, unknown>;
    return k.startsWith('doc:') ? { folderId: rest.folderId } : rest;
  };
  const expectedOf = (k: string, v: Value) => (k.startsWith('doc:') && v !== undefined ? { folderId: (v as { folderId: unknown }).folderId } : v);
  let checked = 0;
  const keys = new Set([...m.certain.keys(), ...m.uncertain.keys(), ...[...actual.keys()].filter((k) => !k.startsWith('grant:') || docsWithGrants.has(k.slice(k.indexOf('|') + 1)))]);
  for (const k of keys) {
    // Grants on a document that is gone are not visible through users/get: nothing to compare.
    if (k.startsWith('grant:') && !actual.has(`doc:${k.slice(k.indexOf('|') + 1)}`)) continue;
    const got = strip(k, actual.get(k));
    const allowed = (m.uncertain.get(k) ?? [m.certain.get(k)]).map((v) => expectedOf(k, v));
    assert.ok(allowed.some((v) => same(v, got)), `${o.id} ${k}: queries show ${JSON.stringify(got)}, expected ${allowed.map((v) => JSON.stringify(v)).join(' or ')}`);
    checked++;
  }
  // The restart showed which outcome each in-flight write had: that is the model now.
  // Folders, users and grants are shown whole; a document's own access type is not, so of
  // its possible values keep the one that explains the effective type shown.
  const uncertainDocs: Array<[string, Value[]]> = [];
  for (const [k, vs] of m.uncertain) {
    const got = actual.get(k);
    if (k.startsWith('doc:')) uncertainDocs.push([k, vs]);
    else m.set(k, k.startsWith('folder:') ? strip(k, got) : got);
  }
  m.uncertain.clear();
  // Effective access types, derived from the model (own type, else the parent's, else public).
  const effective = (folderId: string | null, depth = 0): string => {
    if (folderId === null || depth > 10_000) return 'public';
    const f = m.get(`folder:${folderId}`) as { parent: string | null; access: string | null };
    return f.access ?? effective(f.parent, depth + 1);
  };
  for (const [k, vs] of uncertainDocs) {
    const got = actual.get(k) as { folderId: string | null; effective: string } | undefined;
    if (got === undefined) m.set(k, undefined);
    else {
      const candidates = vs.filter((v): v is { folderId: string | null; access: string | null } => v !== undefined && same((v as { folderId: unknown }).folderId, got.folderId));
      m.set(k, candidates.find((v) => (v.access ?? effective(v.folderId)) === got.effective) ?? candidates[0]);
    }
  }
  for (const k of m.keys('folder:')) {
    assert.is((actual.get(k) as { effective: string }).effective, effective(k.slice(7)), `${o.id} ${k} effective access`);
    checked++;
  }
  for (const k of m.keys('doc:')) {
    const d = m.get(k) as { folderId: string | null; access: string | null };
    assert.is((actual.get(k) as { effective: string }).effective, d.access ?? effective(d.folderId), `${o.id} ${k} effective access`);
    checked++;
  }
  return checked;
}

async function waitReady(s: Service, timeoutMs = 30_000) {
  await waitHealthy(s, timeoutMs);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await fetch(`${s.url}/readyz`)).status === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not ready: ${s.output()}`);
}

function poster(s: Service, headers: Record<string, string>): Post {
  return async (route, data) => {
    const r = await fetch(`${s.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ data }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await r.text();
    return { status: r.status, body: JSON.parse(text) };
  };
}

test(`kill -9 under mixed load, ${ROUNDS} kill point(s): acknowledged writes survive, read models equal a rebuild (seed ${SEED})`, async () => {
  const dir = tempDir('collab-crash-load-');
  let s: Service | undefined;
  try {
    s = await startService({ DATA_DIR: dir, LOG_LEVEL: 'warn' });
    await waitReady(s);
    const ws = await poster(s, {})('/v2/workspace/create', { ownerEmail: 'crash@example.com' });
    assert.is(ws.status, 200);
    const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
    const orgs: Org[] = Array.from({ length: WORKERS }, (_, i) => ({ id: `org-${i}`, model: new Model(), counter: 0 }));
    let survived = 0;
    let acked = 0;
    let checked = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const post = poster(s, headers);
      const stop = { now: false };
      const runs = orgs.map((o) => worker(o, post, stop));
      const killAt = MIN_MS + R.int(Math.max(1, MAX_MS - MIN_MS));
      await new Promise((r) => setTimeout(r, killAt));
      s.child.kill('SIGKILL');
      const exit = await s.exited;
      stop.now = true;
      const counts = await Promise.all(runs);
      acked += counts.reduce((a, b) => a + b, 0);
      assert.is(exit.signal, 'SIGKILL');

      s = await startService({ DATA_DIR: dir, LOG_LEVEL: 'warn' });
      await waitReady(s);
      const after = poster(s, headers);
      for (const o of orgs) checked += await verify(o, after);
      const cmp = await compareWithRebuild(dir);
      assert.equal(cmp.diffs, [], `round ${round}: read models differ from a rebuild:\n${cmp.diffs.slice(0, 20).join('\n')}`);
      survived++;
      console.log(`    round ${round}: killed after ${killAt} ms, ${counts.join('+')} acknowledged writes; after restart ${checked} facts checked, ${cmp.events} events rebuilt into ${JSON.stringify(cmp.collections)}`);
    }
    console.log(`  crash: ${survived} kill point(s) survived, ${acked} acknowledged writes (CRASH_SEED=${SEED})`);
    s.child.kill('SIGTERM');
    assert.is((await s.exited).code, 0);
    s = undefined;
  } finally {
    if (s && s.child.exitCode === null) {
      s.child.kill('SIGKILL');
      await s.exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
