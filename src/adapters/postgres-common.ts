/**
 * What the PostgreSQL event store and read store share: the connection pool, the versioned
 * schema and its migration, the translation of connection errors into 503, and the encoding
 * of strings PostgreSQL cannot hold.
 *
 * One database holds both ports (POSTGRES_URL): the log in `events`, the read models in one
 * table per collection (`rm_<name>`), checkpoints in `checkpoints`, the schema's version in
 * `schema_version`.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { clientClassFor, firstUrl } from './postgres-hosts.js';
import { isStatementTimeout, LockTimeoutError, StatementTimeoutError, StoreUnavailableError } from './unavailable.js';

/**
 * The schema, one migration per version, applied in order and recorded in `schema_version`.
 * A migration is never edited once released: a change is a new entry.
 */
const MIGRATIONS: readonly string[] = [
  // 1: the log and the checkpoints. `transaction_id` is the appending transaction's id: readers
  // order by (transaction_id, position) and read only below the oldest transaction still
  // running (see postgres-event-store.ts), so no event can ever commit behind a reader.
  `CREATE TABLE events (
     position       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     transaction_id xid8   NOT NULL DEFAULT pg_current_xact_id(),
     id             text   NOT NULL UNIQUE,
     stream         text   COLLATE "C" NOT NULL,
     revision       bigint NOT NULL,
     type           text   NOT NULL,
     data           text   NOT NULL,
     metadata       text   NOT NULL,
     UNIQUE (stream, revision)
   );
   CREATE INDEX events_order ON events (transaction_id, position);
   CREATE TABLE checkpoints (
     name     text   COLLATE "C" PRIMARY KEY,
     position text   COLLATE "C" NOT NULL,
     version  bigint NOT NULL DEFAULT 1
   );`,
  // 2: the log's order survives a logical restore onto another server (issue 37). A dump
  // restored elsewhere keeps its events' transaction ids, while the new server's counter starts
  // wherever that server stands, maybe far below: every later append would sort before the
  // restored log, behind every reader's checkpoint, and never be read. So the log counts
  // transaction ids from an offset (`log_era`), which migrate() raises when it finds the
  // counter behind the log (raiseLogEra); `events.transaction_id` and the visibility bound both
  // add it, so the order and the "below the oldest running transaction" rule hold as before.
  // Example: the dump ends at 20,270 and the new server's next id is 911: the offset becomes
  // 19,360 + margin, and the next append is numbered above 20,270.
  `CREATE TABLE log_era (
     one        boolean PRIMARY KEY DEFAULT true CHECK (one),
     xid_offset numeric NOT NULL DEFAULT 0 CHECK (xid_offset >= 0)
   );
   INSERT INTO log_era DEFAULT VALUES;
   CREATE FUNCTION log_xact_id() RETURNS xid8 LANGUAGE sql VOLATILE
     AS $$ SELECT (pg_current_xact_id()::text::numeric + (SELECT xid_offset FROM log_era))::text::xid8 $$;
   CREATE FUNCTION log_visible_below() RETURNS xid8 LANGUAGE sql STABLE
     AS $$ SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::numeric + (SELECT xid_offset FROM log_era))::text::xid8 $$;
   ALTER TABLE events ALTER COLUMN transaction_id SET DEFAULT log_xact_id();`,
  // 3: two writes that took several round trips each, as functions called in one statement
  // (issue 35). `collab_append` is the event store's whole append of a batch
  // (postgres-event-store.ts): it takes the streams' advisory locks, reads their revisions
  // after the locks are held (plpgsql takes a new snapshot per statement under READ
  // COMMITTED, so a concurrent append to the same stream that committed while this one waited
  // is seen), checks each append's expected revision in order (a failed one writes nothing;
  // the later appends of the batch to its stream see the revision it left), and inserts the
  // events in their order. `collab_move_checkpoints` is the read store's compare-and-set of
  // every checkpoint a transaction moves, sent with its COMMIT (postgres-read-store.ts): a
  // mismatch raises CLCP1 with the checkpoint, the expected and the stored position.
  `CREATE FUNCTION collab_append(
     p_streams text[], p_expected text[], p_counts integer[],
     p_ids text[], p_types text[], p_data text[], p_metadata text[]
   ) RETURNS TABLE (actual bigint[], ok boolean[], positions bigint[], transaction_id xid8)
   LANGUAGE plpgsql AS $fn$
   DECLARE
     last    jsonb;
     a       bigint;
     e       text;
     good    boolean;
     off     integer := 0;
     k       integer[] := '{}';
     rev     bigint[] := '{}';
     strm    text[] := '{}';
   BEGIN
     actual := '{}';
     ok := '{}';
     PERFORM pg_advisory_xact_lock(h)
       FROM (SELECT DISTINCT hashtextextended(s, 0) AS h FROM unnest(p_streams) AS s ORDER BY 1) AS q;
     SELECT coalesce(jsonb_object_agg(m.stream, m.r), '{}'::jsonb) INTO last
       FROM (SELECT ev.stream, max(ev.revision) AS r FROM events ev WHERE ev.stream = ANY(p_streams) GROUP BY ev.stream) AS m;
     FOR i IN 1 .. coalesce(array_length(p_streams, 1), 0) LOOP
       a := coalesce((last ->> p_streams[i])::bigint, -1);
       e := p_expected[i];
       good := e = 'any' OR (e = 'no_stream' AND a = -1) OR (e = 'stream_exists' AND a >= 0)
               OR (e ~ '^-?[0-9]+$' AND e::numeric = a);
       actual := actual || a;
       ok := ok || good;
       IF good THEN
         FOR j IN 1 .. p_counts[i] LOOP
           k := k || (off + j);
           rev := rev || (a + j);
           strm := strm || p_streams[i];
         END LOOP;
         last := jsonb_set(last, ARRAY[p_streams[i]], to_jsonb(a + p_counts[i]));
       END IF;
       off := off + p_counts[i];
     END LOOP;
     WITH ins AS (
       INSERT INTO events (id, stream, revision, type, data, metadata)
       SELECT p_ids[u.k], u.s, u.r, p_types[u.k], p_data[u.k], p_metadata[u.k]
       FROM unnest(k, strm, rev) WITH ORDINALITY AS u(k, s, r, n)
       ORDER BY u.n
       RETURNING events.position, events.transaction_id
     )
     SELECT coalesce(array_agg(ins.position ORDER BY ins.position), '{}'), min(ins.transaction_id::text)::xid8
       INTO positions, transaction_id FROM ins;
     RETURN NEXT;
   END
   $fn$;
   CREATE FUNCTION collab_move_checkpoints(p_names text[], p_positions text[], p_expected text[]) RETURNS void
   LANGUAGE plpgsql AS $fn$
   DECLARE
     n integer;
     stored text;
   BEGIN
     FOR i IN 1 .. coalesce(array_length(p_names, 1), 0) LOOP
       IF p_expected[i] IS NULL THEN
         INSERT INTO checkpoints (name, position) VALUES (p_names[i], p_positions[i]) ON CONFLICT (name) DO NOTHING;
       ELSE
         UPDATE checkpoints SET position = p_positions[i], version = version + 1 WHERE name = p_names[i] AND position = p_expected[i];
       END IF;
       GET DIAGNOSTICS n = ROW_COUNT;
       IF n <> 1 THEN
         SELECT c.position INTO stored FROM checkpoints c WHERE c.name = p_names[i];
         RAISE EXCEPTION USING ERRCODE = 'CLCP1', MESSAGE = 'checkpoint conflict',
           DETAIL = json_build_object('name', p_names[i], 'expected', p_expected[i], 'actual', stored)::text;
       END IF;
     END LOOP;
   END
   $fn$;`,
  // 4: `collab_append` at a cost per event that no longer grows with the batch (issue 35). The
  // function of migration 3 spent most of a batch's time in its INSERT's select list: each
  // row evaluated the `transaction_id` default (`log_xact_id()`, an SQL function with a
  // subquery, run once per row) and subscripted four parameter arrays (`p_data[k]` walks the
  // array from its start), and each accepted stream copied the whole revisions map
  // (`jsonb_set`). Now the transaction id is read once, the event arrays are unnested side
  // by side with the stream and revision each event gets (NULL for a refused append), and
  // each stream's running revision sits in an array slot, at the index of its first
  // appearance in the batch. The checks and their order are those of migration 3: each
  // append is checked against the revision the batch's earlier appends to its stream left.
  `CREATE OR REPLACE FUNCTION collab_append(
     p_streams text[], p_expected text[], p_counts integer[],
     p_ids text[], p_types text[], p_data text[], p_metadata text[]
   ) RETURNS TABLE (actual bigint[], ok boolean[], positions bigint[], transaction_id xid8)
   LANGUAGE plpgsql AS $fn$
   DECLARE
     cur      bigint[];
     first    integer[];
     f        integer;
     a        bigint;
     e        text;
     good     boolean;
     strm_all text[] := '{}';
     rev_all  bigint[] := '{}';
     v_tx     xid8;
   BEGIN
     actual := '{}';
     ok := '{}';
     PERFORM pg_advisory_xact_lock(h)
       FROM (SELECT DISTINCT hashtextextended(s, 0) AS h FROM unnest(p_streams) AS s ORDER BY 1) AS q;
     SELECT array_agg(coalesce(m.r, -1) ORDER BY u.n), array_agg(u.f ORDER BY u.n) INTO cur, first
       FROM (SELECT x.s, x.n, min(x.n) OVER (PARTITION BY x.s) AS f FROM unnest(p_streams) WITH ORDINALITY AS x(s, n)) AS u
       LEFT JOIN LATERAL (SELECT max(ev.revision) AS r FROM events ev WHERE ev.stream = u.s) AS m ON true;
     FOR i IN 1 .. coalesce(array_length(p_streams, 1), 0) LOOP
       f := first[i];
       a := cur[f];
       e := p_expected[i];
       good := e = 'any' OR (e = 'no_stream' AND a = -1) OR (e = 'stream_exists' AND a >= 0)
               OR (e ~ '^-?[0-9]+$' AND e::numeric = a);
       actual := actual || a;
       ok := ok || good;
       IF good THEN
         cur[f] := a + p_counts[i];
       END IF;
       FOR j IN 1 .. p_counts[i] LOOP
         strm_all := strm_all || CASE WHEN good THEN p_streams[i] END;
         rev_all := rev_all || CASE WHEN good THEN a + j END;
       END LOOP;
     END LOOP;
     v_tx := log_xact_id();
     WITH ins AS (
       INSERT INTO events (transaction_id, id, stream, revision, type, data, metadata)
       SELECT v_tx, ev.i, ev.s, ev.r, ev.t, ev.d, ev.m
       FROM unnest(p_ids, p_types, p_data, p_metadata, strm_all, rev_all) WITH ORDINALITY AS ev(i, t, d, m, s, r, n)
       WHERE ev.s IS NOT NULL
       ORDER BY ev.n
       RETURNING events.position, events.transaction_id
     )
     SELECT coalesce(array_agg(ins.position ORDER BY ins.position), '{}'), min(ins.transaction_id::text)::xid8
       INTO positions, transaction_id FROM ins;
     RETURN NEXT;
   END
   $fn$;`,
];

