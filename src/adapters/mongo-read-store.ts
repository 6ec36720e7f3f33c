/**
 * MongoDB read store (mongodb driver 7), the production read side. The port was shaped after
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
 * - setCheckpoint: compare-and-set in the same session, see `MongoTx.setCheckpoint`;
 * - presence and idempotency records (`ttlCollections`) get a TTL index on a Date copy of
 *   `expiresAt` (`_ttl`, never returned), so MongoDB drops expired entries by itself.
 *
 * `undefined` is stored as the embedded store stores it (JSON.stringify): a field set to
 * undefined is absent (the client runs with `ignoreUndefined`, and patching a field to
 * undefined removes it), an undefined array element is null. With `ignoreUndefined` an
 * undefined *query* value would vanish and widen the query (`{ _id: undefined }` is `{}`: a
 * delete would hit any document), so ids and filter values are checked before they are sent.
 *
 * Transactions are serialized within a process, as the port promises; across processes MongoDB
 * detects write conflicts and `withTransaction` retries.
 *
 * Connection loss (`translateMongoError`): network errors, server selection, failover and
 * shutdown codes, pool and wait-queue errors become StoreUnavailableError (503); the driver
 * reconnects by itself once it has connected. A *first* connect that fails is different: driver
 * 7 keeps that client's closed topology and fails every later call with
 * MongoTopologyClosedError, so the store drops such a client and connects a new one on the
 * next call.
 *
 * Verified here against a fake mongod speaking the wire protocol (test/mongo.fake-server.test.ts);
 * test/read-store.mongo.test.ts runs the port contract against a real server whenever
 * MONGODB_URL is set (`npm run test:integration`).
 */
import {
  MongoClient,
  MongoClientClosedError,
  MongoError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  type ClientSession,
  type Collection,
  type Db,
  type Document,
  type MongoClientOptions,
} from 'mongodb';
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
import { BugError } from '../shared/errors.js';
import { StoreUnavailableError } from './unavailable.js';
import { parseMongoUrl } from './mongo-url.js';

const NAME = /^[a-z][a-z0-9_]{0,100}$/;
const TTL_FIELD = '_ttl';
const CHECKPOINTS = 'checkpoints';
const PREFIX = 'rm_';

function collName(collection: string): string {
  if (!NAME.test(collection)) throw new BugError(`invalid collection name ${JSON.stringify(collection)}`);
  return `${PREFIX}${collection}`;
}

const field = fieldPath;

/** Never matches: what an undefined query value means (as in the embedded store, where it binds NULL and `= NULL` is never true). */
const NOTHING = { $in: [] as never[] };

function filterOf(filter: Filter): Document {
  const q: Document = {};
  for (const [f, v] of Object.entries(filter)) {
    if (v !== null && typeof v === 'object') throw new BugError(`filter on ${f} is not a scalar`);
    q[field(f)] = v === undefined ? NOTHING : v;
  }
  return q;
}

const isId = (id: unknown): id is string => typeof id === 'string';

/**
 * Server codes that say the server, not the request, is the problem: an election or stepdown
 * under way (189, 10107, 11602, 13435, 13436, 10058), a member shutting down (91, 11600), a
 * member out of reach (6, 7, 89, 9001), a time limit (50, 262), majority reads not yet
 * available (134), replication not confirming a write in time (64).
 */
const UNAVAILABLE_CODES = new Set([6, 7, 50, 64, 89, 91, 134, 189, 262, 9001, 10058, 10107, 11600, 11602, 13435, 13436]);
/** Pool errors the driver does not export (the cleared-pool ones are MongoNetworkErrors). */
const UNAVAILABLE_NAMES = new Set(['MongoWaitQueueTimeoutError', 'MongoPoolClosedError']);
/** Labels the driver or server put on errors that a retry can get past. */
const UNAVAILABLE_LABELS = ['TransientTransactionError', 'UnknownTransactionCommitResult', 'RetryableWriteError', 'ResetPool', 'SystemOverloadedError'];

