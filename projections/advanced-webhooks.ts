/**
 * Read models of advanced webhooks (commands/advanced-webhooks.ts), per API key:
 * - `advanced_webhook_settings`: the key's settings once first enabled (`_id` the key);
 * - `advanced_webhook_endpoints`: one document per endpoint, as endpoints/get lists it.
 * Signing secrets never reach a read model: secret/get opens the sealed one from the write
 * side. A deleted API key (`ApiKeyDeleted`, workspace stream) takes both with it.
 */
import type { Doc } from '../src/ports/read-store.js';
import { defineProjection } from '../src/runtime/projection.js';
import { key } from '../src/shared/ids.js';
import type { AdvancedWebhookEvent, AdvancedWebhookSettings, EndpointFields } from '../commands/advanced-webhooks.js';
import type { WorkspaceEvent } from '../commands/workspace.js';

export const ADVANCED_WEBHOOK_SETTINGS = 'advanced_webhook_settings';
export const ADVANCED_WEBHOOK_ENDPOINTS = 'advanced_webhook_endpoints';

export interface AdvancedWebhookSettingsDoc extends Doc, AdvancedWebhookSettings {
  updatedAt: number;
}

export interface AdvancedWebhookEndpointDoc extends Doc, EndpointFields {
  apiKey: string;
  endpointId: string;
  /** Why the deliverer disabled it (410 Gone, failing for days), while that holds. */
  disabledReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export const endpointDocId = (apiKey: string, endpointId: string) => key(apiKey, endpointId);

type Ev = AdvancedWebhookEvent | Extract<WorkspaceEvent, { type: 'ApiKeyDeleted' }>;

export const advancedWebhooksProjection = defineProjection<Ev>({
  name: 'advanced-webhooks',
  indexes: [{ collection: ADVANCED_WEBHOOK_ENDPOINTS, fields: ['apiKey', 'createdAt'] }],
  handlers: {
    async ApiKeyDeleted(e, tx) {
      await tx.deleteMany(ADVANCED_WEBHOOK_ENDPOINTS, { apiKey: e.data.apiKey });
      await tx.delete(ADVANCED_WEBHOOK_SETTINGS, e.data.apiKey);
    },
    async AdvancedWebhookSettingsUpdated(e, tx) {
      const { apiKey, ...settings } = e.data;
      await tx.upsert(ADVANCED_WEBHOOK_SETTINGS, { _id: apiKey, ...settings });
    },
    async AdvancedWebhookEndpointCreated(e, tx) {
      const { secret: _s, createdAt, ...fields } = e.data;
      const doc: AdvancedWebhookEndpointDoc = { _id: endpointDocId(fields.apiKey, fields.endpointId), ...fields, disabledReason: null, createdAt, updatedAt: createdAt };
      await tx.upsert(ADVANCED_WEBHOOK_ENDPOINTS, doc);
    },
    async AdvancedWebhookEndpointUpdated(e, tx) {
      const { apiKey, endpointId, ...change } = e.data;
      // A client's `disabled` (either way) ends a disabling by the deliverer.
      await tx.patch(ADVANCED_WEBHOOK_ENDPOINTS, endpointDocId(apiKey, endpointId), { ...change, ...(change.disabled !== undefined ? { disabledReason: null } : {}) });
    },
    async AdvancedWebhookSecretRotated(e, tx) {
      await tx.patch(ADVANCED_WEBHOOK_ENDPOINTS, endpointDocId(e.data.apiKey, e.data.endpointId), { updatedAt: e.data.rotatedAt });
    },
    async AdvancedWebhookEndpointDisabled(e, tx) {
      const { apiKey, endpointId, reason, disabledAt } = e.data;
      await tx.patch(ADVANCED_WEBHOOK_ENDPOINTS, endpointDocId(apiKey, endpointId), { disabled: true, disabledReason: reason, updatedAt: disabledAt });
    },
    async AdvancedWebhookEndpointDeleted(e, tx) {
      await tx.delete(ADVANCED_WEBHOOK_ENDPOINTS, endpointDocId(e.data.apiKey, e.data.endpointId));
    },
  },
});
