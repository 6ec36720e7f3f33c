/**
 * Advanced webhooks (issue 28), as the hosted pages document them: `advancedwebhookconfig/get`
 * and `update`, `advancedwebhook/endpoints/create`, `update`, `delete`, `get`, `secret/get`,
 * and this service's `secret/rotate`. API-key mode. What each does is
 * src/usecases/advanced-webhooks.ts; how deliveries are signed and sent, docs/webhooks.md.
 */
import { z } from 'zod';
import { egressPolicyOf, type EgressPolicy } from '../../adapters/egress.js';
import { MAX_ENDPOINTS_PER_KEY, SECRET_GRACE_MS } from '../../../commands/advanced-webhooks.js';
import { WEBHOOK_TRIGGERS } from '../../webhooks/triggers.js';
import { invalidArgument } from '../../shared/errors.js';
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, text } from '../validation.js';
import {
  ENDPOINTS_MAX_PAGE_SIZE,
  createAdvancedWebhookEndpoint,
  deleteAdvancedWebhookEndpoint,
  getAdvancedWebhookSecret,
  getAdvancedWebhookSettings,
  listAdvancedWebhookEndpoints,
  rotateAdvancedWebhookSecret,
  updateAdvancedWebhookEndpoint,
  updateAdvancedWebhookSettings,
} from '../../usecases/advanced-webhooks.js';

/** Bounds of an endpoint's fields (docs/limits.md). */
const MAX_URL = 2048;
const MAX_FILTER_TYPES = 100;
const MAX_FILTER_TYPE = 128;
const MAX_METADATA_ENTRIES = 50;
const MAX_RATE_LIMIT = 100_000;
const MAX_PUBLIC_KEY = 8192;

const SETTINGS_FIELDS = 'isEnabled, encryptData, encodeData, publicKey or enableDataProtection';
const NO_SETTING = `At least one of ${SETTINGS_FIELDS} must be provided.`;
const NO_ENDPOINT_FIELD = 'At least one endpoint field besides endpointId must be provided.';
const BAD_URL = 'url must be a valid http(s) URL.';

const DISABLED_NOTE = 'Needs advanced webhooks enabled on the key (`advancedwebhookconfig/update` with `isEnabled: true`), else `FAILED_PRECONDITION`.';

const settings = z.object({
  isEnabled: z.boolean(),
  encryptData: z.boolean(),
  encodeData: z.boolean(),
  publicKey: z.string(),
  enableDataProtection: z.boolean().describe('Stored and answered; this service does not act on it.'),
});

const endpointAnswer = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  filterTypes: z.array(z.string()).nullable().describe('Event types delivered (exact names, e.g. `DocumentAdded`); `null`: every event.'),
  channels: z.array(z.string()).nullable().describe('Areas delivered; `null`: every area.'),
  disabled: z.boolean(),
  rateLimit: z.number().int().nullable().describe('Stored and answered; not enforced (docs/webhooks.md).'),
  uid: z.string().nullable(),
  metadata: z.record(z.string(), z.string()),
  disabledReason: z.string().nullable().describe('Why the service disabled the endpoint (410 Gone, or failing for days); `null` otherwise.'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const filterTypes = z.array(z.string().min(1).max(MAX_FILTER_TYPE)).min(1).max(MAX_FILTER_TYPES);
const channels = z.array(z.enum(WEBHOOK_TRIGGERS)).min(1).max(WEBHOOK_TRIGGERS.length);
const metadata = z
  .record(z.string().min(1).max(256), z.string().max(1024))
  .refine((m) => Object.keys(m).length <= MAX_METADATA_ENTRIES, { message: `must have at most ${MAX_METADATA_ENTRIES} entries` });
const endpointFields = {
  description: text(1024).optional(),
  filterTypes: filterTypes.optional(),
  channels: channels.optional(),
  disabled: z.boolean().optional(),
  rateLimit: z.number().int().min(1).max(MAX_RATE_LIMIT).optional(),
  metadata: metadata.optional(),
};

/** The hosted message for a URL that is not http(s); this service's destination policy (docs/webhooks.md) for a refused address. */
function checkUrl(egress: EgressPolicy, url: string | undefined) {
  if (url === undefined) return;
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) throw invalidArgument(BAD_URL, { fields: ['data.url'] });
  const why = egress.literalRefusal(url);
  if (why) throw invalidArgument(`data.url is not allowed by the destination policy: ${why}`, { fields: ['data.url'] });
}

const endpointBody = {
  url: 'https://example.com/webhooks/collab',
  description: 'Primary endpoint',
  filterTypes: ['DocumentAdded', 'DocumentDeleted'],
};

