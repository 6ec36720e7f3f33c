/**
 * `/v2/workspace/emailconfig/update` and `/v2/workspace/webhookconfig/update` (API-key
 * mode): validate, merge over the key's stored config (commands/service-config.ts), answer
 * with the resulting config, secrets shown as `"__redacted__"`.
 *
 * Fields may come nested (`webhookServiceConfig: { ... }`, as on apikey/create and in the
 * hosted API's docs) or flat beside `useWebhookService`; nested wins when both name a field.
 *
 * Messages are the hosted API's, word for word: "Email configuration updated successfully."
 * and, for any refused request, "Invalid email service configuration." (webhook alike); what
 * exactly is wrong is in `details.reason` (and `details.fields` for validation), e.g.
 * `{ reason: "data.emailServiceConfig.fromEmail must be a valid email", fields: [...] }`.
 * The update itself is src/usecases/service-config.ts.
 */
import { z } from 'zod';
import { WEBHOOK_TRIGGERS } from '../../webhooks/triggers.js';
import { egressPolicyOf } from '../../adapters/egress.js';
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { parseBody, text, webhookUrl } from '../validation.js';
import { ApiError, invalidArgument } from '../../shared/errors.js';
import { updateEmailConfig, updateWebhookConfig } from '../../usecases/service-config.js';

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

const INVALID_EMAIL_CONFIG = 'Invalid email service configuration.';
const INVALID_WEBHOOK_CONFIG = 'Invalid webhook service configuration.';

/**
 * Validates `raw` against `schema` and runs `body`; any INVALID_ARGUMENT, from validation or
 * from the merged result (commands/service-config.ts), answers with `message` and keeps the
 * specific cause in `details.reason`.
 */
async function withHostedFailure<S extends z.ZodType, T>(message: string, schema: S, raw: unknown, body: (data: z.output<S>) => Promise<T>): Promise<T> {
  try {
    return await body(parseBody(schema, { data: raw }));
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 'INVALID_ARGUMENT') throw err;
    const details = err.details && typeof err.details === 'object' ? err.details : {};
    throw invalidArgument(message, { reason: err.message, ...details });
  }
}

/** Anything object-shaped; the route validates it itself (withHostedFailure). */
const anyData = z.record(z.string(), z.unknown());

// ---- answers ----

const redactedSecret = (what: string) => z.string().optional().describe(`${what}: \`"__redacted__"\` whenever one is stored; never shown.`);

/** The stored email config as `redactConfig` shows it: only the fields that are set. */
const emailConfigAnswer = z.object({
  type: z.string().optional().describe('The email provider (`default` when absent).'),
  apiKey: redactedSecret('The provider\'s API key'),
  fromEmail: z.string().optional(),
  fromCompany: z.string().optional(),
  commentTemplateId: z.string().optional(),
  tagTemplateId: z.string().optional(),
});

const webhookConfigAnswer = z.object({
  authToken: redactedSecret('The token sent to the receiver with each delivery'),
  rawNotificationUrl: z.string().optional(),
  processedNotificationUrl: z.string().optional(),
});

const triggersAnswer = <T extends z.ZodType>(trigger: T) =>
  z.array(trigger).nullable().describe('The configured triggers; `null` while never configured (every event counts then).');

/** The rules both updates share (Markdown, for the docs). */
const mergeRules = (service: 'email' | 'webhook', failure: string) => [
  `Fields may come nested (\`${service}ServiceConfig: { ... }\`) or flat beside \`use${service === 'email' ? 'Email' : 'Webhook'}Service\`; nested wins when both name a field. At least one field must be given.`,
  '',
  '- The update is merged over the stored configuration: a given field replaces the stored one, `""` removes it, and `"__redacted__"` (sent back as read) keeps the stored secret.',
  '- Secrets are stored encrypted and always read back as `"__redacted__"`.',
  '- The first update that leaves the service enabled without triggers sets the default triggers.',
  `- Any refusal answers \`INVALID_ARGUMENT\` with the message "${failure}"; what exactly is wrong is in \`details.reason\` (and \`details.fields\`).`,
  '',
  'The answer is the configuration as stored after the update.',
].join('\n');

