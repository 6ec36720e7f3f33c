/**
 * Read model `grants`: one document per (user, resource) grant, keyed so that permission
 * resolution fetches every candidate grant of a user in ONE getMany (queries/permissions.ts).
 * Grants on a removed resource go with it: folder deletion, document deletion, organization
 * deletion.
 */
import type { Doc } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { defineProjection } from '../src/runtime/projection.js';
import type { AccessRole, GrantEvent, ResourceType } from '../commands/grant.js';
import type { OrganizationEvent } from '../commands/organization.js';
import type { DocumentEvent } from '../commands/document.js';
import { apiKeyOf } from './organizations.js';
import { queueCascade } from './cascade-work.js';

export const GRANTS = 'grants';

export interface GrantDoc extends Doc {
  apiKey: string;
  organizationId: string;
  userId: string;
  resourceType: ResourceType;
  resourceId: string;
  accessRole: AccessRole;
  /** Unix seconds; null: permanent. */
  expiresAt: number | null;
  /** The grant's access fields (`"field:value"`, sorted); absent when none. */
  accessFields?: string[];
}

export const grantKey = (apiKey: string, organizationId: string, userId: string, resourceType: ResourceType, resourceId: string) =>
  key(apiKey, organizationId, userId, resourceType, resourceId);

type Ev = GrantEvent | OrganizationEvent | DocumentEvent;

export const grantsProjection = defineProjection<Ev>({
  name: 'grants',
  indexes: [
    { collection: GRANTS, fields: ['apiKey', 'organizationId', 'userId'] },
    { collection: GRANTS, fields: ['apiKey', 'organizationId', 'resourceType', 'resourceId', 'userId'] },
    // A user's grants in every organization (users/data/get and delete).
    { collection: GRANTS, fields: ['apiKey', 'userId'] },
  ],
  handlers: {
    async GrantAdded(e, tx) {
      const d = e.data;
      const doc: GrantDoc = {
        _id: grantKey(apiKeyOf(e), d.organizationId, d.userId, d.resourceType, d.resourceId),
        apiKey: apiKeyOf(e),
        organizationId: d.organizationId,
        userId: d.userId,
        resourceType: d.resourceType,
        resourceId: d.resourceId,
        accessRole: d.accessRole,
        expiresAt: d.expiresAt,
        // The event carries every field the grant holds from now on: the document is replaced.
        ...(d.accessFields?.length ? { accessFields: d.accessFields } : {}),
      };
      await tx.upsert(GRANTS, doc);
    },
    async AccessFieldsRemoved(e, tx) {
      const d = e.data;
      const id = grantKey(apiKeyOf(e), d.organizationId, d.userId, d.resourceType, d.resourceId);
      const doc = await tx.get<GrantDoc>(GRANTS, id);
      if (!doc) return;
      // A set difference: applying the event again changes nothing.
      const gone = new Set(d.accessFields);
      const left = (doc.accessFields ?? []).filter((f) => !gone.has(f));
      if (left.length > 0) await tx.patch(GRANTS, id, { accessFields: left });
      else await tx.patch(GRANTS, id, undefined, ['accessFields']);
    },
    async GrantRevoked(e, tx) {
      const d = e.data;
      await tx.delete(GRANTS, grantKey(apiKeyOf(e), d.organizationId, d.userId, d.resourceType, d.resourceId));
    },
    // The grants go from reads at once, and the cascade revokes each on the write side too
    // (semantics §4: "grants on them go too"), so a folder or document re-created with the
    // same id never finds, extends or is refused by the old one.
    async FolderDeleted(e, tx) {
      const d = e.data;
      for (const resourceId of d.folderIds) {
        const filter = { apiKey: apiKeyOf(e), organizationId: d.organizationId, resourceType: 'folder', resourceId };
        await queueCascade(tx, e, { collection: GRANTS, filter, sort: 'userId', field: 'userId' }, 'resourceGrants', d.organizationId, 'folderDeleted', { resourceType: 'folder', resourceId });
        await tx.deleteMany(GRANTS, filter);
      }
    },
    async DocumentDeleted(e, tx) {
      const d = e.data;
      const filter = { apiKey: apiKeyOf(e), organizationId: d.organizationId, resourceType: 'document', resourceId: d.documentId };
      const reason = d.reason === 'request' || d.reason === 'migrated' ? 'documentDeleted' : d.reason;
      await queueCascade(tx, e, { collection: GRANTS, filter, sort: 'userId', field: 'userId' }, 'resourceGrants', d.organizationId, reason, { resourceType: 'document', resourceId: d.documentId });
      await tx.deleteMany(GRANTS, filter);
    },
    async OrganizationDeleted(e, tx) {
      const organizationId = e.data.organizationId;
      const filter = { apiKey: apiKeyOf(e), organizationId };
      await queueCascade(tx, e, { collection: GRANTS, filter, sort: 'userId', field: 'userId' }, 'grants', organizationId, 'organizationDeleted');
      await tx.deleteMany(GRANTS, filter);
    },
  },
});
