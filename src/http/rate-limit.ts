/**
 * Per-caller rate limiting: a token bucket per API key (or workspace, in workspace mode),
 * refilled at `perSecond` up to `burst`. In memory, per process: `serve --workers N` divides
 * every limit by N (`perProcess` below); behind a load balancer of separate hosts the
 * operator divides it the same way, the usual trade for not putting a shared store on every
 * request's path.
 *
 * Example: perSecond 10, burst 20. A client idle for a while may send 20 requests at once;
 * the 21st in the same instant is refused with `retry-after: 1` (a token every 100 ms).
 */
import { ApiError } from '../shared/errors.js';
import type { Config } from '../config/config.js';
import { evictOldest } from '../shared/evict.js';

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
    const refilled = this.refill(caller);
    if (refilled < 1) {
      this.store(caller, refilled);
      throw this.refusal(refilled);
    }
    this.store(caller, refilled - 1);
  }

  /**
   * Throws RateLimitedError when `caller` has no token left, taking none: the failed-auth
   * bucket is looked at before credentials are checked and taken from only when they fail.
   */
  check(caller: string): void {
    if (!this.enabled) return;
    const refilled = this.refill(caller);
    if (refilled < 1) throw this.refusal(refilled);
  }

  /** Takes one token for `caller` if one is left, never throwing (see `check`). */
  spend(caller: string): void {
    if (!this.enabled) return;
    this.store(caller, Math.max(0, this.refill(caller) - 1));
  }

  /** The caller's tokens as of now; nothing stored (a look leaves no bucket behind). */
  private refill(caller: string): number {
    const b = this.buckets.get(caller);
    if (!b) return this.burst;
    // A clock set back (a test's, or the system's) refills nothing rather than draining.
    const elapsed = Math.max(0, this.clock() - b.at);
    return Math.min(this.burst, b.tokens + (elapsed / 1000) * this.perSecond);
  }

  private refusal(refilled: number): RateLimitedError {
    return new RateLimitedError(Math.max(1, Math.ceil((1 - refilled) / this.perSecond)), this.message);
  }

  private store(caller: string, tokens: number): void {
    this.buckets.delete(caller); // re-insert: Map order doubles as least-recently-used order
    this.buckets.set(caller, { tokens, at: this.clock() });
    // An eighth at a time: one-by-one eviction is slow on V8 Maps (src/shared/evict.ts).
    if (this.buckets.size > this.maxCallers) evictOldest(this.buckets, this.buckets.size - this.maxCallers + (this.maxCallers >> 3));
  }
}

/**
 * One API process's share of a limit configured for the whole service, under
 * `serve --workers N`: each of the N processes enforces the rate and the burst divided by N,
 * the burst at least 1 (so with a burst below N the service as a whole lets up to N through
 * at once). The primary hands connections out in turn, so a client on many connections gets
 * about the configured limit in all; the trade: one keep-alive connection stays on one
 * process and gets only its share.
 * Example: RATE_LIMIT_PER_SECOND 10, RATE_LIMIT_BURST 20, 4 processes: each allows 2.5 per
 * second, burst 5.
 */
export function perProcess(limit: { rate: number; burst: number }, processes: number): { rate: number; burst: number } {
  if (!Number.isInteger(processes) || processes < 1) throw new RangeError(`processes must be a positive integer, got ${processes}`);
  return { rate: limit.rate / processes, burst: Math.max(1, Math.floor(limit.burst / processes)) };
}

/** `config` with every request limit `perProcess` for one of `processes` API processes. */
export function limitsPerProcess(config: Config, processes: number): Config {
  const api = perProcess({ rate: config.rateLimitPerSecond, burst: config.rateLimitBurst }, processes);
  const signup = perProcess({ rate: config.signupRatePerMinute, burst: config.signupBurst }, processes);
  const failed = perProcess({ rate: config.authFailureRatePerMinute, burst: config.authFailureBurst }, processes);
  return {
    ...config,
    rateLimitPerSecond: api.rate,
    rateLimitBurst: api.burst,
    signupRatePerMinute: signup.rate,
    signupBurst: signup.burst,
    authFailureRatePerMinute: failed.rate,
    authFailureBurst: failed.burst,
  };
}
