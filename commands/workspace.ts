/**
 * Workspace aggregate: a workspace, its settings, and its API keys with their auth tokens.
 *
 * The workspace is the consistency boundary for its keys: the production-key limit is an
 * invariant across all of them, so every key event lives in the workspace's stream and two
 * concurrent "create production key" requests can never both take the last slot.
 * Auth-token secrets never enter events: commands carry their SHA-256 hashes only. What the
 * service itself must use later (service configs' tokens for webhook delivery, the key's
 * JWT signing keys) is kept in events and aggregate state only, never in a read model, and
 * only sealed (src/secrets/): commands carry values the route already encrypted with the API
 * key's data key, since decide stays pure. Events written before encryption at rest hold
 * clear values; state keeps whatever the events hold, and readers open it either way.
 *
 * Deleting an API key removes it from the state (its production slot is free again) and
 * remembers its id, so a repeated deletion is a no-op the route can still finish (shredding
 * the key's data keys) instead of NOT_FOUND.
 */
import { ApiError, assertNever, failedPrecondition, notFound, permissionDenied, resourceExhausted } from '../src/shared/errors.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import { SIGNING_KEY_RETENTION_MS } from './token-lifetime.js';
import {
  initialServices,
  mergeServiceConfig,
  sameService,
  type KeyServices,
  type ServiceConfigUpdate,
  type ServiceName,
  type WebhookEndpoint,
} from './service-config.js';
import { streamName } from '../src/shared/ids.js';
import { MAX_DOMAINS_PER_KEY } from './allowed-domains.js';
import { changedConfig, initialKeyConfig, withConfigChange, type AiProvider, type ApiKeyConfig, type ApiKeyConfigChange, type DocumentAccessType } from './api-key-config.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/shared/ids.ts). */
export const workspaceStream = (workspaceId: string) => streamName('workspace', workspaceId);

// ---- events ----

type Plan = 'free' | 'paid';
export type ApiKeyType = 'testing' | 'production';

export interface ApiKeySettings {
  allowedDomains: string[];
  useEmailService: boolean;
  useWebhookService: boolean;
  useNotificationService: boolean;
  setDefaultNotificationTriggers: boolean;
  setDefaultEmailTriggers: boolean;
  requireAutoOrgUser: boolean;
  enablePrivateComments: boolean;
  emailServiceConfig?: Record<string, string>;
  webhookServiceConfig?: Record<string, string>;
  /** Read model only (projections/workspaces.ts), from apikeyconfig/update: never in ApiKeyCreated. */
  requireJwtToken?: boolean;
  defaultDocumentAccessType?: DocumentAccessType;
  /** Read model only: the AI model keys' masked text, by provider. */
  aiModelsConfig?: Partial<Record<AiProvider, { displayText: string }>>;
}

