/**
 * Workspace mode: create a workspace, create API keys, list and reset a key's auth tokens
 * (semantics §2): the requests and answers; what each route does is src/usecases/workspace.ts,
 * where secrets are generated, returned once, and handed to the aggregate only as hashes.
 */
import { z } from 'zod';
import { REDACTED } from '../../../projections/workspaces.js';
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { shownOnce } from '../schema.js';
import { AUTH_TOKEN_NAME, createApiKey, createWorkspace, listAuthTokens, resetAuthToken } from '../../usecases/workspace.js';
import { email, id, text, webhookUrl } from '../validation.js';
import { egressPolicyOf } from '../../adapters/egress.js';
import { MAX_DOMAIN_INPUT, MAX_DOMAINS_PER_KEY } from '../../../commands/allowed-domains.js';

const configString = () => z.string().max(2048).optional();

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
  handler: async (data, ctx) => ({ message: 'Auth tokens retrieved successfully.', data: await listAuthTokens(ctx, ctx.workspaceId!, data.apiKey) }),
});

const resetAuthTokenRoute = defineRoute({
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
  handler: async (data, ctx) => ({ message: 'Auth token reset successfully.', data: await resetAuthToken(ctx, ctx.workspaceId!, data.apiKey, data.tokenId) }),
});

/** apikey/create: its regions and URL checks are the service's configured ones. */
function createApiKeyRoute(services: Services): AnyRoute {
  const regions = services.config.regions;
  const region = () => z.enum(regions as [string, ...string[]]).optional();
  const egress = egressPolicyOf(services.config);
  const httpUrl = () => webhookUrl(egress).optional();

  return defineRoute({
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
    handler: async (data, ctx) => ({ message: 'API key created successfully.', data: await createApiKey(ctx, ctx.workspaceId!, data) }),
  });
}

export function workspaceRoutes(services: Services): AnyRoute[] {
  return [createWorkspaceRoute, createApiKeyRoute(services), getAuthTokens, resetAuthTokenRoute];
}