/**
 * Transaction ids left between the restored log's last one and the first the new server gives,
 * when the offset is raised: room for the appends of processes that started before (none should).
 */
const ERA_MARGIN = 1_000_000;

/**
 * Raises the log's offset when the server's transaction counter (plus the offset) is behind the
 * log's last transaction id: the database was restored from a logical dump onto another server
 * (see migration 2). Runs at every start under the migration lock, before this process appends;
 * any process appending to this database ran it first. Returns the raise, or 0.
 */
async function raiseLogEra(client: pg.ClientBase): Promise<bigint> {
  const r = await client.query<{ top: string | null; now: string; off: string }>(
    `SELECT (SELECT e.transaction_id::text AS t FROM events e ORDER BY e.transaction_id DESC LIMIT 1) AS top,
            pg_current_xact_id()::text AS now,
            (SELECT xid_offset::text FROM log_era) AS off`,
  );
  const row = r.rows[0]!;
  if (row.top === null) return 0n;
  const top = BigInt(row.top);
  const next = BigInt(row.now) + BigInt(row.off);
  if (next > top) return 0n;
  const raise = top - next + BigInt(ERA_MARGIN);
  await client.query('UPDATE log_era SET xid_offset = xid_offset + $1::numeric', [raise.toString()]);
  return raise;
}

