/**
 * The folder tree of one organization, as the organization aggregate holds it (see
 * commands/organization.ts for why the tree and the organization share one stream).
 *
 * Consistency boundary: every folder's parent lives in this one stream, so a move is decided
 * against the whole tree and appended with the expected revision of that stream. Two
 * concurrent opposite moves (A under B, B under A) both load revision r; the first append
 * wins, the second fails its expected-revision check, the command handler reloads and
 * decides again, and now sees that B is under A: "would create a cycle". No cycle can ever
 * be appended, whatever the interleaving.
 *
 * A batch (folders/add, folders/update, folders/access/update) is ONE command: its items are
 * decided in order against the state the previous items left, so 1000 items cost one append
 * and no retry storm, and each item gets its own outcome.
 *
 * The tree is a small persistent map (256 buckets): `evolve` copies one bucket and the
 * bucket array per event, never the whole tree, so a 10,000-folder tree folds in linear time.
 */
import { invalidArgument } from '../src/shared/errors.js';
import type { DomainEvent } from '../src/runtime/decider.js';

/**
 * semantics §1 Limits: the folder tree is at most this many levels deep unless the operator
 * sets FOLDER_MAX_DEPTH (src/config/config.ts). A folder at the organization root is level 1.
 */
export const DEFAULT_FOLDER_MAX_DEPTH = 100;

export const ACCESS_TYPES = ['organizationPrivate', 'restricted', 'public'] as const;
export type AccessType = (typeof ACCESS_TYPES)[number];
/** semantics §3 rule 4: the organization default; no API-key setting changes it in this version. */
export const ORGANIZATION_DEFAULT_ACCESS: AccessType = 'public';

// ---- events ----

export type FolderEvent =
  | DomainEvent<'FolderAdded', {
      organizationId: string;
      folderId: string;
      folderName: string;
      parentFolderId: string | null;
      /** null: inherits from its parent (or the organization default at the root). */
      accessType: AccessType | null;
      createdAt: number;
    }>
  | DomainEvent<'FolderRenamed', { organizationId: string; folderId: string; folderName: string }>
  | DomainEvent<'FolderMoved', {
      organizationId: string;
      folderId: string;
      parentFolderId: string | null;
      previousParentFolderId: string | null;
    }>
  | DomainEvent<'FolderAccessChanged', { organizationId: string; folderId: string; accessType: AccessType | null }>
  | DomainEvent<'FolderDeleted', {
      organizationId: string;
      folderId: string;
      /** The folder and every subfolder under it, removed by this event. */
      folderIds: string[];
      deletedAt: number;
    }>;

// ---- state: a persistent map of folders ----

export interface FolderNode {
  parentFolderId: string | null;
  accessType: AccessType | null;
  folderName: string;
}

const BUCKETS = 256;
export type Tree = { readonly buckets: ReadonlyArray<Readonly<Record<string, FolderNode>> | undefined>; readonly size: number };

export const emptyTree = (): Tree => ({ buckets: new Array(BUCKETS).fill(undefined), size: 0 });

function bucketOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return (h >>> 0) % BUCKETS;
}

export function getFolder(tree: Tree, id: string): FolderNode | undefined {
  const b = tree.buckets[bucketOf(id)];
  return b && Object.prototype.hasOwnProperty.call(b, id) ? b[id] : undefined;
}

function withBucket(tree: Tree, id: string, change: (b: Record<string, FolderNode>) => number): Tree {
  const i = bucketOf(id);
  const bucket: Record<string, FolderNode> = Object.assign(Object.create(null), tree.buckets[i]);
  const delta = change(bucket);
  const buckets = tree.buckets.slice();
  buckets[i] = bucket;
  return { buckets, size: tree.size + delta };
}

const setFolder = (tree: Tree, id: string, node: FolderNode): Tree =>
  withBucket(tree, id, (b) => {
    const added = getFolder(tree, id) ? 0 : 1;
    b[id] = node;
    return added;
  });

