/**
 * The `dryrun` scenario of bench/run.ts: the dry run (`x-dry-run: true`) of a move of a folder
 * holding DRY_RUN_DOCS documents, in an organization of DRY_RUN_USERS users, under the
 * service's default query deadline (QUERY_DEADLINE_MS, 5 s): its time to answer with
 * `accessChanges` (counts whole, the first page of changes), the first one (cold caches)
 * apart from the others, and the time of a later page (x-dry-run-page-token).
 *
 * The organization: `dst` (restricted) and `src` (organizationPrivate) at the root, the
 * documents in `src` (every fifth restricted, every hundredth granted to a user of its own);
 * half the users are members (viewers), the other half editors of `dst`. Moving `src` under
 * `dst` gives the editors of `dst` access to most of the documents: about 500,000 changes.
 * The `shared` organization is the same with every document granted to two users of its own
 * (10,000 distinct pairs): the case where no two documents share their grant holders.
 */

export const DRY_RUN_DOCS = 10_000;
export const DRY_RUN_USERS = 100;

interface Timings {
  samples: number;
  p50: number;
  max: number;
}

export interface DryRunMoveFigures {
  docs: number;
  users: number;
  /** The first dry run, ms: caches cold. */
  first: number;
  /** The dry runs after it, ms. */
  runs: Timings;
  /** A later page's dry run (x-dry-run-page-token), ms. */
  laterPage: number;
  counts: { gain: number; lose: number; role: number };
}

async function post(url: string, route: string, headers: Record<string, string>, data: unknown): Promise<{ status: number; body: any; ms: number }> {
  const t0 = performance.now();
  const r = await fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ data }) });
  const body = (await r.json()) as any;
  return { status: r.status, body, ms: performance.now() - t0 };
}

async function ok(url: string, route: string, headers: Record<string, string>, data: unknown) {
  const r = await post(url, route, headers, data);
  if (r.status !== 200) throw new Error(`${route} -> ${r.status} ${JSON.stringify(r.body).slice(0, 500)}`);
  return r;
}

/** Seeds the organization above through the API. */
export async function seedDryRunOrg(url: string, headers: Record<string, string>, org: string, shared: boolean): Promise<void> {
  await ok(url, '/v2/organizations/add', headers, { organizations: [{ organizationId: org, organizationName: 'Dry run' }] });
  await ok(url, '/v2/organizations/folders/add', headers, { organizationId: org, folders: [{ folderId: 'dst', accessType: 'restricted' }, { folderId: 'src', accessType: 'organizationPrivate' }] });
  for (let i = 0; i < DRY_RUN_DOCS; i += 1000) {
    const documents = Array.from({ length: Math.min(1000, DRY_RUN_DOCS - i) }, (_, j) => ({ documentId: `dr${i + j}`, ...((i + j) % 5 === 4 ? { accessType: 'restricted' } : {}) }));
    await ok(url, '/v2/organizations/documents/add', headers, { organizationId: org, folderId: 'src', documents });
  }
  const users = Array.from({ length: DRY_RUN_USERS }, (_, i) => `du${i}`);
  const half = users.length / 2;
  await ok(url, '/v2/users/add', headers, { organizationId: org, users: users.slice(0, half).map((userId) => ({ userId, accessRole: 'viewer' })) });
  await ok(url, '/v2/users/add', headers, { organizationId: org, folderId: 'dst', users: users.slice(half).map((userId) => ({ userId, accessRole: 'editor' })) });
  // Per user, the documents granted to them: every hundredth to one user, or (shared) each to two.
  const granted = new Map<string, string[]>(users.map((u) => [u, []]));
  for (let i = 0; i < DRY_RUN_DOCS; i++) {
    if (shared) for (const u of new Set([users[i % users.length]!, users[Math.floor(i / users.length) % users.length]!])) granted.get(u)!.push(`dr${i}`);
    else if (i % 100 === 0) granted.get(users[(i / 100) % users.length]!)!.push(`dr${i}`);
  }
  for (const [userId, ids] of granted) {
    if (ids.length === 0) continue;
    await ok(url, '/v2/auth/permissions/add', headers, { userId, permissions: { resources: ids.map((id) => ({ type: 'document', id, organizationId: org, accessRole: 'editor' })) } });
  }
}


/** The dry run of moving `src` under `dst`, `runs` times after a first one, and a later page. */
export async function timeDryRunMove(url: string, headers: Record<string, string>, org: string, runs: number): Promise<DryRunMoveFigures> {
  const MOVE = { organizationId: org, folders: [{ folderId: 'src', parentFolderId: 'dst' }] };
  const dry = { ...headers, 'x-dry-run': 'true' };
  const first = await ok(url, '/v2/organizations/folders/update', dry, MOVE);
  const counts = first.body.result.accessChanges.counts;
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await ok(url, '/v2/organizations/folders/update', dry, MOVE);
    if (JSON.stringify(r.body.result.accessChanges.counts) !== JSON.stringify(counts)) throw new Error('dryrun: the counts differ between runs');
    ms.push(r.ms);
  }
  const token = first.body.result.accessChanges.pageToken as string;
  const later = await ok(url, '/v2/organizations/folders/update', { ...dry, 'x-dry-run-page-token': token }, MOVE);
  const s = [...ms].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x);
  return { docs: DRY_RUN_DOCS, users: DRY_RUN_USERS, first: round(first.ms), runs: { samples: s.length, p50: round(s[Math.floor(s.length / 2)]!), max: round(s.at(-1)!) }, laterPage: round(later.ms), counts };
}
