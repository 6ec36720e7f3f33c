/**
 * The PostgreSQL statement timeout (issue 33, finding 2; src/adapters/postgres-common.ts
 * openPool): every statement of the service is bounded by STATEMENT_TIMEOUT_MS, set with `SET`
 * on each new connection (no startup parameter, so a pooler that refuses unknown ones lets it
 * through). A statement held up on a lock that another session keeps (any long statement
 * would do; a lock makes it last as long as the test wants without a busy server) is cancelled
 * by the server, and the request answers RESOURCE_EXHAUSTED naming the bound, while the lock is
 * still held: before, it waited for as long as the lock lasted. On a real server, started for
 * this run (test/support/postgres.ts); never skipped.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { harness, postgresEnv, type Harness } from './support/app.js';
import { waiter } from './support/wait.js';

let h: Harness;
let url = '';

test.before(async () => {
  const env = await postgresEnv();
  url = env.POSTGRES_URL!;
  h = await harness({ ...env, STATEMENT_TIMEOUT_MS: '300' });
});
test.after(async () => h?.close());

/** A guard only: the answer is expected a few statement timeouts after the request, far within it. */
const until = waiter(30_000, 20);

test('a statement held up past STATEMENT_TIMEOUT_MS is cancelled: the request answers RESOURCE_EXHAUSTED naming it', async () => {
  const t = await h.tenant();
  await h.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o', organizationName: 'O' }] }, t.headers);
  const side = new pg.Client({ connectionString: url });
  await side.connect();
  let answer: Awaited<ReturnType<Harness['post']>> | undefined;
  let released = false;
  try {
    await side.query('BEGIN');
    await side.query('LOCK TABLE rm_organizations IN ACCESS EXCLUSIVE MODE');
    void h.post('/v2/organizations/get', { organizationIds: ['o'] }, t.headers).then((r) => (answer = r));
    await until('the answer while the lock is held', () => answer !== undefined);
    released = true;
    await side.query('ROLLBACK');
  } finally {
    if (!released) await side.query('ROLLBACK').catch(() => undefined);
    await side.end();
  }
  assert.is(answer!.status, 429, JSON.stringify(answer!.body));
  assert.is(answer!.body.error.status, 'RESOURCE_EXHAUSTED');
  assert.match(answer!.body.error.message, 'statement timeout (STATEMENT_TIMEOUT_MS)');
  // The connection whose statement was cancelled serves the next request as any other.
  const again = await h.ok('/v2/organizations/get', { organizationIds: ['o'] }, t.headers);
  assert.ok(JSON.stringify(again).includes('"o"'), JSON.stringify(again));
});

test.run();
