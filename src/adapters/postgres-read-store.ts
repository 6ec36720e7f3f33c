/**
 * PostgreSQL read store (node-postgres), in the same database as the log (POSTGRES_URL):
 *
 * - a table per collection, `rm_<name>` (id text COLLATE "C" PRIMARY KEY, doc json), created on
 *   first write inside the writing transaction (a rollback takes it back); checkpoints in
 *   `checkpoints` (postgres-common.ts);
 * - documents are `json`, not `jsonb`: the text is kept as written (key order, as the other
 *   stores return it). Strings PostgreSQL cannot hold (U+0000, lone surrogates) are stored
 *   encoded (postgres-common.ts, encodeString), ids included;
 * - a field is read as `(doc->'a'->'b')::jsonb`, which compares by JSON type and value as
 *   MongoDB does (1 is not "1", true is not 1); `null` also matches a missing field; indexes
 *   are on the same expressions, non-unique ones ending in `id` so keyset pages walk them;
 * - a transaction is REPEATABLE READ on one pooled connection, serialized within the process as
 *   the port promises. Across processes PostgreSQL refuses the second of two conflicting
 *   writers (serialization failure, 40001): the transaction is run again from the start, as
 *   MongoDB's withTransaction does, and then sees the other's commit. Example: two processes
 *   both read the `projections` lease as expired and both write it; the second write fails,
 *   its run again reads the first's lease and stays out. So a compare-and-set of a checkpoint
 *   to its own value still conflicts with a batch that moved it meanwhile (the rebuild switch);
 * - reads outside a transaction see the last commit a request may know of, through a cache of
 *   parsed documents (ReadCache below) that is exact by the change signal: a request's first
 *   read asks the server for the signal (one round trip), and everything the cache holds at
 *   that value is answered without another. A request whose reads all hit makes that one
 *   round trip and no other;
 * - the change signal (ReadStore.readEpoch, what keeps the access index exact) is the sum of
 *   the checkpoints' `version`s, read in one round trip. Every projection batch already moves
 *   its checkpoints (compare-and-set, `version + 1`) in the transaction that writes its read
 *   models, so the sum moves with every commit that changes a read model built from the log,
 *   and a projection's commit writes nothing more for it. A transaction that writes a table
 *   but moves no checkpoint (a parked event applied again, a cascade drain, a parked record's update)
 *   moves one row of its own, UNLOGGED_WRITES, with its COMMIT, unless every table it wrote
 *   is exempt (`signalExempt`: the shared collections, not read models: leases, presence,
 *   idempotency keys, deliveries); dropCollection does the same with its DROP. Rows are never
 *   deleted and versions only grow, so the sum never goes back and never repeats. Leases,
 *   presence and projection batches, the commits of every process, are unchanged by it
 *   (docs/architecture.md, "The read cache and the access index's change signal").
 *
 * Connection loss becomes StoreUnavailableError (503); the pool opens new connections by itself.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
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
import { BugError } from '../shared/errors.js';
import { evictOldest } from '../shared/evict.js';
import { deepFreeze } from '../shared/freeze.js';
import { PLAIN, columnName, columnText, columnValues, shapeOf, type Shape } from './postgres-columns.js';
import { CHECKPOINT_CHANNEL, PgListener, decodeJson, encodeJson, encodeString, textArray, isPreparedRefusal, isRetryable, migrate, openPool, translatePgError, unboundedAnswers, withConnection, quick } from './postgres-common.js';

/** `rm_` + the name must fit PostgreSQL's 63-byte identifiers. */
const NAME = /^[a-z][a-z0-9_]{0,59}$/;

function table(collection: string): string {
  if (!NAME.test(collection)) throw new BugError(`invalid collection name ${JSON.stringify(collection)}`);
  return `rm_${collection}`;
}

/** `(doc->'a'->'b')::jsonb` for `a.b`: field names are identifiers (fieldPath), so the SQL stays closed. */
const expr = (field: string) => `((doc${fieldPath(field).split('.').map((p) => `->'${p}'`).join('')})::jsonb)`;

/** A filter or cursor value as the jsonb it is compared with. */
const jsonValue = (v: Scalar) => JSON.stringify(typeof v === 'string' ? encodeString(v) : v);

/**
 * A field of a table as queries read it: its index column when the table has one
 * (postgres-columns.ts), compared with the value's column text; otherwise the expression
 * over the document, compared with the value's jsonb. Both answer alike.
 */
function fieldOf(shape: Shape, field: string): { sql: string; value: (v: Scalar) => string; cast: string; isNull: string } {
  const column = shape.get(field);
  if (column) return { sql: column, value: (v) => columnText(v)!, cast: 'text', isNull: `(${column} IS NULL OR ${column} = '0')` };
  const e = expr(field);
  return { sql: e, value: jsonValue, cast: 'jsonb', isNull: `(${e} IS NULL OR ${e} = 'null'::jsonb)` };
}

type Params = unknown[];

function whereOf(shape: Shape, filter: Filter, params: Params): string {
  const parts: string[] = [];
  for (const [f, v] of Object.entries(filter)) {
    if (v !== null && typeof v === 'object') throw new BugError(`filter on ${f} is not a scalar`);
    const field = fieldOf(shape, f);
    // Undefined never matches, as in the other stores.
    if (v === undefined) parts.push('false');
    else if (v === null) parts.push(field.isNull);
    else {
      params.push(field.value(v));
      parts.push(`${field.sql} = $${params.length}::${field.cast}`);
    }
  }
  return parts.length ? parts.join(' AND ') : 'true';
}

/**
 * PgView.find's clauses, for a transaction's read that carries its pending upserts
 * (PgTx.carry); `params` may hold earlier parameters.
 */
function findClauses(shape: Shape, filter: Filter, options: FindOptions, params: Params): { where: string; order: string; limit: string } {
  let where = whereOf(shape, filter, params);
  const sort = options.sort ? fieldOf(shape, options.sort) : null;
  if (options.after) {
    if (sort) {
      params.push(sort.value(options.after.value), encodeString(options.after.id));
      where += ` AND (${sort.sql}, id) > ($${params.length - 1}::${sort.cast}, $${params.length}::text)`;
    } else {
      params.push(encodeString(options.after.id));
      where += ` AND id > $${params.length}`;
    }
  }
  const order = sort ? ` ORDER BY ${sort.sql}, id` : ' ORDER BY id';
  let limit = '';
  if (options.limit !== undefined && options.limit >= 0) {
    params.push(Math.floor(options.limit));
    limit = ` LIMIT $${params.length}`;
  }
  return { where, order, limit };
}

/**
 * A run's rows side by side (rowParams): the ids and each index column's texts as text[],
 * the documents as one JSON array. An array of documents is their texts joined, where a text[]
 * literal escapes every quote and backslash of every document on the way out (node-postgres,
 * element by element) and unescapes them on the way in (the server): that escaping was the
 * largest cost of a rebuild's own thread (docs/performance-history.md, "Index columns").
 */