/** The advisory lock every process takes around migration (an arbitrary constant: "collab" in ASCII). */
const MIGRATION_LOCK = 0x636f6c6c6162;

/**
 * Brings the schema to the latest version. Several processes starting at once on a fresh
 * database each take the same transaction-scoped advisory lock first: one migrates, the others
 * wait for its commit and then find nothing to do. A migration fails as a whole (DDL is
 * transactional here): a half-migrated schema is never left behind.
 */
export async function migrate(pool: pg.Pool, logger?: { warn(obj: unknown, msg?: string): void }): Promise<void> {
  await withConnection(pool, (client) => unboundedAnswers(client, async () => {
    await client.query('BEGIN');
    // A migration over a large table, and the wait for another process's, is not a request's work: unbounded.
    await client.query('SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    // A split runtime role (scripts/postgres-role.sh sets collab.role on it) never makes the
    // log's tables: made by it, they would be its own, and it could change the log.
    const split = await client.query<{ runtime: boolean; exists: boolean }>(
      "SELECT current_setting('collab.role', true) = 'runtime' AS runtime, to_regclass('schema_version') IS NOT NULL AS exists",
    );
    const { runtime, exists } = split.rows[0]!;
    if (!runtime) await client.query('CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const r = runtime && !exists ? { rows: [{ v: 0 }] } : await client.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_version');
    const current = r.rows[0]?.v ?? 0;
    if (runtime && current < MIGRATIONS.length) {
      throw new Error(`the PostgreSQL schema is at version ${current} and this release needs ${MIGRATIONS.length}: run \`collab migrate\` as the schema's owner first (this is the runtime role; docs/operations.md, Roles)`);
    }
    if (current > MIGRATIONS.length) {
      throw new Error(
        `the PostgreSQL schema is at version ${current}, newer than this release knows (${MIGRATIONS.length}): run the newer release, or restore a backup`,
      );
    }
    for (let v = current + 1; v <= MIGRATIONS.length; v++) {
      try {
        await client.query(MIGRATIONS[v - 1]!);
      } catch (error) {
        // A runtime role that does not own the log's tables (split roles) cannot migrate them.
        if ((error as { code?: unknown }).code === '42501') {
          throw new Error(`the PostgreSQL schema is at version ${current} and this release needs ${MIGRATIONS.length}, which this role may not apply: run \`collab migrate\` as the schema's owner first (docs/operations.md, Roles)`);
        }
        throw error;
      }
      await client.query('INSERT INTO schema_version (version) VALUES ($1)', [v]);
    }
    const raised = await raiseLogEra(client);
    await client.query('COMMIT');
    if (raised > 0n) {
      logger?.warn(
        { raisedBy: raised.toString() },
        "PostgreSQL: this server's transaction counter was behind the log (a logical restore onto another server?); the log's numbering now continues above it (docs/operations.md, Backup and restore)",
      );
    }
  }));
}

const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Split roles (docs/operations.md, Roles): what the running service's role may do with the
 * tables `migrate` made, granted by their owner (`collab migrate --runtime-role R`). The log
 * is read and appended to, never changed: no UPDATE, DELETE or TRUNCATE of `events`, and as
 * it does not own the table it can neither alter nor drop it, nor its triggers. Read models
 * are its own (it creates them in the schema).
 */
export async function grantRuntimeRole(pool: pg.Pool, role: string): Promise<void> {
  if (!ROLE_NAME.test(role)) throw new Error(`--runtime-role ${JSON.stringify(role)}: a role name is lower-case letters, digits and _`);
  await withConnection(pool, async (client) => {
    await client.query('BEGIN');
    await client.query(`GRANT USAGE, CREATE ON SCHEMA ${await currentSchema(client)} TO ${role}`);
    await client.query(`GRANT SELECT, INSERT ON events TO ${role}`);
    await client.query(`REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON events FROM ${role}`);
    await client.query(`GRANT SELECT, INSERT, UPDATE ON checkpoints TO ${role}`);
    await client.query(`GRANT SELECT ON schema_version TO ${role}`);
    await client.query(`GRANT SELECT, UPDATE ON log_era TO ${role}`);
    await client.query('COMMIT');
  });
}

async function currentSchema(client: pg.ClientBase): Promise<string> {
  const r = await client.query<{ s: string }>('SELECT quote_ident(current_schema()) AS s');
  return r.rows[0]!.s;
}

/** See sessionSettings; our transactions never wait on their client this long. */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 5000;

/**
 * How much longer than the statement timeout the process waits for a statement's answer before
 * it gives the connection up. The server's statement_timeout bounds the server's work, not the
 * wait: a statement sent as the host's link goes down is retransmitted by the kernel with
 * exponential backoff (200 ms, 400 ms, ... up to two minutes between tries), so once the link is
 * back the connection may stay silent for as long again as the cut lasted. Example: cut for 26 s
 * with a query in flight since its start, the next try leaves at 51 s, 25 s after the link came
 * back, and every request on that connection waits with it (test/postgres.stall.test.ts; the
 * several-hosts suite's "api1 to acknowledge writes again once its link is back"). Nothing the
 * server does takes longer than its own timeout, so an answer this late is not coming.
 */
const ANSWER_SLACK_MS = 5000;

/**
 * The answer bound of the few statements every other wait of a process hangs on, each an
 * indexed lookup of one or a few rows: the change signal all concurrent requests share, and
 * the checkpoint reads of the follower every read-your-writes wait depends on. A link cut
 * between the server's answer and its arrival leaves the connection waiting with nothing to
 * retransmit (the server's kernel gives its answer up after tcp_user_timeout, silently): only
 * the client's own bound ends that wait, and STATEMENT_TIMEOUT_MS plus ANSWER_SLACK_MS would
 * hold every write of the process unanswered for up to half a minute after the link is back.
 */
const QUICK_ANSWER_MS = 5000;

/** `q` answered within QUICK_ANSWER_MS (node-postgres reads a query's own `query_timeout`; its types omit it). */
export function quick<V extends unknown[]>(q: pg.QueryConfig<V>): pg.QueryConfig<V> {
  return Object.assign(q, { query_timeout: QUICK_ANSWER_MS });
}

/** node-postgres's error for a query past the client's `query_timeout`. */
const ANSWER_TIMEOUT_TEXT = 'Query read timeout';

/**
 * Statements of `client` wait for their answer without the pool's bound until `f` ends: a
 * migration or an index build whose statement_timeout is 0 (SET LOCAL) may legitimately run
 * for minutes. node-postgres reads the bound from the client's connection parameters at each
 * query.
 */
export async function unboundedAnswers<T>(client: pg.ClientBase, f: () => Promise<T>): Promise<T> {
  const params = (client as unknown as { connectionParameters?: { query_timeout?: number } }).connectionParameters;
  const saved = params?.query_timeout;
  if (params) params.query_timeout = 0;
  try {
    return await f();
  } finally {
    if (params) params.query_timeout = saved;
  }
}

/** Connections of one pool (POSTGRES_POOL_SIZE); a process has two, and two notice connections. */
const DEFAULT_POOL_SIZE = 10;

/**
 * The `SET`s every session of the service starts with (openPool, PgListener), but those the
 * URL's own `options` already names (an operator's choice wins):
 * - idle_in_transaction_session_timeout: the server ends a session that leaves its transaction
 *   idle this long. A process cut off from the database mid-transaction (its host's link down)
 *   cannot end it, and nothing tells the server: the transaction would hold its row locks and
 *   the snapshot xmin for as long as TCP waits (hours), and every other worker's checkpoint and
 *   every follower's read behind it (postgres-event-store.ts). Example: the lease holder cut
 *   after its batch's checkpoint UPDATE; the worker that takes the lease over blocks on that
 *   row until this ends it. Shorter than the default lease time, so a takeover finds it gone
 *   (test/postgres.hosts).
 * - tcp_user_timeout: the same cut caught while the server is still sending to the process (a
 *   result, a notification) leaves the session active, not idle: the timeout above never
 *   starts and the transaction stays open as long as TCP retransmits. The server's kernel then
 *   gives up on data left unacknowledged this long, which ends that session too.
 */
function sessionSettings(url: string): string[] {
  let options = '';
  try {
    options = new URL(url).searchParams.get('options') ?? '';
  } catch {
    // Not a URL pg's parser takes either: it reports that when it connects.
  }
  const out: string[] = [];
  if (!options.includes('idle_in_transaction_session_timeout')) out.push(`SET idle_in_transaction_session_timeout = ${IDLE_IN_TRANSACTION_TIMEOUT_MS}`);
  if (!options.includes('tcp_user_timeout')) out.push(`SET tcp_user_timeout = ${IDLE_IN_TRANSACTION_TIMEOUT_MS}`);
  return out;
}

/**
 * A pool on `url`. Unless the URL says otherwise, a request waits at most 5 s for a connection
 * (then 503), and a statement at most `statementTimeoutMs` (STATEMENT_TIMEOUT_MS). Errors of
 * idle connections (the server restarting) are logged, not thrown: unhandled, they would end
 * the process.
 *
 * Session settings are `SET` in one message as each connection opens, never startup
 * parameters: a connection pooler such as pgbouncer refuses startup parameters it does not know
 * (docs/operations.md, Poolers). The pool's onConnect hook sends them before the new connection
 * is handed out, so they are in force from the first statement of whoever takes it. (Behind a
 * pooler in transaction mode a session setting reaches only the server connection that ran
 * it: there the role's own settings are what holds, which scripts/postgres-role.sh sets.)
 */
export function openPool(url: string, logger?: { warn(obj: unknown, msg?: string): void }, statementTimeoutMs = 0, size = DEFAULT_POOL_SIZE, lockTimeoutMs = 0): pg.Pool {
  const hasTimeout = /[?&]connect_timeout=/i.test(url);
  const answerTimeoutMs = statementTimeoutMs > 0 ? statementTimeoutMs + ANSWER_SLACK_MS : 0;
  const settings = sessionSettings(url);
  if (statementTimeoutMs > 0) settings.push(`SET statement_timeout = ${Math.floor(statementTimeoutMs)}`);
  // A row or table lock another session holds (an operator's SELECT ... FOR UPDATE, a long
  // migration) is waited for this long, then the statement fails with 55P03 (LockTimeoutError:
  // 503 for a request; for the projection runner a store fault, retried and logged, never a
  // reason to park an event).
  if (lockTimeoutMs > 0) settings.push(`SET lock_timeout = ${Math.floor(lockTimeoutMs)}`);
  const pool = new pg.Pool({
    // Several hosts (failover by URL): each new connection goes to the primary (postgres-hosts.ts).
    connectionString: firstUrl(url),
    Client: clientClassFor(url),
    ...(hasTimeout ? {} : { connectionTimeoutMillis: 5000 }),
    max: size,
    idleTimeoutMillis: 30_000,
    // The client's own bound on waiting for an answer (see ANSWER_SLACK_MS): node-postgres
    // fails the query ('Query read timeout'), and the connection is discarded, never reused.
    ...(answerTimeoutMs > 0 ? { query_timeout: answerTimeoutMs } : {}),
    // A process's connections are named in pg_stat_activity.
    application_name: 'collab',
    // Awaited before the pool hands the new connection out: a SET that fails fails the checkout.
    onConnect: async (client: pg.ClientBase) => void (await client.query(settings.join('; '))),
  });
  // The error alone: the client it came with holds the whole connection state.
  pool.on('error', (error) => logger?.warn({ err: { message: error.message, code: (error as { code?: string }).code } }, 'PostgreSQL: an idle connection failed; the pool opens another'));
  return pool;
}

/**
 * A connection taken from the pool for several statements. While it is out, the pool no
 * longer listens for its errors, and one that arrives between two statements (the server
 * shutting down: 57P01 while a transaction's JavaScript runs) would be an unhandled 'error'
 * event, which ends the process. `f` runs with a listener that marks the connection broken;
 * a broken connection is destroyed on release instead of going back to the pool.
 */
export async function withConnection<T>(pool: pg.Pool, f: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on('error', onError);
  try {
    return await f(client);
  } catch (error) {
    // A statement whose answer never came still owns the connection: the late answer would be
    // read as the next statement's. Discarded at once, never rolled back on (nor reused).
    if ((error as { message?: unknown } | null)?.message === ANSWER_TIMEOUT_TEXT) broken = true;
    if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/**
 * SQLSTATE classes and codes that say the server, not the request, is the problem: connection
 * exceptions (08), an operator or crash shutdown or a server still starting (57P01-57P03),
 * too many connections (53300), out of memory or disk (53100, 53200), a server in recovery
 * refusing writes (25006 read-only transaction).
 */
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '53300', '53100', '53200', '25006']);
/** The client's own errors (no SQLSTATE) for a connection lost, refused or timed out. */
const CONNECTION_TEXT = /Query read timeout|Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|Connection refused|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|the database system is|Client was closed|Cannot use a pool after calling end/i;

function isUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (code.startsWith('08') || UNAVAILABLE_CODES.has(code)) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ENOENT'].includes(code)) return true;
  return typeof e.message === 'string' && CONNECTION_TEXT.test(e.message);
}