function removeFolders(tree: Tree, ids: readonly string[]): Tree {
  if (ids.length === 0) return tree;
  const buckets = tree.buckets.slice();
  const copied = new Set<number>();
  let size = tree.size;
  for (const id of ids) {
    const i = bucketOf(id);
    const current = buckets[i];
    if (!current || !Object.prototype.hasOwnProperty.call(current, id)) continue;
    if (!copied.has(i)) {
      buckets[i] = Object.assign(Object.create(null), current);
      copied.add(i);
    }
    delete (buckets[i] as Record<string, FolderNode>)[id];
    size--;
  }
  return { buckets, size };
}

function* folderEntries(tree: Tree): Generator<[string, FolderNode]> {
  for (const b of tree.buckets) if (b) for (const id of Object.keys(b)) yield [id, b[id]!];
}

/** True when `candidate` is `folderId` itself or one of its descendants (walks up from candidate: O(depth)). */
function isInSubtree(tree: Tree, folderId: string, candidate: string): boolean {
  let cur: string | null = candidate;
  for (let guard = 0; cur !== null && guard <= tree.size; guard++) {
    if (cur === folderId) return true;
    cur = getFolder(tree, cur)?.parentFolderId ?? null;
  }
  return false;
}

/**
 * The level of `folderId` (a folder at the organization root is level 1; the root itself,
 * null, is level 0), walking up at most `cap + 1` parents: a folder deeper than `cap`
 * answers `cap + 1`, so the walk costs O(cap) even in a tree stored before the limit
 * existed.
 */
function levelOf(tree: Tree, folderId: string | null, cap: number): number {
  let level = 0;
  let cur = folderId;
  while (cur !== null && level <= cap) {
    const node = getFolder(tree, cur);
    if (!node) break;
    level++;
    cur = node.parentFolderId;
  }
  return level;
}

/** Children by parent id, as sets (a move takes one out and puts it in elsewhere in O(1)). */
type ChildIndex = Map<string, Set<string>>;

function childIndex(tree: Tree): ChildIndex {
  const children: ChildIndex = new Map();
  for (const [id, node] of folderEntries(tree)) {
    if (node.parentFolderId === null) continue;
    const set = children.get(node.parentFolderId);
    if (set) set.add(id);
    else children.set(node.parentFolderId, new Set([id]));
  }
  return children;
}

/**
 * True when the subtree under `folderId` has a folder more than `levels` levels below it
 * (its children are 1 level below). Walks level by level and stops at `levels + 1`, so it
 * visits only the top of a deep subtree. Example: a chain a -> b -> c has c 2 levels below
 * a: `hasDescendantsBelow(children, 'a', 1)` is true, with 2 it is false.
 */
function hasDescendantsBelow(children: ChildIndex, folderId: string, levels: number): boolean {
  let frontier = [folderId];
  for (let depth = 1; frontier.length > 0; depth++) {
    const next: string[] = [];
    for (const id of frontier) for (const c of children.get(id) ?? []) next.push(c);
    if (next.length > 0 && depth > levels) return true;
    frontier = next;
  }
  return false;
}

const tooDeep = (index: number, folderId: string, maxDepth: number) =>
  invalidArgument(
    `data.folders[${index}] (folder ${JSON.stringify(folderId)}) would put a folder more than ${maxDepth} levels deep: ` +
      `the folder tree is limited to ${maxDepth} levels.`,
  );

/** The folder and all its descendants, parents before children (one scan of the tree). */
export function subtreeOf(tree: Tree, folderId: string): string[] {
  if (!getFolder(tree, folderId)) return [];
  const children = new Map<string, string[]>();
  for (const [id, node] of folderEntries(tree)) {
    if (node.parentFolderId === null) continue;
    const list = children.get(node.parentFolderId);
    if (list) list.push(id);
    else children.set(node.parentFolderId, [id]);
  }
  const out = [folderId];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]!) ?? []));
  return out;
}

