/**
 * Follows the event log and keeps the projections up to date.
 *
 * One loop reads the log once for all projections: a batch of events is applied to every
 * projection in one read-store transaction, and each projection's checkpoint moves in that
 * same transaction (compare-and-set, so a second runner on the same store can never apply a
 * batch twice: its transaction fails and it re-reads the checkpoints). A projection whose
 * checkpoint is behind the others (one added later) gets the events it has not seen.
 *
 * Read-your-writes: `waitFor(position)` resolves once every projection has passed the
 * position of a request's last event; the HTTP layer awaits it before answering.
 *
 * Several processes: with a `lease` (src/runtime/lease.ts) the runner applies batches only
 * while it holds the lease, and otherwise follows the checkpoints another process stores (so
 * `waitFor` still works: it polls them every `checkpointPollMs` while requests wait, and re-reads
 * them at once when told they moved: `checkpointsMoved`, `observed`, or the read store's own
 * `onCheckpointMoved`). With `observe` it never applies (`serve --role api`).
 */
import { LOG_START, type EventStore, type LogPosition, type RecordedEvent } from '../ports/event-store.js';
import { Wakeup } from './wakeup.js';
import { CheckpointConflictError, readCheckpoints, type ReadStore } from '../ports/read-store.js';
import type { Projection } from './projection.js';
import type { Lease } from './lease.js';
import type { GenerationalReadStore } from './generations.js';
import { PARK_AFTER_ATTEMPTS, isStoreFault, park, parkedDoc, parkedIndexes } from './parked.js';

export interface RunnerLogger {
  error(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
}

export interface ProjectionRunnerOptions {
  batchSize?: number;
  /** How often to look for events appended by other processes (the safety net of notices). */
  pollMs?: number;
  /** How often a runner that does not apply re-reads the stored checkpoints while requests wait. */
  checkpointPollMs?: number;
  logger?: RunnerLogger;
  /** Apply only while holding this lease; follow the stored checkpoints otherwise. */
  lease?: Lease;
  /** Never apply: follow the checkpoints other processes store (API-only processes). */
  observe?: boolean;
  /** Told the position every projection has passed after each applied batch (src/runtime/background.ts). */
  onApplied?: (position: LogPosition) => void;
  /** The time parked events are stamped with. */
  clock?: () => number;
  /**
   * Stores for projection lanes (Projection.lane), other handles on the same store
   * (ReadStore.fork): a batch's projections of such a lane are applied in a transaction of
   * that store's, concurrently with the other lanes', each moving its own checkpoints. Lanes
   * without a store here are applied with the main lane.
   */
  lanes?: ReadonlyMap<string, ReadStore>;
}

interface Waiter {
  position: LogPosition;
  resolve: (caughtUp: boolean) => void;
  timer: NodeJS.Timeout;
}

const silent: RunnerLogger = { error() {}, warn() {}, info() {} };

/**
 * A handle of its own (ReadStore.fork) for each lane of `projections`, seen through `view`
 * (its generation, followed or pinned), when the store has them; none otherwise (SQLite's one
 * writer, MongoDB). The caller closes the forks once the runner has stopped.
 */
export function forkLanes(view: GenerationalReadStore, projections: readonly Projection[]): { stores: Map<string, ReadStore>; forks: ReadStore[] } {
  const stores = new Map<string, ReadStore>();
  const forks: ReadStore[] = [];
  const base = view.base;
  if (!base.fork) return { stores, forks };
  for (const lane of new Set(projections.flatMap((p) => (p.lane === undefined ? [] : [p.lane])))) {
    const fork = base.fork();
    forks.push(fork);
    stores.set(lane, view.through(fork));
  }
  return { stores, forks };
}

/** `projections` by the store their lane writes with: `main` for the main lane and for lanes without a store of their own. */
function byStore(projections: readonly Projection[], lanes: ReadonlyMap<string, ReadStore>, main: ReadStore): Map<ReadStore, Projection[]> {
  const out = new Map<ReadStore, Projection[]>();
  for (const p of projections) {
    const store = (p.lane !== undefined && lanes.get(p.lane)) || main;
    out.set(store, [...(out.get(store) ?? []), p]);
  }
  return out;
}

export class ProjectionRunner {
  private readonly checkpoints = new Map<string, LogPosition | null>();
  private readonly batchSize: number;
  private readonly pollMs: number;
  private readonly checkpointPollMs: number;
  private readonly log: RunnerLogger;
  private waiters: Waiter[] = [];
  /** Told whenever the position may have moved (onAdvanced): the change streams. */
  private readonly advanceListeners = new Set<() => void>();
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly wakeup = new Wakeup();
  private unsubscribe: (() => void) | null = null;
  private unsubscribeCheckpoints: (() => void) | null = null;
  private failures = 0;
  private readonly lease: Lease | undefined;
  private readonly observe: boolean;
  private readonly onApplied: ((position: LogPosition) => void) | undefined;
  private readonly clock: () => number;
  private readonly lanes: ReadonlyMap<string, ReadStore>;

