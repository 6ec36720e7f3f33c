/**
 * The workspace reads and key settings integrators' scripts call (issue 28):
 * `workspace/get`, `apikeys/get`, `apikey/update` (workspace credentials) and
 * `apikeyconfig/get` and `update`, `emailconfig/get`, `webhookconfig/get` (the API key's
 * own). Reads come from the read models, which hold no secret (projections/workspaces.ts):
 * a secret the hosted pages show on a read is answered `"__redacted__"` here
 * (docs/compatibility.md). The routes are src/http/routes/workspace-settings.ts.
 */
import { workspaceDecider, workspaceStream, API_KEY_NOT_FOUND } from '../../commands/workspace.js';
import { maskModelKey, type AiModelKey, type AiProvider, type ApiKeyConfigChange } from '../../commands/api-key-config.js';
import { apiKeyOfWorkspace } from '../../queries/credentials.js';
import { decodePageToken, encodePageToken } from '../../queries/paging.js';
import { API_KEYS, REDACTED, WORKSPACES, redactConfig, type ApiKeyDoc, type WorkspaceDoc } from '../../projections/workspaces.js';
import { notFound } from '../shared/errors.js';
import type { TenantContext, UseCaseContext } from './context.js';

/** `workspace/get` lists at most this many keys in `apiKeyList` (all of them: apikeys/get, paged). */
export const WORKSPACE_GET_MAX_KEYS = 1000;
/** `apikeys/get`'s page size bound and default, as the hosted page documents them. */
export const API_KEYS_MAX_PAGE_SIZE = 100;

const keyRow = (k: ApiKeyDoc) => ({ id: k._id, apiKeyName: k.apiKeyName, type: k.type });

/** The workspace as workspace/create answered it, its auth token redacted (shown once, by create or rotate). */
export async function getWorkspace(ctx: UseCaseContext, workspaceId: string) {
  const { read } = ctx.services;
  const w = await read.get<WorkspaceDoc>(WORKSPACES, workspaceId);
  if (!w) throw notFound('Workspace not found.');
  const keys = await read.find<ApiKeyDoc>(API_KEYS, { workspaceId }, { limit: WORKSPACE_GET_MAX_KEYS });
  return {
    id: w._id,
    name: w.name,
    owner: {
      email: w.ownerEmail,
      id: w.ownerId ?? '',
      name: w.ownerName,
      ...(w.ownerAvatar !== undefined ? { avatar: w.ownerAvatar } : {}),
    },
    authToken: REDACTED,
    apiKeyList: Object.fromEntries(keys.map((k) => [k._id, keyRow(k)])),
  };
}

/**
 * The workspace's keys in id order, `pageSize` at a time; `apiKeys` keeps only those ids
 * (others' and unknown ones left out). The page token is bound to the workspace and filter.
 */
export async function listApiKeys(ctx: UseCaseContext, workspaceId: string, q: { apiKeys?: string[] | undefined; pageSize?: number | undefined; pageToken?: string | undefined }) {
  const pageSize = q.pageSize ?? API_KEYS_MAX_PAGE_SIZE;
  const query = { route: 'workspace/apikeys/get', workspaceId, apiKeys: q.apiKeys ?? null };
  const after = decodePageToken(q.pageToken, query);
  let found: ApiKeyDoc[];
  if (q.apiKeys) {
    // At most API_KEYS_MAX_PAGE_SIZE ids (the route's bound): all read, then paged.
    const wanted = [...new Set(q.apiKeys)].sort().filter((id) => !after || id > after.id);
    found = (await ctx.services.read.getMany<ApiKeyDoc>(API_KEYS, wanted)).filter((k) => k.workspaceId === workspaceId);
  } else {
    found = await ctx.services.read.find<ApiKeyDoc>(API_KEYS, { workspaceId }, { ...(after ? { after } : {}), limit: pageSize + 1 });
  }
  const page = found.slice(0, pageSize);
  const last = page[page.length - 1];
  return { rows: page.map(keyRow), pageToken: found.length > pageSize && last ? encodePageToken(query, { value: last._id, id: last._id }) : undefined };
}

/** Renames a key of the workspace (NOT_FOUND "API key not found." for any other). */
export async function renameApiKey(ctx: UseCaseContext, workspaceId: string, apiKey: string, apiKeyName: string) {
  await ctx.execute(workspaceDecider, workspaceStream(workspaceId), { type: 'RenameApiKey', data: { apiKey, apiKeyName } });
}

