/**
 * PostgreSQL event store (node-postgres): the log in one table, `events` (schema:
 * postgres-common.ts).
 *
 * **One global order that never skips.** An identity column alone does not give one: numbers
 * are taken when a transaction inserts, not when it commits. Writer A takes 7, writer B takes
 * 8 and commits first; a follower reads "after 6", gets 8, stores checkpoint 8, and A's 7,
 * committed a moment later, is behind it for ever. The remedy is Emmett's and Marten's: each
 * event carries its transaction's id (`pg_current_xact_id()`), the order is
 * (transaction_id, position), and readers see only events whose transaction id is below the
 * snapshot's xmin, the oldest transaction still running. Every transaction below xmin has
 * ended, and every transaction still to commit has an id at or above it, so nothing can
 * appear later below what a reader has passed. Example: A (xid 100) inserts position 7, B
 * (xid 101) inserts 8 and commits; while A runs, xmin is 100 and readers see neither; A
 * commits, xmin passes 101, readers see (100, 7) then (101, 8). (Both the stored id and the
 * bound add the log's offset, `log_era`, raised when a logical restore put the log on a server
 * whose counter is behind it: postgres-common.ts, migration 2.) The price: a transaction left
 * open in this database (any writer's, an idle session's) holds every follower back until it
 * ends; appends and the read store's batches are short.
 *
 * A position is the pair at a fixed width, 20 digits of transaction id then 19 of position,
 * so that string order is the log's order (the port's LogPosition).
 *
 * Appends to one stream are serialized by a transaction-scoped advisory lock on the stream's
 * hash, so the expected-revision check and the insert see the same stream (two streams with
 * the same hash only wait for each other). The unique (stream, revision) constraint stays as
 * the last guard. A batch of appends is one statement, one round trip: `collab_append`
 * (postgres-common.ts, migration 3) takes the locks, checks the revisions and inserts.
 *
 * Notifications: this process's own appends are announced when they commit and again once
 * readers can see them (an older transaction may still hold xmin back). Other processes'
 * appends arrive as notices: each appending transaction sends `pg_notify` with its last
 * position (delivered at its commit), and a store with listeners LISTENs on one connection
 * of its own (postgres-common.ts `PgListener`) and announces the position as if it were its
 * own, visibility watch included. Followers keep polling as the safety net.
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import {
  LOG_START,
  WrongExpectedRevisionError,
  type AppendResult,
  type HeldBack,
  type EventStore,
  type ExpectedRevision,
  type LogPosition,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
} from '../ports/event-store.js';
import { BugError } from '../shared/errors.js';
import { APPENDED_CHANNEL, PgListener, decodeString, encodeString, migrate, openPool, translatePgError, textArray, withConnection } from './postgres-common.js';

const TX_WIDTH = 20; // xid8 is an unsigned 64-bit integer: at most 20 digits
const POS_WIDTH = 19; // bigint: at most 19 digits

export function encodePgPosition(transactionId: string, position: string): LogPosition {
  return transactionId.padStart(TX_WIDTH, '0') + position.padStart(POS_WIDTH, '0');
}

function decodePgPosition(p: LogPosition): { tx: string; pos: string } {
  if (p.length !== TX_WIDTH + POS_WIDTH || !/^\d+$/.test(p)) throw new BugError(`not a PostgreSQL log position: ${JSON.stringify(p)}`);
  return { tx: p.slice(0, TX_WIDTH).replace(/^0+(?=\d)/, ''), pos: p.slice(TX_WIDTH).replace(/^0+(?=\d)/, '') };
}

interface Row {
  position: string;
  transaction_id: string;
  id: string;
  stream: string;
  revision: string;
  type: string;
  data: string;
  metadata: string;
}

/** heldBack counts this many at most. */
const HELD_CAP = 10_000;

const COLUMNS = 'position, transaction_id, id, stream, revision, type, data, metadata';
/** Only what every reader can see for good: transactions below the oldest one still running. */
const VISIBLE = 'transaction_id < log_visible_below()';

