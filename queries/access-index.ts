/**
 * The access index (issue 27): what permission resolution (queries/permissions.ts) reads on
 * every request, kept in this process between requests, per API key and organization: the
 * organization (its disabled flag), folders and documents as resolution targets (effective
 * access type, ancestors nearest first, disabled), each user's groups, how many grants each
 * group holds and those grants, and each user's own grants on the resources asked about
 * (absent ones too: most lookups are of grants that do not exist).
 *
 * Exact, by the store's change signal, `readEpoch` (src/ports/read-store.ts). On SQLite it
 * moves whenever the read cache is emptied: at once on this process's commits, and on other
 * processes' commits (SQLite's `data_version`) by the next request (`beginRequest`). On
 * PostgreSQL, which keeps no read cache, it is the sum of the checkpoints' versions: every
 * projection batch moves its checkpoint in the transaction that writes its read models, and a
 * write to a read model that moves no checkpoint moves a row of its own (see
 * src/adapters/postgres-read-store.ts), read in one round trip. Every
 * resolution asks for it first and, when it moved, the whole index is dropped: a resolution sees
 * every commit acknowledged before its request began, the read cache's own guarantee.
 *
 * First, because what is kept under an epoch must have been read after that epoch was. Worked
 * example on PostgreSQL, a grant committed by another process (C moves the sum 7 -> 8)
 * racing a request R of this one, whose index is empty:
 *  - R reads the epoch before C commits: 7. The index is labelled 7 and R reads the grants
 *    from the store: without C's grant if they run before C commits (R began before C was
 *    acknowledged: either answer is right), with it after. The next request reads 8 (C is
 *    committed now) and drops whatever R kept: nothing read before C outlives C's commit.
 *  - R reads the epoch after C commits: 8, and its store reads, later still, see C.
 * Read the other way round it would fail: R reads the grants (no grant), C commits, R reads
 * 8 and labels what it read 8; every later request reads 8 and answers from the grant-less
 * entry, long after C was acknowledged.
 * Epochs never go back, but two round trips of one process may settle out of order: an epoch
 * older than the one kept is served from what is kept, which was read after the newer one and
 * so holds every commit the older counts. A store without the signal (MongoDB keeps no cache
 * and no counter; an in-memory SQLite has no cache) gets no index, and resolution reads the
 * store as before.
 *
 * Read through: what the index lacks is read from the store with the same reads resolution
 * makes without it, and kept. It is bounded by entries (ACCESS_INDEX_ENTRIES): one per document
 * target, membership list, count, group grant or grant looked up; a folder weighs 1 + twice its
 * depth (it holds its ancestors thrice); an organization, and each user's or group's grants,
 * weigh what their empty Maps cost (the weights below, measured in docs/performance.md, "In-memory
 * access index", beside the bytes one entry costs). Past the bound the whole index is dropped
 * at the next resolution's start (one request may pass it by what it reads, itself bounded by
 * MAX_RESOLUTION_COST) and refilled from the store as requests ask. Dropping all at once, as
 * the read cache does, keeps it one Map walk away from a consistent state.
 *
 * Only the live read store has one (`attachAccessIndex`, src/composition/services.ts): an
 * asOf question reads through an AsOfView (queries/as-of.ts), the paged access queries through
 * their read meter (queries/access.ts), and neither is indexed: they read their history models
 * and count their reads as before.
 */
