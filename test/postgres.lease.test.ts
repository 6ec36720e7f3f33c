/**
 * Two API processes and two worker processes (`serve --role api`, `serve --role worker`) on one
 * real PostgreSQL database (issue 23, item 4's last fault). Under writes through both APIs the
 * worker holding the projections lease is killed -9; the other worker, started beforehand and
 * waiting, takes the lease and applies; every acknowledged write is in the read models, once in
 * the log, and applied exactly once: test/support/pg-applied.ts counts each committed
 * application of an event in the database (a trigger on the audit index), which the read models
 * alone could not show (the projections' upserts are idempotent).
 *
 * The count is shown able to fail: at the end the audit projection's checkpoint is moved back by
 * hand, as a runner that lost track of what it applied would, and the counter reports those
 * events applied twice.
 *
 * The server is this file's own (test/support/postgres.ts). The same fault across hosts, with a
 * link cut instead of a kill: test/postgres.hosts.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tempDir } from './support/app.js';
import { startService, waitHealthy, type Service } from './support/process.js';
import { startPostgres, type PostgresServer } from './support/postgres.js';
import { allVisible, applications, leaseHolder, sessions, readBack, tenant, until, watchApplications, withClient, writeThenRead, writers } from './support/pg-applied.js';

const LEASE_TTL_MS = 2000;
/** Beyond the TTL, for a loaded 2-core CI machine; the times measured are printed either way. */
const TAKEOVER_SLACK_MS = 8000;

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

test('two APIs and two workers on one PostgreSQL: the lease holder killed -9 under writes, the waiting worker takes over, every write applied exactly once', async () => {
  server = await startPostgres();
  const url = await server.freshDatabase('lease');
  const key = randomBytes(32).toString('base64');
  const start = (role: string) => {
    const dataDir = tempDir(`collab-pg-lease-${role}-`);
    dirs.push(dataDir);
    const s = startService({ POSTGRES_URL: url, SECRETS_KEY: key, DATA_DIR: dataDir, LEASE_TTL_MS: String(LEASE_TTL_MS), PROJECTION_POLL_MS: '50' }, 'src/cli.ts', ['serve', '--role', role]);
    return s.then((x) => (services.push(x), x));
  };
  const [wk1, wk2, api1, api2] = await Promise.all([start('worker'), start('worker'), start('api'), start('api')]);
  const outputs = () => services.map((s) => `--- pid ${s.child.pid}:\n${s.output().slice(-2000)}`).join('\n');
  let w: ReturnType<typeof writers> | null = null;
  try {
    await Promise.all(services.map((s) => waitHealthy(s, 60_000)));
    const headers = await tenant(api1);
    await watchApplications(url);
    const first = await leaseHolder(url);
    const victim = [wk1, wk2].find((s) => first?.holder.includes(`:${s.child.pid}:`));
    assert.ok(victim, `the lease holder ${first?.holder} is one of the workers`);
    const survivor = victim === wk1 ? wk2 : wk1;

    w = writers(() => [api1, api2], headers);
    const writes = w;
    await until('writes through both APIs', () => (writes.ackedBy.get(api1.url) ?? 0) >= 20 && (writes.ackedBy.get(api2.url) ?? 0) >= 20);
    victim.child.kill('SIGKILL');
    await victim.exited;
    const killedAt = Date.now();
    await until('the waiting worker to take the lease', async () => (await leaseHolder(url))?.holder.includes(`:${survivor.child.pid}:`) ?? false, LEASE_TTL_MS + TAKEOVER_SLACK_MS);
    const afterTakeover = readBack([api1, api2], headers, 'after-');
    await until(
      () => `writes through each API read back after the takeover (last attempts: ${JSON.stringify(afterTakeover.attempts.slice(-4))})`,
      () => afterTakeover.probe(),
      LEASE_TTL_MS + TAKEOVER_SLACK_MS,
    );
    const tookMs = Date.now() - killedAt;
    const before = w.acked.size;
    await until('40 more writes acknowledged after the takeover', () => writes.acked.size >= before + 40, 20_000);
    await w.stop();

    assert.equal(w.wrong, [], 'only 200 or 503 UNAVAILABLE');
    assert.equal([...w.unanswered], [], 'every request answered (no API process was touched)');
    for (const s of [api1, api2]) await allVisible(s, headers, w.acked);
    const applied = await applications(url, w.acked);
    assert.equal(applied.notOnceInLog, [], 'every acknowledged write once in the log');
    assert.equal(applied.unapplied, [], 'every acknowledged write applied');
    assert.equal([...applied.twice.entries()].slice(0, 5), [], `${applied.twice.size} events applied more than once`);
    for (const s of [api1, api2]) assert.not.match(s.output(), /read models lag behind this write/, 'no write waited past its read-your-writes time');
    console.log(`  writes read back ${tookMs} ms after the kill (lease TTL ${LEASE_TTL_MS} ms); ${w.acked.size} writes acknowledged, applied once each`);

    // The counter can fail: the audit projection's checkpoint moved back over the last 10
    // acknowledged writes' events (as a runner that lost track would), the survivor applies
    // them again, and each shows as applied twice.
    const last = [...w.acked].slice(-10);
    await withClient(url, async (c) => {
      const r = await c.query<{ p: string }>(
        `SELECT lpad(transaction_id::text, 20, '0') || lpad((position - 1)::text, 19, '0') AS p FROM events
         WHERE type = 'DocumentAdded' AND data::json->>'documentId' = ANY($1::text[]) ORDER BY transaction_id, position LIMIT 1`,
        [last],
      );
      const moved = await c.query(`UPDATE checkpoints SET position = $1, version = version + 1 WHERE name = 'audit'`, [r.rows[0]!.p]);
      assert.is(moved.rowCount, 1, 'the audit projection has a checkpoint named audit');
    });
    // A new write makes the survivor commit a batch: its compare-and-set finds the checkpoint
    // moved, and it reads on from there.
    let n = 0;
    await until('the moved-back events applied again', async () => {
      await writeThenRead(api1, headers, `again-${n++}`);
      const again = await applications(url, w!.acked);
      return last.length > 0 && again.twice.size >= last.length;
    }, 15_000);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- sessions:\n${await sessions(url)}\n--- wrong: ${w?.wrong.slice(0, 5).join('\n')}\n${outputs()}`);
  } finally {
    await w?.stop();
  }
});

test.run();
