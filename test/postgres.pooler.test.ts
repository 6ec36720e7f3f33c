/**
 * The service behind Debian's pgbouncer with its default settings (issue 37, item 2), in both
 * pool modes, on the suites' throwaway PostgreSQL server:
 * - session mode: it starts (it once sent `idle_in_transaction_session_timeout` as a startup
 *   parameter, which pgbouncer refuses, and exited), serves writes and reads, and its sessions
 *   carry the settings it sends with SET after connecting;
 * - transaction mode: it starts and serves writes and reads; its named statement falls back to
 *   an unnamed one on the first refusal instead of failing requests; notices do not cross the
 *   pooler, and the process says so once, naming POSTGRES_LISTEN_URL; with POSTGRES_LISTEN_URL
 *   set to the server itself, they arrive and nothing is said.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { tempDir } from './support/app.js';
import { post, startService, waitHealthy, type Service } from './support/process.js';
import { sharedPostgres, type PostgresServer } from './support/postgres.js';
import { startPgbouncer, type Pgbouncer } from './support/pgbouncer.js';
import { openPool, PgListener } from '../src/adapters/postgres-common.js';
import { waiter } from './support/wait.js';

const until = waiter(30_000, 50);

const SECRETS_KEY = Buffer.alloc(32, 5).toString('base64');

interface Ctx {
  server: PostgresServer;
  services: Service[];
  bouncers: Pgbouncer[];
  dirs: string[];
}

const s = suite<Ctx>('PostgreSQL behind pgbouncer');

s.before(async (ctx) => {
  ctx.server = await sharedPostgres();
  ctx.services = [];
  ctx.bouncers = [];
  ctx.dirs = [];
});

s.after(async (ctx) => {
  for (const svc of ctx.services) {
    if (svc.child.exitCode === null) {
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
  }
  for (const b of ctx.bouncers) await b.close();
  for (const d of ctx.dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A service on `url`, a workspace in it, and a write read back through it. */
async function serveAndUse(ctx: Ctx, env: Record<string, string>) {
  const dataDir = tempDir('collab-pg-pooler-');
  ctx.dirs.push(dataDir);
  const svc = await startService({ SECRETS_KEY, DATA_DIR: dataDir, ...env });
  ctx.services.push(svc);
  await waitHealthy(svc, 60_000);
  const ws = await post(svc, '/v2/workspace/create', { ownerEmail: 'pooler@example.com' });
  assert.is(ws.status, 200, `${JSON.stringify(ws.body)}\n${svc.output().slice(-3000)}`);
  const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  const add = await post(
    svc,
    '/v2/organizations/documents/add',
    { organizationId: 'acme', createOrganization: true, documents: [{ documentId: 'd1', documentName: 'One' }, { documentId: 'd2', documentName: 'Two' }] },
    headers,
  );
  assert.is(add.status, 200, `${JSON.stringify(add.body)}\n${svc.output().slice(-3000)}`);
  // Many reads at once: behind a pooler in transaction mode each may reach another server
  // connection, which a named statement prepared on one does not survive.
  const reads = await Promise.all(Array.from({ length: 40 }, () => post(svc, '/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 10 }, headers)));
  for (const got of reads) {
    assert.is(got.status, 200, `${JSON.stringify(got.body)}\n${svc.output().slice(-3000)}`);
    assert.equal(got.body.result.data.map((d: { id: string }) => d.id).sort(), ['d1', 'd2']);
  }
  return svc;
}

const NOTICE_WARNING = /notices sent through POSTGRES_URL do not reach this process/;

s('session mode, pgbouncer defaults: the service starts, serves writes and reads, and its sessions carry its settings', async (ctx) => {
  const bouncer = await startPgbouncer(ctx.server, 'session');
  ctx.bouncers.push(bouncer);
  const db = new URL(await ctx.server.freshDatabase('collab_pooler_s')).pathname.slice(1);
  // In session mode every connection the service holds holds one of pgbouncer's 20 server
  // connections (default_pool_size): POSTGRES_POOL_SIZE=3 keeps a `serve` process at 17 at most
  // (docs/operations.md, Poolers), leaving room for this test's own connection below.
  const svc = await serveAndUse(ctx, { POSTGRES_URL: bouncer.url(db), POSTGRES_POOL_SIZE: '3' });
  // Sent with SET after connecting, so they reach the server through the pooler.
  const pool = openPool(bouncer.url(db), undefined, 1234, 1);
  try {
    const r = await pool.query('SELECT current_setting($1) AS idle, current_setting($2) AS tcp, current_setting($3) AS st', [
      'idle_in_transaction_session_timeout',
      'tcp_user_timeout',
      'statement_timeout',
    ]);
    assert.equal(r.rows[0], { idle: '5s', tcp: '5000', st: '1234ms' });
  } finally {
    await pool.end();
  }
  // In session mode notices reach the LISTEN connection through the pooler: nothing to say.
  assert.not.match(svc.output(), NOTICE_WARNING);
});

s('transaction mode, pgbouncer defaults: writes and reads work, and the process says once that notices do not arrive, naming POSTGRES_LISTEN_URL', async (ctx) => {
  const bouncer = await startPgbouncer(ctx.server, 'transaction');
  ctx.bouncers.push(bouncer);
  const db = new URL(await ctx.server.freshDatabase('collab_pooler_t')).pathname.slice(1);
  const svc = await serveAndUse(ctx, { POSTGRES_URL: bouncer.url(db), LOG_LEVEL: 'warn' });
  await until('the warning that notices do not cross the pooler', () => NOTICE_WARNING.test(svc.output()));
  assert.match(svc.output(), /POSTGRES_LISTEN_URL/);
  const errors = svc.output().split('\n').filter((line) => /"level":(50|60|"error"|"fatal")/.test(line));
  assert.equal(errors, [], 'no error logged');
});

s('transaction mode with POSTGRES_LISTEN_URL on the server itself: notices arrive, nothing is said', async (ctx) => {
  const bouncer = await startPgbouncer(ctx.server, 'transaction');
  ctx.bouncers.push(bouncer);
  const db = new URL(await ctx.server.freshDatabase('collab_pooler_l')).pathname.slice(1);
  const direct = ctx.server.url(db);
  // The listener as the service builds it: probes sent through the pooler, heard on the direct connection.
  const warnings: string[] = [];
  const deaf = new PgListener(bouncer.url(db), { warn: (_o, msg) => warnings.push(String(msg)) });
  const listening = new PgListener(bouncer.url(db), { warn: (_o, msg) => warnings.push(String(msg)) }, direct);
  try {
    deaf.on('collab_checkpoint', () => undefined);
    listening.on('collab_checkpoint', () => undefined);
    await until('both probes judged', () => deaf.hearing !== null && listening.hearing !== null);
    assert.is(deaf.hearing, false, 'through the pooler in transaction mode');
    assert.is(listening.hearing, true, 'on a direct connection');
    assert.is(warnings.filter((w) => NOTICE_WARNING.test(w)).length, 1, JSON.stringify(warnings));
  } finally {
    await deaf.close();
    await listening.close();
  }
  const svc = await serveAndUse(ctx, { POSTGRES_URL: bouncer.url(db), POSTGRES_LISTEN_URL: direct, LOG_LEVEL: 'info' });
  // Every listener of the process (the log's and the read store's, in each thread) heard its probe.
  const heard = () => svc.output().match(/notices from other processes arrive on the LISTEN connection/g)?.length ?? 0;
  await until(() => `two listeners to hear their probe (heard ${heard()})`, () => heard() >= 2);
  assert.not.match(svc.output(), NOTICE_WARNING);
});

s.run();