function isUnavailable(e: unknown): boolean {
  if (!(e instanceof MongoError)) return false;
  if (
    e instanceof MongoNetworkError || // timeouts and cleared pools included
    e instanceof MongoServerSelectionError ||
    e instanceof MongoOperationTimeoutError ||
    e instanceof MongoTopologyClosedError ||
    e instanceof MongoNotConnectedError ||
    e instanceof MongoServerClosedError ||
    e instanceof MongoClientClosedError
  ) {
    return true;
  }
  if (UNAVAILABLE_NAMES.has(e.name)) return true;
  if (UNAVAILABLE_CODES.has(Number(e.code))) return true;
  return UNAVAILABLE_LABELS.some((l) => e.hasErrorLabel(l));
}

/** The driver's error as the service sees it: StoreUnavailableError (503) when the store is out of reach, else unchanged. */
export function translateMongoError(error: unknown): unknown {
  return isUnavailable(error) ? new StoreUnavailableError('read store', error) : error;
}

/**
 * Inside `withTransaction`'s callback the opposite way: the driver decides whether to run the
 * callback again from the error's class and labels (a network error in a transaction carries
 * TransientTransactionError), so it must see its own error, not our translation.
 */
function driverError(error: unknown): unknown {
  return error instanceof StoreUnavailableError && error.cause instanceof MongoError ? error.cause : error;
}

async function guard<T>(p: () => Promise<T>): Promise<T> {
  try {
    return await p();
  } catch (error) {
    throw translateMongoError(error);
  }
}

const isDuplicateKey = (error: unknown) => error instanceof MongoServerError && Number(error.code) === 11000;

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

interface Connection {
  client: MongoClient;
  db: Db;
  transactions: Promise<boolean> | null;
}

