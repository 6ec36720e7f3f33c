/**
 * What the several-processes suites on PostgreSQL check after their faults: every acknowledged
 * write in the read models, and no event applied twice, seen from the database itself.
 *
 * "Applied twice" is counted by a trigger, not by the service: `watchApplications` adds an
 * AFTER INSERT OR UPDATE trigger on the audit index (`rm_audit_events`, one document per log
 * position, written once per application of a tenant event: projections/audit.ts) that records
 * each write with the address of the connection that made it. The trigger runs inside the
 * projection batch's transaction, so only committed applications are recorded: a batch whose
 * checkpoint compare-and-set lost, or that was rolled back when its connection died, leaves no
 * row. An event applied by two workers, or twice by one, leaves two. The service's own code is
 * untouched; the audit projection's upsert is idempotent, so the read models alone would hide a
 * double application.
 */
import pg from 'pg';
import * as assert from 'uvu/assert';
import { post, type Service } from './process.js';
import { waiter } from './wait.js';

export async function withClient<T>(url: string, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** The log position as the service spells it (postgres-event-store.ts encodePgPosition), in SQL. */
const POSITION = `lpad(e.transaction_id::text, 20, '0') || lpad(e.position::text, 19, '0')`;

/** Installs the counting trigger; the audit index must exist (some tenant event applied). */
export async function watchApplications(url: string): Promise<void> {
  await withClient(url, async (c) => {
    const t = await c.query(`SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'rm_audit_events'`);
    assert.is(t.rowCount, 1, 'the audit index exists before the trigger goes on it');
    await c.query(`
      CREATE TABLE test_applications (id text NOT NULL, by_addr text, at timestamptz NOT NULL DEFAULT clock_timestamp());
      CREATE FUNCTION test_count_application() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO test_applications (id, by_addr) VALUES (NEW.id, coalesce(host(inet_client_addr()), 'local'));
        RETURN NULL;
      END $$;
      CREATE TRIGGER test_count_application AFTER INSERT OR UPDATE ON rm_audit_events FOR EACH ROW EXECUTE FUNCTION test_count_application();`);
  });
}

export interface Applications {
  /** Audit documents written more than once since the trigger went on: id -> writers' addresses. */
  twice: Map<string, string[]>;
  /** How many applications each address committed. */
  byAddress: Map<string, number>;
  /** Acknowledged documents whose DocumentAdded event has no application recorded. */
  unapplied: string[];
  /** Acknowledged documents without exactly one DocumentAdded event in the log. */
  notOnceInLog: string[];
}

/**
 * The trigger's count, and the log's, for the acknowledged documents of organization `org`. Every
 * acknowledged write came after the trigger went on, so each must have exactly one application.
 */
export async function applications(url: string, acked: Iterable<string>, org = 'acme'): Promise<Applications> {
  return withClient(url, async (c) => {
    const twice = new Map<string, string[]>();
    for (const r of (await c.query<{ id: string; by: string[] }>(`SELECT id, array_agg(by_addr ORDER BY at) AS by FROM test_applications GROUP BY id HAVING count(*) > 1`)).rows) {
      twice.set(r.id, r.by);
    }
    const byAddress = new Map<string, number>();
    for (const r of (await c.query<{ by_addr: string; n: string }>(`SELECT by_addr, count(*) AS n FROM test_applications GROUP BY 1`)).rows) {
      byAddress.set(r.by_addr, Number(r.n));
    }
    const ids = [...acked];
    const rows = (
      await c.query<{ doc: string; n: string; applied: string }>(
        `SELECT e.data::json->>'documentId' AS doc, count(*) AS n, count(a.id) AS applied
         FROM events e LEFT JOIN (SELECT DISTINCT id FROM test_applications) a ON a.id = ${POSITION}
         WHERE e.type = 'DocumentAdded' AND e.data::json->>'organizationId' = $1 AND e.data::json->>'documentId' = ANY($2::text[])
         GROUP BY 1`,
        [org, ids],
      )
    ).rows;
    const byDoc = new Map(rows.map((r) => [r.doc, r]));
    const unapplied: string[] = [];
    const notOnceInLog: string[] = [];
    for (const id of ids) {
      const r = byDoc.get(id);
      if (!r || Number(r.n) !== 1) notOnceInLog.push(`${id} (${r?.n ?? 0} events)`);
      else if (Number(r.applied) !== 1) unapplied.push(id);
    }
    return { twice, byAddress, unapplied, notOnceInLog };
  });
}

/** The stored `projections` lease: who holds it (`hostname:pid:...`) and until when. */
export async function leaseHolder(url: string): Promise<{ holder: string; expiresAt: number; epoch: number } | null> {
  return withClient(url, async (c) => {
    const r = await c.query<{ doc: { holder: string; expiresAt: number; epoch: number } }>(`SELECT doc FROM rm_leases WHERE id = 'projections'`);
    return r.rows[0]?.doc ?? null;
  });
}

export const until = waiter(30_000, 25);

/** A workspace and its organization `acme` with one document; the key's headers. */
export async function tenant(s: Service): Promise<Record<string, string>> {
  const ws = await post(s, '/v2/workspace/create', { ownerEmail: 'o@example.com' });
  assert.is(ws.status, 200, JSON.stringify(ws.body));
  const [apiKey, k] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken };
  const created = await post(s, '/v2/organizations/documents/add', { organizationId: 'acme', createOrganization: true, documents: [{ documentId: 'first' }] }, headers);
  assert.is(created.status, 200, JSON.stringify(created.body));
  return headers;
}

