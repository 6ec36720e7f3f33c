/**
 * What a query may cost while it runs (docs/limits.md, Costs): a deadline measured from the
 * request's start, and a pacer that yields to the event loop between chunks of reads.
 *
 * A deadline also carries the request's AbortSignal (src/http/cancel.ts): aborted when the
 * client goes away or the request timeout passes. A query checks `passed` between its store
 * reads, so either ends its work there instead of running on for nobody.
 *
 * The embedded store reads synchronously, so a query that awaits only store reads never
 * lets another request run until it returns: one tenant's long resolution would hold every
 * other tenant's request for as long. The pacer counts the reads a loop spends and, every
 * YIELD_EVERY_READS of them, gives the event loop a turn (setImmediate: pending I/O and
 * other requests' callbacks run first), then checks the deadline.
 */
import { ApiError } from '../src/shared/errors.js';

/**
 * Reads between two turns given to other requests. Example: a resolution that reads 40,000
 * grant keys gives the event loop 20 turns, so another tenant's request waits at most one
 * chunk's worth of reads, not the whole resolution.
 */
const YIELD_EVERY_READS = 2_000;

/** The request ran past its deadline (RESOURCE_EXHAUSTED: its time budget is used up). */
export class DeadlineExceededError extends ApiError {
  constructor(readonly deadlineMs: number, what: string, setting = 'its deadline', advice = 'ask for fewer users, resources or groups per call') {
    super('RESOURCE_EXHAUSTED', `${what} ran past ${setting} of ${deadlineMs} ms and was stopped; ${advice}.`);
    this.name = 'DeadlineExceededError';
  }
}

/** What a request's signal is aborted with when the client went away: nobody reads the answer. */
export class ClientGoneError extends ApiError {
  constructor() {
    super('ABORTED', 'The client closed the connection before the answer was ready.');
    this.name = 'ClientGoneError';
  }
}

/**
 * A request's deadline: `ms` after `start` on `clock` (the service's clock, so a test
 * clock drives it), or sooner when `signal` is aborted (the client left, the request
 * timeout passed).
 */
export class Deadline {
  constructor(readonly ms: number, private readonly clock: () => number, private readonly start = clock(), readonly signal?: AbortSignal) {}
  get passed(): boolean {
    return this.signal?.aborted === true || this.clock() - this.start >= this.ms;
  }

  /**
   * Why `passed` holds, as the error that ends a query named `what`: the signal's reason
   * (the request timeout's DeadlineExceededError, ClientGoneError), else this deadline.
   */
  error(what: string): ApiError {
    const reason: unknown = this.signal?.aborted ? this.signal.reason : undefined;
    return reason instanceof ApiError ? reason : new DeadlineExceededError(this.ms, what);
  }
}

/** No deadline: library callers and the background work that resolve without a request. */
export const NO_DEADLINE: Deadline = new Deadline(Infinity, () => 0, 0);

/**
 * A turn for the event loop: the embedded store reads synchronously, so a long query yields
 * between batches and other requests run (and a client's leaving is seen).
 */
export const letOthersRun = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Yields to other requests every YIELD_EVERY_READS reads `spend` is told of. With
 * `what`, a passed deadline ends the query there (DeadlineExceededError naming it); without,
 * the caller checks the deadline itself (the paged queries end their page instead).
 */
export class Pacer {
  private sinceYield = 0;
  constructor(readonly deadline: Deadline = NO_DEADLINE, private readonly what?: string) {}

  async spend(reads: number): Promise<void> {
    this.sinceYield += reads;
    if (this.sinceYield < YIELD_EVERY_READS) return;
    this.sinceYield = 0;
    await letOthersRun();
    this.check();
  }

  /** Throws DeadlineExceededError when the deadline passed and this pacer names its query. */
  check(): void {
    if (this.what !== undefined && this.deadline.passed) throw this.deadline.error(this.what);
  }
}
