/**
 * PostgreSQL as an operator meets it (issue 23, item 7), on the suites' throwaway real server
 * (test/support/postgres.ts): the least-privileged role of scripts/postgres-role.sh, created
 * here as the superuser, runs the service (migrations at first start included), which serves
 * writes and reads; `collab` commands work against the same POSTGRES_URL and their effects show
 * through the service; nothing lands in DATA_DIR.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { tempDir } from './support/app.js';
import { ROOT, post, startService, waitHealthy, type Service } from './support/process.js';
import { postgresBinDir, sharedPostgres, type PostgresServer } from './support/postgres.js';

const SECRETS_KEY = Buffer.alloc(32, 3).toString('base64');
const ROLE = `collab_ops_${process.pid}`;
const PASSWORD = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

let server: PostgresServer;
let db: string;
let roleUrl: string;
let dataDir: string;
let svc: Service;

/** `query` as the superuser in the service's database. */
async function asSuperuser<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: server.url(db) });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

const cli = (...args: string[]) => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), ...args], {
    cwd: ROOT,
    env: { ...process.env, POSTGRES_URL: roleUrl, SECRETS_KEY, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

test.before(async () => {
  server = await sharedPostgres();
  db = new URL(await server.freshDatabase('collab_ops')).pathname.slice(1);
  dataDir = tempDir('collab-pg-ops-');
});

test.after(async () => {
  if (svc && svc.child.exitCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test('scripts/postgres-role.sh: a role owning only its schema; the service migrates and serves writes and reads as it', async () => {
  // The script exactly as an operator (or the postgres image's init) runs it, with psql on PATH.
  const bin = postgresBinDir();
  assert.ok(bin, 'no PostgreSQL binaries (psql)');
  const made = spawnSync('sh', [path.join(ROOT, 'scripts', 'postgres-role.sh')], {
    env: {
      PATH: `${bin}:${process.env.PATH}`,
      PGHOST: '127.0.0.1',
      PGPORT: String(server.port),
      POSTGRES_USER: new URL(server.url()).username,
      POSTGRES_DB: db,
      COLLAB_DB_ROLE: ROLE,
      COLLAB_DB_PASSWORD: PASSWORD,
    },
    encoding: 'utf8',
  });
  assert.is(made.status, 0, made.stderr);
  roleUrl = `postgres://${ROLE}:${PASSWORD}@127.0.0.1:${server.port}/${db}`;

  const [role] = await asSuperuser<{ rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean; rolreplication: boolean; rolbypassrls: boolean }>(
    'SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = $1',
    [ROLE],
  );
  assert.equal(role, { rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false });

  svc = await startService({ POSTGRES_URL: roleUrl, SECRETS_KEY, DATA_DIR: dataDir });
  await waitHealthy(svc, 60_000);
  const ws = await post(svc, '/v2/workspace/create', { ownerEmail: 'ops@example.com' });
  assert.is(ws.status, 200, JSON.stringify(ws.body));
  const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  const add = await post(svc, '/v2/organizations/documents/add', {
    organizationId: 'acme',
    createOrganization: true,
    documents: [{ documentId: 'd1', documentName: 'One' }, { documentId: 'd2', documentName: 'Two' }],
  }, headers);
  assert.is(add.status, 200, JSON.stringify(add.body));
  const got = await post(svc, '/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 10 }, headers);
  assert.is(got.status, 200, JSON.stringify(got.body));
  assert.equal(got.body.result.data.map((d: { id: string }) => d.id).sort(), ['d1', 'd2']);

  // Every table the service made is in the role's schema and owned by it; none in `public`.
  const tables = await asSuperuser<{ schemaname: string; tablename: string; tableowner: string }>(
    `SELECT schemaname, tablename, tableowner FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`,
  );
  assert.ok(tables.some((t) => t.tablename === 'events'), JSON.stringify(tables));
  assert.ok(tables.some((t) => t.tablename.startsWith('rm_')), JSON.stringify(tables));
  assert.equal(tables.filter((t) => t.schemaname !== ROLE || t.tableowner !== ROLE), []);

  // And it can do nothing else: no table outside its schema, no database, no role.
  const c = new pg.Client({ connectionString: roleUrl });
  await c.connect();
  try {
    // A transaction left open would hold every follower back: the role's sessions end one.
    assert.is((await c.query('SHOW idle_in_transaction_session_timeout')).rows[0].idle_in_transaction_session_timeout, '1min');
    for (const sql of ['CREATE TABLE public.intruder (i int)', 'CREATE SCHEMA intruder', 'CREATE DATABASE intruder', 'CREATE ROLE intruder']) {
      const err = await c.query(sql).then(() => null, (e: { code?: string }) => e);
      assert.is(err?.code, '42501', `${sql} must be refused for lack of privilege`);
    }
  } finally {
    await c.end();
  }
  // Nor may any other (non-superuser) role of the cluster connect to the service's database.
  const other = `${ROLE}_other`;
  await asSuperuser(`CREATE ROLE ${other} LOGIN`);
  const o = new pg.Client({ connectionString: `postgres://${other}@127.0.0.1:${server.port}/${db}` });
  const refused = await o.connect().then(() => null, (e: { code?: string }) => e);
  await o.end().catch(() => undefined);
  assert.is(refused?.code, '42501', 'another role connected to the service database');
  assert.equal(fs.readdirSync(dataDir), [], 'nothing written to DATA_DIR');
});

test('collab commands on POSTGRES_URL: workspace create, projections status and rebuild, audit, apikey rotate-signing-key and delete', async () => {
  assert.ok(roleUrl, 'the role test runs first');
  const created = cli('workspace', 'create', '--email', 'cli@example.com', '--workspace-name', 'From the CLI');
  assert.is(created.code, 0, created.stderr);
  const ws = JSON.parse(created.stdout);
  assert.is(ws.name, 'From the CLI');
  const [apiKey, key] = Object.entries(ws.apiKeyList)[0] as [string, { authToken: string }];
  // The running service knows the workspace the CLI wrote: its key authenticates there.
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  const add = await post(svc, '/v2/organizations/documents/add', { organizationId: 'cli-org', createOrganization: true, documents: [{ documentId: 'c1' }] }, headers);
  assert.is(add.status, 200, JSON.stringify(add.body));

  const audit = cli('audit', '--api-key', apiKey, '--organization', 'cli-org', '--json');
  assert.is(audit.code, 0, audit.stderr);
  assert.equal(audit.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l).type), ['OrganizationCreated', 'DocumentAdded']);

  const before = cli('projections', 'status', '--json');
  assert.is(before.code, 0, before.stderr);
  const st = JSON.parse(before.stdout);
  assert.ok(st.projections.length > 0);
  assert.equal(st.projections.filter((p: { lag: number }) => p.lag !== 0), [], 'every projection caught up');

  const rebuilt = cli('projections', 'rebuild', '--all');
  assert.is(rebuilt.code, 0, rebuilt.stderr);
  assert.match(rebuilt.stdout, new RegExp(`switched read models from generation ${st.generation} to ${st.generation + 1}`));
  const after = JSON.parse(cli('projections', 'status', '--json').stdout);
  assert.is(after.generation, st.generation + 1);
  // The old generation's tables are dropped by the role itself (it owns them), the new ones
  // serve: the running service reads the document from the rebuilt read models.
  const gen = async () => {
    const r = await post(svc, '/v2/organizations/documents/get', { organizationId: 'cli-org', pageSize: 10 }, headers);
    return r.status === 200 ? r.body.result.data.map((d: { id: string }) => d.id) : r.body;
  };
  assert.equal(await gen(), ['c1']);

  // Secrets across processes: the CLI seals the new signing key with SECRETS_KEY, the service
  // opens it to sign the key's next user token.
  const rotated = cli('apikey', 'rotate-signing-key', apiKey);
  assert.is(rotated.code, 0, rotated.stderr);
  const { kid } = JSON.parse(rotated.stdout);
  assert.type(kid, 'string', rotated.stdout);
  const tok = await post(svc, '/v2/auth/generate_token', { userId: 'u', userProperties: { name: 'U', email: 'u@example.com' } }, headers);
  assert.is(tok.status, 200, JSON.stringify(tok.body));
  const header = JSON.parse(Buffer.from(String(tok.body.result.data.token).split('.')[0]!, 'base64url').toString('utf8'));
  assert.is(header.kid, kid);

  const deleted = cli('apikey', 'delete', apiKey);
  assert.is(deleted.code, 0, deleted.stderr);
  assert.equal(JSON.parse(deleted.stdout), { apiKey, deleted: true });
  assert.is((await post(svc, '/v2/agents/get', {}, headers)).status, 403, 'the service refuses the deleted key');

  assert.equal(fs.readdirSync(dataDir), [], 'nothing written to DATA_DIR');
});

test.run();
