/**
 * The email and webhook service configuration of an API key: the part of the workspace
 * aggregate (commands/workspace.ts) that `/v2/workspace/emailconfig/update` and
 * `/v2/workspace/webhookconfig/update` change. Pure functions, used by its evolve/decide.
 *
 * - An update is merged over the stored config: a given field replaces the stored one, an
 *   empty string removes it, the placeholder `"__redacted__"` (a client sending back what it
 *   read) keeps the stored secret.
 * - The first update that leaves the service enabled while it has no triggers seeds the
 *   default triggers. `triggers: null` means "never configured": everything is delivered.
 * - A webhook endpoint the deliverer disabled (its receiver answered 410 Gone) is enabled
 *   again by an update that sets its URL.
 * - Secrets (the webhook `authToken`, the email provider's `apiKey`) stay on the write side,
 *   sealed (src/secrets/): the route seals what the client sends. A secret stored in clear
 *   before encryption at rest is sealed when the next update carries it into a new event
 *   (`legacySealed`, computed by the route), so new events never hold it in clear.
 */
import { invalidArgument } from '../src/shared/errors.js';
import { isSealed } from '../src/shared/envelope.js';

export type ServiceName = 'email' | 'webhook';
export type WebhookEndpoint = 'raw' | 'processed';

export const ENDPOINT_URL_FIELD: Record<WebhookEndpoint, string> = {
  raw: 'rawNotificationUrl',
  processed: 'processedNotificationUrl',
};

export const REDACTED = '__redacted__';

/** Fields that hold secrets wherever they appear in a service config: sealed when stored, redacted when read. */
export const SERVICE_SECRET_FIELDS: ReadonlySet<string> = new Set(['apiKey', 'authToken', 'secret', 'password', 'token']);

export interface ServiceState {
  enabled: boolean;
  config: Record<string, string>;
  triggers: string[] | null;
  disabledEndpoints: WebhookEndpoint[];
}

export type KeyServices = Record<ServiceName, ServiceState>;

/** The services an API key starts with, from its settings (`ApiKeySettings` in ./workspace.ts, which imports this module). */
export interface ServiceSettings {
  useEmailService: boolean;
  useWebhookService: boolean;
  emailServiceConfig?: Record<string, string>;
  webhookServiceConfig?: Record<string, string>;
}

export function initialServices(settings: ServiceSettings): KeyServices {
  return {
    email: { enabled: settings.useEmailService, config: settings.emailServiceConfig ?? {}, triggers: null, disabledEndpoints: [] },
    webhook: { enabled: settings.useWebhookService, config: settings.webhookServiceConfig ?? {}, triggers: null, disabledEndpoints: [] },
  };
}

export interface ServiceConfigUpdate {
  service: ServiceName;
  enabled?: boolean;
  /** Fields to set; `''` removes a field. */
  config: Record<string, string>;
  triggers?: string[];
  /** Seeded on first enable (generated outside decide, like ids). */
  defaultTriggers: string[];
  /** Sealed forms of the clear (pre-encryption) secrets the stored config holds, by clear value. */
  legacySealed?: Record<string, string>;
}

function validate(service: ServiceName, s: ServiceState) {
  if (!s.enabled) return;
  if (service === 'webhook' && !s.config.rawNotificationUrl && !s.config.processedNotificationUrl) {
    throw invalidArgument('The webhook service needs rawNotificationUrl or processedNotificationUrl to be enabled.');
  }
  if (service === 'email') {
    const type = s.config.type ?? 'default';
    if (type !== 'default' && !s.config.apiKey) {
      throw invalidArgument(`The email service of type ${JSON.stringify(type)} needs the provider's apiKey.`);
    }
  }
}

/** The service state after `u`; throws INVALID_ARGUMENT when the result is not usable. */
export function mergeServiceConfig(cur: ServiceState, u: ServiceConfigUpdate): ServiceState {
  const config = { ...cur.config };
  for (const [k, v] of Object.entries(u.config)) {
    if (v === REDACTED) continue;
    if (v === '') delete config[k];
    else config[k] = v;
  }
  const legacy = u.legacySealed;
  if (legacy) {
    for (const k of SERVICE_SECRET_FIELDS) {
      const v = config[k];
      if (v !== undefined && !isSealed(v) && Object.hasOwn(legacy, v)) config[k] = legacy[v]!;
    }
  }
  const enabled = u.enabled ?? cur.enabled;
  const triggers = u.triggers ?? (enabled && cur.triggers === null ? u.defaultTriggers : cur.triggers);
  const reset = (Object.keys(ENDPOINT_URL_FIELD) as WebhookEndpoint[]).filter((e) => u.config[ENDPOINT_URL_FIELD[e]]);
  const next: ServiceState = { enabled, config, triggers, disabledEndpoints: cur.disabledEndpoints.filter((e) => !reset.includes(e)) };
  validate(u.service, next);
  return next;
}

export const sameService = (a: ServiceState, b: ServiceState) => JSON.stringify(a) === JSON.stringify(b);
