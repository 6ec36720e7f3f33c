/**
 * Workspace mode's use cases (semantics §2): creating a workspace with its first key, API
 * keys, listing and resetting a key's auth tokens, and the fresh auth tokens every credential
 * route hands out. Secrets are generated here, returned once, and handed to the aggregate only
 * as hashes. Shared by the routes (src/http/routes/workspace.ts, key-lifecycle.ts) and the
 * CLI (src/cli.ts).
 */
import { API_KEY_NOT_FOUND, workspaceDecider, workspaceStream, type ApiKeySettings, type NewApiKey, type WorkspaceCommand } from '../../commands/workspace.js';
import { MAX_DOMAINS_PER_KEY } from '../../commands/allowed-domains.js';
import { apiKeyOfWorkspace } from '../../queries/credentials.js';
import { REDACTED } from '../../projections/workspaces.js';
import { sealServiceConfig } from '../secrets/configs.js';
import { stamp } from '../runtime/decider.js';
import { invalidArgument, notFound } from '../shared/errors.js';
import { hashSecret, newId, newSecret } from '../shared/ids.js';
import { normalizeAllowedDomains } from './allowed-domains.js';
import type { UseCaseContext } from './context.js';

/** A fresh auth token: the secret (returned once) and what is stored (its hash). */
export const newToken = () => {
  const secret = newSecret();
  return { secret, tokenId: newId(), tokenHash: hashSecret(secret) };
};

export const defaultSettings = (): ApiKeySettings => ({
  allowedDomains: [],
  useEmailService: false,
  useWebhookService: false,
  useNotificationService: false,
  setDefaultNotificationTriggers: false,
  setDefaultEmailTriggers: false,
  requireAutoOrgUser: false,
  enablePrivateComments: false,
});

/**
 * The first key's default name, as the hosted API makes it: the part of `ownerEmail` before
 * the `@`, capitalized, then " Test API Key". Example: `owner@example.com` -> "Owner Test API Key".
 */
const defaultKeyName = (ownerEmail: string) => {
  const local = ownerEmail.slice(0, ownerEmail.lastIndexOf('@'));
  return `${local.charAt(0).toUpperCase()}${local.slice(1)} Test API Key`;
};

/**
 * Creates a workspace with one testing key; shared by the route and the CLI. Defaults as
 * the hosted API documents them: the owner's name is `ownerEmail`, the workspace's name is
 * "<name> workspace" (so "<ownerEmail> workspace" when neither is given).
 */
export async function createWorkspace(
  ctx: UseCaseContext,
  input: { ownerEmail: string; name?: string; workspaceName?: string; avatar?: string },
) {
  const workspaceId = newId();
  const ownerId = newId();
  const wsToken = newToken();
  const keyToken = newToken();
  const ownerName = input.name ?? input.ownerEmail;
  const firstKey: NewApiKey = {
    apiKey: newId(),
    apiKeyName: defaultKeyName(input.ownerEmail),
    type: 'testing',
    ownerEmail: input.ownerEmail,
    persistenceDBRegion: null,
    realtimeDBRegion: null,
    settings: defaultSettings(),
    token: { tokenId: keyToken.tokenId, tokenHash: keyToken.tokenHash },
  };
  const name = input.workspaceName ?? `${ownerName} workspace`;
  await ctx.execute(workspaceDecider, workspaceStream(workspaceId), {
    type: 'CreateWorkspace',
    data: {
      workspaceId,
      name,
      ownerEmail: input.ownerEmail,
      ownerName,
      ownerId,
      ...(input.avatar !== undefined ? { ownerAvatar: input.avatar } : {}),
      authTokenHash: wsToken.tokenHash,
      firstKey,
    },
  });
  return {
    id: workspaceId,
    name,
    owner: { email: input.ownerEmail, id: ownerId, name: ownerName, ...(input.avatar !== undefined ? { avatar: input.avatar } : {}) },
    authToken: wsToken.secret,
    apiKeyList: {
      // `authToken`: the hosted API leaves it out and has clients read it from
      // authtokens/get; here secrets are shown once, so this is where the client gets it.
      [firstKey.apiKey]: { apiKeyName: firstKey.apiKeyName, id: firstKey.apiKey, type: 'testing', authToken: keyToken.secret },
    },
  };
}

/** The auth tokens' display name (tokens have no name of their own here; docs/compatibility.md). */
export const AUTH_TOKEN_NAME = 'Default Auth Token';

/**
 * An auth token as the hosted API shows it (`{ token, name, domains }`), plus the `tokenId`
 * that `authtoken/reset` accepts and, on a list, its creation time. `token` is the secret
 * only on the answer that created it; every read shows `"__redacted__"` (semantics §0).
 */
const tokenView = (token: string, tokenId: string, createdAt?: number) => ({
  token,
  name: AUTH_TOKEN_NAME,
  domains: [] as string[],
  tokenId,
  ...(createdAt !== undefined ? { createdAt } : {}),
});

