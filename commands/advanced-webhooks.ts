/**
 * Advanced webhooks aggregate, one stream per API key (issue 28; the hosted pages
 * `advancedwebhookconfig/*` and `advancedwebhook/endpoints/*`; docs/webhooks.md, Advanced
 * webhooks): the key's advanced webhook settings and its delivery endpoints, each with its
 * URL, event filter and its own Standard Webhooks signing secret.
 *
 * - The settings are first written by an update with `isEnabled: true` (the hosted rule:
 *   that first enable provisions the feature); any other first update is FAILED_PRECONDITION.
 *   Endpoint commands need the feature enabled.
 * - A key holds at most MAX_ENDPOINTS_PER_KEY endpoints (RESOURCE_EXHAUSTED past it): the
 *   deliverer queues one delivery per event and endpoint, so the count bounds the fan-out.
 * - Signing secrets are generated outside decide (like ids) and come in sealed with the API
 *   key's data key (src/secrets/): events and state never hold one in clear; the read model
 *   never holds one at all. A rotation makes a new current secret; the previous one keeps
 *   signing beside it (two signatures in `webhook-signature`) until SECRET_GRACE_MS after the
 *   rotation, or not at all with `revokePrevious`. Secrets past their grace are dropped at the
 *   next rotation, so an endpoint holds few.
 * - The deliverer disables an endpoint that answers 410 Gone or fails for days
 *   (`AdvancedWebhookEndpointDisabled`, with the reason); an update with `disabled: false`
 *   enables it again.
 */
import { alreadyExists, assertNever, failedPrecondition, invalidArgument, notFound, resourceExhausted } from '../src/shared/errors.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import { streamName } from '../src/shared/ids.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/shared/ids.ts). */
export const advancedWebhooksStream = (apiKey: string) => streamName('advancedWebhooks', apiKey);

/** Endpoints one API key may hold (docs/limits.md). */
export const MAX_ENDPOINTS_PER_KEY = 50;
/** How long a rotated-out secret keeps signing beside the new one (Standard Webhooks receivers accept any listed signature). */
export const SECRET_GRACE_MS = 24 * 60 * 60 * 1000;

// Type aliases, not interfaces: event data must be assignable to Record<string, unknown>.
export type AdvancedWebhookSettings = {
  isEnabled: boolean;
  encryptData: boolean;
  encodeData: boolean;
  /** Base64 DER of an RSA public key, `""` when none (checked by the use case before the command). */
  publicKey: string;
  enableDataProtection: boolean;
};

export const DEFAULT_SETTINGS: AdvancedWebhookSettings = { isEnabled: false, encryptData: false, encodeData: false, publicKey: '', enableDataProtection: false };

/** The fields of an endpoint a client sets; `null`: not set (the hosted answers show `null`). */
export type EndpointFields = {
  url: string;
  description: string | null;
  /** Event types delivered (exact names); null: every event. */
  filterTypes: string[] | null;
  /** Areas delivered (src/webhooks/triggers.ts); null: every area. */
  channels: string[] | null;
  disabled: boolean;
  rateLimit: number | null;
  uid: string | null;
  metadata: Record<string, string>;
};

export type EndpointChange = Partial<Omit<EndpointFields, 'uid'>>;

/** A signing secret, sealed; `validUntil` null while it is the current one. */
interface SigningSecret {
  secret: string;
  createdAt: number;
  validUntil: number | null;
}

export interface EndpointState extends EndpointFields {
  endpointId: string;
  /** Oldest first; the last one is current. */
  secrets: SigningSecret[];
  /** Why the deliverer disabled it, while it is disabled for that reason. */
  disabledReason: string | null;
  createdAt: number;
  updatedAt: number;
}

// ---- events ----

