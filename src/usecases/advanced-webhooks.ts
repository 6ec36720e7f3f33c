/**
 * Advanced webhooks (issue 28; docs/webhooks.md, Advanced webhooks), as the hosted pages
 * document them: the key's settings (`advancedwebhookconfig/get`, `update`) and its delivery
 * endpoints (`advancedwebhook/endpoints/create`, `update`, `delete`, `get`, `secret/get`),
 * plus `secret/rotate`, this service's own. The aggregate is commands/advanced-webhooks.ts;
 * delivery is src/webhooks/ (advanced.ts beside the deliverer).
 *
 * Signing secrets are generated here (`whsec_...`), sealed with the API key's data key before
 * the command, and opened only by `secret/get` and the deliverer: never in a read model,
 * never in an event in clear.
 */
import {
  advancedWebhooksDecider,
  advancedWebhooksStream,
  DEFAULT_SETTINGS,
  DISABLED,
  NOT_CONFIGURED,
  currentSecret,
  endpointOf,
  type AdvancedWebhookSettings,
  type EndpointChange,
  type EndpointFields,
} from '../../commands/advanced-webhooks.js';
import {
  ADVANCED_WEBHOOK_ENDPOINTS,
  ADVANCED_WEBHOOK_SETTINGS,
  type AdvancedWebhookEndpointDoc,
  type AdvancedWebhookSettingsDoc,
} from '../../projections/advanced-webhooks.js';
import { decodePageToken, encodePageToken } from '../../queries/paging.js';
import { ADVANCED_ENDPOINT_PREFIX, newSigningSecret, rsaPublicKey } from '../webhooks/advanced.js';
import { failedPrecondition, invalidArgument } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import type { TenantContext } from './context.js';

/** endpoints/get's page size bound and default (the hosted page's bound). */
export const ENDPOINTS_MAX_PAGE_SIZE = 250;

const settingsView = (s: AdvancedWebhookSettings): AdvancedWebhookSettings => ({
  isEnabled: s.isEnabled,
  encryptData: s.encryptData,
  encodeData: s.encodeData,
  publicKey: s.publicKey,
  enableDataProtection: s.enableDataProtection,
});

/** The settings; never configured: every field at its default (the hosted page's rule). */
export async function getAdvancedWebhookSettings(ctx: TenantContext) {
  const doc = await ctx.services.read.get<AdvancedWebhookSettingsDoc>(ADVANCED_WEBHOOK_SETTINGS, ctx.apiKey);
  return settingsView(doc ?? DEFAULT_SETTINGS);
}

/** A partial update; the first one must enable. A `publicKey` must be an RSA public key's base64 DER. Answers the settings after the write. */
export async function updateAdvancedWebhookSettings(ctx: TenantContext, change: Partial<AdvancedWebhookSettings>) {
  if (change.publicKey && !rsaPublicKey(change.publicKey)) {
    throw invalidArgument('publicKey must be the base64 of an RSA public key (DER, SubjectPublicKeyInfo or PKCS#1), without PEM headers.');
  }
  const r = await ctx.execute(advancedWebhooksDecider, advancedWebhooksStream(ctx.apiKey), {
    type: 'UpdateAdvancedWebhookSettings',
    data: { apiKey: ctx.apiKey, change },
  });
  return settingsView(r.state.settings!);
}

type EndpointLike = EndpointFields & { endpointId: string; disabledReason: string | null; createdAt: number; updatedAt: number };

/** An endpoint as the hosted pages show it (unset optional fields `null`, times ISO 8601), with `metadata` and `disabledReason`. */
const endpointView = (e: EndpointLike) => ({
  id: e.endpointId,
  url: e.url,
  description: e.description,
  filterTypes: e.filterTypes,
  channels: e.channels,
  disabled: e.disabled,
  rateLimit: e.rateLimit,
  uid: e.uid,
  metadata: e.metadata,
  disabledReason: e.disabledReason,
  createdAt: new Date(e.createdAt).toISOString(),
  updatedAt: new Date(e.updatedAt).toISOString(),
});

export interface NewEndpoint {
  url: string;
  description?: string | undefined;
  filterTypes?: string[] | undefined;
  channels?: string[] | undefined;
  disabled?: boolean | undefined;
  rateLimit?: number | undefined;
  uid?: string | undefined;
  metadata?: Record<string, string> | undefined;
}

const dedupe = (xs: string[] | undefined) => (xs ? [...new Set(xs)] : undefined);

