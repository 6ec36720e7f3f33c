/**
 * Workspace aggregate, the service-config part: merge over the stored config, first enable
 * seeds triggers, validation, 410-disabled endpoints, the token-signing secret.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spec } from './support/decider.js';
import { workspaceDecider, type ApiKeySettings, type WorkspaceCommand, type WorkspaceEvent } from '../commands/workspace.js';

const now = 1_700_000_000_000;
const settings = (over: Partial<ApiKeySettings> = {}): ApiKeySettings => ({
  allowedDomains: [],
  useEmailService: false,
  useWebhookService: false,
  useNotificationService: false,
  setDefaultNotificationTriggers: false,
  setDefaultEmailTriggers: false,
  requireAutoOrgUser: false,
  enablePrivateComments: false,
  ...over,
});
const created = (s = settings()): WorkspaceEvent[] => [
  { type: 'WorkspaceCreated', data: { workspaceId: 'w1', name: 'W', ownerEmail: 'o@example.com', ownerName: 'o', authTokenHash: 'h', createdAt: now } },
  { type: 'ApiKeyCreated', data: { workspaceId: 'w1', apiKey: 'k1', apiKeyName: 'k', type: 'testing', ownerEmail: 'o@example.com', persistenceDBRegion: null, realtimeDBRegion: null, settings: s, createdAt: now } },
];
const upd = (data: Partial<Extract<WorkspaceCommand, { type: 'UpdateServiceConfig' }>['data']>): WorkspaceCommand => ({
  type: 'UpdateServiceConfig',
  data: { apiKey: 'k1', service: 'webhook', config: {}, defaultTriggers: ['document', 'folder'], ...data },
  metadata: { now },
});
const updated = (data: Record<string, unknown>): WorkspaceEvent => ({
  type: 'ApiKeyServiceConfigUpdated',
  data: { workspaceId: 'w1', apiKey: 'k1', service: 'webhook', enabled: true, config: {}, triggers: null, disabledEndpoints: [], updatedAt: now, ...data } as never,
});

const S = suite('workspace: service config');

S('first enable merges over the config given at key creation and seeds default triggers', () => {
  spec(workspaceDecider).given(created(settings({ webhookServiceConfig: { authToken: 'tok', rawNotificationUrl: 'https://a.example/raw' } })))
    .when(upd({ enabled: true, config: { processedNotificationUrl: 'https://a.example/p' } }))
    .then([updated({ config: { authToken: 'tok', rawNotificationUrl: 'https://a.example/raw', processedNotificationUrl: 'https://a.example/p' }, triggers: ['document', 'folder'] })]);
});

S('later updates keep triggers; "" removes a field; the placeholder keeps the secret; no change appends nothing', () => {
  const base = [...created(), updated({ config: { authToken: 'tok', rawNotificationUrl: 'https://a.example/raw' }, triggers: ['document'] })];
  spec(workspaceDecider).given(base)
    .when(upd({ config: { authToken: '__redacted__', processedNotificationUrl: 'https://a.example/p', rawNotificationUrl: '' } }))
    .then([updated({ config: { authToken: 'tok', processedNotificationUrl: 'https://a.example/p' }, triggers: ['document'] })]);
  spec(workspaceDecider).given(base).when(upd({ config: { authToken: 'tok' } })).thenNothing();
  spec(workspaceDecider).given(base).when(upd({ triggers: ['agent'] })).then([updated({ config: { authToken: 'tok', rawNotificationUrl: 'https://a.example/raw' }, triggers: ['agent'] })]);
});

S('enabling without a usable config is INVALID_ARGUMENT', () => {
  spec(workspaceDecider).given(created()).when(upd({ enabled: true, config: { authToken: 't' } }))
    .thenFails('INVALID_ARGUMENT', /rawNotificationUrl or processedNotificationUrl/);
  spec(workspaceDecider).given(created()).when(upd({ service: 'email', enabled: true, config: { type: 'sendgrid' } }))
    .thenFails('INVALID_ARGUMENT', /needs the provider's apiKey/);
  spec(workspaceDecider).given(created()).when(upd({ service: 'email', enabled: true, config: {}, defaultTriggers: ['comment.added'] }))
    .then([{ type: 'ApiKeyServiceConfigUpdated', data: { workspaceId: 'w1', apiKey: 'k1', service: 'email', enabled: true, config: {}, triggers: ['comment.added'], disabledEndpoints: [], updatedAt: now } }]);
  spec(workspaceDecider).given(created()).when({ ...upd({}), data: { ...(upd({}).data as object), apiKey: 'nope' } } as WorkspaceCommand)
    .thenFails('NOT_FOUND');
});

S('a disabled endpoint is enabled again by an update that sets its URL', () => {
  const base = [
    ...created(),
    updated({ config: { rawNotificationUrl: 'https://a.example/raw', processedNotificationUrl: 'https://a.example/p' }, triggers: [] }),
  ];
  const disable: WorkspaceCommand = { type: 'DisableWebhookEndpoint', data: { apiKey: 'k1', endpoint: 'raw', reason: '410 Gone' }, metadata: { now } };
  const disabled: WorkspaceEvent = { type: 'WebhookEndpointDisabled', data: { workspaceId: 'w1', apiKey: 'k1', endpoint: 'raw', reason: '410 Gone', disabledAt: now } };
  spec(workspaceDecider).given(base).when(disable).then([disabled]);
  spec(workspaceDecider).given([...base, disabled]).when(disable).thenNothing();
  const { state } = spec(workspaceDecider).given([...base, disabled]);
  assert.equal(state.status === 'active' && state.keys.k1!.services.webhook.disabledEndpoints, ['raw']);
  spec(workspaceDecider).given([...base, disabled]).when(upd({ config: { rawNotificationUrl: 'https://b.example/raw' } }))
    .then([updated({ config: { rawNotificationUrl: 'https://b.example/raw', processedNotificationUrl: 'https://a.example/p' }, triggers: [] })]);
});

S('the token-signing secret is created once', () => {
  const ensure = (secret: string): WorkspaceCommand => ({ type: 'EnsureTokenSigningSecret', data: { apiKey: 'k1', secret }, metadata: { now } });
  const made: WorkspaceEvent = { type: 'ApiKeyTokenSigningSecretCreated', data: { workspaceId: 'w1', apiKey: 'k1', secret: 's1', createdAt: now } };
  spec(workspaceDecider).given(created()).when(ensure('s1')).then([made]);
  spec(workspaceDecider).given([...created(), made]).when(ensure('s2')).thenNothing();
  const { state } = spec(workspaceDecider).given([...created(), made, { ...made, data: { ...made.data, secret: 's2' } } as WorkspaceEvent]);
  assert.is(state.status === 'active' && state.keys.k1!.tokenSigningSecret, 's1');
});

S.run();
