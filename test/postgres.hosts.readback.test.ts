/**
 * The several-hosts stall (issue 35), held deterministically instead of waited for by chance.
 *
 * test/postgres.hosts.test.ts failed now and then with "timed out after 35000 ms waiting for a
 * write through each API host read back after the takeover", nothing in any log. A run that
 * sampled the database every second while it failed showed the survivor holding and renewing
 * the lease and the checkpoints following the log's head, no session waiting: the service had
 * recovered, the probe had not. The probe's first write went in while the projections were
 * still held up (the cut worker's stranded transaction holds every follower back and its
 * checkpoint rows locked until the server ends that session, IDLE_IN_TRANSACTION_TIMEOUT_MS):
 * the API host appended it and waited for the read models (READ_YOUR_WRITES_TIMEOUT_MS, 5 s),
 * the client gave up first (4 s), and every later attempt sent the same document id again,
 * refused as "Document already exists".
 *
 * Here the condition is held by a session of this test: it opens a transaction that locks the
 * checkpoint rows, as the stranded batch does, while the probe runs; once one of the probe's
 * writes is in the log but its answer was lost, it ends the transaction. The probe must then
 * read a write back through each API host within two more failed attempts (one may have begun
 * while the transaction was still open). With the probe as it was, it never did.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { tempDir } from './support/app.js';
import { startService, waitHealthy, type Service } from './support/process.js';
import { startPostgres, type PostgresServer } from './support/postgres.js';
import { readBack, sessions, tenant, until } from './support/pg-applied.js';

let server: PostgresServer | null = null;
const services: Service[] = [];
const dirs: string[] = [];

test.after(async () => {
  // The server's process is unref'd: keep this one alive while its exit is awaited.
  const alive = setInterval(() => undefined, 1000);
  try {
    for (const s of services) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    await Promise.all(services.map((s) => s.exited));
    await server?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  } finally {
    clearInterval(alive);
  }
});

/** Whether document `id`'s DocumentAdded event is in the log (committed). */
async function inLog(c: pg.Client, id: string): Promise<boolean> {
  const r = await c.query(`SELECT 1 FROM events WHERE type = 'DocumentAdded' AND data::json->>'documentId' = $1`, [id]);
  return (r.rowCount ?? 0) > 0;
}

test("a probe write whose answer was lost while the projections were held up: once they go on, the next attempts read a write back through each API host", async () => {
  server = await startPostgres();
  const url = await server.freshDatabase('readback');
  const key = randomBytes(32).toString('base64');
  const start = async (role: string) => {
    const dataDir = tempDir(`collab-pg-readback-${role}-`);
    dirs.push(dataDir);
    const s = await startService({ POSTGRES_URL: url, SECRETS_KEY: key, DATA_DIR: dataDir, LEASE_TTL_MS: '2000', PROJECTION_POLL_MS: '50' }, 'src/cli.ts', ['serve', '--role', role]);
    services.push(s);
    return s;
  };
  const [, api1, api2] = await Promise.all([start('worker'), start('api'), start('api')]);
  const outputs = () => services.map((s) => `--- pid ${s.child.pid}:\n${s.output().slice(-2000)}`).join('\n');
  // `hold` plays the cut worker's stranded session; `look` watches the server.
  const hold = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  const look = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await hold.connect();
  await look.connect();
  let probe: ReturnType<typeof readBack> | null = null;
  let held = false;
  try {
    await Promise.all(services.map((s) => waitHealthy(s, 60_000)));
    probe = readBack([api1!, api2!], await tenant(api1!), 'rb-');
    await until('a write read back through each API host before anything is held', () => probe!.probe(), 30_000);

    // What a cut worker's stranded batch holds until the server ends its session: a transaction
    // that has an xid (every follower reads below the oldest one, postgres-event-store.ts) and
    // its checkpoint rows' locks.
    await hold.query('BEGIN');
    await hold.query('SELECT name FROM checkpoints FOR UPDATE');
    held = true;
    const before = probe!.attempts.length;
    const probing = until('a write read back through each API host after the held transaction ended', () => probe!.probe(), 30_000);
    probing.catch(() => undefined);
    // The condition itself, waited for: an attempt that failed although its write is in the log
    // (the API host appended it, then its answer outlived the client's patience).
    let lost: string | undefined;
    await until(
      () => `a probe write in the log whose answer was lost (attempts: ${JSON.stringify(probe!.attempts.slice(before))})`,
      async () => {
        for (const a of probe!.attempts.slice(before)) if (!a.ok && (await inLog(look, a.id))) lost = a.id;
        return lost !== undefined;
      },
      30_000,
    );
    // And it is not applied: the held transaction keeps the projections behind it.
    const behind = await look.query<{ behind: boolean }>(
      `SELECT (SELECT min(position) FROM checkpoints) < (lpad(e.transaction_id::text, 20, '0') || lpad(e.position::text, 19, '0')) AS behind
       FROM events e WHERE e.type = 'DocumentAdded' AND e.data::json->>'documentId' = $1`,
      [lost],
    );
    assert.ok(behind.rows[0]?.behind, `the lost write ${lost} is not applied while the session holds its transaction`);

    await hold.query('ROLLBACK');
    held = false;
    const released = probe!.attempts.length;
    await probing;
    // Once nothing holds the projections, an attempt or two reads back (one may have started
    // while they were still held); a probe that sends a refused id again never does.
    const after = probe!.attempts.slice(released);
    assert.ok(after.filter((a) => !a.ok).length <= 2, `attempts after the release: ${JSON.stringify(after)}`);
    console.log(`  lost answer: ${lost}; attempts while held ${released - before}, after ${after.length}`);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- attempts: ${JSON.stringify(probe?.attempts.slice(-8))}\n--- sessions:\n${await sessions(url)}\n${outputs()}`);
  } finally {
    if (held) await hold.query('ROLLBACK').catch(() => undefined);
    await hold.end().catch(() => undefined);
    await look.end().catch(() => undefined);
  }
});

test.run();