export function translatePgError(error: unknown, store: 'event store' | 'read store'): unknown {
  if (isStatementTimeout(error)) return new StatementTimeoutError(store);
  if ((error as { code?: unknown } | null)?.code === '55P03') return new LockTimeoutError(store, error);
  return isUnavailable(error) ? new StoreUnavailableError(store, error) : error;
}

/** A named statement refused because the server connection is not the one it was prepared on (a pooler in transaction mode). */
export const isPreparedRefusal = (error: unknown) => {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '26000' || code === '42P05';
};

/** Serialization failure and deadlock: the transaction may succeed when run again. */
export const isRetryable = (error: unknown) => {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01';
};

// PostgreSQL text cannot hold U+0000, and its JSON operators reject a lone surrogate anywhere
// in a document (JavaScript strings may hold both). Such strings are stored encoded, with
// U+0001 as the escape: U+0000 -> U+0001 '0', U+0001 -> U+0001 '1', a lone surrogate ->
// U+0001 '2' and its four hex digits. The encoding is injective (equality filters compare
// encoded values on both sides) and keeps the code-point order of strings that hold no lone
// surrogate: U+0000 and U+0001 still sort below every other character. Example: "a\u0000b"
// is stored as "a\u00010b"; "a\u0001" as "a\u00011".
const NEEDS_ENCODING = /[\u0000\u0001]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const TO_ENCODE = /[\u0000\u0001]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** The same test on JSON.stringify's output, where these characters appear as \u escapes. */
const JSON_NEEDS_ENCODING = /\\u000[01]|\\ud[89a-f]/i;