export type AdvancedWebhookEvent =
  /** The whole resulting settings. */
  | DomainEvent<'AdvancedWebhookSettingsUpdated', AdvancedWebhookSettings & { apiKey: string; updatedAt: number }>
  /** `secret`: the first signing secret, sealed. */
  | DomainEvent<'AdvancedWebhookEndpointCreated', EndpointFields & { apiKey: string; endpointId: string; secret: string; createdAt: number }>
  /** Only the fields that changed. */
  | DomainEvent<'AdvancedWebhookEndpointUpdated', EndpointChange & { apiKey: string; endpointId: string; updatedAt: number }>
  | DomainEvent<'AdvancedWebhookEndpointDeleted', { apiKey: string; endpointId: string; deletedAt: number }>
  /** `secret`: the new current one, sealed; the previous one signs until `previousValidUntil`; `dropped`: creation times of secrets past their grace. */
  | DomainEvent<'AdvancedWebhookSecretRotated', { apiKey: string; endpointId: string; secret: string; previousValidUntil: number; dropped: number[]; rotatedAt: number }>
  | DomainEvent<'AdvancedWebhookEndpointDisabled', { apiKey: string; endpointId: string; reason: string; disabledAt: number }>
  /** `secret/get` showed the current secret (the one created at `secretCreatedAt`); it is never shown again. */
  | DomainEvent<'AdvancedWebhookSecretRevealed', { apiKey: string; endpointId: string; secretCreatedAt: number; revealedAt: number }>;

// ---- state ----

export interface AdvancedWebhooksState {
  /** Null until the first enable. */
  settings: AdvancedWebhookSettings | null;
  /** By endpoint id, in creation order. */
  endpoints: Record<string, EndpointState>;
}

const initialState = (): AdvancedWebhooksState => ({ settings: null, endpoints: {} });

/** An endpoint by own property only: ids come from clients (`__proto__`). */
export const endpointOf = (state: AdvancedWebhooksState, id: string): EndpointState | undefined =>
  Object.hasOwn(state.endpoints, id) ? state.endpoints[id] : undefined;

const withEndpoint = (state: AdvancedWebhooksState, e: EndpointState): AdvancedWebhooksState => ({ ...state, endpoints: { ...state.endpoints, [e.endpointId]: e } });

// ---- evolve ----

function evolveEndpoint(ep: EndpointState, event: AdvancedWebhookEvent): EndpointState {
  switch (event.type) {
    case 'AdvancedWebhookEndpointUpdated': {
      const { apiKey: _k, endpointId: _e, updatedAt, ...change } = event.data;
      // A client's `disabled: false` ends a disabling by the deliverer; `true` is the client's own.
      const disabledReason = change.disabled !== undefined ? null : ep.disabledReason;
      return { ...ep, ...change, disabledReason, updatedAt };
    }
    case 'AdvancedWebhookSecretRotated': {
      const { secret, previousValidUntil, dropped, rotatedAt } = event.data;
      const kept = ep.secrets.filter((s) => !dropped.includes(s.createdAt)).map((s) => (s.validUntil === null ? { ...s, validUntil: previousValidUntil } : s));
      return { ...ep, secrets: [...kept, { secret, createdAt: rotatedAt, validUntil: null }], updatedAt: rotatedAt };
    }
    case 'AdvancedWebhookEndpointDisabled':
      return { ...ep, disabled: true, disabledReason: event.data.reason, updatedAt: event.data.disabledAt };
    default:
      return ep;
  }
}

function evolve(state: AdvancedWebhooksState, event: AdvancedWebhookEvent): AdvancedWebhooksState {
  switch (event.type) {
    case 'AdvancedWebhookSettingsUpdated': {
      const { isEnabled, encryptData, encodeData, publicKey, enableDataProtection } = event.data;
      return { ...state, settings: { isEnabled, encryptData, encodeData, publicKey, enableDataProtection } };
    }
    case 'AdvancedWebhookEndpointCreated': {
      const { apiKey: _k, secret, createdAt, ...fields } = event.data;
      return withEndpoint(state, { ...fields, secrets: [{ secret, createdAt, validUntil: null }], disabledReason: null, createdAt, updatedAt: createdAt });
    }
    case 'AdvancedWebhookEndpointDeleted': {
      if (!endpointOf(state, event.data.endpointId)) return state;
      const endpoints = { ...state.endpoints };
      delete endpoints[event.data.endpointId];
      return { ...state, endpoints };
    }
    case 'AdvancedWebhookEndpointUpdated':
    case 'AdvancedWebhookSecretRotated':
    case 'AdvancedWebhookEndpointDisabled': {
      const ep = endpointOf(state, event.data.endpointId);
      return ep ? withEndpoint(state, evolveEndpoint(ep, event)) : state;
    }
    case 'AdvancedWebhookSecretRevealed':
      // A read of the secret, recorded for the audit: it changes nothing.
      return state;
    default:
      return state;
  }
}

