/**
 * A named lease in the read store: the projection runner and the webhook deliverer each work
 * in one process at a time, the one holding their lease. The holder renews it every third of
 * its time to live; a process that stops renewing (killed, hung, cut off from the store) loses
 * it when it expires, and another takes it over. A holder that stops cleanly releases it, so
 * the next one starts at once. On the same host a holder whose process is gone (kill -9) is
 * taken over at once too (its pid no longer exists).
 *
 * The lease decides who works; it is not what keeps work from being done twice. Every
 * projection batch still moves its checkpoint with a compare-and-set in the batch's own
 * transaction, so even two processes that both believe they hold the lease (a paused holder
 * waking after expiry) can never apply an event twice: the second commit fails and re-reads.
 *
 * Time: each process uses its own clock. `held` turns false locally as soon as the time the
 * process last renewed it plus the TTL has passed, before anybody else may take it over
 * (their view of expiry uses the stored time, written after this process read its clock).
 */
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Doc, ReadStore } from '../ports/read-store.js';

export const LEASES = 'leases';
const DEFAULT_LEASE_TTL_MS = 10_000;

export interface LeaseDoc extends Doc {
  holder: string;
  host: string;
  pid: number;
  acquiredAt: number;
  renewedAt: number;
  /** Milliseconds; the lease is free from then on. */
  expiresAt: number;
  /** Bumped on every change of holder. */
  epoch: number;
}

export interface LeaseOptions {
  ttlMs?: number;
  clock?: () => number;
  /** Identifies this holder; unique per Lease by default. */
  holder?: string;
  logger?: { warn(obj: unknown, msg?: string): void };
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class Lease {
  readonly holder: string;
  readonly ttlMs: number;
  private readonly clock: () => number;
  private heldUntil = 0;
  private timer: NodeJS.Timeout | null = null;
  private onChange: ((held: boolean) => void) | null = null;
  private wasHeld = false;
  private busy: Promise<boolean> | null = null;
  private stopped = false;

  constructor(
    private readonly store: ReadStore,
    readonly name: string,
    private readonly options: LeaseOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.clock = options.clock ?? Date.now;
    this.holder = options.holder ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  /** True while this process holds the lease (renewed less than a TTL ago). */
  get held(): boolean {
    return !this.stopped && this.clock() < this.heldUntil;
  }

  /** Takes the lease if it is free, expired, ours, or its holder's process is gone; renews it if ours. */
  tryAcquire(): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    if (!this.busy) {
      this.busy = this.acquire().finally(() => (this.busy = null));
    }
    return this.busy;
  }

  private async acquire(): Promise<boolean> {
    const started = this.clock();
    let got = false;
    try {
      got = await this.store.transaction(async (tx) => {
        const now = this.clock();
        const cur = await tx.get<LeaseDoc>(LEASES, this.name);
        const mine = cur?.holder === this.holder;
        const free =
          !cur || mine || cur.expiresAt <= now || (cur.host === os.hostname() && cur.pid !== process.pid && !pidAlive(cur.pid));
        if (!free) return false;
        const doc: LeaseDoc = {
          _id: this.name,
          holder: this.holder,
          host: os.hostname(),
          pid: process.pid,
          acquiredAt: mine ? cur.acquiredAt : now,
          renewedAt: now,
          expiresAt: now + this.ttlMs,
          epoch: mine ? cur.epoch : (cur?.epoch ?? 0) + 1,
        };
        await tx.upsert(LEASES, doc);
        return true;
      });
    } catch (error) {
      // The store is unreachable: the lease runs out on its own.
      this.options.logger?.warn({ err: error, lease: this.name }, 'could not renew the lease');
    }
    if (got && !this.stopped) this.heldUntil = started + this.ttlMs;
    this.notify();
    return got && !this.stopped;
  }

  private notify() {
    const now = this.held;
    if (now !== this.wasHeld) {
      this.wasHeld = now;
      this.onChange?.(now);
    }
  }

  /** Keeps trying to take, then renewing, the lease every third of its TTL. */
  start(onChange?: (held: boolean) => void): void {
    this.stopped = false;
    this.onChange = onChange ?? null;
    if (this.timer) return;
    const tick = () => {
      void this.tryAcquire();
      this.notify();
    };
    this.timer = setInterval(tick, Math.max(10, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
    tick();
  }

  /** Stops renewing; `release` gives the lease back so another process takes it at once. */
  async stop(release = true): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.busy?.catch(() => undefined);
    const wasMine = this.heldUntil > 0;
    this.stopped = true;
    this.heldUntil = 0;
    this.notify();
    if (!release || !wasMine) return;
    await this.store
      .transaction(async (tx) => {
        const cur = await tx.get<LeaseDoc>(LEASES, this.name);
        if (cur?.holder === this.holder) await tx.patch(LEASES, this.name, { expiresAt: 0 });
      })
      .catch((error) => this.options.logger?.warn({ err: error, lease: this.name }, 'could not release the lease'));
  }

  /** The stored lease (status output). */
  static read(store: ReadStore, name: string): Promise<LeaseDoc | null> {
    return store.get<LeaseDoc>(LEASES, name);
  }
}
