/**
 * Read-model generations: what lets a rebuild replay the log into fresh collections while the
 * service keeps answering from the old ones, then switch with one small transaction.
 *
 * A generation is a set of physical collections and projection checkpoints. Generation 0 uses
 * the plain names (`documents`, checkpoint `documents`): data written before generations
 * existed stays valid. Generation n >= 1 prefixes them: `g2_documents`, checkpoint
 * `g2:documents`. On MongoDB that is one collection per name, just as on SQLite one table.
 * Which generation is live is one document, `read_model_meta/active`, in a shared collection.
 *
 * `GenerationalReadStore` is the read store every part of the service uses: it implements the
 * port over any adapter and maps names to the live generation. Collections that are not built
 * from the log (presence, idempotency keys, the webhook outbox, leases, this meta collection)
 * are **shared**: one copy, never versioned, never rebuilt. Every other collection is a read
 * model and versioned. A collection written outside projections must be listed as shared
 * (src/ops/read-models.ts), or a rebuild would leave its documents behind in the old generation.
 *
 * Switching: queries use the generation this process last saw (refreshed every second, and by
 * every transaction that touches a read model). A transaction that touches a read model first
 * reads the meta document inside the transaction, so a projection batch that starts after a
 * switch writes the new generation; its checkpoint compare-and-set then fails against the
 * new generation's checkpoint (unless equal), and the runner reloads and carries on from there.
 * Nothing is applied twice, and nothing written after the switch lands in the old generation.
 */
import type { LogPosition } from '../ports/event-store.js';
import { readCheckpoints, type Doc, type Filter, type FindOptions, type IndexSpec, type ReadStore, type ReadTx, type TxOptions, type WriteOp } from '../ports/read-store.js';

export const READ_MODEL_META = 'read_model_meta';
export const ACTIVE_ID = 'active';

export interface ActiveGenerationDoc extends Doc {
  generation: number;
  /** The generation this one replaced (kept until the next rebuild drops it). */
  previous: number | null;
  switchedAt: number;
  /** Where every projection of the new generation stood at the switch. */
  position: LogPosition;
}

const PREFIX = /^g(\d+)_(.+)$/;

export const physicalCollection = (collection: string, generation: number) =>
  generation === 0 ? collection : `g${generation}_${collection}`;
export const physicalCheckpoint = (name: string, generation: number) => (generation === 0 ? name : `g${generation}:${name}`);

/** The generation and logical name of a physical collection name. */
export function parsePhysical(name: string): { generation: number; collection: string } {
  const m = PREFIX.exec(name);
  return m ? { generation: Number(m[1]), collection: m[2]! } : { generation: 0, collection: name };
}

export interface GenerationOptions {
  /** Collections not built from the log: one copy, shared by every generation. */
  shared: Iterable<string>;
  /** Checkpoints that belong to the read models (the projections' names); others are shared. */
  projectionNames: Iterable<string>;
  /** How often queries look for a switch made by another process. Default 1000 ms; 0: never. */
  refreshMs?: number;
}

interface Shared {
  base: ReadStore;
  shared: Set<string>;
  projectionNames: Set<string>;
  /** The live generation as this process last saw it. */
  live: number;
  timer: NodeJS.Timeout | null;
  listeners: Set<(generation: number) => void>;
}

export class GenerationalReadStore implements ReadStore {
  /** Opens the live view: reads the active generation, then keeps it fresh. */
  static async open(base: ReadStore, options: GenerationOptions): Promise<GenerationalReadStore> {
    const state: Shared = {
      base,
      shared: new Set([...options.shared, READ_MODEL_META]),
      projectionNames: new Set(options.projectionNames),
      live: 0,
      timer: null,
      listeners: new Set(),
    };
    const store = new GenerationalReadStore(state, null, true);
    await store.refresh();
    const every = options.refreshMs ?? 1000;
    if (every > 0) {
      state.timer = setInterval(() => void store.refresh().catch(() => undefined), every);
      state.timer.unref();
    }
    return store;
  }

  private constructor(
    private readonly s: Shared,
    /** A fixed generation (a rebuild's target), or null to follow the live one. */
    private readonly pinned: number | null,
    private readonly owner: boolean,
    /** Another handle on the same store (ReadStore.fork) this view reads and writes with, instead of `s.base`. */
    private readonly via: ReadStore | null = null,
  ) {}

