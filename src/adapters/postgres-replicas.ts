/**
 * Read replicas (POSTGRES_REPLICA_URLS): hot standbys of the primary that read-only requests
 * are answered from when their replay has reached what the request needs.
 *
 * - What a standby has applied is read on the standby itself: its `checkpoints` rows are the
 *   primary's, physically replicated, and a projection's checkpoint moves in the same commit as
 *   its read-model writes. A standby replays commits in the primary's order, so once it shows
 *   checkpoints at P it shows every read-model row, key ring and table committed before them.
 *   The position is asked with the primary's own query (the projections' `getCheckpoint`, run
 *   on the standby: `start`'s `applied`), every PROBE_MS, and only grows between probes: a
 *   request is routed on a value the standby has at least reached.
 * - A request needs a position: its consistency token's (x-consistency-token), else the last
 *   write this process made for the same caller (its API key or workspace: read-your-writes
 *   without a token, within one process), else nothing. It goes to an admitted standby whose
 *   applied position is at least that (round robin), and otherwise to the primary. So a
 *   request carrying a token is never answered from older read models than the primary would
 *   answer it from.
 * - A standby is admitted while it answers, is in recovery (a promoted one no longer follows the
 *   primary), its replay lag is within POSTGRES_REPLICA_MAX_LAG_MS, and it has applied what the
 *   primary had applied POSTGRES_REPLICA_MAX_LAG_MS ago (`floor`: the primary is asked what it
 *   applied on the same clock). The last rule is what bounds staleness: replay lag is measured
 *   on what the standby received, so a standby whose WAL stops arriving reads no lag at all.
 *   Authentication reads the standby too (src/http/read-target.ts), so the bound is also how
 *   long a deleted API key or reset token may still be accepted by a read. A failed read leaves
 *   it out at once (the read is asked again of the primary: PostgresReadStore.routed); the next
 *   probe that finds it healthy takes it back.
 * - What is routed is decided per request when it arrives (src/http/read-target.ts: read-only
 *   routes), by `choose`; its authentication and its handler run `on` the choice; only reads
 *   outside transactions go to the standby (PostgresReadStore), so anything that writes, and
 *   what it reads to decide, stays on the primary. A standby's store has its own read cache and
 *   change signal, and the access index a shard per standby (queries/access-index.ts), so a
 *   request a standby answers asks the primary nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { LogPosition } from '../ports/event-store.js';
import { evictOldest } from '../shared/evict.js';
import { PostgresReadStore, type PostgresReadStoreOptions, type ReadRouting } from './postgres-read-store.js';

/** How often each standby's health, lag and applied position are asked, ms. */
const PROBE_MS = 250;
/** Callers whose last write is remembered (oldest dropped first). */
const WRITERS_KEPT = 100_000;

type State = 'up' | 'lagging' | 'down';

interface Replica {
  /** host:port, for logs and metrics (never the credentials). */
  readonly name: string;
  readonly store: PostgresReadStore;
  state: State;
  lagMs: number;
  /** What every projection had applied on it at the last probe (null: not known yet). */
  applied: LogPosition | null;
  /** Requests sent to it; reads that failed on it and were asked of the primary. */
  requests: number;
  fallbacks: number;
}

interface Scope {
  target: PostgresReadStore | null;
  /** A request's reads (counted), or a probe's. */
  request: boolean;
}

interface Logger {
  warn(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
}

/** What /metrics shows of one standby. */
export interface ReplicaStatus {
  name: string;
  up: boolean;
  lagSeconds: number;
  requests: number;
  fallbacks: number;
}

/** Whether a standby that applied `applied` is within the bound `floor` (ReplicaSet.floor). */
const reaches = (applied: LogPosition | null, floor: LogPosition | null | undefined) => floor !== undefined && (floor === null || (applied !== null && applied >= floor));

const nameOf = (url: string) => {
  const u = new URL(url);
  return `${u.hostname}:${u.port || '5432'}`;
};

export class ReplicaSet implements ReadRouting {
  private readonly replicas: Replica[];
  private readonly scope = new AsyncLocalStorage<Scope>();
  private readonly lastWrites = new Map<string, LogPosition>();
  private next = 0;
  private readonly timers = new Map<Replica | 'primary', NodeJS.Timeout>();
  /** What the primary had applied, oldest first, by when it was asked (performance.now()): see floor(). */
  private readonly primarySamples: Array<{ sent: number; position: LogPosition | null }> = [];
  private readonly probing = new Set<Promise<void>>();
  private closed = false;
  /** Routable requests the primary answered (no standby had reached what they needed, or none was up). */
  primaryRequests = 0;

