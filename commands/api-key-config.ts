/**
 * An API key's app configuration (`/v2/workspace/apikeyconfig/get` and `update`): the
 * private-comments, JWT and auto-org-user toggles, the default document access type, and the
 * customers' AI model keys. Kept on the key in the workspace aggregate (commands/workspace.ts).
 *
 * AI model keys are secrets: commands carry them sealed with the API key's data key (the
 * route seals them, src/secrets/), each with `displayText`, the masked form reads show; the
 * read model keeps only `displayText`. Writes are field merges, as the hosted API documents:
 * nothing is ever removed, and a provider sent again replaces that provider's key only.
 */
export const DOCUMENT_ACCESS_TYPES = ['public', 'restricted', 'organizationPrivate'] as const;
export type DocumentAccessType = (typeof DOCUMENT_ACCESS_TYPES)[number];

export const AI_PROVIDERS = ['openai', 'anthropic', 'gemini'] as const;
export type AiProvider = (typeof AI_PROVIDERS)[number];

/** A stored AI model key: `secret` (sealed) never leaves the write side, and its name is one the redaction of audit entries and webhook payloads (commands/redaction.ts) always hides; `displayText` is what reads show. */
export interface AiModelKey {
  secret: string;
  displayText: string;
}

export interface ApiKeyConfig {
  enablePrivateComments: boolean;
  requireJwtToken: boolean;
  requireAutoOrgUser: boolean;
  defaultDocumentAccessType: DocumentAccessType;
  aiModelKeys: Partial<Record<AiProvider, AiModelKey>>;
}

/** The fields an update sets (and an `ApiKeyConfigUpdated` event carries): absent ones are kept. */
export type ApiKeyConfigChange = Partial<Omit<ApiKeyConfig, 'aiModelKeys'>> & { aiModelKeys?: Partial<Record<AiProvider, AiModelKey>> };

/** A new key's configuration: apikey/create's two toggles, the rest the hosted defaults. */
export const initialKeyConfig = (settings: { enablePrivateComments: boolean; requireAutoOrgUser: boolean }): ApiKeyConfig => ({
  enablePrivateComments: settings.enablePrivateComments,
  requireJwtToken: false,
  requireAutoOrgUser: settings.requireAutoOrgUser,
  defaultDocumentAccessType: 'public',
  aiModelKeys: {},
});

const TOGGLES = ['enablePrivateComments', 'requireJwtToken', 'requireAutoOrgUser', 'defaultDocumentAccessType'] as const;

/**
 * The part of `change` that differs from `config`, or null when nothing does. AI model keys
 * always count as a change: each is sealed afresh, so two sealings of one key never compare
 * equal. Example: `{ requireJwtToken: false }` on a key that has it false -> null.
 */
export function changedConfig(config: ApiKeyConfig, change: ApiKeyConfigChange): ApiKeyConfigChange | null {
  const out: Record<string, unknown> = {};
  for (const f of TOGGLES) {
    if (change[f] !== undefined && change[f] !== config[f]) out[f] = change[f];
  }
  if (change.aiModelKeys && Object.keys(change.aiModelKeys).length > 0) out.aiModelKeys = change.aiModelKeys;
  return Object.keys(out).length > 0 ? (out as ApiKeyConfigChange) : null;
}

/** `config` with `change` merged in (field by field; AI model keys provider by provider). */
export function withConfigChange(config: ApiKeyConfig, change: ApiKeyConfigChange): ApiKeyConfig {
  const { aiModelKeys, ...toggles } = change;
  return { ...config, ...toggles, aiModelKeys: { ...config.aiModelKeys, ...aiModelKeys } };
}

/**
 * The masked form of an AI model key: its first 4 and last 3 characters, when the key is
 * long enough (20 characters or more) that those 7 leave the rest unguessable; otherwise
 * nothing of it. Example: `sk-proj-abcdefghijklmnopXyZ` -> `sk-p...XyZ`; `short-key` -> `...`.
 */
export const maskModelKey = (key: string): string => (key.length >= 20 ? `${key.slice(0, 4)}...${key.slice(-3)}` : '...');