export type WorkspaceEvent =
  | DomainEvent<'WorkspaceCreated', {
      workspaceId: string;
      name: string;
      ownerEmail: string;
      ownerName: string;
      /** Absent on workspaces created before owners had ids. */
      ownerId?: string;
      ownerAvatar?: string;
      authTokenHash: string;
      createdAt: number;
    }>
  | DomainEvent<'WorkspaceAuthTokenRotated', { workspaceId: string; authTokenHash: string; rotatedAt: number }>
  | DomainEvent<'WorkspaceSettingsChanged', {
      workspaceId: string;
      plan?: Plan;
      productionKeysEnabled?: boolean;
      maxProductionKeys?: number;
    }>
  | DomainEvent<'ApiKeyCreated', {
      workspaceId: string;
      apiKey: string;
      apiKeyName: string;
      type: ApiKeyType;
      ownerEmail: string;
      persistenceDBRegion: string | null;
      realtimeDBRegion: string | null;
      settings: ApiKeySettings;
      createdAt: number;
    }>
  | DomainEvent<'ApiKeyDeleted', { workspaceId: string; apiKey: string; deletedAt: number }>
  // Allowed domains (commands/allowed-domains.ts), stored form; only the entries that changed.
  | DomainEvent<'ApiKeyAllowedDomainsAdded', { workspaceId: string; apiKey: string; domains: string[]; addedAt: number }>
  | DomainEvent<'ApiKeyAllowedDomainsRemoved', { workspaceId: string; apiKey: string; domains: string[]; removedAt: number }>
  // apikey/update: the key's display name.
  | DomainEvent<'ApiKeyRenamed', { workspaceId: string; apiKey: string; apiKeyName: string; renamedAt: number }>
  // apikeyconfig/update (commands/api-key-config.ts): only the fields that changed; AI model
  // keys sealed, each with the masked text reads show.
  | DomainEvent<'ApiKeyConfigUpdated', { workspaceId: string; apiKey: string; updatedAt: number } & ApiKeyConfigChange>
  | DomainEvent<'ApiKeyAuthTokenCreated', { apiKey: string; tokenId: string; tokenHash: string; createdAt: number }>
  | DomainEvent<'ApiKeyAuthTokenRevoked', { apiKey: string; tokenId: string; revokedAt: number }>
  // Email/webhook config (commands/service-config.ts): the whole resulting service state.
  | DomainEvent<'ApiKeyServiceConfigUpdated', {
      workspaceId: string;
      apiKey: string;
      service: ServiceName;
      enabled: boolean;
      config: Record<string, string>;
      triggers: string[] | null;
      disabledEndpoints: WebhookEndpoint[];
      updatedAt: number;
    }>
  | DomainEvent<'WebhookEndpointDisabled', { workspaceId: string; apiKey: string; endpoint: WebhookEndpoint; reason: string; disabledAt: number }>
  // The key's first key for signing /v2/auth/generate_token JWTs: the private part write
  // side only, never read back out, sealed. `alg: "ES256"`: `secret` is the P-256 private
  // scalar (the JWK's `d`) and `publicKey` the public half, which is published (JWKS).
  // Events from before asymmetric signing have no `alg` (an HS256 secret); from before key
  // ids and encryption at rest, no `kid` either (the key is LEGACY_KID) and a clear `secret`.
  | DomainEvent<'ApiKeyTokenSigningSecretCreated', { workspaceId: string; apiKey: string; kid?: string; secret: string; alg?: 'ES256'; publicKey?: SigningPublicKey; createdAt: number }>
  // A new signing key; the previous one verifies the tokens it signed until they expire,
  // unless revoked (`revokedKids` also drops keys whose tokens have all expired). `alg` and
  // `publicKey` as above.
  | DomainEvent<'ApiKeyTokenSigningKeyRotated', {
      workspaceId: string;
      apiKey: string;
      kid: string;
      secret: string;
      alg?: 'ES256';
      publicKey?: SigningPublicKey;
      revokedKids: string[];
      rotatedAt: number;
    }>;

// ---- state ----

/** The public half of an ES256 signing key, as a JWK (RFC 7517/7518): what the JWKS publishes. */
export interface SigningPublicKey {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
}

/**
 * A user-token signing key: the current one (`retiredAt` null) signs, retired ones only
 * verify. `alg` absent: an HS256 key from before asymmetric signing (`secret` is the shared
 * secret); `ES256`: `secret` is the private scalar and `publicKey` verifies.
 */
export interface SigningKey {
  kid: string;
  /** Sealed (clear in events from before encryption at rest). */
  secret: string;
  alg?: 'ES256';
  publicKey?: SigningPublicKey;
  createdAt: number;
  retiredAt: number | null;
}

/** The `kid` of a signing key created before key ids existed; tokens without a `kid` name it. */
export const LEGACY_KID = 'k0';

interface KeyState {
  type: ApiKeyType;
  tokenIds: string[];
  services: KeyServices;
  /** Oldest first; the last one is current. Empty until the first token is issued. */
  signingKeys: SigningKey[];
  /** The key's allowed domains (commands/allowed-domains.ts), in the order they were added. */
  allowedDomains: string[];
  apiKeyName: string;
  /** What apikeyconfig/get reads and apikeyconfig/update changes (commands/api-key-config.ts). */
  config: ApiKeyConfig;
}

export type WorkspaceState =
  | { status: 'none' }
  | {
      status: 'active';
      workspaceId: string;
      plan: Plan;
      productionKeysEnabled: boolean;
      maxProductionKeys: number;
      keys: Record<string, KeyState>;
      /** API keys deleted from this workspace. */
      deletedKeys: string[];
    };