  /** The generation this view reads and writes. */
  get generation(): number {
    return this.pinned ?? this.s.live;
  }

  get base(): ReadStore {
    return this.via ?? this.s.base;
  }

  /** A view of the same store fixed on `generation` (no switching); closing it closes nothing. */
  at(generation: number): GenerationalReadStore {
    return new GenerationalReadStore(this.s, generation, false, this.via);
  }

  /**
   * This view (following the live generation, or pinned as this one is) through `other`,
   * another handle on the same store (ReadStore.fork): a projection lane's writes go there.
   * Closing it closes nothing; the caller closes `other`.
   */
  through(other: ReadStore): GenerationalReadStore {
    return new GenerationalReadStore(this.s, this.pinned, false, other);
  }

  isShared(collection: string): boolean {
    return this.s.shared.has(collection);
  }

  isProjectionCheckpoint(name: string): boolean {
    return this.s.projectionNames.has(name);
  }

  /** Called with the new generation whenever this process sees a switch. */
  onSwitch(listener: (generation: number) => void): () => void {
    this.s.listeners.add(listener);
    return () => this.s.listeners.delete(listener);
  }

  /** Reads the active generation (outside any transaction). */
  async refresh(): Promise<number> {
    const doc = await this.base.get<ActiveGenerationDoc>(READ_MODEL_META, ACTIVE_ID);
    this.seen(doc?.generation ?? 0);
    return this.s.live;
  }

  /** @internal a transaction or refresh read the active generation. */
  seen(generation: number) {
    if (generation === this.s.live) return;
    this.s.live = generation;
    for (const l of this.s.listeners) l(generation);
  }

  col(collection: string, generation = this.generation): string {
    return this.s.shared.has(collection) ? collection : physicalCollection(collection, generation);
  }

  cp(name: string, generation = this.generation): string {
    return this.s.projectionNames.has(name) ? physicalCheckpoint(name, generation) : name;
  }

  get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    return this.base.get<T>(this.col(collection), id);
  }
  getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    return this.base.getMany<T>(this.col(collection), ids);
  }
  find<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.base.find<T>(this.col(collection), filter, options);
  }
  count(collection: string, filter: Filter): Promise<number> {
    return this.base.count(this.col(collection), filter);
  }

  ensureIndexes(specs: readonly IndexSpec[]): Promise<void> {
    return this.base.ensureIndexes(specs.map((spec) => ({ ...spec, collection: this.col(spec.collection) })));
  }

  transaction<T>(fn: (tx: ReadTx) => Promise<T>, options?: TxOptions): Promise<T> {
    return this.base.transaction((tx) => fn(new GenerationalTx(tx, this, this.pinned)), options);
  }

  /**
   * A transaction with both views: `mapped` (this view's generation, as `transaction` gives)
   * and `raw` (physical names, no mapping). Rebuild's switch uses the raw one to touch the
   * old generation's checkpoints and the meta document in the same transaction.
   */
  transactionRaw<T>(fn: (mapped: ReadTx, raw: ReadTx) => Promise<T>): Promise<T> {
    return this.base.transaction((tx) => fn(new GenerationalTx(tx, this, this.pinned), tx));
  }

  getCheckpoint(name: string): Promise<LogPosition | null> {
    return this.base.getCheckpoint(this.cp(name));
  }

  async getCheckpoints(names: readonly string[]): Promise<Map<string, LogPosition | null>> {
    const physical = names.map((n) => this.cp(n));
    const got = await readCheckpoints(this.base, physical);
    return new Map(names.map((n, i) => [n, got.get(physical[i]!) ?? null]));
  }

  dropCollection(collection: string): Promise<void> {
    return this.base.dropCollection(this.col(collection));
  }

  /** The logical names of this generation's collections, shared ones included. */
  async listCollections(): Promise<string[]> {
    const g = this.generation;
    const out: string[] = [];
    for (const name of await this.base.listCollections()) {
      if (this.s.shared.has(name)) out.push(name);
      else {
        const p = parsePhysical(name);
        if (p.generation === g && !this.s.shared.has(p.collection)) out.push(p.collection);
      }
    }
    return out.sort();
  }

  beginRequest(): void {
    this.base.beginRequest();
  }

  /** Per source (ReadStore.readSource; undefined: the base store's own server): each server's signal moves on its own. */
  private readonly epochs = new Map<object | undefined, { base: number; generation: number; value: number }>();

  /** The base store's epoch, moved on also when this view's generation changes (its collections do). */
  readEpoch(): number | undefined | Promise<number | undefined> {
    const source = this.base.readSource?.();
    const base = this.base.readEpoch?.();
    if (base instanceof Promise) return base.then((b) => this.epochOf(source, b));
    return this.epochOf(source, base);
  }

  readSource(): object | undefined {
    return this.base.readSource?.();
  }

  private epochOf(source: object | undefined, base: number | undefined): number | undefined {
    if (base === undefined) return undefined;
    let e = this.epochs.get(source);
    if (!e) this.epochs.set(source, (e = { base: -1, generation: -1, value: 0 }));
    // A base epoch older than the last seen (a round trip settling late) is no change: the
    // base's epochs never go back (ReadStore.readEpoch), and this one's must not either.
    if (base > e.base || this.generation !== e.generation) {
      e.base = Math.max(base, e.base);
      e.generation = this.generation;
      e.value++;
    }
    return e.value;
  }

  /** The adapter's own notices of other processes' checkpoint moves, when it has them. */
  onCheckpointMoved(listener: () => void): () => void {
    return this.base.onCheckpointMoved?.(listener) ?? (() => {});
  }

  async close(): Promise<void> {
    if (!this.owner) return;
    if (this.s.timer) clearInterval(this.s.timer);
    this.s.timer = null;
    await this.base.close();
  }
}