function settingsRoutes(): AnyRoute[] {
  const get = defineRoute({
    path: '/v2/workspace/advancedwebhookconfig/get',
    tag: 'Advanced webhooks',
    doc: { summary: 'The API key\'s advanced webhook settings', description: 'Never configured: every field at its default (`isEnabled: false`, `publicKey: ""`).', example: {} },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({}),
    response: settings,
    handler: async (_data, ctx) => ({ message: 'Advanced webhook configuration retrieved successfully.', data: await getAdvancedWebhookSettings(ctx) }),
  });
  const update = defineRoute({
    path: '/v2/workspace/advancedwebhookconfig/update',
    tag: 'Advanced webhooks',
    doc: {
      summary: 'Update the API key\'s advanced webhook settings',
      description: [
        `A partial update: at least one of ${SETTINGS_FIELDS} (else \`INVALID_ARGUMENT\`). The first update must carry \`isEnabled: true\` (else \`FAILED_PRECONDITION\`). The answer is the settings after the write.`,
        `- \`encryptData\` needs \`publicKey\`: the base64 DER of an RSA public key (at most ${MAX_PUBLIC_KEY} characters); payloads are then sent encrypted (AES-256-CBC, the key wrapped with RSA-OAEP SHA-256).`,
        '- `encodeData` sends payloads as `{ encodedPayload: <base64> }`; `enableDataProtection` is stored only.',
      ].join('\n'),
      example: { isEnabled: true, encryptData: false, encodeData: false },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      isEnabled: z.boolean().optional(),
      encryptData: z.boolean().optional(),
      encodeData: z.boolean().optional(),
      publicKey: z.string().max(MAX_PUBLIC_KEY).optional(),
      enableDataProtection: z.boolean().optional(),
    }),
    response: settings,
    errors: ['FAILED_PRECONDITION'],
    handler: async (data, ctx) => {
      const change = Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined));
      if (Object.keys(change).length === 0) throw invalidArgument(NO_SETTING);
      return { message: 'Advanced webhook configuration updated successfully.', data: await updateAdvancedWebhookSettings(ctx, change) };
    },
  });
  return [get, update];
}

function endpointWriteRoutes(egress: EgressPolicy): AnyRoute[] {
  const create = defineRoute({
    path: '/v2/workspace/advancedwebhook/endpoints/create',
    tag: 'Advanced webhooks',
    doc: {
      summary: 'Create an advanced webhook endpoint',
      description: [
        `${DISABLED_NOTE} An API key has at most ${MAX_ENDPOINTS_PER_KEY} endpoints (\`RESOURCE_EXHAUSTED\`).`,
        `- \`url\`: http(s), at most ${MAX_URL} characters, allowed by the destination policy; \`filterTypes\`: 1 to ${MAX_FILTER_TYPES} event types (exact names, each at most ${MAX_FILTER_TYPE} characters), absent: every event; \`channels\`: areas (${WEBHOOK_TRIGGERS.join(', ')}), absent: every area; \`metadata\`: at most ${MAX_METADATA_ENTRIES} string entries.`,
        '- The endpoint\'s signing secret is generated here, stored encrypted, and read with `advancedwebhook/endpoints/secret/get`.',
      ].join('\n'),
      example: endpointBody,
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ url: z.string().max(MAX_URL), uid: id().optional(), ...endpointFields }),
    response: endpointAnswer,
    errors: ['FAILED_PRECONDITION', 'RESOURCE_EXHAUSTED'],
    handler: async (data, ctx) => {
      checkUrl(egress, data.url);
      return { message: 'Advanced webhook endpoint created successfully.', data: await createAdvancedWebhookEndpoint(ctx, data) };
    },
  });
  const update = defineRoute({
    path: '/v2/workspace/advancedwebhook/endpoints/update',
    tag: 'Advanced webhooks',
    doc: {
      summary: 'Update an advanced webhook endpoint',
      description: `${DISABLED_NOTE} A partial update: at least one field besides \`endpointId\`; the fields as on create. \`disabled: false\` also enables an endpoint the service disabled. The answer is the endpoint after the write.`,
      example: { endpointId: 'ep_2vK9mPzGqLxYwBnRtCdHsJfAeUo', description: 'Updated endpoint description', disabled: false },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ endpointId: id(), url: z.string().max(MAX_URL).optional(), ...endpointFields }),
    response: endpointAnswer,
    errors: ['FAILED_PRECONDITION', 'NOT_FOUND'],
    handler: async ({ endpointId, ...change }, ctx) => {
      if (Object.values(change).every((v) => v === undefined)) throw invalidArgument(NO_ENDPOINT_FIELD);
      checkUrl(egress, change.url);
      return { message: 'Advanced webhook endpoint updated successfully.', data: await updateAdvancedWebhookEndpoint(ctx, endpointId, change) };
    },
  });
  const del = defineRoute({
    path: '/v2/workspace/advancedwebhook/endpoints/delete',
    tag: 'Advanced webhooks',
    doc: { summary: 'Delete an advanced webhook endpoint', description: `${DISABLED_NOTE} Its pending deliveries are not sent, and its secret stops signing.`, example: { endpointId: 'ep_2vK9mPzGqLxYwBnRtCdHsJfAeUo' } },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ endpointId: id() }),
    response: z.object({ endpointId: z.string(), deleted: z.literal(true) }),
    errors: ['FAILED_PRECONDITION', 'NOT_FOUND'],
    handler: async (data, ctx) => ({ message: 'Advanced webhook endpoint deleted successfully.', data: await deleteAdvancedWebhookEndpoint(ctx, data.endpointId) }),
  });
  return [create, update, del];
}