/** Until the operator says otherwise, a workspace that may create production keys gets this many. */
export const DEFAULT_MAX_PRODUCTION_KEYS = 3;

const initialState = (): WorkspaceState => ({ status: 'none' });

/**
 * A key's state, by own property only: API keys come from clients, and `keys["__proto__"]`
 * on a plain object would find Object.prototype instead of "no such key".
 */
function keyOf(state: { keys: Record<string, KeyState> }, apiKey: string): KeyState | undefined {
  return Object.hasOwn(state.keys, apiKey) ? state.keys[apiKey] : undefined;
}

// ---- evolve ----

function evolve(state: WorkspaceState, event: WorkspaceEvent): WorkspaceState {
  if (event.type === 'WorkspaceCreated') {
    if (state.status !== 'none') return state;
    return {
      status: 'active',
      workspaceId: event.data.workspaceId,
      plan: 'free',
      productionKeysEnabled: false,
      maxProductionKeys: DEFAULT_MAX_PRODUCTION_KEYS,
      keys: {},
      deletedKeys: [],
    };
  }
  if (state.status !== 'active') return state;
  switch (event.type) {
    case 'WorkspaceSettingsChanged': {
      const { plan, productionKeysEnabled, maxProductionKeys } = event.data;
      return {
        ...state,
        plan: plan ?? state.plan,
        productionKeysEnabled: productionKeysEnabled ?? state.productionKeysEnabled,
        maxProductionKeys: maxProductionKeys ?? state.maxProductionKeys,
      };
    }
    case 'WorkspaceAuthTokenRotated':
      // Only the read model keeps the hash: authentication reads it there.
      return state;
    case 'ApiKeyCreated': {
      const key: KeyState = {
        type: event.data.type,
        tokenIds: [],
        services: initialServices(event.data.settings),
        signingKeys: [],
        // Deduplicated: events from before normalization may list an entry twice.
        allowedDomains: [...new Set(event.data.settings.allowedDomains)],
        apiKeyName: event.data.apiKeyName,
        config: initialKeyConfig(event.data.settings),
      };
      return { ...state, keys: { ...state.keys, [event.data.apiKey]: key } };
    }
    case 'ApiKeyDeleted': {
      if (!keyOf(state, event.data.apiKey)) return state;
      const keys = { ...state.keys };
      delete keys[event.data.apiKey];
      return { ...state, keys, deletedKeys: [...state.deletedKeys, event.data.apiKey] };
    }
    case 'ApiKeyServiceConfigUpdated':
    case 'WebhookEndpointDisabled':
    case 'ApiKeyRenamed':
    case 'ApiKeyConfigUpdated':
    case 'ApiKeyAllowedDomainsAdded':
    case 'ApiKeyAllowedDomainsRemoved':
    case 'ApiKeyTokenSigningSecretCreated':
    case 'ApiKeyTokenSigningKeyRotated': {
      const key = keyOf(state, event.data.apiKey);
      if (!key) return state;
      return { ...state, keys: { ...state.keys, [event.data.apiKey]: evolveKey(key, event) } };
    }
    case 'ApiKeyAuthTokenCreated':
    case 'ApiKeyAuthTokenRevoked': {
      const key = keyOf(state, event.data.apiKey);
      if (!key) return state;
      const tokenIds =
        event.type === 'ApiKeyAuthTokenCreated'
          ? [...key.tokenIds, event.data.tokenId]
          : key.tokenIds.filter((t) => t !== event.data.tokenId);
      return { ...state, keys: { ...state.keys, [event.data.apiKey]: { ...key, tokenIds } } };
    }
    default:
      return state;
  }
}

/** `alg` and `publicKey` of an ES256 key's event; nothing for an HS256 one (state keeps its old shape). */
const asymmetric = (d: { alg?: 'ES256'; publicKey?: SigningPublicKey }): Pick<SigningKey, 'alg' | 'publicKey'> =>
  d.alg === 'ES256' && d.publicKey ? { alg: d.alg, publicKey: d.publicKey } : {};

