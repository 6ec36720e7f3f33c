/**
 * The advanced webhooks aggregate (commands/advanced-webhooks.ts), given/when/then: the
 * first-enable rule, the endpoints-per-key limit, partial updates, rotation with its grace,
 * and the deliverer's disabling.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  DISABLED,
  ENDPOINT_NOT_FOUND,
  MAX_ENDPOINTS_PER_KEY,
  NOT_CONFIGURED,
  SECRET_GRACE_MS,
  advancedWebhooksDecider,
  endpointOf,
  signingSecrets,
  type AdvancedWebhookEvent,
  type EndpointFields,
} from '../commands/advanced-webhooks.js';
import { spec } from './support/decider.js';

const { given } = spec(advancedWebhooksDecider);
const now = 1_700_000_000_000;
const m = { now };
const apiKey = 'k1';
const settings = { isEnabled: true, encryptData: false, encodeData: false, publicKey: '', enableDataProtection: false };
const enabled: AdvancedWebhookEvent = { type: 'AdvancedWebhookSettingsUpdated', data: { apiKey, ...settings, updatedAt: 1 } };
const fields: EndpointFields = { url: 'https://e.example/h', description: null, filterTypes: ['DocumentAdded'], channels: null, disabled: false, rateLimit: null, uid: null, metadata: {} };
const created = (endpointId: string, secret = 'SEALED-1', at = 2): AdvancedWebhookEvent => ({
  type: 'AdvancedWebhookEndpointCreated',
  data: { apiKey, endpointId, ...fields, secret, createdAt: at },
});

test('the first update must enable; later ones merge, and an unchanged one appends nothing', () => {
  given([]).when({ type: 'UpdateAdvancedWebhookSettings', data: { apiKey, change: { encodeData: true } }, metadata: m }).thenFails('FAILED_PRECONDITION', NOT_CONFIGURED);
  given([]).when({ type: 'UpdateAdvancedWebhookSettings', data: { apiKey, change: { isEnabled: true } }, metadata: m }).then([enabled].map((e) => ({ ...e, data: { ...e.data, updatedAt: now } })) as AdvancedWebhookEvent[]);
  given([enabled]).when({ type: 'UpdateAdvancedWebhookSettings', data: { apiKey, change: { encodeData: true } }, metadata: m }).then([
    { type: 'AdvancedWebhookSettingsUpdated', data: { apiKey, ...settings, encodeData: true, updatedAt: now } },
  ]);
  given([enabled]).when({ type: 'UpdateAdvancedWebhookSettings', data: { apiKey, change: { isEnabled: true } }, metadata: m }).thenNothing();
  given([enabled]).when({ type: 'UpdateAdvancedWebhookSettings', data: { apiKey, change: { encryptData: true } }, metadata: m }).thenFails('INVALID_ARGUMENT', /needs a publicKey/);
});

test('endpoint commands need the feature enabled', () => {
  const create = { type: 'CreateAdvancedWebhookEndpoint' as const, data: { apiKey, endpointId: 'ep_1', fields, secret: 'S' }, metadata: m };
  given([]).when(create).thenFails('FAILED_PRECONDITION', NOT_CONFIGURED);
  const off: AdvancedWebhookEvent = { type: 'AdvancedWebhookSettingsUpdated', data: { apiKey, ...settings, isEnabled: false, updatedAt: 3 } };
  given([enabled, off]).when(create).thenFails('FAILED_PRECONDITION', DISABLED);
  given([enabled, created('ep_1'), off]).when({ type: 'DeleteAdvancedWebhookEndpoint', data: { apiKey, endpointId: 'ep_1' }, metadata: m }).thenFails('FAILED_PRECONDITION', DISABLED);
  given([enabled]).when(create).then([{ type: 'AdvancedWebhookEndpointCreated', data: { apiKey, endpointId: 'ep_1', ...fields, secret: 'S', createdAt: now } }]);
});

test(`at most ${MAX_ENDPOINTS_PER_KEY} endpoints per key; a deleted one frees its slot`, () => {
  const full = [enabled, ...Array.from({ length: MAX_ENDPOINTS_PER_KEY }, (_, i) => created(`ep_${i}`))];
  const create = { type: 'CreateAdvancedWebhookEndpoint' as const, data: { apiKey, endpointId: 'ep_new', fields, secret: 'S' }, metadata: m };
  given(full).when(create).thenFails('RESOURCE_EXHAUSTED', /at most 50/);
  given([...full, { type: 'AdvancedWebhookEndpointDeleted', data: { apiKey, endpointId: 'ep_0', deletedAt: 9 } }]).when(create).then([
    { type: 'AdvancedWebhookEndpointCreated', data: { apiKey, endpointId: 'ep_new', ...fields, secret: 'S', createdAt: now } },
  ]);
});

test('update: only the fields that change; an unknown endpoint is NOT_FOUND', () => {
  given([enabled, created('ep_1')])
    .when({ type: 'UpdateAdvancedWebhookEndpoint', data: { apiKey, endpointId: 'ep_1', change: { url: fields.url, description: 'd', filterTypes: ['DocumentAdded'] } }, metadata: m })
    .then([{ type: 'AdvancedWebhookEndpointUpdated', data: { apiKey, endpointId: 'ep_1', description: 'd', updatedAt: now } }]);
  given([enabled, created('ep_1')]).when({ type: 'UpdateAdvancedWebhookEndpoint', data: { apiKey, endpointId: 'ep_1', change: { disabled: false } }, metadata: m }).thenNothing();
  given([enabled]).when({ type: 'UpdateAdvancedWebhookEndpoint', data: { apiKey, endpointId: '__proto__', change: { disabled: true } }, metadata: m }).thenFails('NOT_FOUND', ENDPOINT_NOT_FOUND);
});

test('rotation: the previous secret signs for the grace, then is dropped at the next rotation; revokePrevious ends it at once', () => {
  const rotate = (secret: string, revokePrevious = false, at = now) => ({ type: 'RotateAdvancedWebhookSecret' as const, data: { apiKey, endpointId: 'ep_1', secret, revokePrevious }, metadata: { now: at } });
  const base = [enabled, created('ep_1', 'SEALED-1', 2)];
  const rotated: AdvancedWebhookEvent = { type: 'AdvancedWebhookSecretRotated', data: { apiKey, endpointId: 'ep_1', secret: 'SEALED-2', previousValidUntil: now + SECRET_GRACE_MS, dropped: [], rotatedAt: now } };
  given(base).when(rotate('SEALED-2')).then([rotated]);
  const ep = endpointOf(given([...base, rotated]).state, 'ep_1')!;
  assert.equal(signingSecrets(ep, now + 1), ['SEALED-2', 'SEALED-1'], 'both during the grace, the current first');
  assert.equal(signingSecrets(ep, now + SECRET_GRACE_MS), ['SEALED-2'], 'the old one ends with its grace');
  const later = now + SECRET_GRACE_MS + 5;
  given([...base, rotated]).when(rotate('SEALED-3', false, later)).then([
    { type: 'AdvancedWebhookSecretRotated', data: { apiKey, endpointId: 'ep_1', secret: 'SEALED-3', previousValidUntil: later + SECRET_GRACE_MS, dropped: [2], rotatedAt: later } },
  ]);
  given([...base, rotated]).when(rotate('SEALED-3', true)).then([
    { type: 'AdvancedWebhookSecretRotated', data: { apiKey, endpointId: 'ep_1', secret: 'SEALED-3', previousValidUntil: now, dropped: [2], rotatedAt: now } },
  ]);
});

test('the deliverer disables an endpoint once; the client enables it again; a deleted one is left alone', () => {
  const disable = { type: 'DisableAdvancedWebhookEndpoint' as const, data: { apiKey, endpointId: 'ep_1', reason: 'x answered 410 Gone' }, metadata: m };
  const disabled: AdvancedWebhookEvent = { type: 'AdvancedWebhookEndpointDisabled', data: { apiKey, endpointId: 'ep_1', reason: 'x answered 410 Gone', disabledAt: now } };
  given([enabled, created('ep_1')]).when(disable).then([disabled]);
  given([enabled, created('ep_1'), disabled]).when(disable).thenNothing();
  given([enabled]).when(disable).thenNothing();
  const state = given([enabled, created('ep_1'), disabled]).state;
  assert.equal([endpointOf(state, 'ep_1')!.disabled, endpointOf(state, 'ep_1')!.disabledReason], [true, 'x answered 410 Gone']);
  given([enabled, created('ep_1'), disabled])
    .when({ type: 'UpdateAdvancedWebhookEndpoint', data: { apiKey, endpointId: 'ep_1', change: { disabled: false } }, metadata: m })
    .then([{ type: 'AdvancedWebhookEndpointUpdated', data: { apiKey, endpointId: 'ep_1', disabled: false, updatedAt: now } }]);
});

test.run();

test('every read of a secret is recorded; a rotation brings a new one to read', () => {
  const reveal = { type: 'RevealAdvancedWebhookSecret' as const, data: { apiKey, endpointId: 'ep_1' }, metadata: m };
  const revealed: AdvancedWebhookEvent = { type: 'AdvancedWebhookSecretRevealed', data: { apiKey, endpointId: 'ep_1', secretCreatedAt: 2, revealedAt: now } };
  given([enabled, created('ep_1')]).when(reveal).then([revealed]);
  given([enabled, created('ep_1'), revealed]).when(reveal).then([revealed]);
  const rotated: AdvancedWebhookEvent = { type: 'AdvancedWebhookSecretRotated', data: { apiKey, endpointId: 'ep_1', secret: 'SEALED-2', previousValidUntil: 10, dropped: [], rotatedAt: 5 } };
  given([enabled, created('ep_1'), revealed, rotated]).when(reveal).then([
    { type: 'AdvancedWebhookSecretRevealed', data: { apiKey, endpointId: 'ep_1', secretCreatedAt: 5, revealedAt: now } },
  ]);
  given([enabled]).when(reveal).thenFails('NOT_FOUND', ENDPOINT_NOT_FOUND);
});