  constructor(
    urls: readonly string[],
    private readonly maxLagMs: number,
    options: PostgresReadStoreOptions,
    private readonly logger?: Logger,
  ) {
    this.replicas = urls.map((url) => ({
      name: nameOf(url),
      store: new PostgresReadStore(url, { ...options, standby: true, routing: undefined }),
      state: 'down',
      lagMs: 0,
      applied: null,
      requests: 0,
      fallbacks: 0,
    }));
  }

  /** ReadRouting: the standby of the current request, if it was given one. */
  target(): PostgresReadStore | null {
    return this.scope.getStore()?.target ?? null;
  }

  /** ReadRouting: a read failed on `target`: left out until a probe finds it healthy; the rest of the request reads the primary. */
  failed(target: PostgresReadStore, error: unknown): void {
    const scope = this.scope.getStore();
    if (scope) scope.target = null;
    const r = this.replicas.find((x) => x.store === target);
    if (!r) return;
    if (scope?.request) r.fallbacks++;
    this.setState(r, 'down', { code: (error as { code?: unknown }).code, err: (error as Error).message });
  }

  /**
   * Where a read-only request's reads go, chosen once when it arrives (before authentication,
   * which reads there too): an admitted standby that has applied `need` (any admitted one when
   * null), round robin, or null for the primary when none has. Counted where it goes.
   */
  choose(need: LogPosition | null): PostgresReadStore | null {
    const r = this.pick(need);
    if (!r) {
      this.primaryRequests++;
      return null;
    }
    r.requests++;
    r.store.beginRequest();
    return r.store;
  }

  /** A request chosen for `target` reads the primary after all (its credentials were refused there): counted there. */
  toPrimary(target: PostgresReadStore): void {
    const r = this.replicas.find((x) => x.store === target);
    if (r) r.requests--;
    this.primaryRequests++;
  }

  /** Runs `fn` (a part of a request: its authentication, its handler) with its reads on `target` (null: the primary). */
  async on<T>(target: PostgresReadStore | null, fn: () => Promise<T>): Promise<T> {
    // Left out since it was chosen (a read failed there): the rest of the request reads the primary.
    if (!target || this.replicas.find((x) => x.store === target)?.state === 'down') return fn();
    const scope: Scope = { target, request: true };
    try {
      return await this.scope.run(scope, fn);
    } finally {
      // Anything the request started that outlives it reads the primary.
      scope.target = null;
    }
  }

  /** What a caller's read needs besides its token: the last write this process made for it. */
  lastWrite(caller: string): LogPosition | null {
    return this.lastWrites.get(caller) ?? null;
  }

  /** This process appended up to `position` for `caller` (its read models have it, or the write's wait timed out). */
  wrote(caller: string, position: LogPosition): void {
    const before = this.lastWrites.get(caller);
    if (before !== undefined && before >= position) return;
    this.lastWrites.delete(caller);
    if (this.lastWrites.size >= WRITERS_KEPT) evictOldest(this.lastWrites, WRITERS_KEPT >> 3);
    this.lastWrites.set(caller, position);
  }

  /**
   * The position every standby must have applied to answer now: what the primary had applied
   * when it answered the last probe sent at least maxLagMs ago (the oldest sample while none is
   * that old: stricter). Undefined when the primary has answered no probe sent within the last
   * maxLagMs + PROBE_MS: what it applied since is unknown, so no standby is known to be within
   * the bound.
   */
  private floor(now = performance.now()): LogPosition | null | undefined {
    const samples = this.primarySamples;
    const newest = samples[samples.length - 1];
    if (!newest || newest.sent < now - this.maxLagMs - PROBE_MS) return undefined;
    const cutoff = now - this.maxLagMs;
    // The newest sample sent by the cutoff (binary search: a long bound keeps many samples);
    // older ones are never needed again.
    let lo = 0;
    let hi = samples.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (samples[mid]!.sent <= cutoff) lo = mid;
      else hi = mid - 1;
    }
    if (lo > 0) samples.splice(0, lo);
    return samples[0]!.position;
  }

  private pick(need: LogPosition | null): Replica | null {
    const floor = this.floor();
    if (floor === undefined) return null;
    if (floor !== null && (need === null || floor > need)) need = floor;
    const n = this.replicas.length;
    for (let k = 0; k < n; k++) {
      const r = this.replicas[(this.next + k) % n]!;
      if (r.state !== 'up' || r.applied === null || (need !== null && r.applied < need)) continue;
      this.next = (this.next + k + 1) % n;
      return r;
    }
    return null;
  }