function evolveKey(key: KeyState, event: WorkspaceEvent): KeyState {
  switch (event.type) {
    case 'ApiKeyRenamed':
      return { ...key, apiKeyName: event.data.apiKeyName };
    case 'ApiKeyConfigUpdated': {
      const { workspaceId: _w, apiKey: _k, updatedAt: _u, ...change } = event.data;
      return { ...key, config: withConfigChange(key.config, change) };
    }
    case 'ApiKeyAllowedDomainsAdded': {
      const added = event.data.domains.filter((d) => !key.allowedDomains.includes(d));
      return added.length === 0 ? key : { ...key, allowedDomains: [...key.allowedDomains, ...added] };
    }
    case 'ApiKeyAllowedDomainsRemoved': {
      const removed = new Set(event.data.domains);
      return { ...key, allowedDomains: key.allowedDomains.filter((d) => !removed.has(d)) };
    }
    case 'ApiKeyServiceConfigUpdated': {
      const { service, enabled, config, triggers, disabledEndpoints } = event.data;
      return { ...key, services: { ...key.services, [service]: { enabled, config, triggers, disabledEndpoints } } };
    }
    case 'WebhookEndpointDisabled': {
      const w = key.services.webhook;
      if (w.disabledEndpoints.includes(event.data.endpoint)) return key;
      return { ...key, services: { ...key.services, webhook: { ...w, disabledEndpoints: [...w.disabledEndpoints, event.data.endpoint] } } };
    }
    case 'ApiKeyTokenSigningSecretCreated': {
      if (key.signingKeys.length > 0) return key;
      const { kid, secret, createdAt } = event.data;
      return { ...key, signingKeys: [{ kid: kid ?? LEGACY_KID, secret, ...asymmetric(event.data), createdAt, retiredAt: null }] };
    }
    case 'ApiKeyTokenSigningKeyRotated': {
      const { kid, secret, revokedKids, rotatedAt } = event.data;
      const kept = key.signingKeys
        .filter((k) => !revokedKids.includes(k.kid) && k.kid !== kid)
        .map((k) => (k.retiredAt === null ? { ...k, retiredAt: rotatedAt } : k));
      return { ...key, signingKeys: [...kept, { kid, secret, ...asymmetric(event.data), createdAt: rotatedAt, retiredAt: null }] };
    }
    default:
      return key;
  }
}

// ---- commands ----

export interface NewApiKey {
  apiKey: string;
  apiKeyName: string;
  type: ApiKeyType;
  ownerEmail: string;
  persistenceDBRegion: string | null;
  realtimeDBRegion: string | null;
  settings: ApiKeySettings;
  /** Present when an auth token is created with the key. */
  token?: { tokenId: string; tokenHash: string };
}

export type WorkspaceCommand =
  | Command<'CreateWorkspace', {
      workspaceId: string;
      name: string;
      ownerEmail: string;
      ownerName: string;
      ownerId: string;
      ownerAvatar?: string;
      authTokenHash: string;
      firstKey: NewApiKey;
    }>
  | Command<'ChangeWorkspaceSettings', { plan?: Plan; productionKeysEnabled?: boolean; maxProductionKeys?: number }>
  /** The new token's hash (the token is generated outside); the old token stops at once. */
  | Command<'RotateWorkspaceAuthToken', { authTokenHash: string }>
  | Command<'DeleteApiKey', { apiKey: string }>
  | Command<'CreateApiKey', NewApiKey>
  | Command<'ResetAuthToken', { apiKey: string; revokeTokenId?: string; tokenId: string; tokenHash: string }>
  | Command<'UpdateServiceConfig', ServiceConfigUpdate & { apiKey: string }>
  | Command<'DisableWebhookEndpoint', { apiKey: string; endpoint: WebhookEndpoint; reason: string }>
  /**
   * `domains` in stored form (the route normalizes them, commands/allowed-domains.ts). Adds
   * those the key does not hold yet (none: no event); past MAX_DOMAINS_PER_KEY the whole call
   * is refused.
   */
  | Command<'AddAllowedDomains', { apiKey: string; domains: string[] }>
  /** Removes those of `domains` the key holds (none: no event). */
  | Command<'RemoveAllowedDomains', { apiKey: string; domains: string[] }>
  /** apikey/update: a new display name (the same one: no event). */
  | Command<'RenameApiKey', { apiKey: string; apiKeyName: string }>
  /** apikeyconfig/update: AI model keys come sealed (with their masked text); unchanged fields make no event. */
  | Command<'UpdateApiKeyConfig', { apiKey: string; change: ApiKeyConfigChange }>
  /**
   * Makes sure the key's current token-signing key is an ES256 one: creates the first, or
   * replaces an HS256 key from before asymmetric signing (which keeps verifying its tokens
   * until they expire). `kid`, the sealed private scalar `secret` and `publicKey` are
   * generated outside; unused when the key already signs with ES256.
   */
  | Command<'EnsureTokenSigningSecret', { apiKey: string; kid: string; secret: string; publicKey: SigningPublicKey }>
  /** A new current (ES256) signing key; `revokePrevious` stops every token the others signed at once. */
  | Command<'RotateTokenSigningKey', { apiKey: string; kid: string; secret: string; publicKey: SigningPublicKey; revokePrevious: boolean }>;

