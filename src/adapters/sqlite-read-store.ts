/**
 * Embedded read store: SQLite tables of JSON documents, one table per collection, equality
 * filters on expression indexes (`json_extract(doc, '$.field')`), keyset paging on
 * (sort field, id). Writes go through one connection in serialized transactions; queries
 * outside transactions use a second connection, so they read the last committed state and
 * never see a projection's half-applied batch.
 *
 * `synchronous = NORMAL`: read models can always be rebuilt from the log, and each
 * projection's checkpoint commits in the same transaction as its documents, so a lost tail
 * after a power cut is simply replayed. The one exception, key material (the wrapped data keys
 * of src/secrets/store.ts, which no log rebuilds), is written in `sensitive` transactions.
 */
import Database from 'better-sqlite3';
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
  type Scalar,
  type TxOptions,
  type WriteOp,
} from '../ports/read-store.js';
import { evictOldest } from '../shared/evict.js';
import { deepFreeze } from '../shared/freeze.js';
import { BugError } from '../shared/errors.js';

const NAME = /^[a-z][a-z0-9_]{0,62}$/;

function table(collection: string): string {
  if (!NAME.test(collection)) throw new BugError(`invalid collection name ${JSON.stringify(collection)}`);
  return `rm_${collection}`;
}

/** Field names come from code, never from requests; still checked so SQL stays closed. */
function jsonPath(field: string): string {
  return `$.${fieldPath(field)}`;
}

const extract = (field: string) => `json_extract(doc, '${jsonPath(field)}')`;