/** One request with a deadline: a host cut off answers nothing, and a client gives up. */
async function postWithin(s: Service, route: string, data: unknown, headers: Record<string, string>, ms: number) {
  const r = await fetch(`${s.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ data }),
    signal: AbortSignal.timeout(ms),
  });
  return { status: r.status, body: (await r.json()) as any };
}

/**
 * Writers posting documents/add, one new document per request, each lane taking the targets in
 * turn, as a client behind a load balancer that tries the next host when one does not answer.
 * Acknowledged: a 200 whose item succeeded. A refusal must be 503 UNAVAILABLE (or the item's
 * `unavailable`); no answer within `timeoutMs` (a host cut off, a process killed) counts
 * against that host; anything else is wrong.
 */
export function writers(targets: () => Service[], headers: Record<string, string>, options: { lanes?: number; timeoutMs?: number; prefix?: string } = {}) {
  const { lanes = 4, timeoutMs = 4000, prefix = 'd' } = options;
  const acked = new Set<string>();
  const ackedBy = new Map<string, number>();
  const unanswered = new Map<string, number>();
  const unavailable: string[] = [];
  const wrong: string[] = [];
  let stop = false;
  let n = 0;
  // A host that left a request unanswered is passed over for a while, as a load balancer's
  // health check would: the writes go on at the others' pace, and the host is tried again later.
  const downUntil = new Map<string, number>();
  const lane = async (l: number) => {
    let turn = l;
    while (!stop) {
      const all = targets();
      const up = all.filter((t) => (downUntil.get(t.url) ?? 0) <= Date.now());
      const from = up.length > 0 ? up : all;
      const s = from[turn++ % from.length]!;
      const id = `${prefix}${l}-${n++}`;
      try {
        const r = await postWithin(s, '/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: id }] }, headers, timeoutMs);
        const item = r.body?.result?.data?.[id];
        if (r.status === 200 && item?.success === true) {
          acked.add(id);
          ackedBy.set(s.url, (ackedBy.get(s.url) ?? 0) + 1);
        } else if (r.status === 200 && item?.code === 'unavailable') unavailable.push(item.message);
        else if (r.status === 503 && r.body?.error?.status === 'UNAVAILABLE') unavailable.push(r.body.error.message);
        else wrong.push(`${s.url}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      } catch {
        unanswered.set(s.url, (unanswered.get(s.url) ?? 0) + 1);
        downUntil.set(s.url, Date.now() + 2000);
      }
    }
  };
  const running = Promise.all(Array.from({ length: lanes }, (_, l) => lane(l)));
  return {
    acked,
    ackedBy,
    unanswered,
    unavailable,
    wrong,
    async stop() {
      stop = true;
      await running;
    },
  };
}

/** Every acknowledged document is visible through `s` (waiting for the projections to catch up). */
export async function allVisible(s: Service, headers: Record<string, string>, acked: Set<string>, timeoutMs = 30_000): Promise<void> {
  const ids = [...acked];
  const missing = new Set(ids);
  await until(
    () => `the acknowledged documents to be visible through ${s.url} (${missing.size} of ${ids.length} still missing, e.g. ${[...missing].slice(0, 3).join(', ')})`,
    async () => {
      for (let i = 0; i < ids.length; i += 30) {
        const chunk = ids.slice(i, i + 30).filter((id) => missing.has(id));
        if (chunk.length === 0) continue;
        const r = await postWithin(s, '/v2/organizations/documents/get', { organizationId: 'acme', documentIds: chunk }, headers, 10_000);
        if (r.status !== 200) return false;
        for (const d of r.body.result.data as Array<{ id: string }>) missing.delete(d.id);
      }
      return missing.size === 0;
    },
    timeoutMs,
  );
}

/** A write through `s`, then a read through `s` that shows it: the projections are applied now. */
export async function writeThenRead(s: Service, headers: Record<string, string>, id: string, timeoutMs = 4000): Promise<boolean> {
  return (await writeThenReadWhy(s, headers, id, timeoutMs)) === null;
}