type Opt = string | undefined;
/** What apikey/create takes once validated. */
interface ApiKeyInput {
  ownerEmail?: Opt;
  type: 'testing' | 'production';
  persistenceDBRegion?: Opt;
  realtimeDBRegion?: Opt;
  createAuthToken?: boolean | undefined;
  apiKeyName?: Opt;
  allowedDomains?: string[] | undefined;
  addLocalHostToAllowedDomains?: boolean | undefined;
  useEmailService?: boolean | undefined;
  useWebhookService?: boolean | undefined;
  useNotificationService?: boolean | undefined;
  setDefaultNotificationTriggers?: boolean | undefined;
  setDefaultEmailTriggers?: boolean | undefined;
  requireAutoOrgUser?: boolean | undefined;
  enablePrivateComments?: boolean | undefined;
  emailServiceConfig?: Record<string, Opt> | undefined;
  webhookServiceConfig?: Record<string, Opt> | undefined;
}

/**
 * The new key's settings. Allowed domains are stored as domains/add stores them
 * (commands/allowed-domains.ts), checked before anything else is done; `localhost` counts
 * within the key's bound like any entry.
 */
function apiKeySettings(input: ApiKeyInput): ApiKeySettings {
  const allowedDomains = [...new Set([...normalizeAllowedDomains(input.allowedDomains ?? [], 'allowedDomains'), ...(input.addLocalHostToAllowedDomains ? ['localhost'] : [])])];
  if (allowedDomains.length > MAX_DOMAINS_PER_KEY) {
    throw invalidArgument(`data.allowedDomains with localhost has ${allowedDomains.length} entries; an API key has at most ${MAX_DOMAINS_PER_KEY} allowed domains.`);
  }
  return {
    ...defaultSettings(),
    allowedDomains,
    useEmailService: input.useEmailService ?? false,
    useWebhookService: input.useWebhookService ?? false,
    useNotificationService: input.useNotificationService ?? false,
    setDefaultNotificationTriggers: input.setDefaultNotificationTriggers ?? false,
    setDefaultEmailTriggers: input.setDefaultEmailTriggers ?? false,
    requireAutoOrgUser: input.requireAutoOrgUser ?? false,
    enablePrivateComments: input.enablePrivateComments ?? false,
  };
}

const dropUndefined = (o: Record<string, Opt>): Record<string, string> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Record<string, string>;

/**
 * Creates an API key in `workspaceId`; with `createAuthToken` the answer carries its first
 * auth token, the secret shown only there. `ownerEmail` is required, checked here so that its
 * absence answers in the hosted API's words ("ownerEmail is required.").
 */
export async function createApiKey(ctx: UseCaseContext, workspaceId: string, input: ApiKeyInput) {
  const { ownerEmail } = input;
  if (ownerEmail === undefined) throw invalidArgument('ownerEmail is required.', { fields: [{ field: 'data.ownerEmail', code: 'invalid_type' }] });
  const token = input.createAuthToken ? newToken() : undefined;
  const settings = apiKeySettings(input);
  const apiKey = newId();
  const command = {
    type: 'CreateApiKey' as const,
    data: {
      apiKey,
      apiKeyName: input.apiKeyName ?? `${input.type} key`,
      type: input.type,
      ownerEmail,
      // persistenceDBRegion applies to production keys only; the default is the first
      // (North America) region of the configured list.
      persistenceDBRegion: input.type === 'production' ? (input.persistenceDBRegion ?? ctx.services.config.regions[0]!) : null,
      realtimeDBRegion: input.realtimeDBRegion ?? null,
      settings,
      ...(token ? { token: { tokenId: token.tokenId, tokenHash: token.tokenHash } } : {}),
    },
  };
  const stream = workspaceStream(workspaceId);
  if (input.emailServiceConfig || input.webhookServiceConfig) {
    // The service configs' secrets are sealed with the new key's own data key
    // (src/secrets/), which sealing creates: a refusal (a production key over the limit,
    // say) is found first, on the current state, so it leaves no data key behind.
    workspaceDecider.decide(stamp<WorkspaceCommand>(command, ctx.now), (await ctx.services.commands.load(workspaceDecider, stream)).state);
    if (input.emailServiceConfig) settings.emailServiceConfig = await sealServiceConfig(ctx.services.secrets, apiKey, dropUndefined(input.emailServiceConfig));
    if (input.webhookServiceConfig) settings.webhookServiceConfig = await sealServiceConfig(ctx.services.secrets, apiKey, dropUndefined(input.webhookServiceConfig));
  }
  await ctx.execute(workspaceDecider, stream, command);
  return { apiKey, ...(token ? { authToken: token.secret } : {}) };
}

/** A key's auth tokens, without their secrets; NOT_FOUND for a key `workspaceId` does not have. */
export async function listAuthTokens(ctx: UseCaseContext, workspaceId: string, apiKey: string) {
  const key = await apiKeyOfWorkspace(ctx.services.read, workspaceId, apiKey);
  if (!key) throw notFound(API_KEY_NOT_FOUND);
  return { apiKey: key._id, authTokens: key.tokens.map((t) => tokenView(REDACTED, t.tokenId, t.createdAt)) };
}

/** A new auth token for the key, replacing all of its tokens, or only `revokeTokenId`. */
export async function resetAuthToken(ctx: UseCaseContext, workspaceId: string, apiKey: string, revokeTokenId: string | undefined) {
  const token = newToken();
  await ctx.execute(workspaceDecider, workspaceStream(workspaceId), {
    type: 'ResetAuthToken',
    data: { apiKey, revokeTokenId, tokenId: token.tokenId, tokenHash: token.tokenHash },
  });
  return { apiKey, newAuthToken: tokenView(token.secret, token.tokenId) };
}
