/**
 * Workspace aggregate, the service-config part: merge over the stored config, first enable
 * seeds triggers, validation, 410-disabled endpoints, the token-signing secret.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spec } from './support/decider.js';
import { defaultSettings } from '../src/usecases/workspace.js';
import { workspaceDecider, type ApiKeySettings, type WorkspaceCommand, type WorkspaceEvent } from '../commands/workspace.js';

const now = 1_700_000_000_000;
const settings = (over: Partial<ApiKeySettings> = {}): ApiKeySettings => ({ ...defaultSettings(), ...over });
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

S('the token-signing key is created once (ES256); an HS256 key is replaced by an ES256 one; an old event without kid is the legacy key', () => {
  const pub = { kty: 'EC' as const, crv: 'P-256' as const, x: 'x', y: 'y' };
  const ensure = (kid: string, secret: string, at = now): WorkspaceCommand => ({ type: 'EnsureTokenSigningSecret', data: { apiKey: 'k1', kid, secret, publicKey: pub }, metadata: { now: at } });
  const made: WorkspaceEvent = { type: 'ApiKeyTokenSigningSecretCreated', data: { workspaceId: 'w1', apiKey: 'k1', kid: 'kA', secret: 's1', alg: 'ES256', publicKey: pub, createdAt: now } };
  spec(workspaceDecider).given(created()).when(ensure('kA', 's1')).then([made]);
  spec(workspaceDecider).given([...created(), made]).when(ensure('kB', 's2')).thenNothing();
  spec(workspaceDecider).given(created()).when({ ...ensure('kA', 's1'), data: { ...ensure('kA', 's1').data, apiKey: 'nope' } } as WorkspaceCommand).thenFails('NOT_FOUND');
  const { state } = spec(workspaceDecider).given([...created(), made, { ...made, data: { ...made.data, kid: 'kB', secret: 's2' } } as WorkspaceEvent]);
  assert.equal(state.status === 'active' && state.keys.k1!.signingKeys, [{ kid: 'kA', secret: 's1', alg: 'ES256', publicKey: pub, createdAt: now, retiredAt: null }]);
  // Logged before key ids: no kid, a clear secret, HS256 (no alg).
  const legacy = { type: 'ApiKeyTokenSigningSecretCreated', data: { workspaceId: 'w1', apiKey: 'k1', secret: 'clear', createdAt: now } } as WorkspaceEvent;
  const old = spec(workspaceDecider).given([...created(), legacy]).state;
  assert.equal(old.status === 'active' && old.keys.k1!.signingKeys, [{ kid: 'k0', secret: 'clear', createdAt: now, retiredAt: null }]);
  // An HS256 current key: the next token needs an ES256 one, which takes over as a rotation
  // that keeps the HS256 key for its tokens; once ES256 signs, ensuring again does nothing.
  const upgraded: WorkspaceEvent = {
    type: 'ApiKeyTokenSigningKeyRotated',
    data: { workspaceId: 'w1', apiKey: 'k1', kid: 'kB', secret: 's2', alg: 'ES256', publicKey: pub, revokedKids: [], rotatedAt: now + 1 },
  };
  spec(workspaceDecider).given([...created(), legacy]).when(ensure('kB', 's2', now + 1)).then([upgraded]);
  spec(workspaceDecider).given([...created(), legacy, upgraded]).when(ensure('kC', 's3', now + 2)).thenNothing();
});

S('a clear secret stored before encryption at rest is sealed when an update carries it on', () => {
  const base = [...created(settings({ useWebhookService: true, webhookServiceConfig: { authToken: 'clear-token', rawNotificationUrl: 'https://a.example/raw' } }))];
  const legacySealed = { 'clear-token': 'enc:v1:dk1:AAAA' };
  const { state } = spec(workspaceDecider).given(base);
  const events = workspaceDecider.decide(upd({ config: { processedNotificationUrl: 'https://a.example/p' }, legacySealed }), state);
  assert.is((events[0]!.data as { config: Record<string, string> }).config.authToken, 'enc:v1:dk1:AAAA');
  // A value the client replaced is not touched by the map; without a map nothing changes.
  const replaced = workspaceDecider.decide(upd({ config: { authToken: 'enc:v1:dk1:BBBB' }, legacySealed }), state);
  assert.is((replaced[0]!.data as { config: Record<string, string> }).config.authToken, 'enc:v1:dk1:BBBB');
  const plain = workspaceDecider.decide(upd({ config: { processedNotificationUrl: 'https://a.example/p' } }), state);
  assert.is((plain[0]!.data as { config: Record<string, string> }).config.authToken, 'clear-token');
});

S.run();
