/**
 * The workspace routes integrators' scripts call (issue 28), as the hosted pages document
 * them: `workspace/get`, `apikeys/get`, `apikey/update` (workspace credentials) and
 * `apikeyconfig/get` and `update`, `emailconfig/get`, `webhookconfig/get` (the API key's
 * own). What each does is src/usecases/workspace-settings.ts; no read answers a secret in
 * clear (docs/compatibility.md, "Workspace").
 */
import { z } from 'zod';
import { AI_PROVIDERS, DOCUMENT_ACCESS_TYPES } from '../../../commands/api-key-config.js';
import { REDACTED } from '../../../projections/workspaces.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, parseBody, text } from '../validation.js';
import { invalidArgument } from '../../shared/errors.js';
import {
  API_KEYS_MAX_PAGE_SIZE,
  WORKSPACE_GET_MAX_KEYS,
  getApiKeyConfig,
  getEmailConfig,
  getWebhookConfig,
  getWorkspace,
  listApiKeys,
  renameApiKey,
  updateApiKeyConfig,
} from '../../usecases/workspace-settings.js';
import { pageAnswer } from './domain.js';

/** The empty `data` the hosted pages send to a get; anything else in it is ignored. */
const noInput = z.object({});

const keyRow = z.object({ id: z.string(), apiKeyName: z.string(), type: z.enum(['testing', 'production']) });

const getWorkspaceRoute = defineRoute({
  path: '/v2/workspace/get',
  tag: 'Workspace',
  doc: {
    summary: 'The workspace: its name, owner and API keys',
    description: `\`authToken\` reads \`"${REDACTED}"\`: the workspace auth token is shown once, by workspace/create and workspaceauthtoken/rotate. \`apiKeyList\` is keyed by API key (at most ${WORKSPACE_GET_MAX_KEYS}; every key: \`/v2/workspace/apikeys/get\`, paged).`,
    example: {},
  },
  mutates: false,
  auth: 'workspace',
  schema: noInput,
  response: z.object({
    id: z.string(),
    name: z.string(),
    owner: z.object({ email: z.string(), id: z.string(), name: z.string(), avatar: z.string().optional() }),
    authToken: z.literal(REDACTED).describe('Never the secret.'),
    apiKeyList: z.record(z.string(), keyRow),
  }),
  errors: ['NOT_FOUND'],
  handler: async (_data, ctx) => ({ message: 'Workspace retrieved successfully', data: await getWorkspace(ctx, ctx.workspaceId!) }),
});

const getApiKeys = defineRoute({
  path: '/v2/workspace/apikeys/get',
  tag: 'API keys',
  doc: {
    summary: 'List the workspace\'s API keys',
    description: `In API key order; \`apiKeys\` (at most ${API_KEYS_MAX_PAGE_SIZE}) keeps only those keys (others are left out). \`pageSize\` 1 to ${API_KEYS_MAX_PAGE_SIZE} (default ${API_KEYS_MAX_PAGE_SIZE}); while more follow, the answer carries \`result.nextPageToken\` (and \`result.pageToken\`), for \`pageToken\`.`,
    example: { pageSize: 50 },
  },
  mutates: false,
  auth: 'workspace',
  schema: z.object({
    apiKeys: z.array(id()).max(API_KEYS_MAX_PAGE_SIZE).optional(),
    pageSize: z.number().int().min(1).max(API_KEYS_MAX_PAGE_SIZE).optional(),
    pageToken: z.string().min(1).max(4096).optional(),
  }),
  response: z.array(keyRow),
  paged: 'both',
  handler: async (data, ctx) => pageAnswer('API keys retrieved successfully.', await listApiKeys(ctx, ctx.workspaceId!, data)),
});

const updateApiKey = defineRoute({
  path: '/v2/workspace/apikey/update',
  tag: 'API keys',
  doc: { summary: 'Rename an API key', description: '`apiKeyName` 1 to 256 characters.', example: { apiKey: 'velt_api_key_1', apiKeyName: 'Updated Production Key' } },
  mutates: true,
  auth: 'workspace',
  schema: z.object({ apiKey: id(), apiKeyName: text(256).min(1) }),
  response: z.null(),
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => {
    await renameApiKey(ctx, ctx.workspaceId!, data.apiKey, data.apiKeyName);
    return { message: 'API key updated successfully.', data: null };
  },
});

const aiModelsConfig = z
  .partialRecord(z.enum(AI_PROVIDERS), z.object({ displayText: z.string() }))
  .describe('Masked: the first 4 and last 3 characters of a key of 20 or more, else `...`; the key itself is never returned.');