function endpointReadRoutes(): AnyRoute[] {
  const list = defineRoute({
    path: '/v2/workspace/advancedwebhook/endpoints/get',
    tag: 'Advanced webhooks',
    doc: {
      summary: 'List the API key\'s advanced webhook endpoints',
      description: `${DISABLED_NOTE} In creation order; \`limit\` 1 to ${ENDPOINTS_MAX_PAGE_SIZE} (default ${ENDPOINTS_MAX_PAGE_SIZE}). While \`done\` is false, send \`iterator\` back for the next page; \`prevIterator\` is always \`null\` here.`,
      example: { limit: 50 },
    },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({ limit: z.number().int().min(1).max(ENDPOINTS_MAX_PAGE_SIZE).optional(), iterator: z.string().min(1).max(4096).optional() }),
    response: z.object({ endpoints: z.array(endpointAnswer), iterator: z.string().nullable(), prevIterator: z.null(), done: z.boolean() }),
    errors: ['FAILED_PRECONDITION'],
    handler: async (data, ctx) => ({ message: 'Advanced webhook endpoints retrieved successfully.', data: await listAdvancedWebhookEndpoints(ctx, data) }),
  });
  const secret = defineRoute({
    path: '/v2/workspace/advancedwebhook/endpoints/secret/get',
    tag: 'Advanced webhooks',
    doc: {
      summary: 'The endpoint\'s current signing secret',
      description: `${DISABLED_NOTE} \`whsec_\` and the base64 of the key (Standard Webhooks). Stored encrypted; this route is the only one that shows it, on every call (as the hosted API does). Each read is recorded as an \`AdvancedWebhookSecretRevealed\` event in the key's audit; rotate with \`revokePrevious\` to replace a leaked secret.`,
      example: { endpointId: 'ep_2vK9mPzGqLxYwBnRtCdHsJfAeUo' },
    },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({ endpointId: id() }),
    response: z.object({ endpointId: z.string(), secret: z.string() }),
    errors: ['FAILED_PRECONDITION', 'NOT_FOUND'],
    handler: async (data, ctx) => ({ message: 'Advanced webhook endpoint secret retrieved successfully.', data: await getAdvancedWebhookSecret(ctx, data.endpointId) }),
  });
  const rotate = defineRoute({
    path: '/v2/workspace/advancedwebhook/endpoints/secret/rotate',
    tag: 'Advanced webhooks',
    doc: {
      summary: 'Rotate the endpoint\'s signing secret (this service\'s addition)',
      description: `${DISABLED_NOTE} A new secret signs from now on (read it with \`secret/get\`); the previous one keeps signing beside it, a second \`v1,\` signature in \`webhook-signature\`, for ${SECRET_GRACE_MS / 3_600_000} hours, so receivers can switch without losing deliveries. \`revokePrevious: true\` stops the previous ones at once (a leaked secret).`,
      example: { endpointId: 'ep_2vK9mPzGqLxYwBnRtCdHsJfAeUo' },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ endpointId: id(), revokePrevious: z.boolean().optional() }),
    response: z.object({ endpointId: z.string(), previousSecretValidUntil: z.string().describe('When the previous secret stops signing (ISO 8601).') }),
    errors: ['FAILED_PRECONDITION', 'NOT_FOUND'],
    handler: async (data, ctx) => ({
      message: 'Advanced webhook endpoint secret rotated successfully.',
      data: await rotateAdvancedWebhookSecret(ctx, data.endpointId, data.revokePrevious ?? false),
    }),
  });
  return [list, secret, rotate];
}

export function advancedWebhookRoutes(services: Services): AnyRoute[] {
  // A URL naming a refused address literally is refused here; one naming a host is checked
  // when the deliverer resolves it (src/adapters/egress.ts).
  return [...settingsRoutes(), ...endpointWriteRoutes(egressPolicyOf(services.config)), ...endpointReadRoutes()];
}