// ---- evolve ----

export function evolveTree(tree: Tree, event: FolderEvent): Tree {
  switch (event.type) {
    case 'FolderAdded': {
      const d = event.data;
      return setFolder(tree, d.folderId, { parentFolderId: d.parentFolderId, accessType: d.accessType, folderName: d.folderName });
    }
    case 'FolderRenamed': {
      const node = getFolder(tree, event.data.folderId);
      return node ? setFolder(tree, event.data.folderId, { ...node, folderName: event.data.folderName }) : tree;
    }
    case 'FolderMoved': {
      const node = getFolder(tree, event.data.folderId);
      return node ? setFolder(tree, event.data.folderId, { ...node, parentFolderId: event.data.parentFolderId }) : tree;
    }
    case 'FolderAccessChanged': {
      const node = getFolder(tree, event.data.folderId);
      return node ? setFolder(tree, event.data.folderId, { ...node, accessType: event.data.accessType }) : tree;
    }
    case 'FolderDeleted':
      return removeFolders(tree, event.data.folderIds);
    default:
      return tree;
  }
}

// ---- batch decisions: each item decided against the state the previous items left ----

export interface ItemOutcome {
  success: boolean;
  message: string;
}

export interface NewFolder {
  folderId: string;
  folderName?: string;
  parentFolderId?: string | null;
  accessType?: AccessType;
}

export interface FolderChange {
  folderId: string;
  folderName?: string;
  /** undefined: stays; null or "root": moves to the organization root. */
  parentFolderId?: string | null;
}

export interface Plan {
  events: FolderEvent[];
  outcomes: Map<string, ItemOutcome & Record<string, unknown>>;
}

/** `"root"` and null both name the organization root (semantics §4). */
export const normalizeParent = (p: string | null | undefined): string | null | undefined =>
  p === 'root' ? null : p;

type Step = { events: FolderEvent[]; outcome: ItemOutcome & Record<string, unknown> };

function fold(tree: Tree, items: readonly { folderId: string }[], step: (tree: Tree, item: any, index: number) => Step, echoId = true): Plan {
  const plan: Plan = { events: [], outcomes: new Map() };
  let t = tree;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const { events, outcome: o } = step(t, item, i);
    const outcome = echoId ? { id: item.folderId, ...o } : o;
    for (const e of events) t = evolveTree(t, e);
    plan.events.push(...events);
    // An id listed twice is reported once: by its first occurrence.
    if (!plan.outcomes.has(item.folderId)) plan.outcomes.set(item.folderId, outcome);
  }
  return plan;
}

const fail = (message: string): Step => ({ events: [], outcome: { success: false, message } });

/**
 * Folder depth (semantics §1 Limits): an item that would put a folder deeper than
 * `maxDepth` refuses the WHOLE batch with INVALID_ARGUMENT (it throws: nothing is appended),
 * unlike "unknown parent", which fails its item alone. The limit protects the service, not
 * the batch's own consistency, and a half-applied chain would leave the client to find
 * where it stopped. Decided here, against the tree at the stream's revision, so a
 * concurrent add or move that would deepen the tree is decided again after the revision
 * conflict and refused then.
 */
export function planAddFolders(
  organizationId: string,
  tree: Tree,
  items: readonly NewFolder[],
  now: number,
  maxDepth = DEFAULT_FOLDER_MAX_DEPTH,
): Plan {
  return fold(tree, items, (t, f: NewFolder, i): Step => {
    if (getFolder(t, f.folderId)) return fail('Folder already exists');
    const parent = normalizeParent(f.parentFolderId) ?? null;
    if (parent !== null && !getFolder(t, parent)) return fail(`Parent folder ${JSON.stringify(parent)} does not exist.`);
    if (levelOf(t, parent, maxDepth) + 1 > maxDepth) throw tooDeep(i, f.folderId, maxDepth);
    return {
      events: [{
        type: 'FolderAdded',
        data: {
          organizationId,
          folderId: f.folderId,
          folderName: f.folderName ?? f.folderId,
          parentFolderId: parent,
          accessType: f.accessType ?? null,
          createdAt: now,
        },
      }],
      outcome: { success: true, id: f.folderId, message: 'Folder added.' },
    };
  });
}

