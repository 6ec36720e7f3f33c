/**
 * A store that cannot be reached (connection lost, server restarting, no primary): requests
 * answer UNAVAILABLE (503) with a message naming the store, never INTERNAL. The production
 * adapters turn their clients' connection errors into this; the clients reconnect by
 * themselves, and the projection runner retries its batch from its checkpoint.
 */
import { ApiError } from '../shared/errors.js';

export class StoreUnavailableError extends ApiError {
  constructor(
    readonly store: 'event store' | 'read store',
    override readonly cause: unknown,
  ) {
    // The cause (host names, driver text) stays in the logs, not in the answer.
    super('UNAVAILABLE', `The ${store} is unavailable right now; the service reconnects by itself, try again shortly.`);
    this.name = 'StoreUnavailableError';
  }
}
