/**
 * Read model `group_grants`: one document per (group, resource) grant (semantics §3 rule 7,
 * commands/group.ts), keyed like `grants` with the groupId where the userId is, so that
 * permission resolution fetches the grants of a user's groups on the resources of a query in
 * one getMany (queries/group-grants.ts). Two indexes:
 * - (apiKey, organizationId, groupId): every grant of one group (at most
 *   MAX_GRANTS_PER_GROUP), for resolution over many resources and for the group's deletion;
 * - (apiKey, organizationId, resourceType, resourceId, groupId): the groups granted on one
 *   resource, in groupId order ("who can open this document"; the deletion cascade).
 *
 * Group grants go with their group (UserGroupDeleted), their resource (FolderDeleted,
 * DocumentDeleted: the cascade revokes each on the write side too, so a folder re-created
 * with the same id never finds the old grant) and their organization.
 */
import type { Doc } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { defineProjection } from '../src/runtime/projection.js';
import type { AccessRole, ResourceType } from '../commands/grant.js';
import type { GroupEvent } from '../commands/group.js';
import type { OrganizationEvent } from '../commands/organization.js';
import type { DocumentEvent } from '../commands/document.js';
import { apiKeyOf } from './organizations.js';
import { queueCascade } from './cascade-work.js';

export const GROUP_GRANTS = 'group_grants';

export interface GroupGrantDoc extends Doc {
  apiKey: string;
  organizationId: string;
  groupId: string;
  resourceType: ResourceType;
  resourceId: string;
  accessRole: AccessRole;
  /** Unix seconds; null: permanent. */
  expiresAt: number | null;
}

export const groupGrantKey = (apiKey: string, organizationId: string, groupId: string, resourceType: ResourceType, resourceId: string) =>
  key(apiKey, organizationId, groupId, resourceType, resourceId);

type Ev = GroupEvent | OrganizationEvent | DocumentEvent;

export const groupGrantsProjection = defineProjection<Ev>({
  name: 'groupGrants',
  indexes: [
    { collection: GROUP_GRANTS, fields: ['apiKey', 'organizationId', 'groupId'] },
    { collection: GROUP_GRANTS, fields: ['apiKey', 'organizationId', 'resourceType', 'resourceId', 'groupId'] },
  ],
  handlers: {
    async GroupAccessGranted(e, tx) {
      const d = e.data;
      const doc: GroupGrantDoc = {
        _id: groupGrantKey(apiKeyOf(e), d.organizationId, d.groupId, d.resourceType, d.resourceId),
        apiKey: apiKeyOf(e),
        organizationId: d.organizationId,
        groupId: d.groupId,
        resourceType: d.resourceType,
        resourceId: d.resourceId,
        accessRole: d.accessRole,
        expiresAt: d.expiresAt,
      };
      await tx.upsert(GROUP_GRANTS, doc);
    },
    async GroupAccessRevoked(e, tx) {
      const d = e.data;
      await tx.delete(GROUP_GRANTS, groupGrantKey(apiKeyOf(e), d.organizationId, d.groupId, d.resourceType, d.resourceId));
    },
    // The group's state forgets its grants in the same event (commands/group.ts): nothing to
    // cascade.
    async UserGroupDeleted(e, tx) {
      const d = e.data;
      await tx.deleteMany(GROUP_GRANTS, { apiKey: apiKeyOf(e), organizationId: d.organizationId, groupId: d.groupId });
    },
    async FolderDeleted(e, tx) {
      const d = e.data;
      for (const resourceId of d.folderIds) {
        const filter = { apiKey: apiKeyOf(e), organizationId: d.organizationId, resourceType: 'folder', resourceId };
        await queueCascade(tx, e, { collection: GROUP_GRANTS, filter, sort: 'groupId', field: 'groupId' }, 'resourceGroupGrants', d.organizationId, 'folderDeleted', { resourceType: 'folder', resourceId });
        await tx.deleteMany(GROUP_GRANTS, filter);
      }
    },
    async DocumentDeleted(e, tx) {
      const d = e.data;
      const filter = { apiKey: apiKeyOf(e), organizationId: d.organizationId, resourceType: 'document', resourceId: d.documentId };
      const reason = d.reason === 'request' || d.reason === 'migrated' ? 'documentDeleted' : d.reason;
      await queueCascade(tx, e, { collection: GROUP_GRANTS, filter, sort: 'groupId', field: 'groupId' }, 'resourceGroupGrants', d.organizationId, reason, { resourceType: 'document', resourceId: d.documentId });
      await tx.deleteMany(GROUP_GRANTS, filter);
    },
    // The groups projection queues each group's deletion (projections/groups.ts), which
    // clears its grants on the write side.
    async OrganizationDeleted(e, tx) {
      const organizationId = e.data.organizationId;
      await tx.deleteMany(GROUP_GRANTS, { apiKey: apiKeyOf(e), organizationId });
    },
  },
});