import type { ReadStore, ReadView } from '../src/ports/read-store.js';
import type { ResourceType } from '../commands/grant.js';
import { MAX_GRANTS_PER_GROUP } from '../commands/group.js';
import { ORGANIZATIONS, organizationKey, type OrganizationDoc } from '../projections/organizations.js';
import { FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { DOCUMENTS, documentKey, type DocumentDoc } from '../projections/documents.js';
import { GRANTS, grantKey, type GrantDoc } from '../projections/grants.js';
import { GROUP_GRANTS, groupGrantKey, type GroupGrantDoc } from '../projections/group-grants.js';
import { userGroupIds } from './group-grants.js';
import { documentAncestors, documentTarget, folderTarget, type Target } from './targets.js';

/** Per resource type, per id: what is kept (null: looked up and absent). */
type ByResource<T> = Record<ResourceType, Map<string, T | null>>;
const byResource = <T>(): ByResource<T> => ({ organization: new Map(), folder: new Map(), document: new Map() });

// What the containers themselves weigh, in entries: an organization's seven empty Maps, a
// user's or a group's three. Counted, so that many organizations or users asked about once
// each cannot hold more memory than the bound says.
const ORGANIZATION_WEIGHT = 8;
const BY_RESOURCE_WEIGHT = 3;

/** A folder as kept: its document, its target, and the ancestors its documents share. */
interface FolderEntry {
  doc: FolderDoc;
  target: Target;
  /** Nearest first, for a document in it: one array shared by all of them. */
  documentAncestors: readonly string[];
}

/** One group's grants: all of them once read through its index (`complete`), else those looked up. */
interface GroupGrants {
  complete: boolean;
  on: ByResource<GroupGrantDoc>;
}

/** What the index keeps of one organization. Every method reads what it lacks from `read`. */
export class OrganizationAccess {
  private organizationDoc: OrganizationDoc | null | undefined;
  private readonly folders = new Map<string, FolderEntry | null>();
  private readonly documents = new Map<string, Target | null>();
  private readonly groupsOf = new Map<string, readonly string[]>();
  private readonly held = new Map<string, number>();
  private readonly groupGrants = new Map<string, GroupGrants>();
  private readonly grants = new Map<string, ByResource<GrantDoc>>();

  constructor(
    private readonly index: Shard,
    readonly apiKey: string,
    readonly organizationId: string,
  ) {}

  async organization(read: ReadView): Promise<OrganizationDoc | null> {
    if (this.organizationDoc === undefined) {
      this.organizationDoc = await read.get<OrganizationDoc>(ORGANIZATIONS, organizationKey(this.apiKey, this.organizationId));
      this.index.added(ORGANIZATION_WEIGHT);
    }
    return this.organizationDoc;
  }

  /** The folders among `ids` (null: missing), reading those not kept in one getMany. */
  private async folderEntries(read: ReadView, ids: readonly string[]): Promise<Array<FolderEntry | null>> {
    const missing = ids.filter((id) => !this.folders.has(id));
    if (missing.length > 0) {
      const found = new Map<string, FolderDoc>();
      for (const f of await read.getMany<FolderDoc>(FOLDERS, missing.map((id) => folderKey(this.apiKey, this.organizationId, id)))) found.set(f.folderId, f);
      let added = 0;
      for (const id of missing) {
        const doc = found.get(id);
        this.folders.set(id, doc ? { doc, target: folderTarget(doc), documentAncestors: documentAncestors(doc) } : null);
        // A folder holds its ancestors three times over (its document, its target, its
        // documents' list): weighed by them, as an entry is about one document target's memory.
        added += 1 + (doc ? 2 * doc.ancestors.length : 0);
      }
      this.index.added(added);
    }
    return ids.map((id) => this.folders.get(id)!);
  }

  async folderTargets(read: ReadView, ids: readonly string[]): Promise<Array<Target | null>> {
    return (await this.folderEntries(read, ids)).map((f) => f?.target ?? null);
  }

  /** Targets of the documents `ids` (null: missing, or its folder is gone: deleted with it). */
  async documentTargets(read: ReadView, ids: readonly string[]): Promise<Array<Target | null>> {
    const missing = ids.filter((id) => !this.documents.has(id));
    if (missing.length > 0) {
      const docs = await read.getMany<DocumentDoc>(DOCUMENTS, missing.map((id) => documentKey(this.apiKey, this.organizationId, id)));
      const folderIds = [...new Set(docs.flatMap((d) => (d.folderId === null ? [] : [d.folderId])))];
      await this.folderEntries(read, folderIds);
      const found = new Map(docs.map((d) => [d.documentId, d]));
      for (const id of missing) {
        const d = found.get(id);
        const folder = d && d.folderId !== null ? this.folders.get(d.folderId)! : null;
        const live = d && (d.folderId === null || folder);
        this.documents.set(id, live ? documentTarget(d, folder?.doc ?? null, folder?.documentAncestors) : null);
      }
      this.index.added(missing.length);
    }
    return ids.map((id) => this.documents.get(id)!);
  }

  /** queries/group-grants.ts userGroupIds, kept. */
  async userGroups(read: ReadView, userId: string): Promise<readonly string[]> {
    let groups = this.groupsOf.get(userId);
    if (!groups) {
      groups = await userGroupIds(read, this.apiKey, this.organizationId, userId);
      this.groupsOf.set(userId, groups);
      this.index.added(1);
    }
    return groups;
  }

  /** How many grants (live or expired) `groupId` holds: one indexed count, kept. */
  async grantsHeld(read: ReadView, groupId: string): Promise<number> {
    let n = this.held.get(groupId);
    if (n === undefined) {
      n = await read.count(GROUP_GRANTS, { apiKey: this.apiKey, organizationId: this.organizationId, groupId });
      this.held.set(groupId, n);
      this.index.added(1);
    }
    return n;
  }

  /**
   * The grants `groupId` (holding `held`) has on `resources`, read as queries/group-grants.ts
   * groupGrantsOnResources reads one group: all of its grants through its index when it holds
   * no more than there are resources, else the resources' keys; kept either way.
   */
  async groupGrantsOn(read: ReadView, groupId: string, held: number, resources: ReadonlyArray<readonly [ResourceType, string]>): Promise<GroupGrantDoc[]> {
    let g = this.groupGrants.get(groupId);
    if (!g) {
      this.groupGrants.set(groupId, (g = { complete: false, on: byResource() }));
      this.index.added(BY_RESOURCE_WEIGHT);
    }
    if (!g.complete && held <= resources.length) {
      for (const grant of await read.find<GroupGrantDoc>(GROUP_GRANTS, { apiKey: this.apiKey, organizationId: this.organizationId, groupId }, { limit: MAX_GRANTS_PER_GROUP })) {
        g.on[grant.resourceType].set(grant.resourceId, grant);
      }
      g.complete = true;
      this.index.added(held);
    }
    const found = await this.lookUp(g.on, g.complete, resources, (t, id) => groupGrantKey(this.apiKey, this.organizationId, groupId, t, id), read, GROUP_GRANTS);
    return found.filter((x): x is GroupGrantDoc => x !== undefined);
  }

  /** `userId`'s own grants (live or expired) on `resources`, in their order (undefined: none). */
  async userGrants(read: ReadView, userId: string, resources: ReadonlyArray<readonly [ResourceType, string]>): Promise<Array<GrantDoc | undefined>> {
    let kept = this.grants.get(userId);
    if (!kept) {
      this.grants.set(userId, (kept = byResource()));
      this.index.added(BY_RESOURCE_WEIGHT);
    }
    return this.lookUp(kept, false, resources, (t, id) => grantKey(this.apiKey, this.organizationId, userId, t, id), read, GRANTS);
  }

  /**
   * Each resource's document in `kept`: looked up there, the ones not kept read in one getMany
   * of their keys and kept (absent ones as null). `complete`: what is not kept does not exist.
   */
  private async lookUp<T extends GrantDoc | GroupGrantDoc>(
    kept: ByResource<T>,
    complete: boolean,
    resources: ReadonlyArray<readonly [ResourceType, string]>,
    keyOf: (t: ResourceType, id: string) => string,
    read: ReadView,
    collection: string,
  ): Promise<Array<T | undefined>> {
    const out = new Array<T | undefined>(resources.length);
    let missing: Array<readonly [ResourceType, string]> | null = null;
    for (let i = 0; i < resources.length; i++) {
      const [t, id] = resources[i]!;
      const d = kept[t].get(id);
      if (d === undefined && !complete) (missing ??= []).push(resources[i]!);
      else out[i] = d ?? undefined;
    }
    if (!missing) return out;
    const found = new Map<string, T>();
    for (const d of await read.getMany<T>(collection, missing.map(([t, id]) => keyOf(t, id)))) found.set(d._id, d);
    for (const [t, id] of missing) kept[t].set(id, found.get(keyOf(t, id)) ?? null);
    this.index.added(missing.length);
    for (let i = 0; i < resources.length; i++) if (out[i] === undefined) out[i] = kept[resources[i]![0]].get(resources[i]![1]) ?? undefined;
    return out;
  }
}

/** What one server's reads filled: valid at one value of that server's change signal. */
class Shard {
  private epoch: number | undefined;
  entries = 0;
  private readonly tenants = new Map<string, Map<string, OrganizationAccess>>();

  constructor(private readonly maxEntries: number) {}

  /** An organization's entries grew by `n`. */
  added(n: number) {
    this.entries += n;
  }

  at(epoch: number | undefined, apiKey: string, organizationId: string): OrganizationAccess | null {
    if (epoch === undefined) return null;
    // Older than the one kept: a round trip that settled after a later one (see the top).
    if (this.epoch === undefined || epoch > this.epoch || this.entries > this.maxEntries) {
      this.tenants.clear();
      this.entries = 0;
      this.epoch = Math.max(epoch, this.epoch ?? epoch);
    }
    let orgs = this.tenants.get(apiKey);
    if (!orgs) this.tenants.set(apiKey, (orgs = new Map()));
    let org = orgs.get(organizationId);
    if (!org) orgs.set(organizationId, (org = new OrganizationAccess(this, apiKey, organizationId)));
    return org;
  }
}

/**
 * The index of one read store (see the top of this file). A store that reads from several
 * servers (PostgreSQL read replicas: ReadStore.readSource) gets one shard per server, each
 * exact by that server's own signal and bounded by `maxEntries` on its own: a standby's signal
 * counts the commits it has replayed, which says nothing about another server's.
 */
export class AccessIndex {
  private readonly own: Shard;
  private readonly others = new Map<object, Shard>();

  constructor(
    private readonly store: Pick<ReadStore, 'readEpoch' | 'readSource'>,
    readonly maxEntries: number,
  ) {
    this.own = new Shard(maxEntries);
  }

  /** Entries kept now, every shard's (see ACCESS_INDEX_ENTRIES). */
  get size(): number {
    let n = this.own.entries;
    for (const s of this.others.values()) n += s.entries;
    return n;
  }

  /**
   * What is kept of one organization, valid as of now: when the epoch of the server read moved
   * or the bound is passed, everything that server's shard holds is dropped first. Null when the
   * store gives no epoch. At once when the store answers its epoch at once (SQLite), else a
   * promise (PostgreSQL).
   */
  organization(apiKey: string, organizationId: string): OrganizationAccess | null | Promise<OrganizationAccess | null> {
    // The source first: the epoch answered next is that server's.
    const source = this.store.readSource?.();
    let shard = this.own;
    if (source !== undefined) {
      shard = this.others.get(source) ?? new Shard(this.maxEntries);
      this.others.set(source, shard);
    }
    const epoch = this.store.readEpoch?.();
    if (epoch instanceof Promise) return epoch.then((e) => shard.at(e, apiKey, organizationId));
    return shard.at(epoch, apiKey, organizationId);
  }
}

const indexes = new WeakMap<ReadView, AccessIndex>();

/**
 * Gives `store` an access index of at most `maxEntries` entries (0: none), when it has the
 * change signal the index needs (`readEpoch`). Returns it, for tests and metrics.
 */
export function attachAccessIndex(store: ReadStore, maxEntries: number): AccessIndex | null {
  if (maxEntries <= 0 || !store.readEpoch) return null;
  // A store that cannot tell (MongoDB, an in-memory SQLite) answers undefined from the start;
  // one that asks its server (PostgreSQL) answers a promise, and the resolutions that find it
  // undefined read the store.
  const epoch = store.readEpoch();
  if (epoch === undefined) return null;
  if (epoch instanceof Promise) epoch.catch(() => undefined);
  const index = new AccessIndex(store, maxEntries);
  indexes.set(store, index);
  return index;
}

/** The index of exactly this view, if any: a wrapper (AsOfView, a read meter) has none. */
export const accessIndexOf = (read: ReadView): AccessIndex | undefined => indexes.get(read);