interface CheckpointDoc {
  _id: string;
  position: LogPosition;
  /** Bumped by every compare-and-set, so that each one writes (see setCheckpoint). */
  version: number;
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
    return guard(async () => {
      collName(collection);
      if (!isId(id)) return null;
      return strip<T>(await this.coll(collection).findOne({ _id: id as never }, { ...this.opts, projection: { [TTL_FIELD]: 0 } }));
    });
  }

  getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    return guard(async () => {
      const wanted = [...new Set(ids.filter(isId))];
      if (wanted.length === 0) return [];
      const docs = await this.coll(collection)
        .find({ _id: { $in: wanted as never[] } }, { ...this.opts, projection: { [TTL_FIELD]: 0 } })
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
      // An undefined _id would vanish from the query and replace whichever document came first.
      if (!isId(doc._id)) throw new BugError(`upsert into ${collection} without a string _id`);
      await this.coll(collection).replaceOne({ _id: doc._id as never }, this.withTtl(collection, doc), { ...this.opts, upsert: true });
    });
  }

  patch(collection: string, id: string, set: Record<string, unknown> = {}, unset: string[] = []): Promise<boolean> {
    return guard(async () => {
      collName(collection);
      if (!isId(id)) return false;
      const $set: Document = {};
      const $unset: Document = {};
      // Setting a field to undefined removes it, as JSON.stringify does in the embedded store.
      for (const [f, v] of Object.entries(set)) {
        if (v === undefined) $unset[field(f)] = '';
        else $set[field(f)] = v;
      }
      if (this.ctx.ttl.has(collection) && typeof set.expiresAt === 'number') $set[TTL_FIELD] = new Date(set.expiresAt);
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
    return guard(async () => {
      collName(collection);
      if (!isId(id)) return false;
      return (await this.coll(collection).deleteOne({ _id: id as never }, this.opts)).deletedCount > 0;
    });
  }

  deleteMany(collection: string, filter: Filter): Promise<number> {
    return guard(async () => (await this.coll(collection).deleteMany(filterOf(filter), this.opts)).deletedCount);
  }

  deleteBefore(collection: string, f: string, value: number): Promise<number> {
    return guard(async () => {
      if (typeof value !== 'number' || Number.isNaN(value)) throw new BugError(`deleteBefore ${collection}.${f}: not a number`);
      return (await this.coll(collection).deleteMany({ [field(f)]: { $lt: value } }, this.opts)).deletedCount;
    });
  }

  bulk(ops: readonly WriteOp[]): Promise<void> {
    return applyInOrder(this, ops);
  }

  /**
   * Compare-and-set. Two things a plain `updateOne` / `insertOne` gets wrong:
   *
   * - **Every compare-and-set writes.** MongoDB skips an update that changes nothing, and a
   *   skipped write takes no lock and meets no write conflict. The rebuild switch sets the old
   *   generation's checkpoints to their own values (src/ops/rebuild.ts) precisely to conflict
   *   with a live batch committing meanwhile; so the update also bumps `version`. Example:
   *   switch reads checkpoint 0005 in its snapshot; a batch commits 0005 -> 0009; the switch's
   *   `{position: 0005} -> 0005` would be a silent no-op and commit; with `$inc` it writes, hits
   *   the batch's write, and withTransaction runs the switch again, which now sees 0009.
   * - **A duplicate key ends the transaction.** The server aborts a transaction on a write
   *   error, so after E11000 (two replicas creating the same checkpoint on a fresh database)
   *   nothing may run in this session: a read there answers NoSuchTransaction, labelled
   *   transient, and withTransaction would run the whole callback again, meet the duplicate
   *   again, and loop for its 120 s while holding this store's transaction queue. The winner's
   *   position is read outside the session, and the conflict is thrown as our own error, which
   *   withTransaction does not retry.
   */
  async setCheckpoint(name: string, position: LogPosition, expected: LogPosition | null): Promise<void> {
    const cps = this.ctx.db.collection<CheckpointDoc>(CHECKPOINTS);
    if (expected === null) {
      try {
        await cps.insertOne({ _id: name, position, version: 1 }, this.opts);
        return;
      } catch (error) {
        if (!isDuplicateKey(error)) throw translateMongoError(error);
      }
      const committed = await guard(() => cps.findOne({ _id: name }));
      throw new CheckpointConflictError(name, expected, committed?.position ?? null);
    }
    const r = await guard(() => cps.updateOne({ _id: name, position: expected }, { $set: { position }, $inc: { version: 1 } }, this.opts));
    if (r.matchedCount === 0) {
      const actual = await guard(() => cps.findOne({ _id: name }, this.opts));
      throw new CheckpointConflictError(name, expected, actual?.position ?? null);
    }
  }
}

export class MongoReadStore implements ReadStore {
  private readonly url: string;
  private readonly clientOptions: MongoClientOptions;
  private readonly dbName: string;
  private readonly ttl: Set<string>;
  /** The client the next connect uses (made at once, so a malformed URL fails in the constructor). */
  private nextClient: MongoClient;
  private conn: Promise<Connection> | null = null;
  private ttlIndexed = false;
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(url: string, options: MongoReadStoreOptions = {}) {
    this.url = url;
    // A request waits at most 5 s for a reachable server (then 503) unless the URL says otherwise.
    const timeout = /[?&]serverSelectionTimeoutMS=/i.test(url) ? {} : { serverSelectionTimeoutMS: 5000 };
    this.clientOptions = { ...timeout, retryWrites: true, ignoreUndefined: true };
    this.dbName = options.dbName ?? parseMongoUrl(url).dbName ?? 'collab';
    this.ttl = new Set(options.ttlCollections ?? []);
    this.nextClient = new MongoClient(url, this.clientOptions);
  }

  /**
   * The connected client. Calls arriving while it connects share the attempt; a failed attempt
   * is thrown away with its client (driver 7 would answer MongoTopologyClosedError on that
   * client for ever after), and the next call starts a new one.
   */
  private connection(): Promise<Connection> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('read store', new Error('read store is closed')));
    if (!this.conn) {
      const client = this.nextClient;
      const attempt: Promise<Connection> = client.connect().then(
        () => ({ client, db: client.db(this.dbName), transactions: null }),
        async (error: unknown) => {
          this.nextClient = new MongoClient(this.url, this.clientOptions);
          if (this.conn === attempt) this.conn = null;
          await client.close().catch(() => undefined);
          throw translateMongoError(error);
        },
      );
      this.conn = attempt;
    }
    return this.conn;
  }

  private async view(): Promise<MongoView> {
    const c = await this.connection();
    return new MongoView({ db: c.db, ttl: this.ttl });
  }

  get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    return this.view().then((v) => v.get<T>(collection, id));
  }

  getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    return this.view().then((v) => v.getMany<T>(collection, ids));
  }

  find<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.view().then((v) => v.find<T>(collection, filter, options));
  }

  count(collection: string, filter: Filter): Promise<number> {
    return this.view().then((v) => v.count(collection, filter));
  }

  /** Replica sets and sharded clusters run transactions; a standalone server does not. */
  private supportsTransactions(c: Connection): Promise<boolean> {
    if (!c.transactions) {
      c.transactions = c.db
        .admin()
        .command({ hello: 1 })
        .then((h) => Boolean(h.setName) || h.msg === 'isdbgrid')
        .catch((error) => {
          c.transactions = null;
          throw translateMongoError(error);
        });
    }
    return c.transactions;
  }

  /**
   * Creates the indexes; the first call also creates the TTL index of every TTL collection,
   * whether or not `specs` names it (idempotency keys have no other index, so nothing else
   * would ever list them here).
   */
  async ensureIndexes(specs: readonly IndexSpec[]): Promise<void> {
    const { db } = await this.connection();
    await guard(async () => {
      const coll = (c: string) => db.collection(collName(c));
      for (const spec of specs) {
        const keys: Record<string, 1> = {};
        for (const f of spec.fields) keys[field(f)] = 1;
        if (!spec.unique) keys._id = 1;
        const name = `ix_${spec.fields.map((f) => f.replace(/\./g, '_')).join('_')}`;
        await coll(spec.collection).createIndex(keys, { name, unique: spec.unique ?? false });
      }
      if (!this.ttlIndexed) {
        for (const c of this.ttl) await coll(c).createIndex({ [TTL_FIELD]: 1 }, { name: 'ttl', expireAfterSeconds: 0 });
        this.ttlIndexed = true;
      }
    });
  }

  transaction<T>(fn: (tx: ReadTx) => Promise<T>, options: TxOptions = {}): Promise<T> {
    const run = async (): Promise<T> => {
      const c = await this.connection();
      if (!(await this.supportsTransactions(c))) {
        // Standalone: replay-safe writes, one by one (see the header).
        return fn(new MongoTx({ db: c.db, ttl: this.ttl }));
      }
      let session: ClientSession | null = null;
      try {
        const s = (session = c.client.startSession());
        return await s.withTransaction(
          async () => {
            try {
              return await fn(new MongoTx({ db: c.db, session: s, ttl: this.ttl }));
            } catch (error) {
              throw driverError(error);
            }
          },
          {
            readConcern: { level: 'snapshot' },
            // Key material (TxOptions.sensitive) waits for the journal, not only for memory.
            writeConcern: options.sensitive ? { w: 'majority', j: true } : { w: 'majority' },
          },
        );
      } catch (error) {
        throw translateMongoError(error);
      } finally {
        await session?.endSession().catch(() => undefined);
      }
    };
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }

  getCheckpoint(name: string): Promise<LogPosition | null> {
    return this.connection().then(({ db }) =>
      guard(async () => (await db.collection<CheckpointDoc>(CHECKPOINTS).findOne({ _id: name }))?.position ?? null),
    );
  }

  dropCollection(collection: string): Promise<void> {
    return this.connection().then(({ db }) =>
      guard(async () => {
        await db
          .collection(collName(collection))
          .drop()
          .catch((error) => {
            // NamespaceNotFound: nothing to drop.
            if (!(error instanceof MongoServerError && error.code === 26)) throw error;
          });
      }),
    );
  }

  listCollections(): Promise<string[]> {
    return this.connection().then(({ db }) =>
      guard(async () => {
        const all = await db.listCollections({}, { nameOnly: true }).toArray();
        return all.map((c) => c.name).filter((n) => n.startsWith(PREFIX)).map((n) => n.slice(PREFIX.length)).sort();
      }),
    );
  }

  /** Drops the whole database (integration tests on a throwaway database). */
  async dropDatabase(): Promise<void> {
    const { db } = await this.connection();
    await guard(() => db.dropDatabase());
  }

  /** No read cache: every read already goes to the server. */
  beginRequest(): void {}

  async close(): Promise<void> {
    if (this.closed) return;
    await this.chain;
    this.closed = true;
    const conn = this.conn;
    this.conn = null;
    const c = conn ? await conn.catch(() => null) : null;
    if (c) await c.client.close();
  }
}
