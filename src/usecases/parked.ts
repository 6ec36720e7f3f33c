/**
 * Retrying a parked event, as the operator's CLI (`collab projections retry`) and the console's
 * operations route (`/v2/admin/parked/retry`) both do: applied again to its follower, the
 * webhook deliverer's events queued again for delivery.
 */
import type { Services } from '../composition/services.js';
import { allProjections } from '../../projections/index.js';
import { retryParked } from '../ops/parked.js';
import type { ParkedDoc } from '../runtime/parked.js';

export function retryParkedEvent(services: Pick<Services, 'events' | 'read' | 'webhooks'>, id: string): Promise<ParkedDoc> {
  return retryParked(
    {
      events: services.events,
      read: services.read,
      projections: allProjections,
      requeueWebhooks: async (event) => {
        await services.webhooks.requeue(event);
      },
    },
    id,
  );
}