/** SQLite has no booleans: json_extract yields 1/0 for true/false, so bind those. */
function bindable(v: Scalar): string | number | null {
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

function whereOf(filter: Filter): { sql: string; params: Array<string | number | null> } {
  const parts: string[] = [];
  const params: Array<string | number | null> = [];
  for (const [field, value] of Object.entries(filter)) {
    if (value === null) parts.push(`${extract(field)} IS NULL`);
    else {
      parts.push(`${extract(field)} = ?`);
      params.push(bindable(value));
    }
  }
  return { sql: parts.length ? parts.join(' AND ') : '1', params };
}

class SqliteView implements ReadView {
  private readonly stmtCache = new Map<string, Database.Statement>();
  private readonly knownTables = new Set<string>();
  constructor(
    protected readonly db: Database.Database,
    private readonly creates: boolean,
  ) {}

  /**
   * A prepared statement, cached by SQL and result mode (rows as objects, arrays, or the first
   * column). Reads here pluck or take arrays: better-sqlite3 makes each row object through a
   * JavaScript factory called from C++, which costs more than an indexed lookup
   * (bench/micro/sqlite-reads.ts).
   */
  protected stmt(sql: string, mode: 'object' | 'raw' | 'pluck' = 'object'): Database.Statement {
    const cacheKey = mode === 'object' ? sql : `${mode}:${sql}`;
    let s = this.stmtCache.get(cacheKey);
    if (!s) {
      s = this.db.prepare(sql);
      if (mode === 'raw') s.raw();
      else if (mode === 'pluck') s.pluck();
      this.stmtCache.set(cacheKey, s);
    }
    return s;
  }

  /**
   * The writer creates a collection's table on first write (inside the transaction, so a
   * rollback takes it back: see `forgetTables`). A reader never writes: a collection nobody
   * has written yet reads as empty.
   */
  protected ensureTable(collection: string): string | null {
    const t = table(collection);
    if (this.knownTables.has(t)) return t;
    const exists = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(t);
    if (!exists) {
      if (!this.creates) return null;
      this.db.exec(`CREATE TABLE IF NOT EXISTS ${t} (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
    }
    this.knownTables.add(t);
    return t;
  }

  forgetTables() {
    this.knownTables.clear();
    this.stmtCache.clear();
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const t = this.ensureTable(collection);
    if (!t) return null;
    const text = this.stmt(`SELECT doc FROM ${t} WHERE id = ?`, 'pluck').get(id) as string | undefined;
    return text !== undefined ? (JSON.parse(text) as T) : null;
  }

  /** The stored text of the documents among `ids` that exist, by id (one statement). */
  protected docsText(t: string, ids: readonly string[]): Map<string, string> {
    const byId = new Map<string, string>();
    // json_each binds the whole id list as one parameter: one statement for any count.
    const rows = this.stmt(`SELECT id, doc FROM ${t} WHERE id IN (SELECT value FROM json_each(?))`, 'raw').all(
      JSON.stringify(ids),
    ) as Array<[string, string]>;
    for (const r of rows) byId.set(r[0], r[1]);
    return byId;
  }

  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const t = this.ensureTable(collection);
    if (ids.length === 0 || !t) return [];
    const byId = this.docsText(t, ids);
    const out: T[] = [];
    for (const id of ids) {
      const d = byId.get(id);
      if (d !== undefined) out.push(JSON.parse(d) as T);
    }
    return out;
  }

  /** The SQL and parameters of a find, selecting `columns`. */
  protected findQuery(t: string, filter: Filter, options: FindOptions, columns: string): { sql: string; params: Array<string | number | null> } {
    const where = whereOf(filter);
    const sortExpr = options.sort ? extract(options.sort) : 'id';
    const params = [...where.params];
    let sql = `SELECT ${columns} FROM ${t} WHERE ${where.sql}`;
    if (options.after) {
      if (options.sort) {
        // The `>=` lets SQLite seek the index to the cursor; the row-value test then skips
        // the ties already returned. Without it the scan starts at the first row every page.
        sql += ` AND ${sortExpr} >= ? AND (${sortExpr}, id) > (?, ?)`;
        const v = bindable(options.after.value);
        params.push(v, v, options.after.id);
      } else {
        sql += ' AND id > ?';
        params.push(options.after.id);
      }
    }
    sql += options.sort ? ` ORDER BY ${sortExpr}, id` : ' ORDER BY id';
    sql += ' LIMIT ?';
    params.push(options.limit ?? -1);
    return { sql, params };
  }

  async find<T extends Doc = Doc>(collection: string, filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const t = this.ensureTable(collection);
    if (!t) return [];
    const { sql, params } = this.findQuery(t, filter, options, 'doc');
    const rows = this.stmt(sql, 'pluck').all(...params) as string[];
    return rows.map((r) => JSON.parse(r) as T);
  }

  async count(collection: string, filter: Filter): Promise<number> {
    const t = this.ensureTable(collection);
    if (!t) return 0;
    const where = whereOf(filter);
    return this.stmt(`SELECT COUNT(*) FROM ${t} WHERE ${where.sql}`, 'pluck').get(...where.params) as number;
  }
}

class SqliteTx extends SqliteView implements ReadTx {
  private table(collection: string): string {
    const t = this.ensureTable(collection);
    if (!t) throw new BugError('the writer view always creates its tables');
    return t;
  }

  /** The upsert statement of each collection written in this transaction's tables (projections' hottest call). */
  private readonly upserts = new Map<string, Database.Statement>();

  override forgetTables() {
    super.forgetTables();
    this.upserts?.clear();
  }

  async upsert(collection: string, doc: Doc): Promise<void> {
    let s = this.upserts.get(collection);
    if (!s) {
      const t = this.table(collection);
      s = this.stmt(`INSERT INTO ${t} (id, doc) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET doc = excluded.doc`);
      this.upserts.set(collection, s);
    }
    s.run(doc._id, JSON.stringify(doc));
  }

  async patch(collection: string, id: string, set: Record<string, unknown> = {}, unset: string[] = []): Promise<boolean> {
    const t = this.table(collection);
    const text = this.stmt(`SELECT doc FROM ${t} WHERE id = ?`, 'pluck').get(id) as string | undefined;
    if (text === undefined) return false;
    const doc = JSON.parse(text) as Record<string, unknown>;
    for (const [path, value] of Object.entries(set)) setPath(doc, path, value);
    for (const path of unset) unsetPath(doc, path);
    this.stmt(`UPDATE ${t} SET doc = ? WHERE id = ?`).run(JSON.stringify(doc), id);
    return true;
  }

  async delete(collection: string, id: string): Promise<boolean> {
    const t = this.table(collection);
    return this.stmt(`DELETE FROM ${t} WHERE id = ?`).run(id).changes > 0;
  }

  async deleteMany(collection: string, filter: Filter): Promise<number> {
    const t = this.table(collection);
    const where = whereOf(filter);
    return this.stmt(`DELETE FROM ${t} WHERE ${where.sql}`).run(...where.params).changes;
  }

  async deleteBefore(collection: string, field: string, value: number): Promise<number> {
    const t = this.table(collection);
    return this.stmt(`DELETE FROM ${t} WHERE ${extract(field)} < ?`).run(value).changes;
  }

  bulk(ops: readonly WriteOp[]): Promise<void> {
    return applyInOrder(this, ops);
  }

  async setCheckpoint(name: string, position: LogPosition, expected: LogPosition | null): Promise<void> {
    const actual = (this.stmt('SELECT position FROM checkpoints WHERE name = ?', 'pluck').get(name) as string | undefined) ?? null;
    if (actual !== expected) throw new CheckpointConflictError(name, expected, actual);
    this.stmt('INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET position = excluded.position').run(
      name,
      position,
    );
  }
}

function setPath(doc: Record<string, unknown>, path: string, value: unknown) {
  const parts = path.split('.');
  let cur: Record<string, unknown> = doc;
  for (const p of parts.slice(0, -1)) {
    const next = cur[p];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = value;
}

function unsetPath(doc: Record<string, unknown>, path: string) {
  const parts = path.split('.');
  let cur: unknown = doc;
  for (const p of parts.slice(0, -1)) {
    if (cur === null || typeof cur !== 'object') return;
    cur = (cur as Record<string, unknown>)[p];
  }
  if (cur !== null && typeof cur === 'object') delete (cur as Record<string, unknown>)[parts[parts.length - 1]!];
}

export interface SqliteReadStoreOptions {
  /** Parsed documents kept for queries (0: none). Default 100,000. */
  cacheSize?: number;
}

/**
 * Queries (the reader connection) keep the documents they parsed, frozen, by collection and
 * id, absent ones included (permission resolution mostly asks for grants that do not
 * exist). The cache never shows less than the last commit a reader may know of:
 * - this store's own commits move a local generation, checked on every read: a write
 *   acknowledged to a client (read-your-writes waits for the projections' commit) is never
 *   hidden, and a revoked token stops working at once;
 * - commits by other connections (another process, a rebuild, the CLI) move SQLite's
 *   `data_version` of the reader connection. That check costs a read transaction (a few
 *   microseconds of locking, a fifth of a permissions query under load), so it is made once
 *   per turn of the event loop and once per request (ReadStore.beginRequest): whatever
 *   another process acknowledged before a request arrived is seen by that request.
 * Either change empties the cache. Every check and fill runs in one synchronous stretch, so
 * no commit of this process can fall between them.
 */
/** Distinct `find` queries whose ids are kept (a page token is part of the query). */
const QUERIES_KEPT = 10_000;

class DocCache {
  private readonly byCollection = new Map<string, Map<string, Doc | null>>();
  private size = 0;
  private version = -1;
  private generation = 0;
  private seenGeneration = -1;
  /** Checked in this turn of the event loop, and since the last `beginRequest`. */
  private fresh = false;
  private context = -1;
  private readonly stale = () => {
    this.fresh = false;
  };
  private readonly dataVersion: Database.Statement;

  constructor(
    db: Database.Database,
    private readonly max: number,
  ) {
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
  }

  /** Requests begun so far (ReadStore.beginRequest): a new one re-validates the cache. */
  private requests = 0;

  beginRequest() {
    this.requests++;
  }

  /** This store committed (or may have changed what reads return): forget everything. */
  invalidate() {
    this.generation++;
  }

  /** Moves each time the cache is emptied because something changed (ReadStore.readEpoch). */
  private epoch = 0;

  /** ReadStore.readEpoch: checks for changes under the cache's own rule; undefined without a cache. */
  currentEpoch(): number | undefined {
    if (this.max <= 0) return undefined;
    this.validate();
    return this.epoch;
  }

  /** The documents of `collection` as of the last commit; empties the cache first when anything changed. */
  collection(collection: string): Map<string, Doc | null> | null {
    if (this.max <= 0) return null;
    this.validate();
    let docs = this.byCollection.get(collection);
    if (!docs) {
      docs = new Map();
      this.byCollection.set(collection, docs);
    }
    return docs;
  }

  /** Empties the cache when this store committed or, at a new turn or request, SQLite's data_version moved. */
  private validate() {
    let version = this.version;
    const context = this.requests;
    if (!this.fresh || context !== this.context) {
      version = this.dataVersion.get() as number;
      this.context = context;
      if (!this.fresh) {
        this.fresh = true;
        setImmediate(this.stale);
      }
    }
    if (version !== this.version || this.generation !== this.seenGeneration) {
      this.byCollection.clear();
      this.queries.clear();
      this.size = 0;
      this.version = version;
      this.seenGeneration = this.generation;
      this.epoch++;
    }
  }

  /**
   * The ids a `find` returned, by its SQL and parameters, under the same rule as documents:
   * valid until any commit. A page of documents/get is then one map lookup instead of an
   * index read of 101 ids (50-70 us); call `collection` first, which drops stale entries.
   */
  private readonly queries = new Map<string, readonly string[]>();

  foundIds(key: string): readonly string[] | undefined {
    return this.queries.get(key);
  }

  putFoundIds(key: string, ids: readonly string[]) {
    if (this.queries.size >= QUERIES_KEPT) this.queries.clear();
    this.queries.set(key, ids);
  }

  put(docs: Map<string, Doc | null>, id: string, doc: Doc | null) {
    if (this.size >= this.max && !docs.has(id)) {
      // Oldest first within the collection being read, an eighth of the cache at a time
      // (one by one is slow on V8 Maps: src/shared/evict.ts); the others go when it holds none.
      if (docs.size === 0) {
        for (const other of this.byCollection.values()) other.clear();
        this.size = 0;
      } else {
        this.size -= evictOldest(docs, Math.max(1, this.max >> 3));
      }
    }
    if (!docs.has(id)) this.size++;
    docs.set(id, doc);
  }
}

export class SqliteReadStore extends SqliteView implements ReadStore {
  private readonly writer: Database.Database;
  private readonly tx: SqliteTx;
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly cache: DocCache;

  constructor(file: string, options: SqliteReadStoreOptions = {}) {
    const writer = new Database(file);
    writer.pragma('journal_mode = WAL');
    writer.pragma('synchronous = NORMAL');
    writer.pragma('busy_timeout = 5000');
    writer.exec('CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position TEXT NOT NULL)');
    // In-memory databases cannot be shared by two connections: use the writer for reads too.
    const reader = file === ':memory:' ? writer : new Database(file, { readonly: false });
    if (reader !== writer) {
      reader.pragma('busy_timeout = 5000');
      reader.pragma('query_only = true');
    }
    super(reader, false);
    this.writer = writer;
    this.tx = new SqliteTx(writer, true);
    // One connection for both (in memory): reads inside a transaction would see uncommitted
    // documents, so nothing is cached there.
    this.cache = new DocCache(reader, reader === writer ? 0 : (options.cacheSize ?? 100_000));
  }

  override async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const docs = this.cache.collection(collection);
    if (!docs) return super.get<T>(collection, id);
    const hit = docs.get(id);
    if (hit !== undefined) return hit as T | null;
    const t = this.ensureTable(collection);
    if (!t) return null;
    const text = this.stmt(`SELECT doc FROM ${t} WHERE id = ?`, 'pluck').get(id) as string | undefined;
    const doc = text === undefined ? null : (deepFreeze(JSON.parse(text)) as T);
    this.cache.put(docs, id, doc);
    return doc;
  }

  override async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const docs = this.cache.collection(collection);
    if (!docs) return super.getMany<T>(collection, ids);
    const t = this.ensureTable(collection);
    if (ids.length === 0 || !t) return [];
    return this.cached<T>(t, docs, ids);
  }

  override async find<T extends Doc = Doc>(collection: string, filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const docs = this.cache.collection(collection);
    if (!docs) return super.find<T>(collection, filter, options);
    const t = this.ensureTable(collection);
    if (!t) return [];
    // Ids only: the (filter..., sort, id) index covers them, no table row is read.
    const { sql, params } = this.findQuery(t, filter, options, 'id');
    const key = `${sql}\u0000${JSON.stringify(params)}`;
    let ids = this.cache.foundIds(key);
    if (!ids) {
      ids = this.stmt(sql, 'pluck').all(...params) as string[];
      this.cache.putFoundIds(key, ids);
    }
    return this.cached<T>(t, docs, ids);
  }

  /** The documents among `ids` that exist, in order: from the cache, the others read into it. */
  private cached<T extends Doc>(t: string, docs: Map<string, Doc | null>, ids: readonly string[]): T[] {
    // Hits are taken before the misses are read: reading may evict them (a full cache).
    const hits: Array<Doc | null | undefined> = new Array(ids.length);
    let missing: string[] | null = null;
    for (let i = 0; i < ids.length; i++) {
      const d = docs.get(ids[i]!);
      if (d === undefined) (missing ??= []).push(ids[i]!);
      else hits[i] = d;
    }
    const read = missing ? this.fill(t, docs, missing) : null;
    const out: T[] = [];
    for (let i = 0; i < ids.length; i++) {
      const d = hits[i] ?? read?.get(ids[i]!);
      if (d) out.push(d as T);
    }
    return out;
  }

  /** Reads `ids` into the cache, absent ones as null; returns what it read. */
  private fill(t: string, docs: Map<string, Doc | null>, ids: string[]): Map<string, Doc | null> {
    const texts = this.docsText(t, ids);
    const read = new Map<string, Doc | null>();
    for (const id of ids) {
      const text = texts.get(id);
      const doc = text === undefined ? null : deepFreeze(JSON.parse(text) as Doc);
      read.set(id, doc);
      this.cache.put(docs, id, doc);
    }
    return read;
  }

  async ensureIndexes(specs: readonly IndexSpec[]): Promise<void> {
    for (const spec of specs) {
      const t = table(spec.collection);
      this.writer.exec(`CREATE TABLE IF NOT EXISTS ${t} (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
      const name = `ix_${spec.collection}_${spec.fields.map((f) => f.replace(/\./g, '_')).join('_')}`;
      const cols = spec.fields.map(extract).join(', ');
      // `id` last: keyset pages (sort field, id) walk the index without a sort step.
      this.writer.exec(
        `CREATE ${spec.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${name} ON ${t} (${cols}${spec.unique ? '' : ', id'})`,
      );
    }
  }

  transaction<T>(fn: (tx: ReadTx) => Promise<T>, options: TxOptions = {}): Promise<T> {
    const run = async (): Promise<T> => {
      if (this.closed) throw new Error('read store is closed');
      // Key material (TxOptions.sensitive): this one commit is synced to disk (NORMAL may
      // lose the last commits on a power cut: fine for read models, which the log rebuilds,
      // not for a data key), and what it deletes is overwritten with zeros.
      if (options.sensitive) {
        this.writer.pragma('synchronous = FULL');
        this.writer.pragma('secure_delete = ON');
      }
      this.writer.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.tx);
        this.writer.exec('COMMIT');
        this.cache.invalidate();
        // The WAL still holds the pages as they were before (a deleted data key among them)
        // until it is checkpointed and truncated; best effort, as readers may hold it.
        if (options.sensitive) this.writer.pragma('wal_checkpoint(TRUNCATE)');
        return result;
      } catch (error) {
        this.cache.invalidate();
        if (this.writer.inTransaction) this.writer.exec('ROLLBACK');
        // Tables created by the rolled-back transaction are gone again.
        this.tx.forgetTables();
        throw error;
      } finally {
        if (options.sensitive) {
          this.writer.pragma('synchronous = NORMAL');
          this.writer.pragma('secure_delete = OFF');
        }
      }
    };
    // Serialized: the writer connection holds one transaction at a time.
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }

  async getCheckpoint(name: string): Promise<LogPosition | null> {
    return (this.stmt('SELECT position FROM checkpoints WHERE name = ?', 'pluck').get(name) as string | undefined) ?? null;
  }

  async dropCollection(collection: string): Promise<void> {
    const t = table(collection);
    await this.transaction(async () => {
      this.writer.exec(`DROP TABLE IF EXISTS ${t}`);
    });
    this.forgetTables();
    this.tx.forgetTables();
    this.cache.invalidate();
  }

  async listCollections(): Promise<string[]> {
    const rows = this.writer
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rm\\_%' ESCAPE '\\' ORDER BY name")
      .all() as Array<{ name: string }>;
    return rows.map((r) => r.name.slice(3));
  }

  beginRequest(): void {
    this.cache.beginRequest();
  }

  /** Moves whenever the read cache is emptied (see DocCache): the same signals, the same checks. */
  readEpoch(): number | undefined {
    return this.cache.currentEpoch();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.chain;
    this.closed = true;
    if (this.db !== this.writer) this.db.close();
    this.writer.close();
  }
}
