/**
 * MongoDB read store (mongodb driver), the production read side. The port was shaped after
 * MongoDB, so the mapping is one-to-one:
 *
 * - a collection per read model, `rm_<name>` (checkpoints in `checkpoints`), `_id` keys;
 * - get / getMany / find / count: `findOne`, `find({ _id: { $in } })`, equality filters
 *   (scalars only: an operator object can never reach a query) with `sort` + keyset cursor
 *   `{ $or: [{ f: { $gt: v } }, { f: v, _id: { $gt: id } }] }`, `countDocuments`;
 * - upsert = `replaceOne(..., { upsert: true })`, patch = `updateOne` with `$set`/`$unset`,
 *   delete / deleteMany / deleteBefore (`{ f: { $lt: v } }`), bulk in order;
 * - ensureIndexes = `createIndex` (non-unique ones end in `_id`, as keyset pages walk them);
 *   every upsert key is `_id`, unique by definition;
 * - transaction = a session with a transaction (`withTransaction`, which retries transient
 *   conflicts) where the deployment supports them (replica set, sharded cluster: docker-compose
 *   runs a single-node replica set). On a standalone server there are no transactions: writes
 *   apply one by one, checkpoint last, and the projections' replay-safety makes a crash in
 *   between harmless (the batch is applied again);
 * - setCheckpoint: compare-and-set in the same session (`updateOne({ _id, position: expected })`,
 *   or `insertOne` when expected is null; no match / duplicate key = CheckpointConflictError);
 * - presence and idempotency records get a TTL index on a Date copy of `expiresAt` (`_ttl`,
 *   never returned), so MongoDB drops expired entries by itself.
 *
 * Transactions are serialized within a process, as the port promises; across processes MongoDB
 * detects write conflicts and `withTransaction` retries.
 *
 * Connection loss: server selection, network and "not connected" errors become
 * StoreUnavailableError (503); the driver reconnects by itself.
 *
 * Not run in this repository's CI (no MongoDB here): test/read-store.mongo.test.ts runs the
 * port contract against it whenever MONGODB_URL is set (`npm run test:integration`).
 */
import { MongoClient, MongoServerError, type ClientSession, type Collection, type Db, type Document } from 'mongodb';
import type { LogPosition } from '../ports/event-store.js';
import {
  applyInOrder,
  CheckpointConflictError,
  fieldPath,
  type Doc,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type ReadStore,
  type ReadTx,
  type ReadView,
  type TxOptions,
  type WriteOp,
} from '../ports/read-store.js';
import { BugError } from '../errors.js';
import { StoreUnavailableError } from './unavailable.js';

const NAME = /^[a-z][a-z0-9_]{0,100}$/;
const TTL_FIELD = '_ttl';
const CHECKPOINTS = 'checkpoints';
const PREFIX = 'rm_';

function collName(collection: string): string {
  if (!NAME.test(collection)) throw new BugError(`invalid collection name ${JSON.stringify(collection)}`);
  return `${PREFIX}${collection}`;
}

const field = fieldPath;

function filterOf(filter: Filter): Document {
  const q: Document = {};
  for (const [f, v] of Object.entries(filter)) q[field(f)] = v;
  return q;
}

const UNAVAILABLE = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
]);

function translate(error: unknown): unknown {
  if (error instanceof CheckpointConflictError) return error;
  const name = (error as Error)?.name ?? '';
  if (UNAVAILABLE.has(name)) return new StoreUnavailableError('read store', error);
  return error;
}

async function guard<T>(p: () => Promise<T>): Promise<T> {
  try {
    return await p();
  } catch (error) {
    throw translate(error);
  }
}

export interface MongoReadStoreOptions {
  /** Database name; default: the URL's, else `collab`. */
  dbName?: string;
  /** Collections whose numeric `expiresAt` (ms) gets a TTL index. */
  ttlCollections?: string[];
}

interface Ctx {
  db: Db;
  session?: ClientSession;
  ttl: Set<string>;
}

const strip = <T extends Doc>(d: Document | null): T | null => {
  if (!d) return null;
  const { [TTL_FIELD]: _ttl, ...rest } = d;
  return rest as T;
};

class MongoView implements ReadView {
  constructor(protected readonly ctx: Ctx) {}

  protected coll(collection: string): Collection<Document> {
    return this.ctx.db.collection(collName(collection));
  }

  protected get opts() {
    return this.ctx.session ? { session: this.ctx.session } : {};
  }