// ---- commands ----

export type AdvancedWebhookCommand =
  | Command<'UpdateAdvancedWebhookSettings', { apiKey: string; change: Partial<AdvancedWebhookSettings> }>
  /** `endpointId` and the sealed `secret` are generated outside. */
  | Command<'CreateAdvancedWebhookEndpoint', { apiKey: string; endpointId: string; fields: EndpointFields; secret: string }>
  | Command<'UpdateAdvancedWebhookEndpoint', { apiKey: string; endpointId: string; change: EndpointChange }>
  | Command<'DeleteAdvancedWebhookEndpoint', { apiKey: string; endpointId: string }>
  /** `secret`: the new one, generated and sealed outside; `revokePrevious`: the old ones stop signing at once. */
  | Command<'RotateAdvancedWebhookSecret', { apiKey: string; endpointId: string; secret: string; revokePrevious: boolean }>
  /** `secret/get`: records that the current secret is shown; nothing when it was shown before. */
  | Command<'RevealAdvancedWebhookSecret', { apiKey: string; endpointId: string }>
  /** The deliverer's (410 Gone, or failing for days); nothing when the endpoint is gone or already disabled. */
  | Command<'DisableAdvancedWebhookEndpoint', { apiKey: string; endpointId: string; reason: string }>;

// ---- decide ----

const ENABLE_HINT = 'POST /v2/workspace/advancedwebhookconfig/update with { "isEnabled": true }';
/** The hosted pages' messages, word for word. */
export const NOT_CONFIGURED = `Advanced webhooks are not configured for this workspace. Enable them first via ${ENABLE_HINT}.`;
export const DISABLED = `Advanced webhooks are disabled for this workspace. Enable them via ${ENABLE_HINT}.`;
export const ENDPOINT_NOT_FOUND = 'Advanced webhook provider request failed.';

function decideSettings(state: AdvancedWebhooksState, apiKey: string, change: Partial<AdvancedWebhookSettings>, now: number): AdvancedWebhookEvent[] {
  if (!state.settings && change.isEnabled !== true) throw failedPrecondition(NOT_CONFIGURED);
  const cur = state.settings ?? DEFAULT_SETTINGS;
  const next: AdvancedWebhookSettings = { ...cur, ...change };
  if (next.encryptData && !next.publicKey) throw invalidArgument('encryptData needs a publicKey (the base64 of an RSA public key) to encrypt payloads with.');
  if (state.settings && JSON.stringify(next) === JSON.stringify(cur)) return [];
  return [{ type: 'AdvancedWebhookSettingsUpdated', data: { apiKey, ...next, updatedAt: now } }];
}

/** The fields of `change` that differ from the endpoint's. */
function changed(ep: EndpointState, change: EndpointChange): EndpointChange {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(change)) {
    if (v !== undefined && JSON.stringify(v) !== JSON.stringify(ep[k as keyof EndpointState])) out[k] = v;
  }
  return out as EndpointChange;
}

type EndpointCommand = Exclude<AdvancedWebhookCommand, { type: 'UpdateAdvancedWebhookSettings' | 'CreateAdvancedWebhookEndpoint' | 'DisableAdvancedWebhookEndpoint' }>;