export function serviceConfigRoutes(services: Services): AnyRoute[] {
  // A URL naming a refused address literally is refused here; one naming a host is checked
  // when the deliverer resolves it (src/adapters/egress.ts).
  const egress = egressPolicyOf(services.config);
  const urlOrEmpty = () => webhookUrl(egress, { allowEmpty: true }).optional();
  const webhookFields = { authToken: value(), rawNotificationUrl: urlOrEmpty(), processedNotificationUrl: urlOrEmpty() };

  const emailSchema = z.object({
    useEmailService: z.boolean().optional(),
    setDefaultEmailTriggers: z.boolean().optional(),
    emailServiceConfig: z.object(emailFields).optional(),
    triggers: z.array(text(64).min(1)).max(50).optional(),
    ...emailFields,
  });
  const email = defineRoute({
    path: '/v2/workspace/emailconfig/update',
    tag: 'Service configuration',
    doc: {
      summary: 'Update the API key\'s email service configuration',
      description: `${mergeRules('email', INVALID_EMAIL_CONFIG)}\n\nA provider other than \`default\` needs its \`apiKey\`. \`triggers\`: at most 50, each 1 to 64 characters; \`setDefaultEmailTriggers: true\` sets the defaults. This service stores the email configuration for clients; it sends no email itself.`,
      example: {
        useEmailService: true,
        emailServiceConfig: { type: 'sendgrid', apiKey: 'your-provider-api-key', fromEmail: 'noreply@example.com', fromCompany: 'Example Corp' },
      },
    },
    mutates: true,
    auth: 'apiKey',
    schema: anyData,
    response: z.object({
      useEmailService: z.boolean(),
      emailServiceConfig: emailConfigAnswer,
      triggers: triggersAnswer(z.string()),
    }),
    handler: (raw, ctx) => withHostedFailure(INVALID_EMAIL_CONFIG, emailSchema, raw, async (data) => ({
      message: 'Email configuration updated successfully.',
      data: await updateEmailConfig(ctx, data),
    })),
  });

  const webhookSchema = z.object({
    useWebhookService: z.boolean().optional(),
    webhookServiceConfig: z.object(webhookFields).optional(),
    triggers: z.array(z.enum(WEBHOOK_TRIGGERS)).max(WEBHOOK_TRIGGERS.length * 2).optional(),
    ...webhookFields,
  });
  const webhook = defineRoute({
    path: '/v2/workspace/webhookconfig/update',
    tag: 'Service configuration',
    doc: {
      summary: 'Update the API key\'s webhook service configuration',
      description: `${mergeRules('webhook', INVALID_WEBHOOK_CONFIG)}\n\nAn enabled service needs \`rawNotificationUrl\` or \`processedNotificationUrl\` (http or https; a URL naming an address the operator's egress policy refuses is refused). \`triggers\` are areas: ${WEBHOOK_TRIGGERS.map((t) => `\`${t}\``).join(', ')}.`,
      example: {
        useWebhookService: true,
        webhookServiceConfig: {
          authToken: 'webhook_auth_token_here',
          rawNotificationUrl: 'https://example.com/webhooks/raw',
          processedNotificationUrl: 'https://example.com/webhooks/processed',
        },
      },
    },
    mutates: true,
    auth: 'apiKey',
    schema: anyData,
    response: z.object({
      useWebhookService: z.boolean(),
      webhookServiceConfig: webhookConfigAnswer,
      triggers: triggersAnswer(z.enum(WEBHOOK_TRIGGERS)),
      disabledEndpoints: z
        .array(z.enum(['raw', 'processed']))
        .describe('Endpoints not delivered to since their receiver answered 410 Gone; setting the endpoint\'s URL enables it again.'),
    }),
    handler: (raw, ctx) => withHostedFailure(INVALID_WEBHOOK_CONFIG, webhookSchema, raw, async (data) => ({
      message: 'Webhook configuration updated successfully.',
      data: await updateWebhookConfig(ctx, data),
    })),
  });

  return [email, webhook];
}
