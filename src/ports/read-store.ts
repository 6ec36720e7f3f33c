/**
 * The read store port: the narrow set of document operations projections and queries need.
 * It maps one-to-one onto MongoDB (a collection per read model, `_id` keys, equality filters
 * on indexed fields, `$set`/`$unset` patches, `bulkWrite`, sessions with transactions); the
 * embedded adapter implements it on SQLite tables of JSON documents with expression indexes.
 * Contract: test/contract/read-store.contract.ts.
 */
import type { LogPosition } from './event-store.js';
import { BugError } from '../shared/errors.js';

export type Scalar = string | number | boolean | null;

/**
 * Equality on fields (dotted paths allowed). `null` matches a missing field too, as in
 * MongoDB. Values are scalars only: an operator object can never reach a query.
 */
export type Filter = Record<string, Scalar>;

export interface Doc {
  _id: string;
  [field: string]: unknown;
}

export interface FindOptions {
  /** Ascending sort on this field (present and non-null on every document it pages), ties broken by `_id`. Default: `_id`. */
  sort?: string;
  /** Keyset cursor: rows strictly after this (sort value, _id) pair. */
  after?: { value: Scalar; id: string };
  limit?: number;
}

export type WriteOp =
  | { op: 'upsert'; collection: string; doc: Doc }
  | { op: 'patch'; collection: string; id: string; set?: Record<string, unknown>; unset?: string[] }
  | { op: 'delete'; collection: string; id: string }
  | { op: 'deleteMany'; collection: string; filter: Filter };

export interface ReadView {
  get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null>;
  /** The documents that exist among `ids`, in the order of `ids`. */
  getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]>;
  find<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions): Promise<T[]>;
  count(collection: string, filter: Filter): Promise<number>;
}

export interface ReadTx extends ReadView {
  /** Inserts or replaces the whole document. */
  upsert(collection: string, doc: Doc): Promise<void>;
  /** `$set` / `$unset` on an existing document; false when there is none. */
  patch(collection: string, id: string, set?: Record<string, unknown>, unset?: string[]): Promise<boolean>;
  delete(collection: string, id: string): Promise<boolean>;
  deleteMany(collection: string, filter: Filter): Promise<number>;
  /**
   * Deletes the documents whose numeric `field` is below `value` (expiry sweeps of ephemeral
   * collections: presence, idempotency keys). MongoDB: `deleteMany({ field: { $lt: value } })`.
   */
  deleteBefore(collection: string, field: string, value: number): Promise<number>;
  bulk(ops: readonly WriteOp[]): Promise<void>;
  /**
   * Moves a projection's checkpoint, compare-and-set: throws CheckpointConflictError when the
   * stored value is not `expected` (another runner moved it), which rolls the whole
   * transaction back, documents included.
   */
  setCheckpoint(name: string, position: LogPosition, expected: LogPosition | null): Promise<void>;
}

export class CheckpointConflictError extends Error {
  constructor(readonly projection: string, readonly expected: LogPosition | null, readonly actual: LogPosition | null) {
    super(`checkpoint of ${projection}: expected ${expected}, found ${actual}`);
    this.name = 'CheckpointConflictError';
  }
}

export interface IndexSpec {
  collection: string;
  fields: string[];
  unique?: boolean;
}

export interface TxOptions {
  /**
   * The transaction writes or erases key material (src/secrets/store.ts), which, unlike a
   * read model, cannot be rebuilt from the log: once committed it must survive a power cut,
   * and what it deletes must not linger in the store's free space. SQLite: synchronous=FULL
   * and secure_delete for this transaction, then a WAL checkpoint that truncates the WAL;
   * MongoDB: a journaled majority write concern.
   */
  sensitive?: boolean;
}

