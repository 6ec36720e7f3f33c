/**
 * Per-caller rate limiting: a token bucket per API key (or workspace, in workspace mode),
 * refilled at `perSecond` up to `burst`. In memory, per process: behind a load balancer with
 * N processes a caller gets up to N times the rate, which is the usual trade for not putting
 * a shared store on every request's path.
 *
 * Example: perSecond 10, burst 20. A client idle for a while may send 20 requests at once;
 * the 21st in the same instant is refused with `retry-after: 1` (a token every 100 ms).
 */
import { ApiError } from '../errors.js';
import { evictOldest } from '../runtime/evict.js';

/** The 429's message for a wait of `retryAfterSeconds`. */
export type RateLimitMessage = (retryAfterSeconds: number) => string;

const perApiKey: RateLimitMessage = (s) => `Rate limit exceeded for this API key; retry after ${s} s.`;

export class RateLimitedError extends ApiError {
  constructor(
    readonly retryAfterSeconds: number,
    message: RateLimitMessage = perApiKey,
  ) {
    super('RESOURCE_EXHAUSTED', message(retryAfterSeconds));
  }
}

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly clock: () => number = Date.now,
    private readonly maxCallers = 100_000,
    /** The 429's message, naming what was exceeded. */
    private readonly message?: RateLimitMessage,
  ) {}

  get enabled(): boolean {
    return this.perSecond > 0;
  }

  /** Takes one token for `caller`, or throws RateLimitedError. */
  take(caller: string): void {
    if (!this.enabled) return;
    const now = this.clock();
    const b = this.buckets.get(caller) ?? { tokens: this.burst, at: now };
    const refilled = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    if (refilled < 1) {
      const wait = Math.ceil((1 - refilled) / this.perSecond);
      this.buckets.set(caller, { tokens: refilled, at: now });
      throw new RateLimitedError(Math.max(1, wait), this.message);
    }
    this.buckets.delete(caller); // re-insert: Map order doubles as least-recently-used order
    this.buckets.set(caller, { tokens: refilled - 1, at: now });
    // An eighth at a time: one-by-one eviction is slow on V8 Maps (src/runtime/evict.ts).
    if (this.buckets.size > this.maxCallers) evictOldest(this.buckets, this.buckets.size - this.maxCallers + (this.maxCallers >> 3));
  }
}