function decideOnEndpoint(command: EndpointCommand, ep: EndpointState, now: number): AdvancedWebhookEvent[] {
  const { apiKey, endpointId } = command.data;
  switch (command.type) {
    case 'UpdateAdvancedWebhookEndpoint': {
      const change = changed(ep, command.data.change);
      if (Object.keys(change).length === 0) return [];
      return [{ type: 'AdvancedWebhookEndpointUpdated', data: { apiKey, endpointId, ...change, updatedAt: now } }];
    }
    case 'DeleteAdvancedWebhookEndpoint':
      return [{ type: 'AdvancedWebhookEndpointDeleted', data: { apiKey, endpointId, deletedAt: now } }];
    case 'RotateAdvancedWebhookSecret': {
      const dropped = ep.secrets.filter((s) => s.validUntil !== null && s.validUntil <= now).map((s) => s.createdAt);
      const previousValidUntil = command.data.revokePrevious ? now : now + SECRET_GRACE_MS;
      // A revocation also ends the grace of secrets rotated out before.
      const revoked = command.data.revokePrevious ? ep.secrets.filter((s) => s.validUntil !== null && !dropped.includes(s.createdAt)).map((s) => s.createdAt) : [];
      return [{ type: 'AdvancedWebhookSecretRotated', data: { apiKey, endpointId, secret: command.data.secret, previousValidUntil, dropped: [...dropped, ...revoked], rotatedAt: now } }];
    }
    case 'RevealAdvancedWebhookSecret': {
      // Every read is answered (as the hosted API and Svix do: a receiver that restarts reads
      // its signing secret again) and every read is a fact in the log, so the audit shows who
      // read which secret when.
      const current = currentSecret(ep);
      return [{ type: 'AdvancedWebhookSecretRevealed', data: { apiKey, endpointId, secretCreatedAt: current.createdAt, revealedAt: now } }];
    }
    default:
      return assertNever(command, 'advanced webhook endpoint command');
  }
}

function decide(command: AdvancedWebhookCommand, state: AdvancedWebhooksState): AdvancedWebhookEvent[] {
  const now = command.metadata.now;
  if (command.type === 'UpdateAdvancedWebhookSettings') return decideSettings(state, command.data.apiKey, command.data.change, now);
  const { apiKey, endpointId } = command.data;
  const ep = endpointOf(state, endpointId);
  if (command.type === 'DisableAdvancedWebhookEndpoint') {
    if (!ep || (ep.disabled && ep.disabledReason !== null)) return [];
    return [{ type: 'AdvancedWebhookEndpointDisabled', data: { apiKey, endpointId, reason: command.data.reason, disabledAt: now } }];
  }
  if (!state.settings) throw failedPrecondition(NOT_CONFIGURED);
  if (!state.settings.isEnabled) throw failedPrecondition(DISABLED);
  if (command.type === 'CreateAdvancedWebhookEndpoint') {
    if (ep) throw alreadyExists('An advanced webhook endpoint with this id already exists.');
    const count = Object.keys(state.endpoints).length;
    if (count >= MAX_ENDPOINTS_PER_KEY) {
      throw resourceExhausted(`An API key has at most ${MAX_ENDPOINTS_PER_KEY} advanced webhook endpoints (it has ${count}); delete one first.`);
    }
    return [{ type: 'AdvancedWebhookEndpointCreated', data: { apiKey, endpointId, ...command.data.fields, secret: command.data.secret, createdAt: now } }];
  }
  if (!ep) throw notFound(ENDPOINT_NOT_FOUND, { reason: `No advanced webhook endpoint ${JSON.stringify(endpointId)} on this API key.` });
  return decideOnEndpoint(command, ep, now);
}

export const advancedWebhooksDecider: Decider<AdvancedWebhooksState, AdvancedWebhookCommand, AdvancedWebhookEvent> = {
  name: 'advancedWebhooks',
  initialState,
  evolve,
  decide,
};

/** The endpoint's current secret (every endpoint has one from its creation on). */
export function currentSecret(ep: EndpointState): SigningSecret {
  const current = ep.secrets.find((s) => s.validUntil === null);
  if (!current) throw new Error(`advanced webhook endpoint ${ep.endpointId} has no current secret`);
  return current;
}

/** The sealed secrets that sign at `now`: the current one first, then those still in their grace. */
export function signingSecrets(ep: EndpointState, now: number): string[] {
  return ep.secrets
    .filter((s) => s.validUntil === null || s.validUntil > now)
    .sort((a, b) => (a.validUntil === null ? -1 : b.validUntil === null ? 1 : b.createdAt - a.createdAt))
    .map((s) => s.secret);
}
