/**
 * `/v2/workspace/emailconfig/update` and `/v2/workspace/webhookconfig/update` (API-key
 * mode): validate, merge over the key's stored config (commands/service-config.ts), answer
 * with the resulting config, secrets shown as `"__redacted__"`.
 *
 * Fields may come nested (`webhookServiceConfig: { ... }`, as on apikey/create) or flat
 * beside `useWebhookService`; nested wins when both name a field.
 */
import { z } from 'zod';
import { workspaceDecider, type WorkspaceState } from '../../../commands/workspace.js';
import type { ServiceName } from '../../../commands/service-config.js';
import { redactConfig } from '../../../projections/workspaces.js';
import { DEFAULT_EMAIL_TRIGGERS, DEFAULT_WEBHOOK_TRIGGERS, WEBHOOK_TRIGGERS } from '../../webhooks/triggers.js';
import { egressPolicyOf } from '../../webhooks/egress.js';
import type { Services } from '../../services.js';
import type { RequestContext } from '../context.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { text, webhookUrl } from '../validation.js';
import { legacyServiceSecrets, sealServiceConfig } from '../../secrets/configs.js';
import { workspaceStream } from '../../../commands/workspace.js';

/** A config value; `''` removes the stored one. */
const value = () => z.string().max(2048).optional();
const emailOrEmpty = () =>
  z.union([z.literal(''), z.string().max(320).pipe(z.email())]).optional();

const emailFields = {
  type: value(),
  apiKey: value(),
  fromEmail: emailOrEmpty(),
  fromCompany: value(),
  commentTemplateId: value(),
  tagTemplateId: value(),
};

const defined = (o: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Record<string, string>;

async function update(
  ctx: RequestContext,
  service: ServiceName,
  data: { enabled?: boolean; config: Record<string, string>; triggers?: string[] },
) {
  const { secrets, commands } = ctx.services;
  const stream = workspaceStream(ctx.tenant!.workspaceId);
  // Secrets are sealed here (src/secrets/configs.ts); clear ones stored before encryption at
  // rest are sealed as the update carries them into its event.
  const config = await sealServiceConfig(secrets, ctx.apiKey, data.config);
  const { state } = await commands.load(workspaceDecider, stream);
  const stored = state.status === 'active' && Object.hasOwn(state.keys, ctx.apiKey) ? state.keys[ctx.apiKey]!.services[service].config : undefined;
  const legacySealed = await legacyServiceSecrets(secrets, ctx.apiKey, stored);
  const r = await ctx.execute(workspaceDecider, stream, {
    type: 'UpdateServiceConfig',
    data: {
      apiKey: ctx.apiKey,
      service,
      ...(data.enabled !== undefined ? { enabled: data.enabled } : {}),
      config,
      ...(legacySealed ? { legacySealed } : {}),
      ...(data.triggers ? { triggers: data.triggers } : {}),
      defaultTriggers: service === 'email' ? DEFAULT_EMAIL_TRIGGERS : DEFAULT_WEBHOOK_TRIGGERS,
    },
    metadata: { now: ctx.now },
  });
  return serviceOf(r.state, ctx.apiKey, service);
}

function serviceOf(state: WorkspaceState, apiKey: string, service: ServiceName) {
  if (state.status !== 'active' || !state.keys[apiKey]) throw new Error('bug: the caller\'s key is not in its workspace');
  return state.keys[apiKey].services[service];
}

export function serviceConfigRoutes(services: Services): AnyRoute[] {
  // A URL naming a refused address literally is refused here; one naming a host is checked
  // when the deliverer resolves it (src/webhooks/egress.ts).
  const egress = egressPolicyOf(services.config);
  const urlOrEmpty = () => webhookUrl(egress, { allowEmpty: true }).optional();
  const webhookFields = { authToken: value(), rawNotificationUrl: urlOrEmpty(), processedNotificationUrl: urlOrEmpty() };

  const email = defineRoute({
    path: '/v2/workspace/emailconfig/update',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      useEmailService: z.boolean().optional(),
      setDefaultEmailTriggers: z.boolean().optional(),
      emailServiceConfig: z.object(emailFields).optional(),
      triggers: z.array(text(64).min(1)).max(50).optional(),
      ...emailFields,
    }),
    async handler(data, ctx) {
      const { useEmailService, emailServiceConfig, triggers, setDefaultEmailTriggers, ...flat } = data;
      const s = await update(ctx, 'email', {
        enabled: useEmailService,
        config: { ...defined(flat), ...defined(emailServiceConfig ?? {}) },
        triggers: triggers ?? (setDefaultEmailTriggers ? DEFAULT_EMAIL_TRIGGERS : undefined),
      });
      return {
        message: 'Email config updated successfully.',
        data: { useEmailService: s.enabled, emailServiceConfig: redactConfig(s.config), triggers: s.triggers },
      };
    },
  });

  const webhook = defineRoute({
    path: '/v2/workspace/webhookconfig/update',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      useWebhookService: z.boolean().optional(),
      webhookServiceConfig: z.object(webhookFields).optional(),
      triggers: z.array(z.enum(WEBHOOK_TRIGGERS)).max(WEBHOOK_TRIGGERS.length * 2).optional(),
      ...webhookFields,
    }),
    async handler(data, ctx) {
      const { useWebhookService, webhookServiceConfig, triggers, ...flat } = data;
      const s = await update(ctx, 'webhook', {
        enabled: useWebhookService,
        config: { ...defined(flat), ...defined(webhookServiceConfig ?? {}) },
        triggers: triggers ? [...new Set(triggers)] : undefined,
      });
      return {
        message: 'Webhook config updated successfully.',
        data: {
          useWebhookService: s.enabled,
          webhookServiceConfig: redactConfig(s.config),
          triggers: s.triggers,
          disabledEndpoints: s.disabledEndpoints,
        },
      };
    },
  });

  return [email, webhook];
}