function runSource(shape: Shape): string {
  const cols = [...shape.values()];
  return `ROWS FROM (unnest($1::text[]), json_array_elements($2::json)${cols.map((_, i) => `, unnest($${i + 3}::text[])`).join('')}) AS u(id, doc${cols.map((c) => `, ${c}`).join('')})`;
}

/** The pending run's rows as a relation like a table's (PgTx.carry, rowParams). */
function runRows(shape: Shape): string {
  const cols = [...shape.values()];
  return `(SELECT id COLLATE "C" AS id, doc${cols.map((c) => `, ${c} COLLATE "C" AS ${c}`).join('')} FROM ${runSource(shape)}) AS p`;
}

/** The upsert of a run's rows (rowParams), or of one row given as values in the same order. */
function upsertSql(t: string, shape: Shape, one: boolean): string {
  const cols = [...shape.values()];
  const names = ['id', 'doc', ...cols].join(', ');
  const set = ['doc', ...cols].map((c) => `${c} = excluded.${c}`).join(', ');
  if (one) return `INSERT INTO ${t} (${names}) VALUES ($1, $2::json${cols.map((_, i) => `, $${i + 3}`).join('')}) ON CONFLICT (id) DO UPDATE SET ${set}`;
  return `INSERT INTO ${t} (${names}) SELECT ${names} FROM ${runSource(shape)} ON CONFLICT (id) DO UPDATE SET ${set}`;
}

/**
 * The table's shape, or null when it does not exist. Both reads see the catalog as committed
 * now, not as a REPEATABLE READ transaction's snapshot (a SELECT from pg_attribute would): a
 * table another process made after the snapshot is found, as CREATE TABLE would find it, and
 * its columns are its result's fields (a SELECT from it, which reads no row).
 */
async function readShape(q: Queryable, t: string): Promise<Shape | null> {
  const r = await q.query<{ present: boolean }>("SELECT to_regclass(quote_ident(current_schema()) || '.' || $1) IS NOT NULL AS present", [t]);
  if (!r.rows[0]?.present) return null;
  const columns = await q.query(`SELECT * FROM ${t} LIMIT 0`);
  return shapeOf(columns.fields.map((f) => f.name));
}

const MAX_ATTEMPTS = 20;

/** undefined_table: a table this process knew of was dropped by another. */
const isDropped = (error: unknown) => (error as { code?: unknown } | null)?.code === '42P01';

interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

/**
 * Statement texts given a name (a server-side prepared statement per connection), per thread.
 * The name is the text's digest, never a counter: behind a pooler in transaction mode a server
 * connection is shared by every client of the pooler (this process's background thread, whose
 * module has a map of its own, other processes, other releases), and node-postgres, having
 * parsed a name once on its connection, sends only Bind after that. A name that meant another
 * text there ran that other statement with these values (seen: "bind message supplies 7
 * parameters, but prepared statement "collab_0" requires 2", from the projection runner,
 * test/postgres.pooler.test.ts); one digest per text means the same statement wherever it is
 * prepared, or is missing there (26000: unprepare()).
 */
const statementNames = new Map<string, string>();

