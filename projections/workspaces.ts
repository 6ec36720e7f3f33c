/**
 * Read models of the workspace side, used by authentication on every request:
 * - `workspaces`: one document per workspace, with the hash of its auth token and settings;
 * - `api_keys`: one document per API key (the tenant), with its token hashes and config.
 * Service configs are stored with their secrets redacted: read models never hold a secret in
 * clear (the write side's events keep what delivery needs, sealed).
 * - `allowed_domains`: one document per (API key, allowed-domain entry), its `domain` the
 *   stored form of commands/allowed-domains.ts, indexed: what a CORS preflight, which
 *   carries no credentials, is checked against ("does any key hold this entry?",
 *   src/http/cors.ts). One document per pair rather than a list or a count per entry: each
 *   write is then idempotent (upsert or delete of one pair), and `localhost` held by many
 *   keys never becomes one ever larger document.
 * A deleted API key's document goes at once: its tokens stop authenticating with the commit.
 */
import type { Doc, ReadTx } from '../src/ports/read-store.js';
import { defineProjection } from '../src/runtime/projection.js';
import type { ApiKeySettings, ApiKeyType, WorkspaceEvent } from '../commands/workspace.js';
import { SERVICE_SECRET_FIELDS } from '../commands/service-config.js';

export const WORKSPACES = 'workspaces';
export const API_KEYS = 'api_keys';
export const ALLOWED_DOMAINS = 'allowed_domains';

export interface WorkspaceDoc extends Doc {
  name: string;
  ownerEmail: string;
  ownerName: string;
  ownerId?: string;
  ownerAvatar?: string;
  authTokenHash: string;
  plan: 'free' | 'paid';
  productionKeysEnabled: boolean;
  maxProductionKeys: number | null;
  createdAt: number;
}

interface TokenMeta {
  tokenId: string;
  hash: string;
  createdAt: number;
}

export interface ApiKeyDoc extends Doc {
  workspaceId: string;
  apiKeyName: string;
  type: ApiKeyType;
  ownerEmail: string;
  persistenceDBRegion: string | null;
  realtimeDBRegion: string | null;
  settings: ApiKeySettings;
  tokens: TokenMeta[];
  createdAt: number;
}

export const REDACTED = '__redacted__';

export function redactConfig(config: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!config) return undefined;
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, SERVICE_SECRET_FIELDS.has(k) && v ? REDACTED : v]));
}

interface AllowedDomainDoc extends Doc {
  apiKey: string;
  domain: string;
}

/** API keys are generated ids without spaces, so the pair's id is unambiguous. */
const pairId = (apiKey: string, domain: string) => `${apiKey} ${domain}`;

async function holdAll(tx: ReadTx, apiKey: string, domains: readonly string[]): Promise<void> {
  for (const domain of domains) {
    const doc: AllowedDomainDoc = { _id: pairId(apiKey, domain), apiKey, domain };
    await tx.upsert(ALLOWED_DOMAINS, doc);
  }
}


