/**
 * Read model `organizations`: one document per organization of an API key, in creation
 * order (`seq`, the log position of its creation), with its name and disabled flag.
 */
import type { RecordedEvent } from '../src/ports/event-store.js';
import type { Doc } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { defineProjection } from '../src/runtime/projection.js';
import type { OrganizationEvent } from '../commands/organization.js';

export const ORGANIZATIONS = 'organizations';

export interface OrganizationDoc extends Doc {
  apiKey: string;
  organizationId: string;
  organizationName: string;
  disabled: boolean;
  seq: string;
  createdAt: number;
}

export const organizationKey = (apiKey: string, organizationId: string) => key(apiKey, organizationId);

export const apiKeyOf = (e: RecordedEvent) => e.metadata.apiKey ?? '';

export const organizationsProjection = defineProjection<OrganizationEvent>({
  name: 'organizations',
  indexes: [{ collection: ORGANIZATIONS, fields: ['apiKey', 'seq'] }],
  handlers: {
    async OrganizationCreated(e, tx) {
      const d = e.data;
      const doc: OrganizationDoc = {
        _id: organizationKey(apiKeyOf(e), d.organizationId),
        apiKey: apiKeyOf(e),
        organizationId: d.organizationId,
        organizationName: d.organizationName,
        disabled: false,
        seq: e.position,
        createdAt: d.createdAt,
      };
      await tx.upsert(ORGANIZATIONS, doc);
    },
    async OrganizationRenamed(e, tx) {
      const d = e.data;
      await tx.patch(ORGANIZATIONS, organizationKey(apiKeyOf(e), d.organizationId), { organizationName: d.organizationName });
    },
    async OrganizationDisabledStateChanged(e, tx) {
      const d = e.data;
      await tx.patch(ORGANIZATIONS, organizationKey(apiKeyOf(e), d.organizationId), { disabled: d.disabled });
    },
    async OrganizationDeleted(e, tx) {
      await tx.delete(ORGANIZATIONS, organizationKey(apiKeyOf(e), e.data.organizationId));
    },
  },
});