/** The name of `text` as a prepared statement, the same in every thread and process. */
const statementName = (text: string) => `collab_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
/** Names given at most: the texts are the code's (a few per collection and generation); past this, new ones go unnamed. */
const MAX_NAMED = 1000;

/**
 * A transaction's hot statement, named when `prepared`: node-postgres then has the server parse
 * it once per connection and reuses the plan, where an unnamed statement is parsed and planned
 * every time: for the reads that carry a pending run (the history twin's per-document lookup)
 * that was most of their time on the server (docs/performance-history.md, "PostgreSQL writes
 * in batches"). Off behind a pooler that hands a session's statements to other server
 * connections (POSTGRES_PREPARED_STATEMENTS, docs/operations.md).
 */
export function statement(prepared: boolean, text: string, values: unknown[]): pg.QueryConfig {
  if (!prepared) return { text, values };
  let name = statementNames.get(text);
  if (name === undefined) {
    if (statementNames.size >= MAX_NAMED) return { text, values };
    statementNames.set(text, (name = statementName(text)));
  }
  return { name, text, values };
}

class PgView implements ReadView {
  constructor(
    protected readonly q: Queryable,
    /** Tables known to exist, with their shapes (shared by the store; cleared when a transaction that created one rolls back). */
    protected readonly tables: Map<string, Shape>,
  ) {}

  /** The table, or null when the collection has never been written (it reads as empty). */
  protected async existing(collection: string): Promise<string | null> {
    const t = table(collection);
    if (this.tables.has(t)) return t;
    const shape = await readShape(this.q, t);
    if (!shape) return null;
    this.tables.set(t, shape);
    return t;
  }

  /** The index columns of a table `existing` returned. */
  protected shape(t: string): Shape {
    return this.tables.get(t) ?? PLAIN;
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const t = await this.existing(collection);
    if (!t || typeof id !== 'string') return null;
    const r = await this.q.query<{ doc: string }>(`SELECT doc::text AS doc FROM ${t} WHERE id = $1`, [encodeString(id)]);
    return r.rows[0] ? decodeJson<T>(r.rows[0].doc) : null;
  }

  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const t = await this.existing(collection);
    const wanted = ids.filter((id) => typeof id === 'string');
    if (!t || wanted.length === 0) return [];
    const r = await this.q.query<{ id: string; doc: string }>(`SELECT id, doc::text AS doc FROM ${t} WHERE id = ANY($1::text[])`, [
      wanted.map(encodeString),
    ]);
    const byId = new Map(r.rows.map((row) => [row.id, row.doc]));
    const out: T[] = [];
    for (const id of ids) {
      const d = typeof id === 'string' ? byId.get(encodeString(id)) : undefined;
      if (d !== undefined) out.push(decodeJson<T>(d));
    }
    return out;
  }

  async find<T extends Doc = Doc>(collection: string, filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const t = await this.existing(collection);
    if (!t || options.limit === 0) return [];
    const params: Params = [];
    const { where, order, limit } = findClauses(this.shape(t), filter, options, params);
    const r = await this.q.query<{ doc: string }>(`SELECT doc::text AS doc FROM ${t} WHERE ${where}${order}${limit}`, params);
    return r.rows.map((row) => decodeJson<T>(row.doc));
  }

  async count(collection: string, filter: Filter): Promise<number> {
    const t = await this.existing(collection);
    if (!t) return 0;
    const params: Params = [];
    const r = await this.q.query<{ n: string }>(`SELECT count(*) AS n FROM ${t} WHERE ${whereOf(this.shape(t), filter, params)}`, params);
    return Number(r.rows[0]!.n);
  }
}

/** Takes a lock on `name` for the rest of the transaction: processes creating the same table or index wait for each other. */
const lockName = (q: Queryable, name: string) => q.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 1))', [name]);

/**
 * Creates the table if it does not exist, with an index column for each of `fields`
 * (postgres-columns.ts); returns its shape, the existing table's when there was one.
 */
async function createTable(q: Queryable, t: string, fields: readonly string[] = []): Promise<Shape> {
  // Two processes creating the same table at once can both pass IF NOT EXISTS and one then
  // fails on the catalog's unique index: the lock makes the second wait and find it.
  await lockName(q, t);
  const columns = fields.flatMap((f) => columnName(f) ?? []);
  await q.query(`CREATE TABLE IF NOT EXISTS ${t} (id text COLLATE "C" PRIMARY KEY, doc json NOT NULL${columns.map((c) => `, ${c} text COLLATE "C"`).join('')})`);
  // Made here, or by another process first (with its columns or without): as it is.
  return (await readShape(q, t)) ?? PLAIN;
}

/** Rows of a pending run of upserts written by one statement at most (bounds the message). */
const UPSERT_ROWS = 1000;

/** A pending row: the document's stored text, and its index columns' texts when its table's shape was known. */
interface Pending {
  text: string;
  columns: Array<string | null> | null;
}

/**
 * The projections' writer. Upserts are buffered: a run of upserts into one collection (the
 * documents of a batch of DocumentAdded, their audit rows) is one INSERT of every row
 * (`unnest` of two arrays), one round trip instead of one per row. Every later call sees
 * exactly what the sequence of calls so far would have written, in order: reads, patches
 * and deletes carry the run in their own statement or answer from it (`get`, `carry`), other
 * writes and the commit write it first. Checkpoint moves wait for the commit and go with it
 * (`commit`). So a projection batch costs the server a round trip per read it makes, one
 * per run, and one for the commit.
 */
class PgTx extends PgView implements ReadTx {
  /** Tables this transaction created: forgotten again if it rolls back. */
  readonly created: string[] = [];
  /** It wrote (or may have written) a table the change signal counts (see the header). */
  changed = false;
  /** It moved a checkpoint: the signal moves with its commit already. */
  moved = false;

  constructor(
    q: Queryable,
    tables: Map<string, Shape>,
    private readonly exempt: ReadonlySet<string>,
    /** Hot statements named (`statement`). */
    readonly prepared: boolean,
  ) {
    super(q, tables);
  }

  /** Notes a write to `collection` before it is made (a failed one rolls the transaction back). */
  private writes(collection: string) {
    if (!this.exempt.has(collection)) this.changed = true;
  }
  /**
   * The collection of the pending run, and its rows by encoded id (a later upsert of an id
   * replaces its row, as one by one): the document's text and its index columns' texts
   * (null when the table was not known when the row was added: `rowParams` makes them).
   */
  private pendingCollection: string | null = null;
  private pending = new Map<string, Pending>();

  private async writable(collection: string): Promise<string> {
    const t = await this.existing(collection);
    if (t) return t;
    const name = table(collection);
    this.tables.set(name, await createTable(this.q, name));
    this.created.push(name);
    return name;
  }

  async upsert(collection: string, doc: Doc): Promise<void> {
    if (typeof doc._id !== 'string') throw new BugError(`upsert into ${collection} without a string _id`);
    // Encoded now: the caller may change the object after the call.
    await this.pend(collection, encodeString(doc._id), encodeJson(doc), doc);
  }

  /** Adds a row to the pending run (of `collection`: another collection's is written first). */
  private async pend(collection: string, id: string, text: string, doc: unknown): Promise<void> {
    if (this.pendingCollection !== collection) {
      await this.flush();
      this.pendingCollection = collection;
    }
    // Unknown table: rowParams makes the columns once flush knows its shape.
    const shape = this.tables.get(table(collection));
    const columns = shape ? columnValues(doc, shape) : null;
    this.pending.delete(id);
    this.pending.set(id, { text, columns });
    if (this.pending.size >= UPSERT_ROWS) await this.flush();
  }

  /**
   * The run's parameters for `shape` (runSource): ids, the documents as one JSON array, then
   * each index column's texts (the columns of a row added before its table's shape was known
   * are made from its text). `one`: the values of a run of one row, for upsertSql's VALUES.
   */
  private rowParams(rows: ReadonlyMap<string, Pending>, shape: Shape, one = false): Params {
    const texts: string[] = [];
    const columns: Array<Array<string | null>> = [...shape.keys()].map(() => []);
    for (const row of rows.values()) {
      texts.push(row.text);
      const values = shape.size === 0 ? [] : (row.columns ?? columnValues(JSON.parse(row.text), shape, true));
      for (let i = 0; i < columns.length; i++) columns[i]!.push(values[i] ?? null);
    }
    if (one) return [rows.keys().next().value, texts[0], ...columns.map((c) => c[0])];
    return [textArray([...rows.keys()]), `[${texts.join(',')}]`, ...columns.map(textArray)];
  }

  /** Writes the pending run. (ON CONFLICT DO UPDATE may not touch a row twice in one statement: ids are distinct here.) */
  async flush(): Promise<void> {
    const collection = this.pendingCollection;
    if (collection === null) return;
    const rows = this.pending;
    this.pendingCollection = null;
    this.pending = new Map();
    // Emptied by deletes: nothing to write.
    if (rows.size === 0) return;
    this.writes(collection);
    const t = await this.writable(collection);
    const shape = this.shape(t);
    const one = rows.size === 1;
    await this.q.query(statement(this.prepared, upsertSql(t, shape, one), this.rowParams(rows, shape, one)));
  }

  /**
   * Reads inside the transaction do not write the pending run first in a round trip of its
   * own. A get or getMany answers the pending ids from the run itself and reads the others from
   * the table (the run changes no other row). A find or count carries the run's INSERT in its
   * own statement, as a data-modifying WITH (run exactly once, whether the read uses it or
   * not), and when it reads the run's own collection reads it as the run would have left it:
   * the table's rows but the pending ids, and the pending rows (the statement's snapshot does
   * not see its own INSERT), each side filtered, ordered and limited. The filter, the order
   * and the limit are PostgreSQL's, on the same expressions, so the answer is the one a flush
   * then the read would give. Example: the
   * history twin's per-document `count` of an entity's versions, right after the previous
   * document's version was upserted: one round trip per document instead of two.
   */
  override async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    if (collection === this.pendingCollection && typeof id === 'string') {
      const row = this.pending.get(encodeString(id));
      if (row !== undefined) return decodeJson<T>(row.text);
    }
    return super.get<T>(collection, id);
  }

  override async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    if (collection !== this.pendingCollection || !ids.some((id) => typeof id === 'string' && this.pending.has(encodeString(id)))) {
      return super.getMany<T>(collection, ids);
    }
    const pending = this.pending;
    const stored = await super.getMany<T>(collection, ids.filter((id) => typeof id === 'string' && !pending.has(encodeString(id))));
    const byId = new Map(stored.map((d) => [d._id, d]));
    const out: T[] = [];
    for (const id of ids) {
      if (typeof id !== 'string') continue;
      const row = pending.get(encodeString(id));
      const d = row !== undefined ? decodeJson<T>(row.text) : byId.get(id);
      if (d) out.push(d);
    }
    return out;
  }

  override async find<T extends Doc = Doc>(collection: string, filter: Filter, options: FindOptions = {}): Promise<T[]> {
    if (options.limit === 0) return [];
    const c = await this.carry(collection);
    if (c === 'none') return super.find<T>(collection, filter, options);
    if (c === 'empty') return [];
    const shape = this.shape(c.table);
    const { where, order, limit } = findClauses(shape, filter, options, c.params);
    // Through the run: each side filtered, ordered and limited on its own, so the table's side
    // still walks its index and stops at the limit (one sort over the union read every match).
    // Both sides give the columns the order may name.
    const cols = [...shape.values()].map((col) => `, ${col}`).join('');
    const sql = c.throughRun
      ? `${c.with}SELECT doc::text AS doc FROM ((SELECT id, doc${cols} FROM ${c.table} WHERE ${where} AND id <> ALL($1::text[])${order}${limit}) UNION ALL (SELECT id, doc${cols} FROM ${runRows(shape)} WHERE ${where})) AS r${order}${limit}`
      : `${c.with}SELECT doc::text AS doc FROM ${c.table} WHERE ${where}${order}${limit}`;
    const r = await this.q.query<{ doc: string }>(statement(this.prepared, sql, c.params));
    return r.rows.map((row) => decodeJson<T>(row.doc));
  }

  override async count(collection: string, filter: Filter): Promise<number> {
    const c = await this.carry(collection);
    if (c === 'none') return super.count(collection, filter);
    if (c === 'empty') return 0;
    const shape = this.shape(c.table);
    const where = whereOf(shape, filter, c.params);
    const sql = c.throughRun
      ? `${c.with}SELECT (SELECT count(*) FROM ${c.table} WHERE ${where} AND id <> ALL($1::text[])) + (SELECT count(*) FROM ${runRows(shape)} WHERE ${where}) AS n`
      : `${c.with}SELECT count(*) AS n FROM ${c.table} WHERE ${where}`;
    const r = await this.q.query<{ n: string }>(statement(this.prepared, sql, c.params));
    return Number(r.rows[0]!.n);
  }

  /**
   * How a find or count of `collection` carries the pending run (see `get`): 'none' when
   * nothing is pending (or the run had to be written first: its table is not known to exist,
   * and creating it is a statement of its own); 'empty' when `collection` has no table (the
   * read answers nothing and the run stays pending); otherwise the WITH that writes the run,
   * the table to read, whether the read must also read the run (`runRows`) instead of the
   * table's rows of the run's ids, and the parameters so far ($1 the ids, $2 the documents, then the run table's index columns).
   * Without `throughRun` the run's own collection is read as its table alone (a patch or delete
   * of an id not in the run, which the run does not change; FOR UPDATE takes no union).
   */
  private async carry(collection: string, throughRun = true): Promise<'none' | 'empty' | { with: string; table: string; throughRun: boolean; params: Params }> {
    const runOf = this.pendingCollection;
    if (runOf === null) return 'none';
    if (this.pending.size === 0) {
      this.pendingCollection = null;
      return 'none';
    }
    const runTable = table(runOf);
    const runShape = this.tables.get(runTable);
    if (!runShape) {
      await this.flush();
      return 'none';
    }
    let t = runTable;
    if (collection !== runOf) {
      const other = await this.existing(collection);
      if (!other) return 'empty';
      t = other;
    }
    const rows = this.pending;
    this.pendingCollection = null;
    this.pending = new Map();
    this.writes(runOf);
    return {
      with: `WITH w AS (${upsertSql(runTable, runShape, false)}) `,
      table: t,
      throughRun: throughRun && collection === runOf,
      params: this.rowParams(rows, runShape),
    };
  }

  /**
   * A patch reads the row (FOR UPDATE, carrying the pending run: see `get`) or takes it from
   * the pending run, and writes the patched document into the pending run like an upsert: one
   * round trip at most where the read, its flush and the UPDATE were three.
   */
  async patch(collection: string, id: string, set: Record<string, unknown> = {}, unset: string[] = []): Promise<boolean> {
    this.writes(collection);
    const t = await this.writable(collection);
    if (typeof id !== 'string') return false;
    const key = encodeString(id);
    let text = collection === this.pendingCollection ? this.pending.get(key)?.text : undefined;
    if (text === undefined) {
      const c = await this.carry(collection, false);
      const r =
        c === 'none' || c === 'empty'
          ? await this.q.query<{ doc: string }>(statement(this.prepared, `SELECT doc::text AS doc FROM ${t} WHERE id = $1 FOR UPDATE`, [key]))
          : await this.q.query<{ doc: string }>(statement(this.prepared, `${c.with}SELECT doc::text AS doc FROM ${t} WHERE id = $${c.params.length + 1} FOR UPDATE`, [...c.params, key]));
      if (!r.rows[0]) return false;
      text = r.rows[0].doc;
    }
    const doc = decodeJson<Record<string, unknown>>(text);
    for (const [path, value] of Object.entries(set)) setPath(doc, fieldPath(path), value);
    for (const path of unset) unsetPath(doc, fieldPath(path));
    await this.pend(collection, key, encodeJson(doc), doc);
    return true;
  }

  /** A delete takes the id out of the pending run and carries the rest of it in its statement. */
  async delete(collection: string, id: string): Promise<boolean> {
    this.writes(collection);
    if (typeof id !== 'string') return false;
    const key = encodeString(id);
    const wasPending = collection === this.pendingCollection && this.pending.delete(key);
    const t = await this.existing(collection);
    if (!t) return wasPending;
    const c = await this.carry(collection, false);
    const r =
      c === 'none' || c === 'empty'
        ? await this.q.query(statement(this.prepared, `DELETE FROM ${t} WHERE id = $1`, [key]))
        : await this.q.query(statement(this.prepared, `${c.with}DELETE FROM ${t} WHERE id = $${c.params.length + 1}`, [...c.params, key]));
    return wasPending || (r.rowCount ?? 0) > 0;
  }

  async deleteMany(collection: string, filter: Filter): Promise<number> {
    await this.flush();
    this.writes(collection);
    const t = await this.existing(collection);
    if (!t) return 0;
    const params: Params = [];
    return (await this.q.query(`DELETE FROM ${t} WHERE ${whereOf(this.shape(t), filter, params)}`, params)).rowCount ?? 0;
  }

  async deleteBefore(collection: string, field: string, value: number): Promise<number> {
    await this.flush();
    if (typeof value !== 'number' || Number.isNaN(value)) throw new BugError(`deleteBefore ${collection}.${field}: not a number`);
    this.writes(collection);
    const t = await this.existing(collection);
    if (!t) return 0;
    // Numbers only, as MongoDB's $lt on a number: jsonb orders strings below numbers, and so do
    // index columns, whose numbers are the texts after '2' and before '3'.
    const column = this.shape(t).get(field);
    if (column) return (await this.q.query(`DELETE FROM ${t} WHERE ${column} > '2' AND ${column} < $1::text`, [columnText(value)])).rowCount ?? 0;
    const e = expr(field);
    return (await this.q.query(`DELETE FROM ${t} WHERE jsonb_typeof(${e}) = 'number' AND ${e} < $1::jsonb`, [JSON.stringify(value)])).rowCount ?? 0;
  }

  bulk(ops: readonly WriteOp[]): Promise<void> {
    return applyInOrder(this, ops);
  }

  /** Checkpoint moves, in call order, made by `commit` (see setCheckpoint). */
  private readonly checkpointMoves: Array<{ name: string; position: LogPosition; expected: LogPosition | null }> = [];

  /**
   * Compare-and-set, made at the commit: every move of the transaction goes with the COMMIT in
   * one message (`commit`), where each called the server twice before (the update, then its
   * notice). Nothing else in a transaction reads checkpoints, so nothing can tell the
   * difference but the moment a conflict is raised: by the transaction, not by this call; the
   * transaction rolls back whole either way. The update always writes (`version` moves), so
   * even a set to the current value takes the row's lock and conflicts with a concurrent move
   * (see the header).
   */
  async setCheckpoint(name: string, position: LogPosition, expected: LogPosition | null): Promise<void> {
    this.checkpointMoves.push({ name, position, expected });
  }

  /**
   * Writes what is pending and commits, in one message after the pending run: the checkpoint
   * moves (`collab_move_checkpoints`, postgres-common.ts, which raises CLCP1 on a mismatch),
   * the notice to other processes waiting on a checkpoint (a write's read-your-writes,
   * PostgresReadStore.onCheckpointMoved), the change signal's own row when nothing else moves
   * it, and COMMIT. A simple-protocol message takes no parameters: names and positions are
   * quoted literals. A statement that fails skips the rest of the message, COMMIT included.
   */
  async commit(): Promise<void> {
    await this.flush();
    const parts: string[] = [];
    if (this.checkpointMoves.length > 0) {
      const array = (values: Array<string | null>) => `ARRAY[${values.map((v) => (v === null ? 'NULL' : pg.escapeLiteral(v))).join(', ')}]::text[]`;
      const moves = this.checkpointMoves;
      parts.push(
        `SELECT collab_move_checkpoints(${array(moves.map((m) => m.name))}, ${array(moves.map((m) => m.position))}, ${array(moves.map((m) => m.expected))})`,
        `SELECT pg_notify(${pg.escapeLiteral(CHECKPOINT_CHANNEL)}, '')`,
      );
      this.moved = true;
    }
    if (this.changed && !this.moved) parts.push(BUMP);
    parts.push('COMMIT');
    try {
      await this.q.query(parts.join('; '));
    } catch (error) {
      const e = error as { code?: unknown; detail?: unknown };
      if (e?.code !== 'CLCP1' || typeof e.detail !== 'string') throw error;
      const d = JSON.parse(e.detail) as { name: string; expected: LogPosition | null; actual: LogPosition | null };
      throw new CheckpointConflictError(d.name, d.expected, d.actual);
    }
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

export interface PostgresReadStoreOptions {
  logger?: { warn(obj: unknown, msg?: string): void };
  /**
   * Whether tables `ensureIndexes` makes get index columns (postgres-columns.ts); default true.
   * False makes them as releases before index columns did (tests of such tables, A/B benches).
   */
  indexColumns?: boolean;
  /** The longest one statement may run, ms (openPool); 0 or absent: the server's setting. */
  statementTimeoutMs?: number;
  /** Connections of the pool (POSTGRES_POOL_SIZE). */
  poolSize?: number;
  /** The longest a statement waits for a lock, ms (LOCK_TIMEOUT_MS); 0 or absent: the server's setting. */
  lockTimeoutMs?: number;
  /** Where to LISTEN for other processes' notices (POSTGRES_LISTEN_URL); default the store's URL. */
  listenUrl?: string;
  /**
   * Collections whose writes need not move the change signal (see the header): those that are
   * not read models, whose readers keep nothing across requests (src/ops/read-models.ts
   * SHARED_COLLECTIONS). Absent: every write moves it (exact, and more often than needed).
   */
  signalExempt?: Iterable<string>;
  /** Parsed documents kept for reads outside transactions (0: none). Default 100,000. */
  cacheSize?: number;
  /**
   * The statements made most (the change signal, a transaction's hot statements) are named,
   * prepared once per connection. Default true; false behind a pooler in transaction mode that
   * does not carry prepared statements across server connections (pgbouncer before 1.21); left
   * on there, the first refusal turns them off for the store (a warning, once).
   */
  preparedStatements?: boolean;
  /**
   * Sends reads outside transactions to a hot standby when the routing says so (POSTGRES_REPLICA_URLS,
   * postgres-replicas.ts). Transactions, and so every write, stay on this store.
   */
  routing?: ReadRouting;
  /** This store reads a hot standby: it never migrates (a standby cannot write) and only reads. */
  standby?: boolean;
}

/** Where this call's reads go (postgres-replicas.ts, ReplicaSet). */
export interface ReadRouting {
  /** The standby the current request's reads go to, or null: this store (the primary). */
  target(): PostgresReadStore | null;
  /** A read on `target` failed: it is left out, and the read (and the rest of its request) goes to the primary. */
  failed(target: PostgresReadStore, error: unknown): void;
}

/**
 * The checkpoint row a transaction that writes without moving a checkpoint moves instead, and
 * dropCollection too (not a projection's name: no runner reads or sets it).
 */
export const UNLOGGED_WRITES = '~unlogged-writes';
const BUMP = `INSERT INTO checkpoints (name, position) VALUES ('${UNLOGGED_WRITES}', '') ON CONFLICT (name) DO UPDATE SET version = checkpoints.version + 1`;

/** Distinct `find` queries whose ids are kept (a page token is part of the query). */
const QUERIES_KEPT = 10_000;

const EPOCH_SQL = 'SELECT coalesce(sum(version), 0)::bigint AS n FROM checkpoints';

/** standbyState(): replay lag is the age of the last replayed commit while received WAL waits to be replayed. */
const STANDBY_SQL = `SELECT pg_is_in_recovery() AS standby,
  CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() IS NULL OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0
       ELSE coalesce(extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000, 0)::float8 END AS lag`;

const keepUndefined = (_key: string, value: unknown) => (value === undefined ? '\u0000undefined' : value);

/** One reading of the change signal: valid for reads until the next request, own commit or turn. */
interface Observation {
  readonly promise: Promise<number>;
  value: number | undefined;
  /** The request count and local generation when it was asked. */
  readonly context: number;
  readonly generation: number;
  /** Settled in this turn of the event loop. */
  fresh: boolean;
}

/**
 * The read cache: parsed, frozen documents by collection and id (absent ones as null), and
 * the ids each `find` returned, all valid at one value of the change signal (`epoch`).
 *
 * The rule, the same as SQLite's read cache with the signal read from the server instead of
 * from the file: a read may be answered from the cache only after an observation of the
 * signal asked after the last `beginRequest`, after this process's last commit that moved it,
 * and in the same turn of the event loop as the answer came (what a background reader, which
 * makes no requests, relies on). An observation whose value is newer than the cache's empties
 * it. A document read from the server goes into the cache only when neither a newer
 * observation nor a commit came while it was being read.
 *
 * Why that is exact. Example: a request observes 41 and reads grant g from the server; another
 * process then revokes g and commits (the signal moves to 42, every read-model commit moves
 * it: see the header); the next request's observation answers 42, which empties the cache,
 * and reads g again. The stale g could only be answered to a request whose observation was
 * asked before the revocation committed, which may answer either way anyway. A read in flight
 * while 42 is observed may have read g before the revocation: it is not kept.
 *
 * Concurrent requests share an observation asked after the newest of them began, so under
 * load the signal costs at most one round trip per request. The collections exempt from the
 * signal (leases, presence, idempotency keys, deliveries) are never cached: their writes do
 * not move it.
 */
class ReadCache {
  private readonly byCollection = new Map<string, Map<string, Doc | null>>();
  private readonly queries = new Map<string, readonly string[]>();
  private size = 0;
  /** The signal's value the contents are valid at (undefined: unknown, nothing kept). */
  private epoch: number | undefined;
  /** Moves with each of this process's commits that move the signal. */
  private generation = 0;
  private requests = 0;
  private observation: Observation | null = null;

  constructor(readonly max: number) {}

  beginRequest() {
    this.requests++;
  }

  /** This process committed (or may have) something the signal counts: forget everything. */
  invalidate() {
    this.generation++;
    this.clear();
    this.epoch = undefined;
  }

  private clear() {
    this.byCollection.clear();
    this.queries.clear();
    this.size = 0;
  }

  /** The signal as the rule above allows reads to rely on it: the current observation, or a new one from `ask`. */
  observe(ask: () => Promise<number>): number | Promise<number> {
    const o = this.observation;
    if (o && o.context === this.requests && o.generation === this.generation && (o.value === undefined || o.fresh)) return o.value ?? o.promise;
    const generation = this.generation;
    const next: Observation = {
      context: this.requests,
      generation,
      value: undefined,
      fresh: false,
      promise: ask().then((value) => {
        next.value = value;
        next.fresh = true;
        setImmediate(() => {
          next.fresh = false;
        });
        // Asked before this process's last commit: it vouches for nothing kept after it.
        if (generation === this.generation && (this.epoch === undefined || value > this.epoch)) {
          this.clear();
          this.epoch = value;
        }
        return value;
      }),
    };
    next.promise.catch(() => {
      if (this.observation === next) this.observation = null;
    });
    this.observation = next;
    return next.promise;
  }

  /** Where a read stands after its observation: what it may take, and what its fill must still match. */
  stamp(): { generation: number; epoch: number | undefined } {
    return { generation: this.generation, epoch: this.epoch };
  }

  private holds(stamp: { generation: number; epoch: number | undefined }) {
    return stamp.epoch !== undefined && stamp.generation === this.generation && stamp.epoch === this.epoch;
  }

  docs(collection: string): Map<string, Doc | null> {
    let docs = this.byCollection.get(collection);
    if (!docs) this.byCollection.set(collection, (docs = new Map()));
    return docs;
  }

  /** Cached under `stamp`'s value only: read from the server while nothing moved. */
  put(stamp: { generation: number; epoch: number | undefined }, collection: string, id: string, doc: Doc | null) {
    if (!this.holds(stamp)) return;
    const docs = this.docs(collection);
    if (this.size >= this.max && !docs.has(id)) {
      // As SQLite's cache: oldest first within the collection, an eighth at a time.
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

  foundIds(stamp: { generation: number; epoch: number | undefined }, key: string): readonly string[] | undefined {
    return this.holds(stamp) ? this.queries.get(key) : undefined;
  }

  putFoundIds(stamp: { generation: number; epoch: number | undefined }, key: string, ids: readonly string[]) {
    if (!this.holds(stamp)) return;
    if (this.queries.size >= QUERIES_KEPT) this.queries.clear();
    this.queries.set(key, ids);
  }
}

export class PostgresReadStore implements ReadStore {
  private readonly pool: pg.Pool;
  /** Tables known to exist, with their index columns (postgres-columns.ts). */
  private readonly tables = new Map<string, Shape>();
  private ready: Promise<void> | null = null;
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly exempt: ReadonlySet<string>;
  private epochQuery: pg.QueryConfig;
  private readonly logger: PostgresReadStoreOptions['logger'];
  /** Hot statements named; turned off for good at a pooler's first refusal (see transaction()). */
  private prepared: boolean;
  /** Null when disabled (cacheSize 0). */
  private readonly cache: ReadCache | null;

  /** Other processes' checkpoint notices; opened with the first listener. */
  private readonly notices: PgListener;
  private readonly routing: ReadRouting | undefined;
  private readonly standby: boolean;

  constructor(
    private readonly url: string,
    private readonly options: PostgresReadStoreOptions = {},
  ) {
    this.pool = openPool(url, options.logger, options.statementTimeoutMs, options.poolSize, options.lockTimeoutMs);
    this.notices = new PgListener(url, options.logger, options.listenUrl);
    this.exempt = new Set(options.signalExempt ?? []);
    this.logger = options.logger;
    this.prepared = options.preparedStatements ?? true;
    this.epochQuery = this.prepared ? quick({ name: statementName(EPOCH_SQL), text: EPOCH_SQL }) : quick({ text: EPOCH_SQL });
    const size = options.cacheSize ?? 100_000;
    this.cache = size > 0 ? new ReadCache(size) : null;
    this.routing = options.routing;
    this.standby = options.standby ?? false;
  }

  private schema(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('Client was closed: read store is closed'));
    // A standby's schema is the primary's, replicated: it is read as it is.
    if (this.standby) return Promise.resolve();
    this.ready ??= migrate(this.pool).catch((error) => {
      this.ready = null;
      throw error;
    });
    return this.ready;
  }

  private async run<T>(f: (view: PgView) => Promise<T>): Promise<T> {
    try {
      await this.schema();
      try {
        return await f(new PgView(this.pool, this.tables));
      } catch (error) {
        if (!isDropped(error)) throw error;
        // Another process dropped a table this one knew (a rebuild's old generation): look again.
        this.tables.clear();
        return await f(new PgView(this.pool, this.tables));
      }
    } catch (error) {
      throw translatePgError(error, 'read store');
    }
  }

  /** The cache, when `collection` may be cached, with the stamp its reads must match (after an observation). */
  private async cached(collection: string): Promise<{ cache: ReadCache; stamp: ReturnType<ReadCache['stamp']> } | null> {
    const cache = this.cache;
    if (!cache || this.exempt.has(collection)) return null;
    await this.observe(cache);
    const stamp = cache.stamp();
    return stamp.epoch === undefined ? null : { cache, stamp };
  }

  /**
   * A read the routing sends to a standby when it names one (see ReadRouting); a read that
   * fails there is asked here, once, and the standby left out.
   */
  private routed<T>(there: (s: PostgresReadStore) => Promise<T>, here: () => Promise<T>): Promise<T> {
    const target = this.routing?.target();
    if (!target) return here();
    return there(target).catch((error: unknown) => {
      this.routing!.failed(target, error);
      return here();
    });
  }

  get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    return this.routed((s) => s.get<T>(collection, id), () => this.getHere<T>(collection, id));
  }

  private async getHere<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const c = await this.cached(collection);
    if (!c || typeof id !== 'string') return this.run((v) => v.get<T>(collection, id));
    const hit = c.cache.docs(collection).get(id);
    if (hit !== undefined) return hit as T | null;
    const doc = await this.run((v) => v.get<T>(collection, id));
    const frozen = deepFreeze(doc);
    c.cache.put(c.stamp, collection, id, frozen);
    return frozen;
  }

  getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    return this.routed((s) => s.getMany<T>(collection, ids), () => this.getManyHere<T>(collection, ids));
  }

  private async getManyHere<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const c = await this.cached(collection);
    if (!c) return this.run((v) => v.getMany<T>(collection, ids));
    return this.fromCache<T>(c, collection, ids);
  }

  /** The documents among `ids` that exist, in order: hits from the cache, the misses in one statement. */
  private async fromCache<T extends Doc>(c: { cache: ReadCache; stamp: ReturnType<ReadCache['stamp']> }, collection: string, ids: readonly string[]): Promise<T[]> {
    const docs = c.cache.docs(collection);
    const hits: Array<Doc | null | undefined> = new Array(ids.length);
    let missing: string[] | null = null;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (typeof id !== 'string') continue;
      const d = docs.get(id);
      if (d === undefined) (missing ??= []).push(id);
      else hits[i] = d;
    }
    let read: Map<string, Doc> | null = null;
    if (missing) {
      const found = await this.run((v) => v.getMany<Doc>(collection, missing));
      read = new Map(found.map((d) => [d._id, deepFreeze(d)]));
      for (const id of missing) c.cache.put(c.stamp, collection, id, read.get(id) ?? null);
    }
    const out: T[] = [];
    for (let i = 0; i < ids.length; i++) {
      const d = hits[i] ?? read?.get(ids[i]!);
      if (d) out.push(d as T);
    }
    return out;
  }

  find<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.routed((s) => s.find<T>(collection, filter, options), () => this.findHere<T>(collection, filter, options));
  }

  private async findHere<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions): Promise<T[]> {
    const c = await this.cached(collection);
    if (!c) return this.run((v) => v.find<T>(collection, filter, options));
    // Filters, cursors and limits are scalars from code and requests: their JSON names the
    // query. An undefined filter value matches nothing (whereOf), so it must not read as absent.
    const key = `${collection}\u0000${JSON.stringify(filter, keepUndefined)}\u0000${JSON.stringify(options ?? {}, keepUndefined)}`;
    const ids = c.cache.foundIds(c.stamp, key);
    if (ids) return this.fromCache<T>(c, collection, ids);
    const found = await this.run((v) => v.find<Doc>(collection, filter, options));
    const docs = found.map((d) => deepFreeze(d));
    for (const d of docs) c.cache.put(c.stamp, collection, d._id, d);
    c.cache.putFoundIds(c.stamp, key, docs.map((d) => d._id));
    return docs as T[];
  }

  count(collection: string, filter: Filter): Promise<number> {
    return this.routed((s) => s.count(collection, filter), () => this.run((v) => v.count(collection, filter)));
  }

  /**
   * A second handle for a projection lane (ReadStore.fork): a connection of its own on the
   * primary, so its transactions run beside this handle's (one at a time, as every handle's
   * are: one connection is all it uses), with no read cache (it only writes and reads in
   * transactions) and no routing to standbys.
   */
  fork(): PostgresReadStore {
    return new PostgresReadStore(this.url, { ...this.options, routing: undefined, cacheSize: 0, poolSize: 1, standby: false });
  }

  async ensureIndexes(specs: readonly IndexSpec[]): Promise<void> {
    if (specs.length === 0) return;
    await this.withClient((c) => unboundedAnswers(c, async () => {
      await c.query('BEGIN');
      // Building an index over a large table is start-up work, not a request's: unbounded.
      await c.query('SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0');
      // A table made here gets an index column for every field its specs name (the set is
      // fixed from then on: postgres-columns.ts).
      const fields = new Map<string, Set<string>>();
      for (const spec of specs) {
        const t = table(spec.collection);
        fields.set(t, new Set([...(fields.get(t) ?? []), ...spec.fields]));
      }
      for (const [t, named] of fields) this.tables.set(t, await createTable(c, t, this.options.indexColumns === false ? [] : [...named]));
      for (const spec of specs) {
        const t = table(spec.collection);
        const shape = this.tables.get(t) ?? PLAIN;
        // Each field as queries read it (fieldOf): its column, or the expression.
        const columns = spec.fields.filter((f) => shape.has(f));
        // A digest, not the fields spelled out: PostgreSQL cuts names at 63 bytes, and two
        // cut names that collide would make IF NOT EXISTS skip the second index. An index of
        // expressions only keeps the name it had before index columns.
        const name = `ix_${createHash('sha256').update(`${t}:${spec.fields.join(',')}:${spec.unique ? 'u' : ''}${columns.length ? `:k=${columns.join(',')}` : ''}`).digest('hex').slice(0, 24)}`;
        await lockName(c, name);
        const cols = spec.fields.map((f) => fieldOf(shape, f).sql).join(', ');
        await c.query(`CREATE ${spec.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${name} ON ${t} (${cols}${spec.unique ? '' : ', id'})`);
      }
      await c.query('COMMIT');
    }));
  }

  /** A pooled connection for `f`, rolled back and released after; a broken one is discarded. */
  private async withClient<T>(f: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    try {
      await this.schema();
      return await withConnection(this.pool, f);
    } catch (error) {
      throw translatePgError(error, 'read store');
    }
  }

  transaction<T>(fn: (tx: ReadTx) => Promise<T>, options: TxOptions = {}): Promise<T> {
    const run = () =>
      this.withClient(async (c) => {
        for (let attempt = 1; ; attempt++) {
          const tx = new PgTx(c, this.tables, this.exempt, this.prepared);
          try {
            await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
            // Key material (TxOptions.sensitive) is on disk when the commit returns, whatever
            // the server's or role's default says. (What it deletes stays in the table's dead
            // rows until VACUUM: see docs/operations.md.)
            if (options.sensitive) await c.query('SET LOCAL synchronous_commit = on');
            const result = await fn(tx);
            // On a conflict the COMMIT is skipped and the catch below rolls back and runs
            // again, as for any statement.
            try {
              await tx.commit();
            } finally {
              // Even a COMMIT that failed on the way back may have committed.
              if (tx.changed || tx.moved) this.cache?.invalidate();
            }
            return result;
          } catch (error) {
            await c.query('ROLLBACK').catch(() => undefined);
            for (const t of tx.created) this.tables.delete(t);
            if (isDropped(error)) this.tables.clear();
            const refused = tx.prepared && isPreparedRefusal(error);
            if (refused) this.unprepare(error);
            if (!(isRetryable(error) || isDropped(error) || refused) || attempt >= MAX_ATTEMPTS) throw error;
            // The other writer has committed (or is about to): run again on a new snapshot.
            await new Promise((r) => setTimeout(r, Math.min(100, 2 ** attempt) * Math.random()));
          }
        }
      });
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }

  getCheckpoint(name: string): Promise<LogPosition | null> {
    return this.routed((s) => s.getCheckpoint(name), () => this.getCheckpointHere(name));
  }

  getCheckpoints(names: readonly string[]): Promise<Map<string, LogPosition | null>> {
    return this.routed((s) => s.getCheckpoints(names), () => this.getCheckpointsHere(names));
  }

  private getCheckpointsHere(names: readonly string[]): Promise<Map<string, LogPosition | null>> {
    return this.run(async () => {
      const r = await this.pool.query<{ name: string; position: string }>(
        quick({ text: 'SELECT name, position FROM checkpoints WHERE name = ANY($1::text[])', values: [names] }),
      );
      const found = new Map(r.rows.map((row) => [row.name, row.position]));
      return new Map(names.map((n) => [n, found.get(n) ?? null]));
    });
  }

  private getCheckpointHere(name: string): Promise<LogPosition | null> {
    return this.run(async () => {
      const r = await this.pool.query<{ position: string }>(quick({ text: 'SELECT position FROM checkpoints WHERE name = $1', values: [name] }));
      return r.rows[0]?.position ?? null;
    });
  }

  async dropCollection(collection: string): Promise<void> {
    const t = table(collection);
    await this.run(async () => {
      // Two statements in one message are one transaction: the table goes with the signal's move.
      await this.pool.query(this.exempt.has(collection) ? `DROP TABLE IF EXISTS ${t}` : `DROP TABLE IF EXISTS ${t}; ${BUMP}`);
    });
    this.tables.delete(t);
    this.cache?.invalidate();
  }

  listCollections(): Promise<string[]> {
    return this.run(async () => {
      const r = await this.pool.query<{ name: string }>(
        `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'rm\\_%' ORDER BY tablename COLLATE "C"`,
      );
      return r.rows.map((row) => row.name.slice(3));
    });
  }

  /** The next read re-validates the cache (ReadCache). */
  beginRequest(): void {
    this.cache?.beginRequest();
  }

  /**
   * A pooler in transaction mode hands each statement or transaction to any server connection:
   * a name prepared on one is unknown on the next (26000) or already taken there by another
   * client (42P05). Named statements cannot work behind it: from the first refusal on, this
   * store sends every statement unnamed (and the one refused again), and says so once.
   */
  private unprepare(error: unknown) {
    if (!this.prepared && !this.epochQuery.name) return;
    this.prepared = false;
    this.epochQuery = quick({ text: EPOCH_SQL });
    this.logger?.warn(
      { code: (error as { code?: unknown }).code },
      'PostgreSQL: a prepared statement did not survive between statements (a pooler in transaction mode?); sending statements unprepared from now on. Set POSTGRES_PREPARED_STATEMENTS=false behind such a pooler (docs/operations.md, Poolers)',
    );
  }

  /** The sum of the checkpoints' versions: one round trip (see the header). */
  private askEpoch = (): Promise<number> =>
    this.run(async () => {
      // Prepared by name where allowed: every request makes this statement, and parsing and
      // planning it again each time costs the server more than running it.
      let r: pg.QueryResult<{ n: string }>;
      const query = this.epochQuery;
      try {
        r = await this.pool.query<{ n: string }>(query);
      } catch (error) {
        // A pooler in transaction mode (see unprepare): this one again unnamed, as every
        // other that was in flight with the name.
        if (!query.name || !isPreparedRefusal(error)) throw error;
        this.unprepare(error);
        r = await this.pool.query<{ n: string }>(quick({ text: EPOCH_SQL }));
      }
      return Number(r.rows[0]!.n);
    });

  private observe(cache: ReadCache): number | Promise<number> {
    return cache.observe(this.askEpoch);
  }

  /**
   * ReadStore.readEpoch: the signal under the cache's rule, so a request's resolution shares
   * the round trip its reads made (or make) for the cache; without a cache, one of its own.
   */
  readEpoch(): number | undefined | Promise<number | undefined> {
    // A request read from a standby: that standby's own signal. Its `checkpoints` rows are the
    // primary's, physically replicated, so the sum there moves with every commit it replays
    // that changes a read model, exactly as here with every commit; its values are not
    // comparable with the primary's (readSource: the access index keeps one index per standby).
    const target = this.routing?.target();
    if (target) {
      const epoch = target.readEpoch();
      if (!(epoch instanceof Promise)) return epoch;
      // Failed there: the standby is left out and this resolution reads the store through (on
      // the primary), with no index: a value of the primary's signal must not label the
      // standby's index.
      return epoch.catch((error: unknown) => {
        this.routing!.failed(target, error);
        return undefined;
      });
    }
    return this.cache ? this.observe(this.cache) : this.askEpoch();
  }

  /** ReadStore.readSource: the standby this request reads, or undefined for this store's server. */
  readSource(): object | undefined {
    return this.routing?.target() ?? undefined;
  }

  /**
   * On a standby: whether it is still one (not promoted), and how far its replay is behind
   * the WAL it has received, ms (0 when it replayed all it received: an idle primary is no lag).
   */
  standbyState(): Promise<{ inRecovery: boolean; lagMs: number }> {
    return this.run(async () => {
      const r = await this.pool.query<{ standby: boolean; lag: number | string | null }>(STANDBY_SQL);
      const row = r.rows[0]!;
      return { inRecovery: row.standby, lagMs: Math.max(0, Number(row.lag ?? 0)) };
    });
  }

  /** Calls `listener` when any process commits a checkpoint move (its own included: a re-read). */
  onCheckpointMoved(listener: () => void): () => void {
    return this.notices.on(CHECKPOINT_CHANNEL, () => listener());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.chain;
    this.closed = true;
    await this.notices.close();
    await this.pool.end();
  }
}
