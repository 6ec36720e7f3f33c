/**
 * Workspace mode: create a workspace, create API keys, list and reset a key's auth tokens
 * (semantics §2). Secrets are generated here, returned once, and handed to the aggregate
 * only as hashes.
 */
import { z } from 'zod';
import { API_KEY_NOT_FOUND, workspaceDecider, workspaceStream, type ApiKeySettings } from '../../../commands/workspace.js';
import { apiKeyOfWorkspace } from '../../../queries/credentials.js';
import { REDACTED } from '../../../projections/workspaces.js';
import { invalidArgument, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { shownOnce } from '../schema.js';
import { createWorkspace, defaultSettings, newToken } from '../../usecases/workspace.js';
import { email, id, text, webhookUrl } from '../validation.js';
import { egressPolicyOf } from '../../adapters/egress.js';
import { sealServiceConfig } from '../../secrets/configs.js';
import { allowedDomainRoutes, normalizeAllowedDomains } from './allowed-domains.js';
import { MAX_DOMAIN_INPUT, MAX_DOMAINS_PER_KEY } from '../../../commands/allowed-domains.js';

const configString = () => z.string().max(2048).optional();

/** The auth tokens' display name (tokens have no name of their own here; docs/compatibility.md). */
export const AUTH_TOKEN_NAME = 'Default Auth Token';

/**
 * An auth token as the hosted API shows it (`{ token, name, domains }`), plus the `tokenId`
 * that `authtoken/reset` accepts and, on a list, its creation time. `token` is the secret
 * only on the answer that created it; every read shows `"__redacted__"` (semantics §0).
 */
export const tokenView = (token: string, tokenId: string, createdAt?: number) => ({
  token,
  name: AUTH_TOKEN_NAME,
  domains: [] as string[],
  tokenId,
  ...(createdAt !== undefined ? { createdAt } : {}),
});

// ---- answers (what the routes below return as `result.data`) ----

/** `tokenView` without `createdAt`: the token an answer creates. */
const newAuthTokenAnswer = z.object({
  token: shownOnce('The auth token (send it as `x-service-auth-token` with the API key)'),
  name: z.string().describe(`Always "${AUTH_TOKEN_NAME}": tokens have no name of their own here.`),
  domains: z.array(z.string()).describe('Always empty (kept for the hosted API\'s shape).'),
  tokenId: z.string().describe('Names the token to `/v2/workspace/authtoken/reset`.'),
});

/** `tokenView` as a list shows it: the secret redacted, with its creation time. */
const listedAuthTokenAnswer = newAuthTokenAnswer.extend({
  token: z.literal(REDACTED).describe('Never the secret: it is shown once, when the token is created or reset.'),
  createdAt: z.number().describe('Unix milliseconds.'),
});

const workspaceAnswer = z.object({
  id: z.string().describe('The workspace id (`x-service-workspace-id`).'),
  name: z.string(),
  owner: z.object({ email: z.string(), id: z.string(), name: z.string(), avatar: z.string().optional() }),
  authToken: shownOnce('The workspace auth token (`x-service-workspace-auth-token`)'),
  apiKeyList: z
    .record(
      z.string(),
      z.object({
        apiKeyName: z.string(),
        id: z.string().describe('The API key (`x-service-api-key`), the same as the map key.'),
        type: z.literal('testing'),
        authToken: shownOnce('The key\'s auth token (`x-service-auth-token`)'),
      }),
    )
    .describe('The workspace\'s first API key, keyed by its id: always one testing key.'),
});

export function workspaceRoutes(services: Services): AnyRoute[] {
  const regions = services.config.regions;
  const region = () => z.enum(regions as [string, ...string[]]).optional();
  const egress = egressPolicyOf(services.config);
  const httpUrl = () => webhookUrl(egress).optional();

  const createWorkspaceRoute = defineRoute({
    path: '/v2/workspace/create',
    tag: 'Workspace',
    doc: {
      summary: 'Create a workspace with its owner and a first testing API key',
      description: [
        'An operator call: it needs `x-service-admin-token` when the service runs with `ADMIN_TOKEN`, and no credentials otherwise.',
        '',
        '- `name` (the owner\'s) defaults to `ownerEmail`; `workspaceName` to `"<name> workspace"`.',
        '- The first key is a testing key named after the part of `ownerEmail` before the `@` (`owner@example.com` gives "Owner Test API Key").',
        '- The workspace auth token and the key\'s auth token are secrets shown only in this answer.',
      ].join('\n'),
      example: { ownerEmail: 'owner@example.com', name: 'John Doe', workspaceName: 'My Workspace', avatar: 'https://example.com/avatar.png' },
    },
    mutates: true,
    auth: 'admin',
    // Bounds as the hosted API documents them: names 1..200 characters, the avatar URL at
    // most 2000.
    schema: z.object({
      ownerEmail: email(),
      name: text(200).min(1).optional(),
      workspaceName: text(200).min(1).optional(),
      avatar: text(2000).optional(),
    }),
    response: workspaceAnswer,
    handler: (data, ctx) => createWorkspace(ctx, data).then((created) => ({
      message: 'Workspace created successfully',
      data: created,
    })),
  });

  const createApiKey = defineRoute({
    path: '/v2/workspace/apikey/create',
    tag: 'API keys',
    doc: {
      summary: 'Create an API key in the workspace',
      description: [
        '- `ownerEmail` and `type` are required.',
        '- A `production` key needs the workspace enabled for production keys (else `PERMISSION_DENIED`), on a paid plan (else `FAILED_PRECONDITION`) and under its production-key limit (else `RESOURCE_EXHAUSTED`).',
        `- \`persistenceDBRegion\` applies to production keys only and defaults to the first supported region (\`${regions[0]}\`); regions are one of the service's configured list.`,
        '- With `createAuthToken: true` the answer carries the key\'s first auth token, a secret shown only here; without it, create one with `/v2/workspace/authtoken/reset`.',
        '- The secrets of `emailServiceConfig` and `webhookServiceConfig` are stored encrypted and read back as `"__redacted__"`.',
      ].join('\n'),
      example: { ownerEmail: 'owner@example.com', type: 'testing', createAuthToken: true },
    },
    mutates: true,
    auth: 'workspace',
    schema: z.object({
      // Required; checked in the handler so that its absence answers in the hosted API's
      // words ("ownerEmail is required.").
      ownerEmail: email().optional(),
      type: z.enum(['testing', 'production']),
      persistenceDBRegion: region(),
      realtimeDBRegion: region(),
      createAuthToken: z.boolean().optional(),
      apiKeyName: text(256).optional(),
      allowedDomains: z.array(text(MAX_DOMAIN_INPUT)).max(MAX_DOMAINS_PER_KEY).optional(),
      addLocalHostToAllowedDomains: z.boolean().optional(),
      useEmailService: z.boolean().optional(),
      useWebhookService: z.boolean().optional(),
      useNotificationService: z.boolean().optional(),
      setDefaultNotificationTriggers: z.boolean().optional(),
      setDefaultEmailTriggers: z.boolean().optional(),
      requireAutoOrgUser: z.boolean().optional(),
      enablePrivateComments: z.boolean().optional(),
      emailServiceConfig: z
        .object({
          type: configString(),
          apiKey: configString(),
          fromEmail: z.string().max(320).pipe(z.email()).optional(),
          fromCompany: configString(),
          commentTemplateId: configString(),
          tagTemplateId: configString(),
        })
        .optional(),
      webhookServiceConfig: z
        .object({ authToken: configString(), rawNotificationUrl: httpUrl(), processedNotificationUrl: httpUrl() })
        .optional(),
    }),
    response: z.object({
      apiKey: z.string().describe('The new API key (`x-service-api-key`).'),
      authToken: shownOnce('Present with `createAuthToken: true`: the key\'s auth token').optional(),
    }),
    errors: ['FAILED_PRECONDITION'],
    async handler(data, ctx) {
      const { ownerEmail } = data;
      if (ownerEmail === undefined) throw invalidArgument('ownerEmail is required.', { fields: [{ field: 'data.ownerEmail', code: 'invalid_type' }] });
      const workspaceId = ctx.workspaceId!;
      const token = data.createAuthToken ? newToken() : undefined;
      // Entries as domains/add stores them (commands/allowed-domains.ts), checked before
      // anything else is done; `localhost` counts within the key's bound like any entry.
      const allowedDomains = [...new Set([...normalizeAllowedDomains(data.allowedDomains ?? [], 'allowedDomains'), ...(data.addLocalHostToAllowedDomains ? ['localhost'] : [])])];
      if (allowedDomains.length > MAX_DOMAINS_PER_KEY) {
        throw invalidArgument(`data.allowedDomains with localhost has ${allowedDomains.length} entries; an API key has at most ${MAX_DOMAINS_PER_KEY} allowed domains.`);
      }
      const settings: ApiKeySettings = {
        ...defaultSettings(),
        allowedDomains,
        useEmailService: data.useEmailService ?? false,
        useWebhookService: data.useWebhookService ?? false,
        useNotificationService: data.useNotificationService ?? false,
        setDefaultNotificationTriggers: data.setDefaultNotificationTriggers ?? false,
        setDefaultEmailTriggers: data.setDefaultEmailTriggers ?? false,
        requireAutoOrgUser: data.requireAutoOrgUser ?? false,
        enablePrivateComments: data.enablePrivateComments ?? false,
      };
      const production = data.type === 'production';
      const apiKey = newId();
      const command = {
        type: 'CreateApiKey' as const,
        data: {
          apiKey,
          apiKeyName: data.apiKeyName ?? `${data.type} key`,
          type: data.type,
          ownerEmail,
          // persistenceDBRegion applies to production keys only; the default is the first
          // (North America) region of the configured list.
          persistenceDBRegion: production ? (data.persistenceDBRegion ?? regions[0]!) : null,
          realtimeDBRegion: data.realtimeDBRegion ?? null,
          settings,
          ...(token ? { token: { tokenId: token.tokenId, tokenHash: token.tokenHash } } : {}),
        },
        metadata: { now: ctx.now },
      };
      const stream = workspaceStream(workspaceId);
      if (data.emailServiceConfig || data.webhookServiceConfig) {
        // The service configs' secrets are sealed with the new key's own data key
        // (src/secrets/), which sealing creates: a refusal (a production key over the limit,
        // say) is found first, on the current state, so it leaves no data key behind.
        workspaceDecider.decide(command, (await services.commands.load(workspaceDecider, stream)).state);
        if (data.emailServiceConfig) settings.emailServiceConfig = await sealServiceConfig(services.secrets, apiKey, dropUndefined(data.emailServiceConfig));
        if (data.webhookServiceConfig) settings.webhookServiceConfig = await sealServiceConfig(services.secrets, apiKey, dropUndefined(data.webhookServiceConfig));
      }
      await ctx.execute(workspaceDecider, stream, command);
      return {
        message: 'API key created successfully.',
        data: { apiKey, ...(token ? { authToken: token.secret } : {}) },
      };
    },
  });

  const getAuthTokens = defineRoute({
    path: '/v2/workspace/authtokens/get',
    tag: 'API keys',
    doc: {
      summary: 'List an API key\'s auth tokens',
      description: 'Tokens are listed without their secret (`token` reads `"__redacted__"`): a secret is shown once, by the call that creates it. `tokenId` names a token to `/v2/workspace/authtoken/reset`.',
      example: { apiKey: 'velt_api_key_1' },
    },
    mutates: false,
    auth: 'workspace',
    schema: z.object({ apiKey: id() }),
    response: z.object({ apiKey: z.string(), authTokens: z.array(listedAuthTokenAnswer) }),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const key = await apiKeyOfWorkspace(services.read, ctx.workspaceId!, data.apiKey);
      if (!key) throw notFound(API_KEY_NOT_FOUND);
      return {
        message: 'Auth tokens retrieved successfully.',
        data: { apiKey: key._id, authTokens: key.tokens.map((t) => tokenView(REDACTED, t.tokenId, t.createdAt)) },
      };
    },
  });

  const resetAuthToken = defineRoute({
    path: '/v2/workspace/authtoken/reset',
    tag: 'API keys',
    doc: {
      summary: 'Replace an API key\'s auth tokens with a new one',
      description: [
        '- Without `tokenId`: every auth token of the key stops at once, and one new token replaces them.',
        '- With `tokenId` (from `/v2/workspace/authtokens/get`): only that token stops; the others keep working.',
        '- The new token\'s secret is shown only in this answer.',
      ].join('\n'),
      example: { apiKey: 'velt_api_key_1' },
    },
    mutates: true,
    auth: 'workspace',
    schema: z.object({ apiKey: id(), tokenId: id().optional() }),
    response: z.object({ apiKey: z.string(), newAuthToken: newAuthTokenAnswer }),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const token = newToken();
      await ctx.execute(workspaceDecider, workspaceStream(ctx.workspaceId!), {
        type: 'ResetAuthToken',
        data: { apiKey: data.apiKey, revokeTokenId: data.tokenId, tokenId: token.tokenId, tokenHash: token.tokenHash },
        metadata: { now: ctx.now },
      });
      return {
        message: 'Auth token reset successfully.',
        data: { apiKey: data.apiKey, newAuthToken: tokenView(token.secret, token.tokenId) },
      };
    },
  });

  return [createWorkspaceRoute, createApiKey, getAuthTokens, resetAuthToken, ...allowedDomainRoutes()];
}

function dropUndefined(o: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Record<string, string>;
}
