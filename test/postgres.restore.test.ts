/**
 * A logical backup restored onto a fresh server (issue 37, item 1), step by step as
 * docs/operations.md's runbook ("Backup and restore") writes it, on two throwaway PostgreSQL
 * servers: the old one has handed out thousands more transaction ids than the new one, so the
 * restored log's transaction ids are far ahead of the new server's counter. Once, every write
 * after such a restore answered 200 and never appeared (its transaction id sorted before the
 * restored log's, behind every reader's checkpoint), and a rebuild on it stopped short.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { tempDir } from './support/app.js';
import { ROOT, post, startService, waitHealthy, type Service } from './support/process.js';
import { postgresBinDir, startPostgres, type PostgresServer } from './support/postgres.js';

const SECRETS_KEY = Buffer.alloc(32, 9).toString('base64');
/** Transaction ids the old server hands out beyond the new one's (a busy server's months, in small). */
const XIDS_AHEAD = 3000;

let oldServer: PostgresServer;
let newServer: PostgresServer;
const services: Service[] = [];
const dirs: string[] = [];

test.after(async () => {
  for (const s of services) {
    if (s.child.exitCode === null) {
      s.child.kill('SIGTERM');
      await s.exited;
    }
  }
  await oldServer?.close();
  await newServer?.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function serve(url: string): Promise<Service> {
  const dataDir = tempDir('collab-pg-restore-');
  dirs.push(dataDir);
  const svc = await startService({ POSTGRES_URL: url, SECRETS_KEY, DATA_DIR: dataDir });
  services.push(svc);
  await waitHealthy(svc, 60_000);
  return svc;
}

async function stop(svc: Service) {
  svc.child.kill('SIGTERM');
  await svc.exited;
}

const pgTool = (name: string, args: string[]) => {
  const bin = postgresBinDir();
  assert.ok(bin, 'no PostgreSQL binaries');
  const r = spawnSync(path.join(bin, name), args, { encoding: 'utf8', timeout: 120_000 });
  assert.is(r.status, 0, `${name} ${args.join(' ')}: ${r.stderr}`);
  return r;
};

const cli = (url: string, dataDir: string, ...args: string[]) => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), ...args], {
    cwd: ROOT,
    env: { ...process.env, POSTGRES_URL: url, SECRETS_KEY, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.is(r.status, 0, `collab ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};

test('pg_dump, pg_restore onto a fresh server whose transaction counter is behind the log: every later write shows, and a rebuild there sees the whole log', async () => {
  oldServer = await startPostgres();
  newServer = await startPostgres();
  const oldUrl = await oldServer.freshDatabase('collab_before');

  // The old server: a workspace and documents, with many transactions in between.
  let svc = await serve(oldUrl);
  const ws = await post(svc, '/v2/workspace/create', { ownerEmail: 'restore@example.com' });
  assert.is(ws.status, 200, JSON.stringify(ws.body));
  const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  const add = (svc: Service, ids: string[]) =>
    post(svc, '/v2/organizations/documents/add', { organizationId: 'acme', createOrganization: true, documents: ids.map((id) => ({ documentId: id, documentName: id })) }, headers);
  assert.is((await add(svc, ['before1'])).status, 200);
  const burn = new pg.Client({ connectionString: oldUrl });
  await burn.connect();
  try {
    for (let i = 0; i < XIDS_AHEAD; i++) await burn.query('SELECT pg_current_xact_id()');
  } finally {
    await burn.end();
  }
  assert.is((await add(svc, ['before2'])).status, 200);
  await stop(svc);


  // The runbook: a custom-format dump, a new empty database on the new server, pg_restore.
  const dump = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'collab-dump-')), 'collab.dump');
  dirs.push(path.dirname(dump));
  pgTool('pg_dump', ['-Fc', '-f', dump, '-d', oldUrl]);
  const newUrl = await newServer.freshDatabase('collab_after');
  pgTool('pg_restore', ['--no-owner', '-d', newUrl, dump]);

  // The precondition that made writes vanish: the new server's counter is behind the restored log.
  const check = new pg.Client({ connectionString: newUrl });
  await check.connect();
  try {
    const r = await check.query<{ top: string; now: string }>(
      'SELECT (SELECT e.transaction_id::text AS t FROM events e ORDER BY e.transaction_id DESC LIMIT 1) AS top, pg_current_xact_id()::text AS now',
    );
    assert.ok(BigInt(r.rows[0]!.top) > BigInt(r.rows[0]!.now), `restored log ${r.rows[0]!.top} ahead of the new server's counter ${r.rows[0]!.now}`);
  } finally {
    await check.end();
  }

  // The service on the new server: what was there, and every write after it.
  svc = await serve(newUrl);
  const ids = async () => {
    const got = await post(svc, '/v2/organizations/documents/get', { organizationId: 'acme', pageSize: 100 }, headers);
    assert.is(got.status, 200, JSON.stringify(got.body));
    return got.body.result.data.map((d: { id: string }) => d.id).sort();
  };
  assert.equal(await ids(), ['before1', 'before2']);
  const after = await add(svc, ['after1']);
  assert.is(after.status, 200, JSON.stringify(after.body));
  assert.equal(await ids(), ['after1', 'before1', 'before2'], 'a write after the restore shows at once (read-your-writes)');
  await stop(svc);

  // A rebuild on the restored database replays the whole log, the write after the restore included.
  const cliDir = tempDir('collab-pg-restore-cli-');
  dirs.push(cliDir);
  cli(newUrl, cliDir, 'projections', 'rebuild', '--all');
  svc = await serve(newUrl);
  assert.equal(await ids(), ['after1', 'before1', 'before2'], 'after the rebuild');
  assert.is((await add(svc, ['after2'])).status, 200);
  assert.equal(await ids(), ['after1', 'after2', 'before1', 'before2'], 'a write after the rebuild');
});

test.run();