/**
 * A transaction's view: shared collections pass through; the first read-model access reads
 * the active generation inside the transaction (unless pinned) and maps every later one to it.
 */
class GenerationalTx implements ReadTx {
  private generation: number | null;

  constructor(
    private readonly tx: ReadTx,
    private readonly store: GenerationalReadStore,
    pinned: number | null,
  ) {
    this.generation = pinned;
  }

  private async resolve(): Promise<number> {
    if (this.generation === null) {
      const doc = await this.tx.get<ActiveGenerationDoc>(READ_MODEL_META, ACTIVE_ID);
      this.generation = doc?.generation ?? 0;
      this.store.seen(this.generation);
    }
    return this.generation;
  }

  private async col(collection: string): Promise<string> {
    if (this.store.isShared(collection)) return collection;
    return physicalCollection(collection, await this.resolve());
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    return this.tx.get<T>(await this.col(collection), id);
  }
  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    return this.tx.getMany<T>(await this.col(collection), ids);
  }
  async find<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.tx.find<T>(await this.col(collection), filter, options);
  }
  async count(collection: string, filter: Filter): Promise<number> {
    return this.tx.count(await this.col(collection), filter);
  }
  async upsert(collection: string, doc: Doc): Promise<void> {
    return this.tx.upsert(await this.col(collection), doc);
  }
  async patch(collection: string, id: string, set?: Record<string, unknown>, unset?: string[]): Promise<boolean> {
    return this.tx.patch(await this.col(collection), id, set, unset);
  }
  async delete(collection: string, id: string): Promise<boolean> {
    return this.tx.delete(await this.col(collection), id);
  }
  async deleteMany(collection: string, filter: Filter): Promise<number> {
    return this.tx.deleteMany(await this.col(collection), filter);
  }
  async deleteBefore(collection: string, field: string, value: number): Promise<number> {
    return this.tx.deleteBefore(await this.col(collection), field, value);
  }
  async bulk(ops: readonly WriteOp[]): Promise<void> {
    const mapped: WriteOp[] = [];
    for (const op of ops) mapped.push({ ...op, collection: await this.col(op.collection) } as WriteOp);
    return this.tx.bulk(mapped);
  }
  async setCheckpoint(name: string, position: LogPosition, expected: LogPosition | null): Promise<void> {
    const physical = this.store.isProjectionCheckpoint(name) ? physicalCheckpoint(name, await this.resolve()) : name;
    return this.tx.setCheckpoint(physical, position, expected);
  }
}