  get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    return guard(async () => strip<T>(await this.coll(collection).findOne({ _id: id as never }, { ...this.opts, projection: { [TTL_FIELD]: 0 } })));
  }

  getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    return guard(async () => {
      if (ids.length === 0) return [];
      const docs = await this.coll(collection)
        .find({ _id: { $in: [...new Set(ids)] as never[] } }, { ...this.opts, projection: { [TTL_FIELD]: 0 } })
        .toArray();
      const byId = new Map(docs.map((d) => [d._id as unknown as string, d]));
      const out: T[] = [];
      for (const id of ids) {
        const d = byId.get(id);
        if (d) out.push(strip<T>(d)!);
      }
      return out;
    });
  }

  find<T extends Doc = Doc>(collection: string, filter: Filter, options: FindOptions = {}): Promise<T[]> {
    return guard(async () => {
      const q = filterOf(filter);
      const sortField = options.sort ? field(options.sort) : null;
      if (options.after) {
        const after = options.after;
        if (sortField) {
          q.$and = [{ $or: [{ [sortField]: { $gt: after.value } }, { [sortField]: after.value, _id: { $gt: after.id } }] }];
        } else q._id = { $gt: after.id };
      }
      let cursor = this.coll(collection)
        .find(q, { ...this.opts, projection: { [TTL_FIELD]: 0 } })
        .sort(sortField ? { [sortField]: 1, _id: 1 } : { _id: 1 });
      if (options.limit !== undefined && options.limit >= 0) cursor = cursor.limit(options.limit);
      if (options.limit === 0) return [];
      return (await cursor.toArray()).map((d) => strip<T>(d)!);
    });
  }

  count(collection: string, filter: Filter): Promise<number> {
    return guard(() => this.coll(collection).countDocuments(filterOf(filter), this.opts));
  }
}

class MongoTx extends MongoView implements ReadTx {
  private withTtl(collection: string, doc: Document): Document {
    if (!this.ctx.ttl.has(collection) || typeof doc.expiresAt !== 'number') return doc;
    return { ...doc, [TTL_FIELD]: new Date(doc.expiresAt) };
  }

  upsert(collection: string, doc: Doc): Promise<void> {
    return guard(async () => {
      await this.coll(collection).replaceOne({ _id: doc._id as never }, this.withTtl(collection, doc), { ...this.opts, upsert: true });
    });
  }

  patch(collection: string, id: string, set: Record<string, unknown> = {}, unset: string[] = []): Promise<boolean> {
    return guard(async () => {
      const $set: Document = {};
      for (const [f, v] of Object.entries(set)) $set[field(f)] = v;
      if (this.ctx.ttl.has(collection) && typeof set.expiresAt === 'number') $set[TTL_FIELD] = new Date(set.expiresAt);
      const $unset: Document = {};
      for (const f of unset) $unset[field(f)] = '';
      const update: Document = {};
      if (Object.keys($set).length) update.$set = $set;
      if (Object.keys($unset).length) update.$unset = $unset;
      if (!update.$set && !update.$unset) return (await this.coll(collection).countDocuments({ _id: id as never }, this.opts)) > 0;
      const r = await this.coll(collection).updateOne({ _id: id as never }, update, this.opts);
      return r.matchedCount > 0;
    });
  }

  delete(collection: string, id: string): Promise<boolean> {
    return guard(async () => (await this.coll(collection).deleteOne({ _id: id as never }, this.opts)).deletedCount > 0);
  }

  deleteMany(collection: string, filter: Filter): Promise<number> {
    return guard(async () => (await this.coll(collection).deleteMany(filterOf(filter), this.opts)).deletedCount);
  }

  deleteBefore(collection: string, f: string, value: number): Promise<number> {
    return guard(async () => (await this.coll(collection).deleteMany({ [field(f)]: { $lt: value } }, this.opts)).deletedCount);
  }

  bulk(ops: readonly WriteOp[]): Promise<void> {
    return applyInOrder(this, ops);
  }

  async setCheckpoint(name: string, position: LogPosition, expected: LogPosition | null): Promise<void> {
    const cps = this.ctx.db.collection<{ _id: string; position: string }>(CHECKPOINTS);
    const actual = async () => (await cps.findOne({ _id: name }, this.opts))?.position ?? null;
    try {
      if (expected === null) {
        await cps.insertOne({ _id: name, position }, this.opts);
        return;
      }
      const r = await cps.updateOne({ _id: name, position: expected }, { $set: { position } }, this.opts);
      if (r.matchedCount === 0) throw new CheckpointConflictError(name, expected, await actual());
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 11000) throw new CheckpointConflictError(name, expected, await actual());
      throw translate(error);
    }
  }
}