// ---- decide ----

const workspaceNotFound = () => notFound('Workspace not found.');
/** The hosted API's message for an unknown key on authtokens/get and authtoken/reset. */
export const API_KEY_NOT_FOUND = 'API key not found.';

function keyEvents(workspaceId: string, k: NewApiKey, now: number): WorkspaceEvent[] {
  const events: WorkspaceEvent[] = [
    {
      type: 'ApiKeyCreated',
      data: {
        workspaceId,
        apiKey: k.apiKey,
        apiKeyName: k.apiKeyName,
        type: k.type,
        ownerEmail: k.ownerEmail,
        persistenceDBRegion: k.persistenceDBRegion,
        realtimeDBRegion: k.realtimeDBRegion,
        settings: k.settings,
        createdAt: now,
      },
    },
  ];
  if (k.token) {
    events.push({ type: 'ApiKeyAuthTokenCreated', data: { apiKey: k.apiKey, ...k.token, createdAt: now } });
  }
  return events;
}

/**
 * Production keys are gated in this order (spec "Errors"): the workspace must be enabled for
 * them (PERMISSION_DENIED), on a paid plan (FAILED_PRECONDITION), and under its limit
 * (RESOURCE_EXHAUSTED).
 */
function guardProductionKey(state: Extract<WorkspaceState, { status: 'active' }>) {
  if (!state.productionKeysEnabled) {
    throw permissionDenied('This workspace is not enabled for self-serve production key creation.');
  }
  if (state.plan !== 'paid') throw failedPrecondition('Production keys require the workspace to be on a paid plan.');
  const existing = Object.values(state.keys).filter((k) => k.type === 'production').length;
  if (existing >= state.maxProductionKeys) {
    throw resourceExhausted(`This workspace has reached its maximum of ${state.maxProductionKeys} production keys.`);
  }
}

/**
 * The keys a rotation at `now` drops: all previous keys when asked; otherwise only retired
 * keys whose tokens have all expired (they verify nothing any more), so the list stays short
 * however often a key is rotated. Example: rotated at t0 and again at t0 + 49 h: the t0 key goes.
 */
function revokedOnRotation(key: KeyState, revokePrevious: boolean, now: number): string[] {
  return key.signingKeys
    .filter((k) => revokePrevious || (k.retiredAt !== null && k.retiredAt + SIGNING_KEY_RETENTION_MS <= now))
    .map((k) => k.kid);
}

/** The commands on one existing API key of an active workspace, each naming it by `apiKey`. */
type KeyCommand = Extract<
  WorkspaceCommand,
  { type: 'ResetAuthToken' | 'UpdateServiceConfig' | 'DisableWebhookEndpoint' | 'AddAllowedDomains' | 'RemoveAllowedDomains' | 'EnsureTokenSigningSecret' | 'RotateTokenSigningKey' }
>;

