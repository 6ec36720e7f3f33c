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

/**
 * A PostgreSQL statement ran past STATEMENT_TIMEOUT_MS and the server cancelled it (SQLSTATE
 * 57014 "canceling statement due to statement timeout"): the request asked too much at once,
 * or waited on a lock that long. RESOURCE_EXHAUSTED, naming the bound, as the query deadline.
 */
export class StatementTimeoutError extends ApiError {
  constructor(readonly store: 'event store' | 'read store') {
    super('RESOURCE_EXHAUSTED', `A statement of the ${store} ran past the database statement timeout (STATEMENT_TIMEOUT_MS) and was cancelled; ask for less per call, or try again.`);
    this.name = 'StatementTimeoutError';
  }
}

/** The server's cancellation of a statement past statement_timeout (not a cancel asked for by hand). */
export const isStatementTimeout = (error: unknown) =>
  (error as { code?: unknown } | null)?.code === '57014' && /statement timeout/i.test(String((error as Error).message));

/**
 * A PostgreSQL statement waited past LOCK_TIMEOUT_MS for a lock another session holds (55P03):
 * a session of someone else's holds a row or table (an operator's SELECT ... FOR UPDATE, a
 * migration). UNAVAILABLE, as a store that cannot answer now: the projection runner retries its
 * batch (a store fault, never a reason to park an event), a request answers 503.
 */
export class LockTimeoutError extends ApiError {
  constructor(
    readonly store: 'event store' | 'read store',
    override readonly cause: unknown,
  ) {
    super('UNAVAILABLE', `The ${store} waited past the lock timeout (LOCK_TIMEOUT_MS) for a lock another database session holds; try again shortly.`);
    this.name = 'LockTimeoutError';
  }
}
