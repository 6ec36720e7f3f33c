/**
 * Split roles and an append-only log (issue 37, item 5), on the suites' throwaway PostgreSQL
 * server, as docs/operations.md's "Roles" writes it: scripts/postgres-role.sh makes the owner
 * and a runtime role, `collab migrate --runtime-role` runs as the owner, the service runs as
 * the runtime role and serves writes and reads, and the database refuses the runtime role any
 * change to the log (UPDATE, DELETE, TRUNCATE, ALTER, DROP), which it could all do before.
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

const SECRETS_KEY = Buffer.alloc(32, 13).toString('base64');
const OWNER = `collab_owner_${process.pid}`;
const RUNTIME = `collab_app_${process.pid}`;
const PASSWORD = '0123456789abcdef0123456789abcdef';

let server: PostgresServer;
let db: string;
let dataDir: string;
let svc: Service | undefined;

test.before(async () => {
  server = await sharedPostgres();
  db = new URL(await server.freshDatabase('collab_roles')).pathname.slice(1);
  dataDir = tempDir('collab-pg-roles-');
});

test.after(async () => {
  if (svc && svc.child.exitCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const urlAs = (role: string) => `postgres://${role}:${PASSWORD}@127.0.0.1:${server.port}/${db}`;

const cli = (url: string, ...args: string[]) =>
  spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), ...args], {
    cwd: ROOT,
    env: { ...process.env, POSTGRES_URL: url, SECRETS_KEY, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    timeout: 120_000,
  });

test('the owner migrates, the runtime role serves, and the database refuses it any change to the log', async () => {
  const bin = postgresBinDir();
  assert.ok(bin, 'no PostgreSQL binaries (psql)');
  const made = spawnSync('sh', [path.join(ROOT, 'scripts', 'postgres-role.sh')], {
    env: {
      PATH: `${bin}:${process.env.PATH}`,
      PGHOST: '127.0.0.1',
      PGPORT: String(server.port),
      POSTGRES_USER: new URL(server.url()).username,
      POSTGRES_DB: db,
      COLLAB_DB_ROLE: OWNER,
      COLLAB_DB_PASSWORD: PASSWORD,
      COLLAB_DB_RUNTIME_ROLE: RUNTIME,
      COLLAB_DB_RUNTIME_PASSWORD: PASSWORD,
    },
    encoding: 'utf8',
  });
  assert.is(made.status, 0, made.stderr);

  // Before the owner migrates, the runtime role cannot make the log's tables: it says what to run.
  const early = cli(urlAs(RUNTIME), 'projections', 'status');
  assert.is.not(early.status, 0);
  assert.match(early.stderr, /collab migrate/);

  const migrated = cli(urlAs(OWNER), 'migrate', '--runtime-role', RUNTIME);
  assert.is(migrated.status, 0, migrated.stderr);
  assert.match(migrated.stdout, /schema at version \d+/);

  svc = await startService({ POSTGRES_URL: urlAs(RUNTIME), SECRETS_KEY, DATA_DIR: dataDir });
  await waitHealthy(svc, 60_000);
  const ws = await post(svc, '/v2/workspace/create', { ownerEmail: 'roles@example.com' });
  assert.is(ws.status, 200, JSON.stringify(ws.body));
  const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  const add = await post(svc, '/v2/organizations/documents/add', { organizationId: 'acme', createOrganization: true, documents: [{ documentId: 'd1', documentName: 'One' }] }, headers);
  assert.is(add.status, 200, JSON.stringify(add.body));
  const got = await post(svc, '/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 10 }, headers);
  assert.equal(got.body.result.data.map((d: { id: string }) => d.id), ['d1']);

  const c = new pg.Client({ connectionString: urlAs(RUNTIME) });
  await c.connect();
  try {
    assert.ok(Number((await c.query('SELECT count(*) AS n FROM events')).rows[0].n) > 0, 'it reads the log');
    for (const sql of ['UPDATE events SET type = type', 'DELETE FROM events', 'TRUNCATE events', 'ALTER TABLE events DISABLE TRIGGER ALL', 'DROP TABLE events']) {
      const err = await c.query(sql).then(() => null, (e: { code?: string }) => e);
      assert.is(err?.code, '42501', `${sql} must be refused for lack of privilege`);
    }
  } finally {
    await c.end();
  }
  // The read models are its own: a rebuild (new tables, old ones dropped) works as that role.
  const rebuilt = cli(urlAs(RUNTIME), 'projections', 'rebuild', '--all');
  assert.is(rebuilt.status, 0, rebuilt.stderr);
});

test.run();
