/** Every projection the service runs, in the order they apply a batch. */
import type { Projection } from '../src/runtime/projection.js';
import { workspacesProjection } from './workspaces.js';
import { serviceConfigProjection } from './service-config.js';
import { agentsProjection } from './agents.js';
import { advancedWebhooksProjection } from './advanced-webhooks.js';
import { domainProjections } from './domain.js';
import { auditProjection } from './audit.js';
import { historyProjections } from './history-access.js';

export const allProjections: Projection[] = [workspacesProjection, serviceConfigProjection, advancedWebhooksProjection, agentsProjection, ...domainProjections, auditProjection, ...historyProjections];