export const workspacesProjection = defineProjection<WorkspaceEvent>({
  name: 'workspaces',
  indexes: [
    { collection: API_KEYS, fields: ['workspaceId'] },
    { collection: ALLOWED_DOMAINS, fields: ['domain'] },
    { collection: ALLOWED_DOMAINS, fields: ['apiKey'] },
  ],
  handlers: {
    async WorkspaceCreated(e, tx) {
      const d = e.data;
      const doc: WorkspaceDoc = {
        _id: d.workspaceId,
        name: d.name,
        ownerEmail: d.ownerEmail,
        ownerName: d.ownerName,
        ...(d.ownerId !== undefined ? { ownerId: d.ownerId } : {}),
        ...(d.ownerAvatar !== undefined ? { ownerAvatar: d.ownerAvatar } : {}),
        authTokenHash: d.authTokenHash,
        plan: 'free',
        productionKeysEnabled: false,
        maxProductionKeys: null,
        createdAt: d.createdAt,
      };
      await tx.upsert(WORKSPACES, doc);
    },
    async WorkspaceAuthTokenRotated(e, tx) {
      const d = e.data;
      await tx.patch(WORKSPACES, d.workspaceId, { authTokenHash: d.authTokenHash });
    },
    async ApiKeyDeleted(e, tx) {
      const apiKey = e.data.apiKey;
      await tx.deleteMany(ALLOWED_DOMAINS, { apiKey });
      await tx.delete(API_KEYS, apiKey);
    },
    async ApiKeyAllowedDomainsAdded(e, tx) {
      const d = e.data;
      const key = await tx.get<ApiKeyDoc>(API_KEYS, d.apiKey);
      if (!key) return;
      const added = d.domains.filter((x) => !key.settings.allowedDomains.includes(x));
      await tx.patch(API_KEYS, d.apiKey, { 'settings.allowedDomains': [...key.settings.allowedDomains, ...added] });
      await holdAll(tx, d.apiKey, added);
    },
    async ApiKeyAllowedDomainsRemoved(e, tx) {
      const d = e.data;
      const key = await tx.get<ApiKeyDoc>(API_KEYS, d.apiKey);
      if (!key) return;
      await tx.patch(API_KEYS, d.apiKey, { 'settings.allowedDomains': key.settings.allowedDomains.filter((x) => !d.domains.includes(x)) });
      for (const domain of d.domains) await tx.delete(ALLOWED_DOMAINS, pairId(d.apiKey, domain));
    },
    async WorkspaceSettingsChanged(e, tx) {
      const d = e.data;
      const set: Record<string, unknown> = {};
      if (d.plan !== undefined) set.plan = d.plan;
      if (d.productionKeysEnabled !== undefined) set.productionKeysEnabled = d.productionKeysEnabled;
      if (d.maxProductionKeys !== undefined) set.maxProductionKeys = d.maxProductionKeys;
      await tx.patch(WORKSPACES, d.workspaceId, set);
    },
    async ApiKeyCreated(e, tx) {
      const d = e.data;
      const doc: ApiKeyDoc = {
        _id: d.apiKey,
        workspaceId: d.workspaceId,
        apiKeyName: d.apiKeyName,
        type: d.type,
        ownerEmail: d.ownerEmail,
        persistenceDBRegion: d.persistenceDBRegion,
        realtimeDBRegion: d.realtimeDBRegion,
        settings: {
          ...d.settings,
          emailServiceConfig: redactConfig(d.settings.emailServiceConfig),
          webhookServiceConfig: redactConfig(d.settings.webhookServiceConfig),
        },
        tokens: [],
        createdAt: d.createdAt,
      };
      doc.settings.allowedDomains = [...new Set(d.settings.allowedDomains)];
      await tx.upsert(API_KEYS, doc);
      await holdAll(tx, d.apiKey, doc.settings.allowedDomains);
    },
    async ApiKeyRenamed(e, tx) {
      await tx.patch(API_KEYS, e.data.apiKey, { apiKeyName: e.data.apiKeyName });
    },
    async ApiKeyConfigUpdated(e, tx) {
      const { workspaceId: _w, apiKey, updatedAt: _u, aiModelKeys, ...toggles } = e.data;
      const key = await tx.get<ApiKeyDoc>(API_KEYS, apiKey);
      if (!key) return;
      const set: Record<string, unknown> = {};
      for (const [field, v] of Object.entries(toggles)) set[`settings.${field}`] = v;
      if (aiModelKeys) {
        // Only the masked text: the sealed key stays on the write side.
        const shown = Object.fromEntries(Object.entries(aiModelKeys).map(([provider, k]) => [provider, { displayText: k.displayText }]));
        set['settings.aiModelsConfig'] = { ...key.settings.aiModelsConfig, ...shown };
      }
      await tx.patch(API_KEYS, apiKey, set);
    },
    async ApiKeyAuthTokenCreated(e, tx) {
      const d = e.data;
      const key = await tx.get<ApiKeyDoc>(API_KEYS, d.apiKey);
      if (!key) return;
      // Replay-safe: a token already listed is not added twice.
      const tokens = key.tokens.filter((t) => t.tokenId !== d.tokenId);
      tokens.push({ tokenId: d.tokenId, hash: d.tokenHash, createdAt: d.createdAt });
      await tx.patch(API_KEYS, d.apiKey, { tokens });
    },
    async ApiKeyAuthTokenRevoked(e, tx) {
      const d = e.data;
      const key = await tx.get<ApiKeyDoc>(API_KEYS, d.apiKey);
      if (!key) return;
      await tx.patch(API_KEYS, d.apiKey, { tokens: key.tokens.filter((t) => t.tokenId !== d.tokenId) });
    },
  },
});