  constructor(
    private readonly events: EventStore,
    private readonly store: ReadStore,
    readonly projections: readonly Projection[],
    options: ProjectionRunnerOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 1000;
    this.pollMs = options.pollMs ?? 500;
    this.checkpointPollMs = options.checkpointPollMs ?? 20;
    this.log = options.logger ?? silent;
    this.lease = options.lease;
    this.observe = options.observe ?? false;
    this.onApplied = options.onApplied;
    this.clock = options.clock ?? Date.now;
    this.lanes = options.lanes ?? new Map();
  }

  /** Whether this runner applies batches now (not an observer, and holding its lease if it has one). */
  get applying(): boolean {
    return !this.observe && (!this.lease || this.lease.held);
  }

  async init(): Promise<void> {
    await this.store.ensureIndexes([...this.projections.flatMap((p) => p.indexes), ...parkedIndexes]);
    await this.reloadCheckpoints();
  }

  /** The position every projection has passed. */
  get position(): LogPosition {
    let min: LogPosition | null = null;
    for (const p of this.projections) {
      const c = this.checkpoints.get(p.name) ?? LOG_START;
      if (min === null || c < min) min = c;
    }
    return min ?? LOG_START;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = this.events.onAppended(() => this.poke());
    this.unsubscribeCheckpoints = this.store.onCheckpointMoved?.(() => this.checkpointsMoved()) ?? null;
    if (!this.observe) this.lease?.start(() => this.poke());
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.unsubscribeCheckpoints?.();
    this.poke();
    await this.loop;
    await this.lease?.stop();
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.resolve(this.position >= w.position);
    }
    this.waiters = [];
  }