export function encodeString(s: string): string {
  if (!NEEDS_ENCODING.test(s)) return s;
  return s.replace(TO_ENCODE, (c) => {
    if (c === '\u0000') return '\u00010';
    if (c === '\u0001') return '\u00011';
    return `\u00012${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

const ARRAY_QUOTED = /["\\]/;

/**
 * A `text[]` literal of `values` (NULL for null), for a parameter cast `::text[]`. node-postgres
 * makes one from a JavaScript array by running two regular-expression replaces over every
 * element; here an element without a quote or backslash (ids, index column texts: nearly all)
 * is only tested once. Example: ['a', null, 'b"c'] -> {"a",NULL,"b\"c"}.
 */
export function textArray(values: ReadonlyArray<string | null>): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (i > 0) out += ',';
    out += v === null ? 'NULL' : `"${ARRAY_QUOTED.test(v) ? v.replace(/["\\]/g, '\\$&') : v}"`;
  }
  return out + '}';
}

export function decodeString(s: string): string {
  if (!s.includes('\u0001')) return s;
  return s.replace(/\u0001(0|1|2[0-9a-f]{4})/g, (_, m: string) =>
    m === '0' ? '\u0000' : m === '1' ? '\u0001' : String.fromCharCode(parseInt(m.slice(1), 16)),
  );
}