const toRecorded = (r: Row): RecordedEvent => ({
  id: decodeString(r.id),
  stream: decodeString(r.stream),
  revision: Number(r.revision),
  position: encodePgPosition(r.transaction_id, r.position),
  type: decodeString(r.type),
  data: JSON.parse(r.data),
  metadata: JSON.parse(r.metadata),
});

interface PendingAppend {
  stream: string;
  events: NewEvent[];
  expected: ExpectedRevision;
  resolve: (r: AppendResult) => void;
  reject: (e: unknown) => void;
}

export interface PostgresEventStoreOptions {
  logger?: { warn(obj: unknown, msg?: string): void };
  /** How soon an own append not yet visible to readers is looked at again (ms, doubling to 500). Default 5. */
  visibilityPollMs?: number;
  /** The longest one statement may run, ms (openPool); 0 or absent: the server's setting. */
  statementTimeoutMs?: number;
  /** Connections of the pool (POSTGRES_POOL_SIZE). */
  poolSize?: number;
  /** The longest a statement waits for a lock, ms (LOCK_TIMEOUT_MS); 0 or absent: the server's setting. */
  lockTimeoutMs?: number;
  /** Where to LISTEN for other processes' notices (POSTGRES_LISTEN_URL); default the store's URL. */
  listenUrl?: string;
}

export class PostgresEventStore implements EventStore {
  private readonly pool: pg.Pool;
  private readonly emitter = new EventEmitter();
  private ready: Promise<void> | null = null;
  private closed = false;
  /** The highest own append not yet announced as visible; see `watchVisibility`. */
  private unseen: LogPosition = LOG_START;
  private watching = false;
  private readonly pollMs: number;
  private queue: PendingAppend[] = [];
  private flushing = false;
  /** Other processes' append notices; opened with the first listener. */
  private readonly notices: PgListener;
  private hearing: (() => void) | null = null;
  /** Names this store's own notices, which it has announced already. */
  private readonly instance = randomUUID();

  constructor(url: string, private readonly options: PostgresEventStoreOptions = {}) {
    this.pool = openPool(url, options.logger, options.statementTimeoutMs, options.poolSize, options.lockTimeoutMs);
    this.notices = new PgListener(url, options.logger, options.listenUrl);
    this.emitter.setMaxListeners(0);
    this.pollMs = options.visibilityPollMs ?? 5;
  }

  /** The schema, migrated once per store (again after a failed attempt: the server may have been down). */
  private schema(): Promise<void> {
    if (this.closed) return Promise.reject(translatePgError(new Error('Client was closed: event store is closed'), 'event store'));
    this.ready ??= migrate(this.pool, this.options.logger).catch((error) => {
      this.ready = null;
      throw error;
    });
    return this.ready;
  }

  private async run<T>(f: () => Promise<T>): Promise<T> {
    try {
      await this.schema();
      return await f();
    } catch (error) {
      throw translatePgError(error, 'event store');
    }
  }