/** A new endpoint with its own signing secret (sealed; read it with secret/get). */
export async function createAdvancedWebhookEndpoint(ctx: TenantContext, input: NewEndpoint) {
  const endpointId = `${ADVANCED_ENDPOINT_PREFIX}${newId()}`;
  const fields: EndpointFields = {
    url: input.url,
    description: input.description ?? null,
    filterTypes: dedupe(input.filterTypes) ?? null,
    channels: dedupe(input.channels) ?? null,
    disabled: input.disabled ?? false,
    rateLimit: input.rateLimit ?? null,
    uid: input.uid ?? null,
    metadata: input.metadata ?? {},
  };
  const secret = await ctx.services.secrets.seal(ctx.apiKey, newSigningSecret());
  const r = await ctx.execute(advancedWebhooksDecider, advancedWebhooksStream(ctx.apiKey), {
    type: 'CreateAdvancedWebhookEndpoint',
    data: { apiKey: ctx.apiKey, endpointId, fields, secret },
  });
  return endpointView(endpointOf(r.state, endpointId)!);
}

/** Only the fields sent change; answers the endpoint after the write. */
export async function updateAdvancedWebhookEndpoint(ctx: TenantContext, endpointId: string, change: EndpointChange) {
  const clean: EndpointChange = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined));
  if (clean.filterTypes) clean.filterTypes = dedupe(clean.filterTypes)!;
  if (clean.channels) clean.channels = dedupe(clean.channels)!;
  const r = await ctx.execute(advancedWebhooksDecider, advancedWebhooksStream(ctx.apiKey), {
    type: 'UpdateAdvancedWebhookEndpoint',
    data: { apiKey: ctx.apiKey, endpointId, change: clean },
  });
  return endpointView(endpointOf(r.state, endpointId)!);
}

export async function deleteAdvancedWebhookEndpoint(ctx: TenantContext, endpointId: string) {
  await ctx.execute(advancedWebhooksDecider, advancedWebhooksStream(ctx.apiKey), { type: 'DeleteAdvancedWebhookEndpoint', data: { apiKey: ctx.apiKey, endpointId } });
  return { endpointId, deleted: true };
}

/** FAILED_PRECONDITION (the hosted messages) unless the key's advanced webhooks are enabled. */
function requireEnabled(settings: AdvancedWebhookSettings | null | undefined) {
  if (!settings) throw failedPrecondition(NOT_CONFIGURED);
  if (!settings.isEnabled) throw failedPrecondition(DISABLED);
}

/** The key's endpoints in creation order, `limit` at a time; `iterator` while more follow. */
export async function listAdvancedWebhookEndpoints(ctx: TenantContext, q: { limit?: number | undefined; iterator?: string | undefined }) {
  const { read } = ctx.services;
  requireEnabled(await read.get<AdvancedWebhookSettingsDoc>(ADVANCED_WEBHOOK_SETTINGS, ctx.apiKey));
  const limit = q.limit ?? ENDPOINTS_MAX_PAGE_SIZE;
  const query = { route: 'advancedwebhook/endpoints/get', apiKey: ctx.apiKey };
  const after = decodePageToken(q.iterator, query, 'data.iterator');
  const rows = await read.find<AdvancedWebhookEndpointDoc>(ADVANCED_WEBHOOK_ENDPOINTS, { apiKey: ctx.apiKey }, { sort: 'createdAt', ...(after ? { after } : {}), limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const more = rows.length > limit && last !== undefined;
  return {
    endpoints: page.map(endpointView),
    iterator: more ? encodePageToken(query, { value: last.createdAt, id: last._id }) : null,
    prevIterator: null,
    done: !more,
  };
}

/**
 * The endpoint's current signing secret, opened from its sealed form, on every call (as the
 * hosted API answers it: a receiver that restarts reads it again). Each read is an event
 * (`AdvancedWebhookSecretRevealed`), so the key's audit names every caller that read a secret.
 */
export async function getAdvancedWebhookSecret(ctx: TenantContext, endpointId: string) {
  const { state } = await ctx.services.commands.load(advancedWebhooksDecider, advancedWebhooksStream(ctx.apiKey));
  requireEnabled(state.settings);
  const r = await ctx.execute(advancedWebhooksDecider, advancedWebhooksStream(ctx.apiKey), { type: 'RevealAdvancedWebhookSecret', data: { apiKey: ctx.apiKey, endpointId } });
  const ep = endpointOf(r.state, endpointId)!;
  return { endpointId, secret: await ctx.services.secrets.openString(ctx.apiKey, currentSecret(ep).secret) };
}

/** A new signing secret; the previous one keeps signing for the grace period unless `revokePrevious`. */
export async function rotateAdvancedWebhookSecret(ctx: TenantContext, endpointId: string, revokePrevious: boolean) {
  const secret = await ctx.services.secrets.seal(ctx.apiKey, newSigningSecret());
  const r = await ctx.execute(advancedWebhooksDecider, advancedWebhooksStream(ctx.apiKey), {
    type: 'RotateAdvancedWebhookSecret',
    data: { apiKey: ctx.apiKey, endpointId, secret, revokePrevious },
  });
  const rotated = r.events.find((e) => e.type === 'AdvancedWebhookSecretRotated');
  const until = rotated?.type === 'AdvancedWebhookSecretRotated' ? rotated.data.previousValidUntil : ctx.now;
  return { endpointId, previousSecretValidUntil: new Date(until).toISOString() };
}
