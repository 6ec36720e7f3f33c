/**
 * What the deletion cascade (cascade.ts) visits for a folder or an organization, collected
 * from the read models BEFORE the deletion is appended (afterwards the projections have
 * already dropped it), and the per-item commands it runs.
 */
import { documentDecider, type DeletionReason } from '../../../commands/document.js';
import { grantsDecider } from '../../../commands/grant.js';
import { groupDecider } from '../../../commands/group.js';
import type { EventMetadata } from '../../ports/event-store.js';
import type { Doc, Filter, ReadView } from '../../ports/read-store.js';
import type { Services } from '../../services.js';
import { DOCUMENTS, type DocumentDoc } from '../../../projections/documents.js';
import { GRANTS, type GrantDoc } from '../../../projections/grants.js';
import { USER_GROUPS, type GroupDoc } from '../../../projections/groups.js';
import { inSlices } from './cascade.js';
import { documentStream, grantsStream, groupStream } from './domain.js';

/** Every document matching `filter`, walking an index in pages. */
async function all<T extends Doc>(read: ReadView, collection: string, filter: Filter, sort: string): Promise<T[]> {
  const out: T[] = [];
  for (let after: { value: string; id: string } | undefined; ; ) {
    const page = await read.find<T>(collection, filter, { sort, after, limit: 1000 });
    out.push(...page);
    const last = page[page.length - 1];
    if (page.length < 1000 || !last) return out;
    after = { value: String(last[sort]), id: last._id };
  }
}

export interface Contents {
  documentIds: string[];
  userIds: string[];
  groupIds: string[];
}

export async function contentsOfOrganization(read: ReadView, apiKey: string, organizationId: string): Promise<Contents> {
  const docs = await all<DocumentDoc>(read, DOCUMENTS, { apiKey, organizationId }, 'seq');
  const grants = await all<GrantDoc>(read, GRANTS, { apiKey, organizationId }, 'userId');
  const groups = await all<GroupDoc>(read, USER_GROUPS, { apiKey, organizationId }, 'seq');
  return {
    documentIds: docs.map((d) => d.documentId),
    userIds: [...new Set(grants.map((g) => g.userId))],
    groupIds: groups.map((g) => g.groupId),
  };
}

export async function documentsInFolders(read: ReadView, apiKey: string, organizationId: string, folderIds: readonly string[]) {
  const out: string[] = [];
  for (const folderId of folderIds) {
    out.push(...(await all<DocumentDoc>(read, DOCUMENTS, { apiKey, organizationId, folderId }, 'seq')).map((d) => d.documentId));
  }
  return out;
}

export async function deleteDocuments(
  services: Services,
  metadata: EventMetadata,
  apiKey: string,
  organizationId: string,
  documentIds: readonly string[],
  reason: DeletionReason,
) {
  await inSlices(documentIds, 200, (documentId) =>
    services.commands.handle(documentDecider, documentStream(apiKey, organizationId, documentId), {
      type: 'DeleteDocument',
      data: { organizationId, documentId, reason },
      metadata: { now: metadata.time },
    }, metadata),
  );
}

export async function runOrganizationCascade(services: Services, metadata: EventMetadata, apiKey: string, organizationId: string, c: Contents) {
  await deleteDocuments(services, metadata, apiKey, organizationId, c.documentIds, 'organizationDeleted');
  await inSlices(c.userIds, 200, (userId) =>
    services.commands.handle(grantsDecider, grantsStream(apiKey, organizationId, userId), {
      type: 'RevokeAll',
      data: { organizationId, userId },
      metadata: { now: metadata.time },
    }, metadata),
  );
  await inSlices(c.groupIds, 200, (groupId) =>
    services.commands.handle(groupDecider, groupStream(apiKey, organizationId, groupId), {
      type: 'DeleteGroup',
      data: { organizationId, groupId },
      metadata: { now: metadata.time },
    }, metadata),
  );
}