function mapStrings(value: unknown, f: (s: string) => string): unknown {
  if (typeof value === 'string') return f(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue;
      out[f(k)] = mapStrings(v, f);
    }
    return out;
  }
  return value;
}

/** A document's JSON text as stored: JSON.stringify's, with its strings and keys encoded where needed. */
export function encodeJson(value: unknown): string {
  const text = JSON.stringify(value);
  if (!JSON_NEEDS_ENCODING.test(text)) return text;
  return JSON.stringify(mapStrings(JSON.parse(text), encodeString));
}

/** A stored document's JSON text, parsed and decoded. */
export function decodeJson<T>(text: string): T {
  const value = JSON.parse(text) as T;
  return text.includes('\\u0001') ? (mapStrings(value, decodeString) as T) : value;
}

/** The channels of notices between processes on one database (pg_notify, delivered at commit). */
export const APPENDED_CHANNEL = 'collab_appended';
export const CHECKPOINT_CHANNEL = 'collab_checkpoint';
/** PgListener's check that notices arrive at all. */
const PROBE_CHANNEL = 'collab_probe';
const PROBE_WAIT_MS = 5000;

/**
 * One LISTEN connection for a store's notices from other processes. `pg_notify` inside a
 * transaction is delivered only when that transaction commits, so a notice never announces
 * what a reader cannot have yet (bar the xmin rule of the event store, which the receiver
 * handles). The connection is opened on the first `on` and reopened with back-off after the
 * server goes away; when it comes back every handler is called once with an empty payload,
 * since notices sent meanwhile are lost. Notices are only hints: every follower still polls,
 * so a missed one costs a poll's delay and a spurious one a re-read.
 */
