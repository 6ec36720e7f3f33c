import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { API_KEYS, WORKSPACES, workspacesProjection } from '../projections/workspaces.js';
import { redactForAudit } from '../projections/audit.js';
import { projectionSpec, project, collection, type GivenEvent } from './support/projection.js';

const { given } = projectionSpec(workspacesProjection);
const m = {};
const settings = {
  allowedDomains: ['a.com'],
  useEmailService: true,
  useWebhookService: true,
  useNotificationService: false,
  setDefaultNotificationTriggers: false,
  setDefaultEmailTriggers: false,
  requireAutoOrgUser: false,
  enablePrivateComments: false,
  emailServiceConfig: { type: 'default', apiKey: 'SECRET-EMAIL', fromEmail: 'x@y.z' },
  webhookServiceConfig: { authToken: 'SECRET-HOOK', rawNotificationUrl: 'https://h.example/raw' },
};
const events: GivenEvent[] = [
  { type: 'WorkspaceCreated', data: { workspaceId: 'w1', name: 'W', ownerEmail: 'o@e.com', ownerName: 'o', authTokenHash: 'wh', createdAt: 1 }, metadata: m },
  { type: 'ApiKeyCreated', data: { workspaceId: 'w1', apiKey: 'k1', apiKeyName: 'K', type: 'testing', ownerEmail: 'o@e.com', persistenceDBRegion: null, realtimeDBRegion: 'europe', settings, createdAt: 2 }, metadata: m },
  { type: 'ApiKeyAuthTokenCreated', data: { apiKey: 'k1', tokenId: 't1', tokenHash: 'h1', createdAt: 3 }, metadata: m },
  { type: 'ApiKeyAuthTokenCreated', data: { apiKey: 'k1', tokenId: 't2', tokenHash: 'h2', createdAt: 4 }, metadata: m },
  { type: 'ApiKeyAuthTokenRevoked', data: { apiKey: 'k1', tokenId: 't1', revokedAt: 5 }, metadata: m },
  { type: 'WorkspaceSettingsChanged', data: { workspaceId: 'w1', plan: 'paid', maxProductionKeys: 2 }, metadata: m },
];

test('workspaces and api_keys read models', async () => {
  await given(events).then({
    [WORKSPACES]: [
      { _id: 'w1', name: 'W', ownerEmail: 'o@e.com', ownerName: 'o', authTokenHash: 'wh', plan: 'paid', productionKeysEnabled: false, maxProductionKeys: 2, createdAt: 1 },
    ],
    [API_KEYS]: [
      {
        _id: 'k1',
        workspaceId: 'w1',
        apiKeyName: 'K',
        type: 'testing',
        ownerEmail: 'o@e.com',
        persistenceDBRegion: null,
        realtimeDBRegion: 'europe',
        settings: {
          ...settings,
          emailServiceConfig: { type: 'default', apiKey: '__redacted__', fromEmail: 'x@y.z' },
          webhookServiceConfig: { authToken: '__redacted__', rawNotificationUrl: 'https://h.example/raw' },
        },
        tokens: [{ tokenId: 't2', hash: 'h2', createdAt: 4 }],
        createdAt: 2,
      },
    ],
  });
});

test('no secret of a service config reaches the read model', async () => {
  const store = await project(workspacesProjection, events);
  const dump = JSON.stringify(await collection(store, API_KEYS));
  assert.not.match(dump, /SECRET-/);
  await store.close();
});

test('replaying every event twice changes nothing', async () => {
  await given(events).replayTwice([WORKSPACES, API_KEYS]);
});

test('apikey/update and apikeyconfig/update: the name and settings read back; of an AI model key only its mask', async () => {
  const more: GivenEvent[] = [
    ...events,
    { type: 'ApiKeyRenamed', data: { workspaceId: 'w1', apiKey: 'k1', apiKeyName: 'Renamed', renamedAt: 6 }, metadata: m },
    { type: 'ApiKeyConfigUpdated', data: { workspaceId: 'w1', apiKey: 'k1', requireJwtToken: true, aiModelKeys: { openai: { secret: 'SECRET-AI-1', displayText: 'sk-p...XyZ' } }, updatedAt: 7 }, metadata: m },
    { type: 'ApiKeyConfigUpdated', data: { workspaceId: 'w1', apiKey: 'k1', defaultDocumentAccessType: 'restricted', aiModelKeys: { gemini: { secret: 'SECRET-AI-2', displayText: 'AIza...abc' } }, updatedAt: 8 }, metadata: m },
    // A key gone before its events are projected (a rebuild after deletion) is skipped.
    { type: 'ApiKeyConfigUpdated', data: { workspaceId: 'w1', apiKey: 'gone', requireJwtToken: true, updatedAt: 9 }, metadata: m },
  ];
  const store = await project(workspacesProjection, more);
  const [key] = (await collection(store, API_KEYS)) as any[];
  assert.is(key.apiKeyName, 'Renamed');
  assert.is(key.settings.requireJwtToken, true);
  assert.is(key.settings.defaultDocumentAccessType, 'restricted');
  assert.equal(key.settings.aiModelsConfig, { openai: { displayText: 'sk-p...XyZ' }, gemini: { displayText: 'AIza...abc' } });
  assert.is((await collection(store, API_KEYS)).length, 1);
  assert.not.match(JSON.stringify(await collection(store, API_KEYS)), /SECRET-/);
  await store.close();
});

test('an AI model key in an audit entry or webhook payload: only its mask', () => {
  const data = { workspaceId: 'w1', apiKey: 'k1', aiModelKeys: { openai: { secret: 'enc:v1:SECRET-AI', displayText: 'sk-p...XyZ' } }, updatedAt: 1 };
  const shown = redactForAudit('ApiKeyConfigUpdated', data) as any;
  assert.equal(shown.aiModelKeys.openai, { secret: '__redacted__', displayText: 'sk-p...XyZ' });
});

test.run();
