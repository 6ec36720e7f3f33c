/**
 * Embedded read store: SQLite tables of JSON documents, one table per collection, equality
 * filters on expression indexes (`json_extract(doc, '$.field')`), keyset paging on
 * (sort field, id). Writes go through one connection in serialized transactions; queries
 * outside transactions use a second connection, so they read the last committed state and
 * never see a projection's half-applied batch.
 *
 * `synchronous = NORMAL`: read models can always be rebuilt from the log, and each
 * projection's checkpoint commits in the same transaction as its documents, so a lost tail
 * after a power cut is simply replayed.
 */
import Database from 'better-sqlite3';
import type { LogPosition } from '../ports/event-store.js';
import {
  CheckpointConflictError,
  type Doc,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type ReadStore,
  type ReadTx,
  type ReadView,
  type Scalar,
  type WriteOp,
} from '../ports/read-store.js';
import { BugError } from '../errors.js';

const NAME = /^[a-z][a-z0-9_]{0,62}$/;
const FIELD = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

function table(collection: string): string {
  if (!NAME.test(collection)) throw new BugError(`invalid collection name ${JSON.stringify(collection)}`);
  return `rm_${collection}`;
}

/** Field names come from code, never from requests; still checked so SQL stays closed. */
function jsonPath(field: string): string {
  if (!FIELD.test(field)) throw new BugError(`invalid field name ${JSON.stringify(field)}`);
  return `$.${field}`;
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

  protected stmt(sql: string): Database.Statement {
    let s = this.stmtCache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmtCache.set(sql, s);
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
    const row = this.stmt(`SELECT doc FROM ${t} WHERE id = ?`).get(id) as { doc: string } | undefined;
    return row ? (JSON.parse(row.doc) as T) : null;
  }

  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const t = this.ensureTable(collection);
    if (ids.length === 0 || !t) return [];
    const byId = new Map<string, T>();
    // json_each binds the whole id list as one parameter: one statement for any count.
    const rows = this.stmt(`SELECT id, doc FROM ${t} WHERE id IN (SELECT value FROM json_each(?))`).all(
      JSON.stringify(ids),
    ) as Array<{ id: string; doc: string }>;
    for (const r of rows) byId.set(r.id, JSON.parse(r.doc) as T);
    const out: T[] = [];
    for (const id of ids) {
      const d = byId.get(id);
      if (d) out.push(d);
    }
    return out;
  }

  async find<T extends Doc = Doc>(collection: string, filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const t = this.ensureTable(collection);
    if (!t) return [];
    const where = whereOf(filter);
    const sortExpr = options.sort ? extract(options.sort) : 'id';
    const params = [...where.params];
    let sql = `SELECT doc FROM ${t} WHERE ${where.sql}`;
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
    const rows = this.stmt(sql).all(...params) as Array<{ doc: string }>;
    return rows.map((r) => JSON.parse(r.doc) as T);
  }

  async count(collection: string, filter: Filter): Promise<number> {
    const t = this.ensureTable(collection);
    if (!t) return 0;
    const where = whereOf(filter);
    const row = this.stmt(`SELECT COUNT(*) AS n FROM ${t} WHERE ${where.sql}`).get(...where.params) as { n: number };
    return row.n;
  }
}

class SqliteTx extends SqliteView implements ReadTx {
  private table(collection: string): string {
    const t = this.ensureTable(collection);
    if (!t) throw new BugError('the writer view always creates its tables');
    return t;
  }

  async upsert(collection: string, doc: Doc): Promise<void> {
    const t = this.table(collection);
    this.stmt(`INSERT INTO ${t} (id, doc) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET doc = excluded.doc`).run(
      doc._id,
      JSON.stringify(doc),
    );
  }

  async patch(collection: string, id: string, set: Record<string, unknown> = {}, unset: string[] = []): Promise<boolean> {
    const t = this.table(collection);
    const row = this.stmt(`SELECT doc FROM ${t} WHERE id = ?`).get(id) as { doc: string } | undefined;
    if (!row) return false;
    const doc = JSON.parse(row.doc) as Record<string, unknown>;
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

  async bulk(ops: readonly WriteOp[]): Promise<void> {
    for (const op of ops) {
      switch (op.op) {
        case 'upsert':
          await this.upsert(op.collection, op.doc);
          break;
        case 'patch':
          await this.patch(op.collection, op.id, op.set, op.unset);
          break;
        case 'delete':
          await this.delete(op.collection, op.id);
          break;
        case 'deleteMany':
          await this.deleteMany(op.collection, op.filter);
          break;
        default: {
          const never: never = op;
          throw new BugError(`unknown write op ${JSON.stringify(never)}`);
        }
      }
    }
  }

  async setCheckpoint(name: string, position: LogPosition, expected: LogPosition | null): Promise<void> {
    const row = this.stmt('SELECT position FROM checkpoints WHERE name = ?').get(name) as { position: string } | undefined;
    const actual = row ? row.position : null;
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

export class SqliteReadStore extends SqliteView implements ReadStore {
  private readonly writer: Database.Database;
  private readonly tx: SqliteTx;
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(file: string) {
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

  transaction<T>(fn: (tx: ReadTx) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      if (this.closed) throw new Error('read store is closed');
      this.writer.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.tx);
        this.writer.exec('COMMIT');
        return result;
      } catch (error) {
        if (this.writer.inTransaction) this.writer.exec('ROLLBACK');
        // Tables created by the rolled-back transaction are gone again.
        this.tx.forgetTables();
        throw error;
      }
    };
    // Serialized: the writer connection holds one transaction at a time.
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }

  async getCheckpoint(name: string): Promise<LogPosition | null> {
    const row = this.stmt('SELECT position FROM checkpoints WHERE name = ?').get(name) as { position: string } | undefined;
    return row ? row.position : null;
  }

  async dropCollection(collection: string): Promise<void> {
    const t = table(collection);
    await this.transaction(async () => {
      this.writer.exec(`DROP TABLE IF EXISTS ${t}`);
    });
    this.forgetTables();
    this.tx.forgetTables();
  }

  async listCollections(): Promise<string[]> {
    const rows = this.writer
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rm\\_%' ESCAPE '\\' ORDER BY name")
      .all() as Array<{ name: string }>;
    return rows.map((r) => r.name.slice(3));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.chain;
    this.closed = true;
    if (this.db !== this.writer) this.db.close();
    this.writer.close();
  }
}