/**
 * A move that would put any folder of the moved subtree deeper than `maxDepth` refuses the
 * whole batch, as in planAddFolders. Worked example with maxDepth 100: a folder at level 10
 * whose deepest descendant is 5 levels below it, moved under a parent at level 95, would
 * land at 96 and put that descendant at 101: refused. Under a parent at level 94 it lands
 * at 95, the descendant at 100: it fits. A move that does not lower the folder (new level
 * <= old level) deepens nothing and needs no look at the subtree.
 */
export function planUpdateFolders(
  organizationId: string,
  tree: Tree,
  items: readonly FolderChange[],
  maxDepth = DEFAULT_FOLDER_MAX_DEPTH,
): Plan {
  // Built on the first move that lowers a folder, then kept in step with this batch's moves
  // (an update batch only moves and renames, so the index stays exact).
  let children: ChildIndex | undefined;
  return fold(tree, items, (t, f: FolderChange, i): Step => {
    const node = getFolder(t, f.folderId);
    if (!node) return fail('Folder does not exist.');
    const events: FolderEvent[] = [];
    const parent = normalizeParent(f.parentFolderId);
    if (parent !== undefined && parent !== node.parentFolderId) {
      if (parent !== null && !getFolder(t, parent)) return fail(`Parent folder ${JSON.stringify(parent)} does not exist.`);
      if (parent !== null && isInSubtree(t, f.folderId, parent)) {
        return fail('Moving the folder under itself or one of its subfolders would create a cycle.');
      }
      const newLevel = levelOf(t, parent, maxDepth) + 1;
      if (newLevel > maxDepth) throw tooDeep(i, f.folderId, maxDepth);
      if (newLevel > levelOf(t, f.folderId, maxDepth)) {
        children ??= childIndex(t);
        if (hasDescendantsBelow(children, f.folderId, maxDepth - newLevel)) throw tooDeep(i, f.folderId, maxDepth);
      }
      if (children) {
        if (node.parentFolderId !== null) children.get(node.parentFolderId)?.delete(f.folderId);
        if (parent !== null) {
          const set = children.get(parent);
          if (set) set.add(f.folderId);
          else children.set(parent, new Set([f.folderId]));
        }
      }
      events.push({
        type: 'FolderMoved',
        data: { organizationId, folderId: f.folderId, parentFolderId: parent, previousParentFolderId: node.parentFolderId },
      });
    }
    if (f.folderName !== undefined && f.folderName !== node.folderName) {
      events.push({ type: 'FolderRenamed', data: { organizationId, folderId: f.folderId, folderName: f.folderName } });
    }
    return { events, outcome: { success: true, id: f.folderId, message: 'Folder Updated.' } };
  });
}

/** `accessType` null: inherit from the parent (inheritFromParent: true). */
export function planFolderAccess(organizationId: string, tree: Tree, folderIds: readonly string[], accessType: AccessType | null): Plan {
  const shown = accessType === null ? { accessType: null, inheritFromParent: true } : { accessType };
  return fold(tree, folderIds.map((folderId) => ({ folderId })), (t, { folderId }: { folderId: string }): Step => {
    const node = getFolder(t, folderId);
    if (!node) return { events: [], outcome: { success: false, ...shown, message: 'Folder does not exist.' } };
    const events: FolderEvent[] =
      node.accessType === accessType ? [] : [{ type: 'FolderAccessChanged', data: { organizationId, folderId, accessType } }];
    return { events, outcome: { success: true, ...shown, message: 'Folder access type updated.' } };
  }, false);
}
