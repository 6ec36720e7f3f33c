/**
 * The API key's email and webhook service configuration (API-key mode): merge the update
 * over the key's stored config (commands/service-config.ts) and answer with the resulting
 * config, secrets shown as `"__redacted__"`. Fields may come nested (`emailServiceConfig:
 * { ... }`) or flat beside `useEmailService`; nested wins when both name a field. The routes
 * (src/http/routes/service-config.ts) validate and word the refusals as the hosted API does.
 */
import { workspaceDecider, workspaceStream, type WorkspaceState } from '../../commands/workspace.js';
import type { ServiceName } from '../../commands/service-config.js';
import { redactConfig } from '../../projections/workspaces.js';
import { DEFAULT_EMAIL_TRIGGERS, DEFAULT_WEBHOOK_TRIGGERS, type WEBHOOK_TRIGGERS } from '../webhooks/triggers.js';
import { invalidArgument } from '../shared/errors.js';
import { legacyServiceSecrets, sealServiceConfig } from '../secrets/configs.js';
import type { TenantContext } from './context.js';

/** A use case of the key's own workspace: the tenant names it. */
type KeyContext = TenantContext & { readonly tenant?: { readonly workspaceId: string } | undefined };

const defined = (o: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Record<string, string>;

async function update(
  ctx: KeyContext,
  service: ServiceName,
  data: { enabled?: boolean | undefined; config: Record<string, string>; triggers?: string[] | undefined },
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
  });
  return serviceOf(r.state, ctx.apiKey, service);
}

function serviceOf(state: WorkspaceState, apiKey: string, service: ServiceName) {
  if (state.status !== 'active' || !state.keys[apiKey]) throw new Error('bug: the caller\'s key is not in its workspace');
  return state.keys[apiKey].services[service];
}

type Opt = string | undefined;
/** The email config's fields (`''` removes a stored value). */
type EmailFields = { type?: Opt; apiKey?: Opt; fromEmail?: Opt; fromCompany?: Opt; commentTemplateId?: Opt; tagTemplateId?: Opt };
type WebhookFields = { authToken?: Opt; rawNotificationUrl?: Opt; processedNotificationUrl?: Opt };

type EmailConfigUpdate = EmailFields & {
  useEmailService?: boolean | undefined;
  setDefaultEmailTriggers?: boolean | undefined;
  emailServiceConfig?: EmailFields | undefined;
  triggers?: string[] | undefined;
};

/** Updates the email service configuration; at least one field must be given. */
export async function updateEmailConfig(ctx: KeyContext, data: EmailConfigUpdate) {
  const { useEmailService, emailServiceConfig, triggers, setDefaultEmailTriggers, ...flat } = data;
  const config = { ...defined(flat), ...defined(emailServiceConfig ?? {}) };
  if (useEmailService === undefined && emailServiceConfig === undefined && Object.keys(config).length === 0 && !triggers && !setDefaultEmailTriggers) {
    throw invalidArgument('At least one of useEmailService or emailServiceConfig must be provided.');
  }
  const s = await update(ctx, 'email', {
    enabled: useEmailService,
    config,
    triggers: triggers ?? (setDefaultEmailTriggers ? DEFAULT_EMAIL_TRIGGERS : undefined),
  });
  return { useEmailService: s.enabled, emailServiceConfig: redactConfig(s.config), triggers: s.triggers };
}

type WebhookConfigUpdate = WebhookFields & {
  useWebhookService?: boolean | undefined;
  webhookServiceConfig?: WebhookFields | undefined;
  triggers?: Array<(typeof WEBHOOK_TRIGGERS)[number]> | undefined;
};

/** Updates the webhook service configuration; at least one field must be given. */
export async function updateWebhookConfig(ctx: KeyContext, data: WebhookConfigUpdate) {
  const { useWebhookService, webhookServiceConfig, triggers, ...flat } = data;
  const config = { ...defined(flat), ...defined(webhookServiceConfig ?? {}) };
  if (useWebhookService === undefined && webhookServiceConfig === undefined && Object.keys(config).length === 0 && !triggers) {
    throw invalidArgument('At least one of useWebhookService or webhookServiceConfig must be provided.');
  }
  const s = await update(ctx, 'webhook', {
    enabled: useWebhookService,
    config,
    triggers: triggers ? [...new Set(triggers)] : undefined,
  });
  return {
    useWebhookService: s.enabled,
    webhookServiceConfig: redactConfig(s.config),
    triggers: s.triggers,
    disabledEndpoints: s.disabledEndpoints,
  };
}