export class PgListener {
  private client: pg.Client | null = null;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private closed = false;
  private retryMs = 100;
  private timer: NodeJS.Timeout | null = null;
  private connecting = false;

  /** The probe this connection has not heard yet (see `probe`). */
  private probeNonce: string | null = null;
  private probeHeard: (() => void) | null = null;
  /** Whether notices were last seen to arrive on the LISTEN connection (null: not known yet). */
  hearing: boolean | null = null;

  constructor(
    /** Where processes send their notices (POSTGRES_URL); probes are sent there. */
    private readonly url: string,
    private readonly logger?: { warn(obj: unknown, msg?: string): void; info?(obj: unknown, msg?: string): void },
    /** Where this process listens (POSTGRES_LISTEN_URL): a direct connection when `url` goes through a pooler in transaction mode. */
    private readonly listenUrl: string = url,
  ) {}

  /** Calls `handler` with each notice's payload on `channel`; returns an unsubscribe function. */
  on(channel: string, handler: (payload: string) => void): () => void {
    let set = this.handlers.get(channel);
    const first = !set;
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(handler);
    if (this.client && first) this.client.query(`LISTEN ${channel}`).catch(() => this.reconnect());
    if (!this.client && !this.connecting && !this.closed) void this.connect();
    return () => {
      set!.delete(handler);
    };
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    this.connecting = true;
    const client = new (clientClassFor(this.listenUrl))({
      connectionString: firstUrl(this.listenUrl),
      ...(/[?&]connect_timeout=/i.test(this.listenUrl) ? {} : { connectionTimeoutMillis: 5000 }),
      application_name: 'collab-listen',
      // An idle LISTEN connection whose link was cut hears nothing and would not know: TCP
      // keepalive ends it, and it is opened again (polling covers the notices missed meanwhile).
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    // Unhandled, a connection error would end the process (the server stopping, a cut link).
    client.on('error', () => this.drop(client));
    client.on('end', () => this.drop(client));
    client.on('notification', (n) => {
      if (n.channel === PROBE_CHANNEL) {
        if (n.payload === this.probeNonce) this.probeHeard?.();
        return;
      }
      for (const h of this.handlers.get(n.channel) ?? []) h(n.payload ?? '');
    });
    try {
      await client.connect();
      // The server's side of the same cut: notices it is still sending to a cut-off process
      // leave this session in ClientWrite for as long as TCP retransmits (minutes). It blocks
      // nobody (it holds no xid and no lock, and other sessions' NOTIFY commits do not wait
      // for it), but it keeps a backend and pins the notification queue's tail, which cannot
      // pass the slowest listener. As for the pool's sessions (sessionSettings), the server's
      // kernel gives up on data left unacknowledged this long, and the session ends (measured:
      // 4 s after ClientWrite began; without it, still there 25 s later). It was once taken
      // for the cause of test/postgres.hosts' stall; that was its probe
      // (test/support/pg-applied.ts readBack, docs/operations.md).
      const settings = sessionSettings(this.listenUrl).filter((q) => q.includes('tcp_user_timeout'));
      if (settings.length) await client.query(settings.join('; '));
      await client.query(`LISTEN ${PROBE_CHANNEL}`);
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
      if (this.closed) {
        await client.end().catch(() => {});
        return;
      }
      const again = this.retryMs > 100;
      this.client = client;
      this.retryMs = 100;
      // Back after an outage: whatever was announced meanwhile is lost, so everyone looks once.
      if (again) for (const set of this.handlers.values()) for (const h of set) h('');
      void this.probe(client);
    } catch (error) {
      this.logger?.warn({ err: { message: (error as Error).message } }, 'PostgreSQL: the notice connection failed; followers poll until it is back');
      this.connecting = false;
      this.drop(client);
    } finally {
      this.connecting = false;
    }
  }

  /**
   * Whether a notice sent the way other processes send theirs (a session of its own on `url`)
   * reaches this LISTEN connection. Behind a pooler in transaction mode it does not: LISTEN ran
   * on a server connection the pooler has since given to others (test/postgres.pooler.test.ts).
   * Followers poll anyway; this says so once, with what to change, instead of leaving every
   * write to wait for the next poll unannounced. A probe that cannot be sent (the server down)
   * judges nothing.
   */
  private async probe(client: pg.Client): Promise<void> {
    const nonce = randomUUID();
    this.probeNonce = nonce;
    const heard = new Promise<boolean>((resolve) => {
      this.probeHeard = () => resolve(true);
      setTimeout(() => resolve(false), PROBE_WAIT_MS).unref();
    });
    const sender = new (clientClassFor(this.url))({ connectionString: firstUrl(this.url), connectionTimeoutMillis: 5000, application_name: 'collab-probe' });
    sender.on('error', () => undefined);
    try {
      await sender.connect();
      await sender.query('SELECT pg_notify($1, $2)', [PROBE_CHANNEL, nonce]);
    } catch {
      return;
    } finally {
      void sender.end().catch(() => undefined);
    }
    const ok = await heard;
    if (this.client !== client || this.closed || this.probeNonce !== nonce) return;
    this.probeNonce = null;
    this.probeHeard = null;
    if (ok && this.hearing !== true) this.logger?.info?.({}, 'PostgreSQL: notices from other processes arrive on the LISTEN connection');
    if (!ok && this.hearing !== false) {
      this.logger?.warn(
        { waitedMs: PROBE_WAIT_MS },
        'PostgreSQL: notices sent through POSTGRES_URL do not reach this process (a pooler in transaction mode?); other processes\' writes are followed by polling (PROJECTION_POLL_MS, CHECKPOINT_POLL_MS) until they do. Set POSTGRES_LISTEN_URL to a direct connection to the server (docs/operations.md, Poolers)',
      );
    }
    this.hearing = ok;
  }

  private drop(client: pg.Client) {
    if (this.client === client) this.client = null;
    client.removeAllListeners('notification');
    client.end().catch(() => {});
    this.reconnect();
  }

  private reconnect() {
    if (this.closed || this.timer || this.client || this.connecting) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.connect();
    }, this.retryMs);
    this.timer.unref();
    this.retryMs = Math.min(5000, this.retryMs * 2);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const c = this.client;
    this.client = null;
    if (c) {
      c.removeAllListeners('end');
      await c.end().catch(() => {});
    }
  }
}