  /**
   * Starts probing every standby, each on its own clock (one that does not answer takes up to
   * its connection timeout, which must not hold the others' positions back): `applied` is the
   * primary's query of what every projection applied, run here with its reads on the standby
   * probed.
   */
  start(applied: () => Promise<LogPosition | null>): void {
    const every = (key: Replica | 'primary', probe: () => Promise<void>) => {
      const tick = () => {
        const probing = probe().finally(() => {
          this.probing.delete(probing);
          if (!this.closed) this.timers.set(key, setTimeout(tick, PROBE_MS).unref());
        });
        this.probing.add(probing);
      };
      tick();
    };
    every('primary', () => this.probePrimary(applied));
    for (const r of this.replicas) every(r, () => this.probe(r, applied));
  }

  /**
   * What the primary has applied, asked on its own clock: a sample labelled with the time the
   * question was sent, since its answer holds at least every commit applied before then.
   */
  private async probePrimary(applied: () => Promise<LogPosition | null>): Promise<void> {
    const sent = performance.now();
    try {
      const position = await applied();
      const samples = this.primarySamples;
      // Out of order (a slow answer after a quicker later one) adds nothing.
      if (samples.length > 0 && samples[samples.length - 1]!.sent > sent) return;
      samples.push({ sent, position });
    } catch {
      // No sample: once the last one is too old, no standby is chosen (floor()).
    }
  }

  private async probe(r: Replica, applied: () => Promise<LogPosition | null>): Promise<void> {
    try {
      const s = await r.store.standbyState();
      // Read with a scope of its own: a failure here must not count as a request's fallback.
      const scope: Scope = { target: r.store, request: false };
      const position = await this.scope.run(scope, async () => {
        try {
          const p = await applied();
          // A failed read fell back to the primary (failed() cleared the target): no answer of the standby's.
          if (scope.target === null) throw new Error('the standby did not answer its checkpoints');
          return p;
        } finally {
          // Anything the probe started that outlives it reads the primary.
          scope.target = null;
        }
      });
      r.lagMs = s.lagMs;
      // Taken as read, not as the highest seen: after a rebuild's switch the checkpoints asked are
      // the new generation's, which a standby shows once it replayed the switch.
      r.applied = position;
      const floor = this.floor();
      if (!s.inRecovery) this.setState(r, 'down', { reason: 'not in recovery: promoted, or not a standby; its reads no longer follow the primary' });
      else if (s.lagMs > this.maxLagMs) this.setState(r, 'lagging', { lagMs: Math.round(s.lagMs), maxLagMs: this.maxLagMs });
      // Behind what the primary had applied maxLagMs ago (its WAL does not arrive: replay lag
      // cannot see that), or the primary's position is not known: left out until it has it.
      else if (!reaches(position, floor)) {
        this.setState(r, 'lagging', { reason: floor === undefined ? 'the primary has not answered its probes' : 'behind what the primary had applied POSTGRES_REPLICA_MAX_LAG_MS ago', maxLagMs: this.maxLagMs });
      }
      else this.setState(r, 'up', {});
    } catch (error) {
      this.setState(r, 'down', { code: (error as { code?: unknown }).code, err: (error as Error).message });
    }
  }

  private setState(r: Replica, state: State, detail: Record<string, unknown>) {
    if (r.state === state) return;
    const before = r.state;
    r.state = state;
    if (state === 'up') this.logger?.info({ replica: r.name, was: before }, `read replica ${r.name} admitted: reads go to it again`);
    else if (before === 'up') this.logger?.warn({ replica: r.name, state, ...detail }, `read replica ${r.name} left out (${state}): its reads go to the primary until it is healthy`);
  }

  status(): ReplicaStatus[] {
    const floor = this.floor();
    // Admitted as a request would find it now: between probes the bound may have passed it.
    return this.replicas.map((r) => ({ name: r.name, up: r.state === 'up' && reaches(r.applied, floor), lagSeconds: r.lagMs / 1000, requests: r.requests, fallbacks: r.fallbacks }));
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.probing].map((p) => p.catch(() => undefined)));
    for (const t of this.timers.values()) clearTimeout(t);
    await Promise.all(this.replicas.map((r) => r.store.close().catch(() => undefined)));
  }
}
