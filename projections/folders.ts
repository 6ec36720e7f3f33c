/**
 * Read model `folders`: one document per live folder, with its parent, its `ancestors`
 * (root first, parent last), its own access type (null: inherits) and its effective access
 * type (semantics §3 rules 1-2, 4).
 *
 * A move or an access change rewrites the folder and then its subtree, level by level
 * through the (apiKey, organizationId, parentFolderId) index; a child whose ancestors and
 * effective type come out unchanged stops the walk below it. Documents are never touched:
 * their effective type is read through their folder (queries/permissions.ts).
 */
import type { RecordedEvent } from '../src/ports/event-store.js';
import type { Doc, ReadTx } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { defineProjection } from '../src/runtime/projection.js';
import { ORGANIZATION_DEFAULT_ACCESS, type AccessType } from '../commands/folder-tree.js';
import type { OrganizationEvent } from '../commands/organization.js';
import { apiKeyOf } from './organizations.js';

export const FOLDERS = 'folders';

export interface FolderDoc extends Doc {
  apiKey: string;
  organizationId: string;
  folderId: string;
  folderName: string;
  parentFolderId: string | null;
  /** Root first, parent last. */
  ancestors: string[];
  accessType: AccessType | null;
  effectiveAccessType: AccessType;
  seq: string;
  createdAt: number;
  /**
   * When the folder last changed (ms): renamed, moved, its access changed, or its place
   * (ancestors, effective type) changed with a move or access change above it. The hosted
   * API's `lastUpdated`. Absent on folders projected before it existed: reads use createdAt.
   */
  lastUpdated?: number;
}

export const folderKey = (apiKey: string, organizationId: string, folderId: string) => key(apiKey, organizationId, folderId);


/** Where a folder sits under `parent` (null: the root). */
const placement = (own: AccessType | null, parent: FolderDoc | null) => ({
  ancestors: parent ? [...parent.ancestors, parent.folderId] : [],
  effectiveAccessType: own ?? parent?.effectiveAccessType ?? ORGANIZATION_DEFAULT_ACCESS,
});

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Recomputes `folder` under its parent, then every descendant whose placement changed;
 * each folder it rewrites takes `at` as its lastUpdated.
 */
async function replace(tx: ReadTx, folder: FolderDoc, at: number) {
  const parent = folder.parentFolderId === null
    ? null
    : await tx.get<FolderDoc>(FOLDERS, folderKey(folder.apiKey, folder.organizationId, folder.parentFolderId));
  const top = { ...folder, ...placement(folder.accessType, parent), lastUpdated: at };
  await tx.upsert(FOLDERS, top);
  let level: FolderDoc[] = [top];
  while (level.length > 0) {
    const next: FolderDoc[] = [];
    for (const p of level) {
      const children = await tx.find<FolderDoc>(FOLDERS, {
        apiKey: p.apiKey,
        organizationId: p.organizationId,
        parentFolderId: p.folderId,
      });
      for (const c of children) {
        const placed = placement(c.accessType, p);
        if (placed.effectiveAccessType === c.effectiveAccessType && sameList(placed.ancestors, c.ancestors)) continue;
        const updated = { ...c, ...placed, lastUpdated: at };
        await tx.upsert(FOLDERS, updated);
        next.push(updated);
      }
    }
    level = next;
  }
}

async function existing(tx: ReadTx, e: RecordedEvent, organizationId: string, folderId: string) {
  return tx.get<FolderDoc>(FOLDERS, folderKey(apiKeyOf(e), organizationId, folderId));
}

export const foldersProjection = defineProjection<OrganizationEvent>({
  name: 'folders',
  indexes: [
    // With seq: folders/get reads a folder's children in creation order, at most as many as it can answer.
    { collection: FOLDERS, fields: ['apiKey', 'organizationId', 'parentFolderId', 'seq'] },
    { collection: FOLDERS, fields: ['apiKey', 'organizationId', 'seq'] },
  ],
  handlers: {
    async FolderAdded(e, tx) {
      const d = e.data;
      await replace(tx, {
        _id: folderKey(apiKeyOf(e), d.organizationId, d.folderId),
        apiKey: apiKeyOf(e),
        organizationId: d.organizationId,
        folderId: d.folderId,
        folderName: d.folderName,
        parentFolderId: d.parentFolderId,
        ancestors: [],
        accessType: d.accessType,
        effectiveAccessType: ORGANIZATION_DEFAULT_ACCESS,
        seq: e.position,
        createdAt: d.createdAt,
      }, d.createdAt);
    },
    // The time of a change is the event's own (metadata.time): the same on every replay.
    async FolderRenamed(e, tx) {
      const d = e.data;
      await tx.patch(FOLDERS, folderKey(apiKeyOf(e), d.organizationId, d.folderId), { folderName: d.folderName, lastUpdated: e.metadata.time });
    },
    async FolderMoved(e, tx) {
      const d = e.data;
      const f = await existing(tx, e, d.organizationId, d.folderId);
      if (f) await replace(tx, { ...f, parentFolderId: d.parentFolderId }, e.metadata.time);
    },
    async FolderAccessChanged(e, tx) {
      const d = e.data;
      const f = await existing(tx, e, d.organizationId, d.folderId);
      if (f) await replace(tx, { ...f, accessType: d.accessType }, e.metadata.time);
    },
    async FolderDeleted(e, tx) {
      const d = e.data;
      for (const id of d.folderIds) await tx.delete(FOLDERS, folderKey(apiKeyOf(e), d.organizationId, id));
    },
    async OrganizationDeleted(e, tx) {
      await tx.deleteMany(FOLDERS, { apiKey: apiKeyOf(e), organizationId: e.data.organizationId });
    },
  },
});