  append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (this.closed) return Promise.reject(translatePgError(new Error('Client was closed: event store is closed'), 'event store'));
    return new Promise((resolve, reject) => {
      this.queue.push({ stream, events, expected, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  /**
   * Group commit, one batch at a time: the appends that arrived while the previous batch was
   * being written go in one transaction. So the appends of one request (documents/add of 100
   * documents) cost one commit, and take log positions in the order they were called, as in
   * the embedded store.
   */
  private async flush() {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        try {
          await this.run(() => this.writeBatch(batch));
        } catch (error) {
          if (batch.length === 1) batch[0]!.reject(error);
          else {
            // A statement failed (a duplicate event id) and took the batch's transaction with it,
            // or the server went away: each append alone, so one bad append fails alone.
            for (const p of batch) await this.run(() => this.writeBatch([p])).catch((e) => p.reject(e));
          }
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /**
   * Writes `batch` in one transaction of one round trip; settles each append (a failed
   * revision check rejects that one only). The statement calls `collab_append` (migration 3,
   * postgres-common.ts), which does in the server what took six round trips from here: lock
   * every stream of the batch, read their revisions, check each append's expected revision,
   * insert the events in the batch's order. Alone, the statement is its own transaction: its
   * advisory locks and its notice last until its commit, as they did in BEGIN ... COMMIT.
   */
  private writeBatch(batch: PendingAppend[]): Promise<void> {
    return withConnection(this.pool, async (client) => {
      const keys = batch.map((p) => encodeString(p.stream));
      const expected = batch.map((p) => String(p.expected));
      const counts = batch.map((p) => p.events.length);
      const rows = { id: [] as string[], type: [] as string[], data: [] as string[], metadata: [] as string[] };
      // The events of one request share one metadata object: serialized once.
      let lastMeta: unknown = null;
      let lastMetaJson = '';
      for (const p of batch) {
        for (const e of p.events) {
          if (e.metadata !== lastMeta) {
            lastMeta = e.metadata;
            lastMetaJson = JSON.stringify(e.metadata);
          }
          rows.id.push(encodeString(e.id));
          rows.type.push(encodeString(e.type));
          rows.data.push(JSON.stringify(e.data));
          rows.metadata.push(lastMetaJson);
        }
      }
      // The notice names the batch's last position, known only once inserted: sent in the same
      // message, so still one round trip, and delivered at the commit as before.
      // (The position is spelled as encodePgPosition spells it.)
      const r = await client.query<{ actual: string[]; ok: boolean[]; positions: string[]; transaction_id: string | null }>(
        `SELECT actual, ok, positions, transaction_id,
                CASE WHEN cardinality(positions) > 0 THEN pg_notify($8, $9 || ' ' || lpad(transaction_id::text, ${TX_WIDTH}, '0') || lpad(positions[cardinality(positions)]::text, ${POS_WIDTH}, '0')) END
         FROM collab_append($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[])`,
        [textArray(keys), expected, counts, textArray(rows.id), textArray(rows.type), textArray(rows.data), textArray(rows.metadata), APPENDED_CHANNEL, this.instance],
      );
      const { actual, ok, positions, transaction_id: tx } = r.rows[0]!;
      let head = LOG_START;
      let from = 0;
      batch.forEach((p, i) => {
        const found = Number(actual[i]);
        if (!ok[i]) return p.reject(new WrongExpectedRevisionError(p.stream, p.expected, found));
        const count = p.events.length;
        // Nothing appended: the stream's revision and no position, as the embedded store answers.
        if (count === 0) return p.resolve({ nextRevision: found, position: LOG_START });
        const position = encodePgPosition(tx!, positions[from + count - 1]!);
        from += count;
        if (position > head) head = position;
        p.resolve({ nextRevision: found + count, position });
      });
      if (head !== LOG_START) this.announce(head);
    });
  }

  /**
   * Tells listeners at once, and again when readers can see `position` (an older transaction
   * still open keeps it out of their reads until it ends). Without the second notice a
   * follower woken by the first could read nothing and then sleep until its next poll.
   */
  private announce(position: LogPosition) {
    this.emitter.emit('appended', position);
    if (position > this.unseen) this.unseen = position;
    if (!this.watching) void this.watchVisibility();
  }

  private async watchVisibility() {
    this.watching = true;
    // Doubling up to half a second: a transaction left open elsewhere may hold xmin back for
    // long, and this must not turn into a query every few milliseconds meanwhile.
    let wait = this.pollMs;
    try {
      while (!this.closed && this.unseen !== LOG_START) {
        const target = this.unseen;
        let head: LogPosition;
        try {
          head = await this.headPosition();
        } catch {
          return; // the store is down: followers poll
        }
        if (head >= target) {
          if (this.unseen === target) this.unseen = LOG_START;
          this.emitter.emit('appended', head);
          wait = this.pollMs;
          continue;
        }
        await new Promise((r) => setTimeout(r, wait));
        wait = Math.min(500, wait * 2);
      }
    } finally {
      this.watching = false;
    }
  }

  readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    return this.run(async () => {
      const from = options.fromRevision ?? 0;
      const limit = options.maxCount !== undefined && options.maxCount >= 0 ? Math.floor(options.maxCount) : null;
      // A stream's own events are read whether or not older transactions still run: revisions
      // are dense per stream (the advisory lock), and deciders need the committed state.
      const r = await this.pool.query<Row>(
        `SELECT ${COLUMNS} FROM events WHERE stream = $1 AND revision >= $2 ORDER BY revision LIMIT $3`,
        [encodeString(stream), from, limit],
      );
      return r.rows.map(toRecorded);
    });
  }

  readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    return this.run(async () => {
      const limit = options.maxCount !== undefined && options.maxCount >= 0 ? Math.floor(options.maxCount) : null;
      let r: pg.QueryResult<Row>;
      if (!options.after) {
        r = await this.pool.query<Row>(`SELECT ${COLUMNS} FROM events WHERE ${VISIBLE} ORDER BY transaction_id, position LIMIT $1`, [limit]);
      } else {
        const { tx, pos } = decodePgPosition(options.after);
        r = await this.pool.query<Row>(
          `SELECT ${COLUMNS} FROM events
           WHERE transaction_id >= $1::xid8 AND (transaction_id, position) > ($1::xid8, $2::bigint) AND ${VISIBLE}
           ORDER BY transaction_id, position LIMIT $3`,
          [tx, pos, limit],
        );
      }
      return r.rows.map(toRecorded);
    });
  }

  headPosition(): Promise<LogPosition> {
    return this.run(async () => {
      const r = await this.pool.query<{ transaction_id: string; position: string }>(
        `SELECT transaction_id, position FROM events WHERE ${VISIBLE} ORDER BY transaction_id DESC, position DESC LIMIT 1`,
      );
      const row = r.rows[0];
      return row ? encodePgPosition(row.transaction_id, row.position) : LOG_START;
    });
  }

  /**
   * EventStore.heldBack: the committed events at or above the visibility bound, and the oldest
   * transaction holding an id, which holds the bound (in any database of the cluster: the
   * bound is the cluster's). A role without pg_read_all_stats sees other roles' sessions
   * without their transaction ids: then the blocker is not named (docs/operations.md).
   */
  heldBack(): Promise<HeldBack | null> {
    return this.run(async () => {
      const r = await this.pool.query<{ n: string; oldest: string | null }>(
        `SELECT count(*) AS n, min((metadata::json->>'time')::bigint)::text AS oldest
         FROM (SELECT metadata FROM events WHERE transaction_id >= log_visible_below() LIMIT ${HELD_CAP + 1}) AS held`,
      );
      const n = Number(r.rows[0]!.n);
      if (n === 0) return null;
      const b = await this.pool.query<{ pid: number; application: string; state: string; database: string; open: number }>(
        `SELECT pid, coalesce(application_name, '') AS application, coalesce(state, '') AS state, coalesce(datname, '') AS database,
                coalesce(extract(epoch FROM now() - xact_start), 0)::float8 AS open
         FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
         ORDER BY age(backend_xid) DESC LIMIT 1`,
      );
      const row = b.rows[0];
      return {
        events: Math.min(n, HELD_CAP),
        capped: n > HELD_CAP,
        oldestTime: Number(r.rows[0]!.oldest ?? 0),
        blocker: row ? { pid: row.pid, application: row.application, state: row.state, database: row.database, openSeconds: Math.round(row.open) } : null,
      };
    });
  }

  onAppended(listener: (position: LogPosition) => void): () => void {
    this.hearing ??= this.notices.on(APPENDED_CHANNEL, (payload) => {
      const [from, position] = payload.split(' ');
      if (from === this.instance) return;
      // An empty payload: the notice connection is back after an outage; everyone looks once.
      if (position && /^\d{39}$/.test(position)) this.announce(position);
      else this.emitter.emit('appended', LOG_START);
    });
    this.emitter.on('appended', listener);
    return () => this.emitter.off('appended', listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.notices.close();
    await this.pool.end();
  }
}