const getApiKeyConfigRoute = defineRoute({
  path: '/v2/workspace/apikeyconfig/get',
  tag: 'API keys',
  doc: { summary: 'The API key\'s app configuration', description: '`aiModelsConfig` is absent while no AI model key is set.', example: {} },
  mutates: false,
  auth: 'apiKey',
  schema: noInput,
  response: z.object({
    ownerEmail: z.string(),
    planInfo: z.object({ type: z.string().describe('The workspace\'s plan: `free` or `paid`.') }),
    defaultDocumentAccessType: z.enum(DOCUMENT_ACCESS_TYPES),
    isPrivateCommentsEnabled: z.boolean(),
    requireJwtToken: z.boolean(),
    requireAutoOrgUser: z.boolean(),
    aiModelsConfig: aiModelsConfig.optional(),
  }),
  handler: async (_data, ctx) => ({ message: 'API key metadata retrieved successfully.', data: await getApiKeyConfig(ctx) }),
});

const configFields = {
  enablePrivateComments: z.boolean().optional(),
  requireJwtToken: z.boolean().optional(),
  requireAutoOrgUser: z.boolean().optional(),
  defaultDocumentAccessType: z.enum(DOCUMENT_ACCESS_TYPES).optional(),
  aiModelApiKey: z
    .array(z.object({ provider: z.enum(AI_PROVIDERS), customerApiKey: z.string().min(1).max(1024) }).strict())
    .min(1)
    .max(AI_PROVIDERS.length * 2)
    .optional(),
};
const NO_FIELD = 'At least one field must be provided for update';

const updateApiKeyConfigRoute = defineRoute({
  path: '/v2/workspace/apikeyconfig/update',
  tag: 'API keys',
  doc: {
    summary: 'Update the API key\'s app configuration',
    description: [
      `At least one field, and no other (else \`INVALID_ARGUMENT\` "${NO_FIELD}", the unknown fields in \`details.unknown\`). A field merge: nothing is removed.`,
      `- \`aiModelApiKey\`: 1 to ${AI_PROVIDERS.length * 2} entries, each key 1 to 1024 characters, stored encrypted and never returned; the answer shows them masked under \`aiModelsConfig\`.`,
      '- The answer holds the values of the fields sent, after the write. This service stores these settings and answers them; it does not act on them.',
    ].join('\n'),
    example: { requireJwtToken: true, defaultDocumentAccessType: 'restricted', aiModelApiKey: [{ provider: 'openai', customerApiKey: 'sk-openai-...' }] },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.record(z.string(), z.unknown()),
  response: z.object({
    enablePrivateComments: z.boolean().optional(),
    requireJwtToken: z.boolean().optional(),
    requireAutoOrgUser: z.boolean().optional(),
    defaultDocumentAccessType: z.enum(DOCUMENT_ACCESS_TYPES).optional(),
    aiModelsConfig: aiModelsConfig.optional().describe('The AI model keys of this update, masked.'),
  }),
  handler: async (raw, ctx) => {
    const unknown = Object.keys(raw).filter((k) => !Object.hasOwn(configFields, k));
    if (unknown.length > 0 || Object.keys(raw).length === 0) throw invalidArgument(NO_FIELD, unknown.length > 0 ? { unknown: unknown.slice(0, 20) } : undefined);
    const data = parseBody(z.object(configFields), { data: raw });
    return { message: 'API key configuration updated successfully.', data: await updateApiKeyConfig(ctx, data) };
  },
});

const allStrings = (fields: string[]) => z.object(Object.fromEntries(fields.map((f) => [f, z.string()])));

const serviceGet = (service: 'email' | 'webhook') =>
  defineRoute({
    path: `/v2/workspace/${service}config/get`,
    tag: 'Service configuration',
    doc: {
      summary: `The API key's ${service} service configuration`,
      description: `Every field, \`""\` when not set; the secret (${service === 'email' ? '`apiKey`' : '`authToken`'}) reads \`"${REDACTED}"\` whenever one is stored.`,
      example: {},
    },
    mutates: false,
    auth: 'apiKey',
    schema: noInput,
    response:
      service === 'email'
        ? z.object({ useEmailService: z.boolean(), emailServiceConfig: allStrings(['type', 'apiKey', 'fromEmail', 'fromCompany', 'commentTemplateId', 'tagTemplateId']) })
        : z.object({ useWebhookService: z.boolean(), webhookServiceConfig: allStrings(['authToken', 'rawNotificationUrl', 'processedNotificationUrl']) }),
    handler: async (_data, ctx) =>
      service === 'email'
        ? { message: 'Email configuration retrieved successfully.', data: await getEmailConfig(ctx) }
        : { message: 'Webhook configuration retrieved successfully.', data: await getWebhookConfig(ctx) },
  });

export function workspaceSettingsRoutes(): AnyRoute[] {
  return [getWorkspaceRoute, getApiKeys, updateApiKey, getApiKeyConfigRoute, updateApiKeyConfigRoute, serviceGet('email'), serviceGet('webhook')];
}