/** writeThenRead, saying why not (null: read back). */
async function writeThenReadWhy(s: Service, headers: Record<string, string>, id: string, timeoutMs: number): Promise<string | null> {
  try {
    const w = await postWithin(s, '/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: id }] }, headers, timeoutMs);
    const item = w.body?.result?.data?.[id];
    if (w.status !== 200 || item?.success !== true) return `write answered ${w.status} ${JSON.stringify(item ?? w.body).slice(0, 120)}`;
    const r = await postWithin(s, '/v2/organizations/documents/get', { organizationId: 'acme', documentIds: [id] }, headers, timeoutMs);
    if (r.status !== 200) return `read answered ${r.status}`;
    return (r.body.result.data as Array<{ id: string }>).some((d) => d.id === id) ? null : 'not in the read';
  } catch (error) {
    return `no answer: ${(error as Error).message}`;
  }
}

/** One attempt of a `readBack` probe: the document it wrote through `host`, and whether `host` then showed it. */
interface ReadBackAttempt {
  host: string;
  id: string;
  ok: boolean;
  /** Why not, when not. */
  why?: string;
}

/**
 * A probe for `until` after a fault: each call writes a document through each of `hosts` in
 * turn and reads it back there, and is true once every host showed its own. `attempts` keeps
 * every write it sent (for the failure message, and for tests that watch the probe).
 *
 * Every write takes a new document id. A write whose answer is lost is still in the log: while
 * the projections are held up (a cut worker's stranded transaction, until the server ends it),
 * the API host appends, then waits for the read models (READ_YOUR_WRITES_TIMEOUT_MS, 5 s) longer
 * than this client does (4 s). The same id sent again is refused ("Document already exists")
 * for good: the probe then never succeeded however well the service recovered, which is how
 * test/postgres.hosts.test.ts failed now and then (issue 35; test/postgres.hosts.readback.test.ts
 * holds that case).
 */
export function readBack(hosts: Service[], headers: Record<string, string>, prefix: string) {
  const attempts: ReadBackAttempt[] = [];
  let n = 0;
  return {
    attempts,
    async probe(): Promise<boolean> {
      for (const host of hosts) {
        const id = `${prefix}${n++}`;
        const why = await writeThenReadWhy(host, headers, id, 4000);
        attempts.push(why === null ? { host: host.url, id, ok: true } : { host: host.url, id, ok: false, why });
        if (why !== null) return false;
      }
      return true;
    },
  };
}

/** The server's sessions, for failure messages: who holds a transaction open, who waits on a lock. */
export async function sessions(url: string): Promise<string> {
  try {
    return await withClient(url, async (c) => {
      const r = await c.query(
        `SELECT client_addr, state, backend_xid, backend_xmin, now() - xact_start AS xact_age, wait_event_type, wait_event, left(query, 80) AS query
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY client_addr, xact_start`,
      );
      return r.rows.map((row) => JSON.stringify(row)).join('\n');
    });
  } catch (error) {
    return `(could not read pg_stat_activity: ${(error as Error).message})`;
  }
}

/**
 * Cuts `host`'s link at a moment when one of its sessions has a transaction open that has
 * written (it holds an xid: row locks, and the snapshot xmin every follower reads below), and
 * checks that the transaction is still open with the link down: the worst moment to lose a
 * host. Tries again (a brief cut and restore) when the transaction ended just before the cut.
 * Returns the stranded session's description.
 */
export async function cutMidTransaction(
  url: string,
  address: string,
  cut: () => void,
  restore: () => void,
  timeoutMs = 30_000,
  /**
   * Past the timeout, cut anyway (between transactions) instead of failing: a host's
   * transactions can be short enough to end before `ip link` takes effect every time (seen on
   * CI for both the worker's batches and the API's appends). The caller's assertions hold
   * either way; the stranded case is exercised whenever one is caught, and the output names
   * which happened.
   */
  orBetween = false,
): Promise<string> {
  return withClient(url, async (c) => {
    const open = async () =>
      (
        await c.query<{ pid: number; query: string }>(
          `SELECT pid, query FROM pg_stat_activity WHERE client_addr = $1::inet AND backend_xid IS NOT NULL AND state <> 'idle'`,
          [address],
        )
      ).rows;
    const deadline = Date.now() + timeoutMs;
    let polls = 0;
    let tries = 0;
    while (Date.now() < deadline) {
      polls++;
      if ((await open()).length === 0) continue;
      tries++;
      cut();
      // Still open after the cut (and a moment for packets already on the wire): stranded.
      await new Promise((r) => setTimeout(r, 50));
      const stranded = await open();
      if (stranded.length > 0) return stranded.map((s) => `pid ${s.pid}: ${s.query.replace(/\s+/g, ' ').slice(0, 60)}`).join('; ');
      restore();
    }
    const none = `no transaction of ${address} caught open within ${timeoutMs} ms (${polls} looks, ${tries} cuts that found it ended)`;
    if (!orBetween) throw new Error(none);
    cut();
    return `none (${none}; cut between transactions)`;
  });
}