export interface ReadStore extends ReadView {
  ensureIndexes(specs: readonly IndexSpec[]): Promise<void>;
  /**
   * Another handle on the same store whose transactions are not serialized with this one's
   * (transactions are serialized per handle), for projection lanes (ProjectionRunnerOptions.lanes).
   * Absent where concurrent writers would not help (SQLite's one writer). The caller closes it.
   */
  fork?(): ReadStore;
  /** Runs `fn` in one atomic transaction; transactions are serialized per store. */
  transaction<T>(fn: (tx: ReadTx) => Promise<T>, options?: TxOptions): Promise<T>;
  getCheckpoint(name: string): Promise<LogPosition | null>;
  /**
   * Several checkpoints read at once (null: never set), where one read costs a round trip: a
   * runner that follows another's checkpoints reads every projection's at each look.
   */
  getCheckpoints?(names: readonly string[]): Promise<Map<string, LogPosition | null>>;
  /** Drops every document of a collection (tests, rebuilds). */
  dropCollection(collection: string): Promise<void>;
  /** Names of the collections that exist (written or indexed at least once), sorted. Rebuilds use it to drop old generations. */
  listCollections(): Promise<string[]>;
  /**
   * A request starts: reads from now on must see everything committed before this call,
   * by any process. Stores that cache reads re-validate on their next read; others do
   * nothing. (A dependency on another process's write reaches this one only through a
   * request, so this is the one moment a cache must look again.)
   */
  beginRequest(): void;
  /**
   * Optional: a number that changes whenever reads may answer differently than when it was last
   * returned, checked under the same rule as `beginRequest` (this process's commits at once,
   * other processes' by the next request): what a per-process index of read models
   * (queries/access-index.ts) compares to know it may still answer. Undefined, or absent: the
   * store cannot tell cheaply, and nothing may be kept across reads.
   *
   * It never goes back: a later call answers at least what an earlier one did, and an equal
   * answer means nothing was committed in between. A store that keeps the signal in memory
   * answers at once (SQLite's read cache); one that must ask its server answers a promise, for
   * one round trip that precedes every read it vouches for (PostgreSQL's sum of checkpoint versions), and
   * so may answer an older value than a call that settled before it: the caller keeps the newest.
   */
  readEpoch?(): number | undefined | Promise<number | undefined>;
  /**
   * Optional: the server this call's reads go to when the store spreads reads over several (a
   * PostgreSQL read replica, chosen per request), or undefined for the store's own. `readEpoch`
   * then answers that server's own signal, and an index of read models keeps one index per
   * source (queries/access-index.ts): values of different servers' signals are not comparable.
   */
  readSource?(): object | undefined;
  /**
   * Optional: calls `listener` when another process may have moved a checkpoint (a store that
   * can hear other writers, e.g. a notification channel). A projection runner that does not
   * apply then re-reads the checkpoints instead of waiting for its next poll; a missed or
   * spurious call only costs a poll's delay or one re-read. Returns an unsubscribe function.
   */
  onCheckpointMoved?(listener: () => void): () => void;
  close(): Promise<void>;
}

/**
 * `bulk` for adapters without a cheaper native path: each op through the transaction's own
 * methods, in order. (MongoDB's bulkWrite is per collection; a batch here spans several.)
 */
/** `names`' checkpoints: one read where the store has getCheckpoints, else one read each. */
export async function readCheckpoints(store: ReadStore, names: readonly string[]): Promise<Map<string, LogPosition | null>> {
  if (store.getCheckpoints) return store.getCheckpoints(names);
  const out = new Map<string, LogPosition | null>();
  for (const n of names) out.set(n, await store.getCheckpoint(n));
  return out;
}

export async function applyInOrder(
  tx: Pick<ReadTx, 'upsert' | 'patch' | 'delete' | 'deleteMany'>,
  ops: readonly WriteOp[],
): Promise<void> {
  for (const op of ops) {
    switch (op.op) {
      case 'upsert':
        await tx.upsert(op.collection, op.doc);
        break;
      case 'patch':
        await tx.patch(op.collection, op.id, op.set, op.unset);
        break;
      case 'delete':
        await tx.delete(op.collection, op.id);
        break;
      case 'deleteMany':
        await tx.deleteMany(op.collection, op.filter);
        break;
      default: {
        const never: never = op;
        throw new BugError(`unknown write op ${JSON.stringify(never)}`);
      }
    }
  }
}

const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/**
 * A document field path as both adapters accept it: dot-separated identifiers. Field names
 * come from code, never from requests; adapters still check them so their queries stay closed.
 */
export function fieldPath(field: string): string {
  if (!FIELD_PATH.test(field)) throw new BugError(`invalid field name ${JSON.stringify(field)}`);
  return field;
}
