/** The advanced webhooks read models (projections/advanced-webhooks.ts): given events, then documents; never a secret; replay-safe. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADVANCED_WEBHOOK_ENDPOINTS, ADVANCED_WEBHOOK_SETTINGS, advancedWebhooksProjection, endpointDocId } from '../projections/advanced-webhooks.js';
import { projectionSpec, project, collection, type GivenEvent } from './support/projection.js';

const { given } = projectionSpec(advancedWebhooksProjection);
const fields = { url: 'https://e.example/h', description: null, filterTypes: ['DocumentAdded'], channels: null, disabled: false, rateLimit: null, uid: 'u1', metadata: { a: 'b' } };
const events: GivenEvent[] = [
  { type: 'AdvancedWebhookSettingsUpdated', data: { apiKey: 'k1', isEnabled: true, encryptData: false, encodeData: true, publicKey: '', enableDataProtection: false, updatedAt: 1 } },
  { type: 'AdvancedWebhookEndpointCreated', data: { apiKey: 'k1', endpointId: 'ep_1', ...fields, secret: 'SECRET-1', createdAt: 2 } },
  { type: 'AdvancedWebhookEndpointCreated', data: { apiKey: 'k1', endpointId: 'ep_2', ...fields, secret: 'SECRET-2', createdAt: 3 } },
  { type: 'AdvancedWebhookEndpointUpdated', data: { apiKey: 'k1', endpointId: 'ep_1', description: 'd', updatedAt: 4 } },
  { type: 'AdvancedWebhookSecretRotated', data: { apiKey: 'k1', endpointId: 'ep_1', secret: 'SECRET-3', previousValidUntil: 9, dropped: [], rotatedAt: 5 } },
  { type: 'AdvancedWebhookEndpointDisabled', data: { apiKey: 'k1', endpointId: 'ep_1', reason: 'gone', disabledAt: 6 } },
  { type: 'AdvancedWebhookEndpointDeleted', data: { apiKey: 'k1', endpointId: 'ep_2', deletedAt: 7 } },
  { type: 'AdvancedWebhookSettingsUpdated', data: { apiKey: 'k2', isEnabled: true, encryptData: false, encodeData: false, publicKey: '', enableDataProtection: false, updatedAt: 8 } },
  { type: 'AdvancedWebhookEndpointCreated', data: { apiKey: 'k2', endpointId: 'ep_9', ...fields, secret: 'SECRET-9', createdAt: 9 } },
  { type: 'ApiKeyDeleted', data: { workspaceId: 'w', apiKey: 'k2', deletedAt: 10 } },
];

test('settings and endpoints as listed; a deleted key takes its own with it', async () => {
  await given(events).then({
    [ADVANCED_WEBHOOK_SETTINGS]: [{ _id: 'k1', isEnabled: true, encryptData: false, encodeData: true, publicKey: '', enableDataProtection: false, updatedAt: 1 }],
    [ADVANCED_WEBHOOK_ENDPOINTS]: [
      { _id: endpointDocId('k1', 'ep_1'), apiKey: 'k1', endpointId: 'ep_1', ...fields, description: 'd', disabled: true, disabledReason: 'gone', createdAt: 2, updatedAt: 6 },
    ],
  });
});

test('no signing secret reaches the read model; replaying changes nothing', async () => {
  const store = await project(advancedWebhooksProjection, events);
  assert.not.match(JSON.stringify(await collection(store, ADVANCED_WEBHOOK_ENDPOINTS)), /SECRET-/);
  await store.close();
  await given(events).replayTwice([ADVANCED_WEBHOOK_SETTINGS, ADVANCED_WEBHOOK_ENDPOINTS]);
});

test.run();