  /** Resolves true once all projections passed `position`, false after `timeoutMs`. */
  waitFor(position: LogPosition, timeoutMs: number): Promise<boolean> {
    if (this.position >= position) return Promise.resolve(true);
    this.poke();
    return new Promise((resolve) => {
      const waiter: Waiter = {
        position,
        resolve,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          resolve(false);
        }, timeoutMs),
      };
      this.waiters.push(waiter);
    });
  }

  /**
   * `listener` is called whenever `position` may have moved: after a batch this runner
   * applied, after it re-read the checkpoints another process stored, after a notice of
   * another process's applied position (`observed`). A follower told of moved checkpoints
   * (`checkpointsMoved`) re-reads them at once while a listener is registered, as it does
   * while a request waits. For the change streams (src/http/routes/changes-stream.ts), which
   * read whatever is applied after their cursor; returns the unsubscribe.
   */
  onAdvanced(listener: () => void): () => void {
    this.advanceListeners.add(listener);
    return () => this.advanceListeners.delete(listener);
  }

  /** Applies everything up to the log's head; returns the number of events read. `onBatch` sees each batch (rebuild progress). */
  async catchUp(onBatch?: (read: number, position: LogPosition) => void): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.step();
      total += n;
      if (n === 0) return total;
      onBatch?.(n, this.position);
    }
  }

  /**
   * An observer is told by the applier (a thread of this process) that every projection has
   * passed `position`: waiting requests are answered now instead of at the next poll of the
   * stored checkpoints. A checkpoint never moves back.
   */
  observed(position: LogPosition): void {
    for (const p of this.projections) {
      const c = this.checkpoints.get(p.name) ?? null;
      if (c === null || c < position) this.checkpoints.set(p.name, position);
    }
    this.release();
  }

  /**
   * Another process moved the stored checkpoints (a hint, without the position: a notice from
   * the read store or the data directory). A runner that does not apply re-reads them now if a
   * request waits; otherwise the next `waitFor` reads them anyway.
   */
  checkpointsMoved(): void {
    if (!this.applying && (this.waiters.length > 0 || this.advanceListeners.size > 0)) this.poke();
  }

  async isCaughtUp(): Promise<boolean> {
    return this.position >= (await this.events.headPosition());
  }

  private poke() {
    this.wakeup.poke();
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.wakeup.take();
      let read = 0;
      try {
        if (this.applying) read = await this.step();
        else await this.follow();
        this.failures = 0;
      } catch (error) {
        // The store is down or busy (an event at fault was parked inside step): nothing may be
        // skipped, so log, back off, and read the batch again.
        this.failures++;
        this.log.error({ err: error, failures: this.failures }, 'projection batch failed on the store; retrying');
        await this.wakeup.sleep(Math.min(5000, 50 * 2 ** Math.min(this.failures, 7)));
        continue;
      }
      // A follower polls fast while requests wait for another process to apply their events.
      const idle = !this.applying && this.waiters.length > 0 ? Math.min(this.pollMs, this.checkpointPollMs) : this.pollMs;
      if (read === 0 && this.running) await this.wakeup.sleep(idle);
    }
  }

  /** Not applying: take the checkpoints the applying process stored. */
  private async follow() {
    await this.reloadCheckpoints();
    this.release();
  }

  private async reloadCheckpoints() {
    const got = await readCheckpoints(this.store, this.projections.map((p) => p.name));
    for (const [name, position] of got) this.checkpoints.set(name, position);
  }

  /**
   * One batch: read after the lowest checkpoint, apply, move checkpoints. A batch that fails
   * for any reason but the store is applied again one event at a time, which finds the event
   * at fault and parks it (src/runtime/parked.ts) instead of retrying the batch forever.
   */
  private async step(): Promise<number> {
    if (this.projections.length === 0) return 0;
    const from = this.position;
    const batch = await this.events.readAll({ after: from, maxCount: this.batchSize });
    if (batch.length === 0) return 0;
    try {
      try {
        await this.commit(batch, this.projections);
      } catch (error) {
        if (error instanceof CheckpointConflictError || isStoreFault(error)) throw error;
        this.log.warn({ err: error, from: batch[0]!.position, to: batch[batch.length - 1]!.position }, 'projection batch failed; applying it one event at a time');
        await this.oneByOne(batch);
      }
    } catch (error) {
      if (error instanceof CheckpointConflictError) {
        // Another runner got there first: take its checkpoints and carry on from them.
        await this.reloadCheckpoints();
        return batch.length;
      }
      throw error;
    }
    this.release();
    this.onApplied?.(this.position);
    return batch.length;
  }

  /**
   * Applies `events` to `projections` and moves their checkpoints past them: one transaction
   * per lane (ProjectionRunnerOptions.lanes), concurrently. A lane that commits keeps its
   * checkpoints even when another fails (the failure is thrown once all have settled): each
   * projection's checkpoint says what it has applied, and the next batch starts from the lowest.
   */
  private async commit(events: readonly RecordedEvent[], projections: readonly Projection[]): Promise<void> {
    if (this.lanes.size === 0) return this.commitOn(this.store, events, projections);
    const groups = [...byStore(projections, this.lanes, this.store)];
    const settled = await Promise.allSettled(groups.map(([store, ps]) => this.commitOn(store, events, ps)));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async commitOn(store: ReadStore, events: readonly RecordedEvent[], projections: readonly Projection[]): Promise<void> {
    const last = events[events.length - 1]!.position;
    const moved = new Map<string, LogPosition>();
    await store.transaction(async (tx) => {
      for (const p of projections) {
        const checkpoint = this.checkpoints.get(p.name) ?? null;
        const seen = checkpoint ?? LOG_START;
        for (const e of events) {
          if (e.position > seen && p.handles.has(e.type)) await p.apply(e, tx);
        }
        if (last > seen) {
          await tx.setCheckpoint(p.name, last, checkpoint);
          moved.set(p.name, last);
        }
      }
    });
    for (const [name, pos] of moved) this.checkpoints.set(name, pos);
  }

  /** The slow path of a failed batch: each event in its own transaction, each projection alone where the event fails. */
  private async oneByOne(batch: readonly RecordedEvent[]): Promise<void> {
    for (const e of batch) {
      try {
        await this.commit([e], this.projections);
        continue;
      } catch (error) {
        if (error instanceof CheckpointConflictError || isStoreFault(error)) throw error;
      }
      for (const p of this.projections) await this.applyOrPark(e, p);
    }
  }

  private async applyOrPark(e: RecordedEvent, p: Projection): Promise<void> {
    let last: unknown;
    for (let attempt = 1; attempt <= PARK_AFTER_ATTEMPTS; attempt++) {
      try {
        await this.commit([e], [p]);
        return;
      } catch (error) {
        if (error instanceof CheckpointConflictError || isStoreFault(error)) throw error;
        last = error;
        if (attempt < PARK_AFTER_ATTEMPTS) await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
    // A store fault nobody recognised must not park the log away: the store has to answer a
    // plain read before anything is parked (a throw here is retried like any store fault).
    const checkpoint = await this.store.getCheckpoint(p.name);
    this.checkpoints.set(p.name, checkpoint);
    if (checkpoint !== null && checkpoint >= e.position) return;
    const doc = parkedDoc(p.name, e, last, PARK_AFTER_ATTEMPTS, this.clock());
    await this.store.transaction(async (tx) => {
      await park(tx, doc);
      await tx.setCheckpoint(p.name, e.position, checkpoint);
    });
    this.checkpoints.set(p.name, e.position);
    this.log.error(
      { err: last, projection: p.name, position: e.position, eventId: e.id, eventType: e.type, stream: e.stream, apiKey: e.metadata.apiKey, parkedId: doc._id },
      `projection ${p.name} cannot apply event ${e.id} (${e.type}); parked it and went on (collab projections parked)`,
    );
  }

  private release() {
    const at = this.position;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (at >= w.position) {
        clearTimeout(w.timer);
        w.resolve(true);
      } else still.push(w);
    }
    this.waiters = still;
    for (const l of this.advanceListeners) l();
  }
}