/** A use case of the key's own workspace: the tenant names it. */
type KeyContext = TenantContext & { readonly services: UseCaseContext['services']; readonly tenant?: { readonly workspaceId: string } | undefined };

async function ownKey(ctx: KeyContext): Promise<ApiKeyDoc> {
  const key = await apiKeyOfWorkspace(ctx.services.read, ctx.tenant!.workspaceId, ctx.apiKey);
  // Authentication found this key a moment ago; gone now, it was deleted in between.
  if (!key) throw notFound(API_KEY_NOT_FOUND);
  return key;
}

/** What apikeyconfig/get answers (and update echoes a part of). */
function configView(key: ApiKeyDoc, plan: string) {
  const s = key.settings;
  const ai = s.aiModelsConfig;
  return {
    ownerEmail: key.ownerEmail,
    planInfo: { type: plan },
    defaultDocumentAccessType: s.defaultDocumentAccessType ?? 'public',
    isPrivateCommentsEnabled: s.enablePrivateComments,
    requireJwtToken: s.requireJwtToken ?? false,
    requireAutoOrgUser: s.requireAutoOrgUser,
    ...(ai && Object.keys(ai).length > 0 ? { aiModelsConfig: ai } : {}),
  };
}

export async function getApiKeyConfig(ctx: KeyContext) {
  const key = await ownKey(ctx);
  const w = await ctx.services.read.get<WorkspaceDoc>(WORKSPACES, key.workspaceId);
  return configView(key, w?.plan ?? 'free');
}

export interface ApiKeyConfigUpdate {
  enablePrivateComments?: boolean | undefined;
  requireJwtToken?: boolean | undefined;
  requireAutoOrgUser?: boolean | undefined;
  defaultDocumentAccessType?: 'public' | 'restricted' | 'organizationPrivate' | undefined;
  aiModelApiKey?: Array<{ provider: AiProvider; customerApiKey: string }> | undefined;
}

/**
 * Merges the update into the key's configuration; AI model keys are sealed here (the last
 * entry wins for a provider sent twice). Answers the post-write values of the fields sent,
 * AI keys masked under `aiModelsConfig`, as the hosted page shows.
 */
export async function updateApiKeyConfig(ctx: KeyContext, data: ApiKeyConfigUpdate) {
  const { aiModelApiKey, ...toggles } = data;
  const change: ApiKeyConfigChange = Object.fromEntries(Object.entries(toggles).filter(([, v]) => v !== undefined));
  if (aiModelApiKey) {
    const seal = await ctx.services.secrets.sealer(ctx.apiKey);
    const keys: Partial<Record<AiProvider, AiModelKey>> = {};
    for (const { provider, customerApiKey } of aiModelApiKey) keys[provider] = { secret: seal(customerApiKey), displayText: maskModelKey(customerApiKey) };
    change.aiModelKeys = keys;
  }
  await ctx.execute(workspaceDecider, workspaceStream(ctx.tenant!.workspaceId), { type: 'UpdateApiKeyConfig', data: { apiKey: ctx.apiKey, change } });
  const out: Record<string, unknown> = { ...toggles };
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  if (change.aiModelKeys) {
    out.aiModelsConfig = Object.fromEntries(Object.entries(change.aiModelKeys).map(([p, k]) => [p, { displayText: k.displayText }]));
  }
  return out;
}

const EMAIL_FIELDS = ['type', 'apiKey', 'fromEmail', 'fromCompany', 'commentTemplateId', 'tagTemplateId'] as const;
const WEBHOOK_FIELDS = ['authToken', 'rawNotificationUrl', 'processedNotificationUrl'] as const;

/** Every field the hosted page shows, `""` when not set (`type`: `"default"`); secrets redacted. */
function fullConfig(fields: readonly string[], stored: Record<string, string> | undefined, defaults: Record<string, string> = {}) {
  const shown = redactConfig(stored) ?? {};
  return Object.fromEntries(fields.map((f) => [f, shown[f] || defaults[f] || '']));
}

export async function getEmailConfig(ctx: KeyContext) {
  const s = (await ownKey(ctx)).settings;
  return { useEmailService: s.useEmailService, emailServiceConfig: fullConfig(EMAIL_FIELDS, s.emailServiceConfig, { type: 'default' }) };
}

export async function getWebhookConfig(ctx: KeyContext) {
  const s = (await ownKey(ctx)).settings;
  return { useWebhookService: s.useWebhookService, webhookServiceConfig: fullConfig(WEBHOOK_FIELDS, s.webhookServiceConfig) };
}