export class MongoReadStore extends MongoView implements ReadStore {
  private readonly client: MongoClient;
  private chain: Promise<unknown> = Promise.resolve();
  private transactions: Promise<boolean> | null = null;
  private closed = false;

  constructor(url: string, options: MongoReadStoreOptions = {}) {
    // A request waits at most 5 s for a reachable server (then 503) unless the URL says otherwise.
    const timeout = /[?&]serverSelectionTimeoutMS=/i.test(url) ? {} : { serverSelectionTimeoutMS: 5000 };
    const client = new MongoClient(url, { ...timeout, retryWrites: true });
    const db = options.dbName ? client.db(options.dbName) : client.db(new URL(url).pathname.replace(/^\//, '') || 'collab');
    super({ db, ttl: new Set(options.ttlCollections ?? []) });
    this.client = client;
  }

  /** Replica sets and sharded clusters run transactions; a standalone server does not. */
  private supportsTransactions(): Promise<boolean> {
    if (!this.transactions) {
      this.transactions = this.ctx.db
        .admin()
        .command({ hello: 1 })
        .then((h) => Boolean(h.setName) || h.msg === 'isdbgrid')
        .catch((error) => {
          this.transactions = null;
          throw translate(error);
        });
    }
    return this.transactions;
  }

  async ensureIndexes(specs: readonly IndexSpec[]): Promise<void> {
    await guard(async () => {
      for (const spec of specs) {
        const keys: Record<string, 1> = {};
        for (const f of spec.fields) keys[field(f)] = 1;
        if (!spec.unique) keys._id = 1;
        const name = `ix_${spec.fields.map((f) => f.replace(/\./g, '_')).join('_')}`;
        await this.coll(spec.collection).createIndex(keys, { name, unique: spec.unique ?? false });
      }
      for (const c of this.ctx.ttl) {
        if (specs.some((s) => s.collection === c)) {
          await this.coll(c).createIndex({ [TTL_FIELD]: 1 }, { name: 'ttl', expireAfterSeconds: 0 });
        }
      }
    });
  }

  transaction<T>(fn: (tx: ReadTx) => Promise<T>, options: TxOptions = {}): Promise<T> {
    const run = async (): Promise<T> => {
      if (this.closed) throw new Error('read store is closed');
      if (!(await this.supportsTransactions())) {
        // Standalone: replay-safe writes, one by one (see the header).
        return fn(new MongoTx({ ...this.ctx, session: undefined }));
      }
      const session = this.client.startSession();
      try {
        return await guard(() =>
          session.withTransaction(() => fn(new MongoTx({ ...this.ctx, session })), {
            readConcern: { level: 'snapshot' },
            // Key material (TxOptions.sensitive) waits for the journal, not only for memory.
            writeConcern: options.sensitive ? { w: 'majority', j: true } : { w: 'majority' },
          }),
        );
      } finally {
        await session.endSession();
      }
    };
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }

  getCheckpoint(name: string): Promise<LogPosition | null> {
    return guard(async () => {
      const d = await this.ctx.db.collection<{ _id: string; position: string }>(CHECKPOINTS).findOne({ _id: name });
      return d?.position ?? null;
    });
  }

  dropCollection(collection: string): Promise<void> {
    return guard(async () => {
      await this.coll(collection)
        .drop()
        .catch((error) => {
          // NamespaceNotFound: nothing to drop.
          if (!(error instanceof MongoServerError && error.code === 26)) throw error;
        });
    });
  }

  listCollections(): Promise<string[]> {
    return guard(async () => {
      const all = await this.ctx.db.listCollections({}, { nameOnly: true }).toArray();
      return all.map((c) => c.name).filter((n) => n.startsWith(PREFIX)).map((n) => n.slice(PREFIX.length)).sort();
    });
  }

  /** Drops the whole database (integration tests on a throwaway database). */
  async dropDatabase(): Promise<void> {
    await this.ctx.db.dropDatabase();
  }

  /** No read cache: every read already goes to the server. */
  beginRequest(): void {}

  async close(): Promise<void> {
    if (this.closed) return;
    await this.chain;
    this.closed = true;
    await this.client.close();
  }
}
