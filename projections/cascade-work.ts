/**
 * The deletion cascade's outbox. A folder or organization deletion is one event; the
 * projections drop everything under it from reads at once, and in the same transaction
 * (so atomically with their checkpoint) they queue one work item per document, user's
 * grants and group that the deletion took with it. The cascade worker (src/jobs/cascade.ts)
 * turns each item into its own command (DocumentDeleted, GrantRevoked, UserGroupDeleted
 * events, so the audit trail shows every removal) and then deletes the item.
 *
 * Durable by construction: a crash before the worker finishes leaves the items queued, and
 * every command is idempotent (deleting what is already deleted appends nothing), so
 * running an item twice is harmless.
 *
 * Example: folders/delete of F (subfolders G, H; documents d1 in F, d2 in H) appends
 * FolderDeleted{folderIds:[F,G,H]}; the documents projection queues d1 and d2 and drops
 * them; the worker then appends DocumentDeleted for d1 and d2 (reason folderDeleted).
 */
import type { RecordedEvent } from '../src/ports/event-store.js';
import type { Doc, Filter, ReadTx } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { apiKeyOf } from './organizations.js';

export const CASCADE_WORK = 'cascade_work';

/**
 * `grants`: every grant of one user in the organization (RevokeAll); `resourceGrants`: one
 * user's grant on one deleted folder or document (`resource`), so a folder or document
 * re-created with the same id never finds the old grant on the write side;
 * `resourceGroupGrants`: the same for one group's grant (targetId is the groupId).
 */
export type WorkKind = 'document' | 'grants' | 'resourceGrants' | 'resourceGroupGrants' | 'group';

export interface WorkItem extends Doc {
  kind: WorkKind;
  apiKey: string;
  organizationId: string;
  /** documentId, userId or groupId. */
  targetId: string;
  reason: 'folderDeleted' | 'organizationDeleted' | 'documentDeleted';
  /** `resourceGrants`, `resourceGroupGrants` only: the deleted resource whose grant goes. */
  resource?: { resourceType: 'folder' | 'document'; resourceId: string };
  causationId: string;
  requestId: string;
  /** Log position of the deletion: items are worked in this order. */
  seq: string;
}

export const cascadeWorkIndexes = [{ collection: CASCADE_WORK, fields: ['seq'] }];

/**
 * Queues one item per distinct `field` value of the documents in `collection` that match
 * `filter` (read in pages of 1000 through an index the caller's projection declares).
 */
export async function queueCascade(
  tx: ReadTx,
  e: RecordedEvent,
  source: { collection: string; filter: Filter; sort: string; field: string },
  kind: WorkKind,
  organizationId: string,
  reason: WorkItem['reason'],
  resource?: WorkItem['resource'],
): Promise<void> {
  const apiKey = apiKeyOf(e);
  const seen = new Set<string>();
  for (let after: { value: string; id: string } | undefined; ; ) {
    const page = await tx.find(source.collection, source.filter, { sort: source.sort, after, limit: 1000 });
    for (const d of page) {
      const targetId = String(d[source.field]);
      if (seen.has(targetId)) continue;
      seen.add(targetId);
      const item: WorkItem = {
        _id: resource
          ? key(apiKey, kind, organizationId, targetId, resource.resourceType, resource.resourceId, e.id)
          : key(apiKey, kind, organizationId, targetId, e.id),
        kind,
        apiKey,
        organizationId,
        targetId,
        reason,
        ...(resource ? { resource } : {}),
        causationId: e.id,
        requestId: e.metadata.requestId,
        seq: e.position,
      };
      await tx.upsert(CASCADE_WORK, item);
    }
    const last = page[page.length - 1];
    if (page.length < 1000 || !last) return;
    after = { value: String(last[source.sort]), id: last._id };
  }
}