function decideOnKey(command: KeyCommand, state: WorkspaceState, now: number): WorkspaceEvent[] {
  if (state.status !== 'active') throw workspaceNotFound();
  const key = keyOf(state, command.data.apiKey);
  // authtoken/reset answers with the hosted API's own message (API_KEY_NOT_FOUND).
  if (!key) throw notFound(command.type === 'ResetAuthToken' ? API_KEY_NOT_FOUND : 'API key not found in this workspace.');
  const { workspaceId } = state;
  switch (command.type) {
    case 'ResetAuthToken': {
      const { apiKey, revokeTokenId, tokenId, tokenHash } = command.data;
      if (revokeTokenId !== undefined && !key.tokenIds.includes(revokeTokenId)) {
        throw notFound('Auth token not found for this API key.');
      }
      const revoke = revokeTokenId !== undefined ? [revokeTokenId] : key.tokenIds;
      return [
        ...revoke.map((t): WorkspaceEvent => ({ type: 'ApiKeyAuthTokenRevoked', data: { apiKey, tokenId: t, revokedAt: now } })),
        { type: 'ApiKeyAuthTokenCreated', data: { apiKey, tokenId, tokenHash, createdAt: now } },
      ];
    }
    case 'UpdateServiceConfig': {
      const { apiKey, ...update } = command.data;
      const next = mergeServiceConfig(key.services[update.service], update);
      if (sameService(next, key.services[update.service])) return [];
      const data = { workspaceId, apiKey, service: update.service, ...next, updatedAt: now };
      return [{ type: 'ApiKeyServiceConfigUpdated', data }];
    }
    case 'DisableWebhookEndpoint': {
      const { apiKey, endpoint, reason } = command.data;
      if (key.services.webhook.disabledEndpoints.includes(endpoint)) return [];
      return [{ type: 'WebhookEndpointDisabled', data: { workspaceId, apiKey, endpoint, reason, disabledAt: now } }];
    }
    case 'AddAllowedDomains': {
      const { apiKey } = command.data;
      const added = [...new Set(command.data.domains)].filter((d) => !key.allowedDomains.includes(d));
      if (added.length === 0) return [];
      const total = key.allowedDomains.length + added.length;
      if (total > MAX_DOMAINS_PER_KEY) {
        throw resourceExhausted(
          `The API key would have ${total} allowed domains; an API key has at most ${MAX_DOMAINS_PER_KEY} (it has ${key.allowedDomains.length}; remove some first, or use a wildcard such as *.example.com).`,
        );
      }
      return [{ type: 'ApiKeyAllowedDomainsAdded', data: { workspaceId, apiKey, domains: added, addedAt: now } }];
    }
    case 'RemoveAllowedDomains': {
      const { apiKey } = command.data;
      const removed = [...new Set(command.data.domains)].filter((d) => key.allowedDomains.includes(d));
      if (removed.length === 0) return [];
      return [{ type: 'ApiKeyAllowedDomainsRemoved', data: { workspaceId, apiKey, domains: removed, removedAt: now } }];
    }
    case 'EnsureTokenSigningSecret': {
      const { apiKey, kid, secret, publicKey } = command.data;
      const current = key.signingKeys.find((k) => k.retiredAt === null);
      if (current?.alg === 'ES256') return [];
      if (key.signingKeys.length === 0) {
        return [{ type: 'ApiKeyTokenSigningSecretCreated', data: { workspaceId, apiKey, kid, secret, alg: 'ES256', publicKey, createdAt: now } }];
      }
      // An HS256 key from before asymmetric signing: new tokens must be verifiable with a
      // published key, so an ES256 key takes over; the HS256 one verifies its tokens until
      // they expire, as after any rotation.
      const revokedKids = revokedOnRotation(key, false, now);
      return [{ type: 'ApiKeyTokenSigningKeyRotated', data: { workspaceId, apiKey, kid, secret, alg: 'ES256', publicKey, revokedKids, rotatedAt: now } }];
    }
    case 'RotateTokenSigningKey': {
      const { apiKey, kid, secret, publicKey, revokePrevious } = command.data;
      const revokedKids = revokedOnRotation(key, revokePrevious, now);
      return [{ type: 'ApiKeyTokenSigningKeyRotated', data: { workspaceId, apiKey, kid, secret, alg: 'ES256', publicKey, revokedKids, rotatedAt: now } }];
    }
    default:
      return assertNever(command, 'workspace key command');
  }
}

