/**
 * A throwaway pgbouncer (Debian's package `pgbouncer`, /usr/sbin/pgbouncer; `.ci/run` and `npm
 * test` install it when missing) in front of a throwaway PostgreSQL server, with pgbouncer's
 * defaults except what a test must set: where it listens, where it forwards, the pool mode,
 * and trust authentication on loopback (as the server's). It runs as the `postgres` user when
 * we are root (pgbouncer refuses root).
 *
 * No pgbouncer, no pass: when it cannot start, the suite fails with a message saying why.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './process.js';
import { asPostgres, command, type PostgresServer } from './postgres.js';

const PGBOUNCER = process.env.PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer';

export interface Pgbouncer {
  port: number;
  /** A connection string to `database` through pgbouncer, as the server's superuser. */
  url(database?: string): string;
  log(): string;
  close(): Promise<void>;
}

export async function startPgbouncer(server: PostgresServer, mode: 'session' | 'transaction', extra: Record<string, string> = {}): Promise<Pgbouncer> {
  if (!fs.existsSync(PGBOUNCER)) throw new Error(`no pgbouncer at ${PGBOUNCER}: install Debian's package pgbouncer (npm test and .ci/run do), or set PGBOUNCER_BIN`);
  const user = asPostgres();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-pgbouncer-'));
  const serverUser = new URL(server.url()).username;
  const port = await freePort();
  const settings: Record<string, string> = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: path.join(root, 'users.txt'),
    pool_mode: mode,
    logfile: path.join(root, 'pgbouncer.log'),
    pidfile: path.join(root, 'pgbouncer.pid'),
    ...extra,
  };
  fs.writeFileSync(path.join(root, 'users.txt'), `"${serverUser}" ""\n`);
  fs.writeFileSync(
    path.join(root, 'pgbouncer.ini'),
    ['[databases]', `* = host=127.0.0.1 port=${server.port}`, '', '[pgbouncer]', ...Object.entries(settings).map(([k, v]) => `${k} = ${v}`), ''].join('\n'),
  );
  if (user) for (const f of ['', 'users.txt', 'pgbouncer.ini']) fs.chownSync(path.join(root, f), user.uid, user.gid);
  const [c, a] = command(PGBOUNCER, [path.join(root, 'pgbouncer.ini')], user);
  let out = '';
  const child: ChildProcess = spawn(c, a, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  child.unref();
  (child.stdout as unknown as { unref(): void }).unref();
  (child.stderr as unknown as { unref(): void }).unref();
  let gone = false;
  const exited = new Promise<void>((resolve) => child.on('exit', () => ((gone = true), resolve())));
  const log = () => out + (fs.existsSync(settings.logfile!) ? fs.readFileSync(settings.logfile!, 'utf8') : '');
  const url = (database = 'postgres') => `postgres://${serverUser}@127.0.0.1:${port}/${database}`;
  const close = async () => {
    if (!gone) {
      child.kill('SIGINT');
      const keep = setInterval(() => {}, 1000);
      await exited;
      clearInterval(keep);
    }
    fs.rmSync(root, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (gone) {
      const why = log();
      await close();
      throw new Error(`pgbouncer exited at start: ${why}`);
    }
    const probe = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 2000 });
    try {
      await probe.connect();
      await probe.query('SELECT 1');
      await probe.end();
      break;
    } catch {
      await probe.end().catch(() => undefined);
    }
    if (Date.now() > deadline) {
      const why = log();
      await close();
      throw new Error(`pgbouncer did not accept connections within 20 s: ${why}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  process.once('exit', () => {
    if (!gone) child.kill('SIGKILL');
  });
  return { port, url, log, close };
}
