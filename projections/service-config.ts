/**
 * Keeps the `api_keys` read model (projections/workspaces.ts) in step with the email and
 * webhook configuration events of commands/service-config.ts. Secrets are redacted here as
 * there: the write side keeps what delivery needs. Runs after the workspaces projection in
 * the same batch (projections/index.ts), so the key document always exists first.
 * The token-signing secret event is deliberately not handled: it never reaches a read model.
 */
import { defineProjection } from '../src/runtime/projection.js';
import type { WorkspaceEvent } from '../commands/workspace.js';
import { API_KEYS, redactConfig, type ApiKeyDoc } from './workspaces.js';


export const serviceConfigProjection = defineProjection<WorkspaceEvent>({
  name: 'service-config',
  handlers: {
    async ApiKeyServiceConfigUpdated(e, tx) {
      const d = e.data;
      const set: Record<string, unknown> =
        d.service === 'email'
          ? { 'settings.useEmailService': d.enabled, 'settings.emailServiceConfig': redactConfig(d.config), 'settings.emailTriggers': d.triggers }
          : {
              'settings.useWebhookService': d.enabled,
              'settings.webhookServiceConfig': redactConfig(d.config),
              'settings.webhookTriggers': d.triggers,
              'settings.webhookDisabledEndpoints': d.disabledEndpoints,
            };
      await tx.patch(API_KEYS, d.apiKey, set);
    },
    async WebhookEndpointDisabled(e, tx) {
      const d = e.data;
      const key = await tx.get<ApiKeyDoc>(API_KEYS, d.apiKey);
      if (!key) return;
      const current = ((key.settings as unknown as Record<string, unknown>).webhookDisabledEndpoints as string[] | undefined) ?? [];
      if (current.includes(d.endpoint)) return;
      await tx.patch(API_KEYS, d.apiKey, { 'settings.webhookDisabledEndpoints': [...current, d.endpoint] });
    },
  },
});