/** apikey/update and apikeyconfig/update: NOT_FOUND in the hosted API's words for a key the workspace does not have. */
function decideKeySettings(command: Extract<WorkspaceCommand, { type: 'RenameApiKey' | 'UpdateApiKeyConfig' }>, state: WorkspaceState, now: number): WorkspaceEvent[] {
  if (state.status !== 'active') throw workspaceNotFound();
  const { apiKey } = command.data;
  const key = keyOf(state, apiKey);
  if (!key) throw notFound(API_KEY_NOT_FOUND);
  const { workspaceId } = state;
  if (command.type === 'RenameApiKey') {
    const { apiKeyName } = command.data;
    if (apiKeyName === key.apiKeyName) return [];
    return [{ type: 'ApiKeyRenamed', data: { workspaceId, apiKey, apiKeyName, renamedAt: now } }];
  }
  const change = changedConfig(key.config, command.data.change);
  if (!change) return [];
  return [{ type: 'ApiKeyConfigUpdated', data: { workspaceId, apiKey, ...change, updatedAt: now } }];
}

function decide(command: WorkspaceCommand, state: WorkspaceState): WorkspaceEvent[] {
  const now = command.metadata.now;
  switch (command.type) {
    case 'CreateWorkspace': {
      if (state.status !== 'none') throw new ApiError('ALREADY_EXISTS', 'Workspace already exists.');
      const { firstKey, ...w } = command.data;
      return [{ type: 'WorkspaceCreated', data: { ...w, createdAt: now } }, ...keyEvents(w.workspaceId, firstKey, now)];
    }
    case 'ChangeWorkspaceSettings': {
      if (state.status !== 'active') throw workspaceNotFound();
      const d = command.data;
      const changed =
        (d.plan !== undefined && d.plan !== state.plan) ||
        (d.productionKeysEnabled !== undefined && d.productionKeysEnabled !== state.productionKeysEnabled) ||
        (d.maxProductionKeys !== undefined && d.maxProductionKeys !== state.maxProductionKeys);
      return changed ? [{ type: 'WorkspaceSettingsChanged', data: { workspaceId: state.workspaceId, ...d } }] : [];
    }
    case 'RotateWorkspaceAuthToken': {
      if (state.status !== 'active') throw workspaceNotFound();
      return [{ type: 'WorkspaceAuthTokenRotated', data: { workspaceId: state.workspaceId, authTokenHash: command.data.authTokenHash, rotatedAt: now } }];
    }
    case 'DeleteApiKey': {
      if (state.status !== 'active') throw workspaceNotFound();
      const { apiKey } = command.data;
      if (state.deletedKeys.includes(apiKey)) return [];
      if (!keyOf(state, apiKey)) throw notFound('API key not found in this workspace.');
      return [{ type: 'ApiKeyDeleted', data: { workspaceId: state.workspaceId, apiKey, deletedAt: now } }];
    }
    case 'CreateApiKey': {
      if (state.status !== 'active') throw workspaceNotFound();
      if (keyOf(state, command.data.apiKey) || state.deletedKeys.includes(command.data.apiKey)) {
        throw new ApiError('ALREADY_EXISTS', 'API key already exists.');
      }
      if (command.data.type === 'production') guardProductionKey(state);
      return keyEvents(state.workspaceId, command.data, now);
    }
    case 'ResetAuthToken':
    case 'UpdateServiceConfig':
    case 'DisableWebhookEndpoint':
    case 'AddAllowedDomains':
    case 'RemoveAllowedDomains':
    case 'EnsureTokenSigningSecret':
    case 'RotateTokenSigningKey':
      return decideOnKey(command, state, now);
    case 'RenameApiKey':
    case 'UpdateApiKeyConfig':
      return decideKeySettings(command, state, now);
    default:
      return assertNever(command, 'workspace command');
  }
}

export const workspaceDecider: Decider<WorkspaceState, WorkspaceCommand, WorkspaceEvent> = {
  name: 'workspace',
  initialState,
  evolve,
  decide,
};
