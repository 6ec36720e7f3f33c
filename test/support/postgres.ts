/**
 * A throwaway PostgreSQL server for the suites that run against a real one: a temporary cluster
 * (`initdb`) on a free port, from Debian's binaries (/usr/lib/postgresql/<version>/bin, package
 * `postgresql`; `.ci/run` installs it when missing). fsync stays on: the suites check what
 * survives a stop and a kill, which a server that does not sync would fake.
 *
 * - `sharedPostgres()`: one server per test process (uvu runs every file in one process), started
 *   on first use and stopped when the process exits; each test takes its own database
 *   (`freshDatabase()`), so nothing leaks between tests.
 * - `startPostgres()`: a server of its own, for the fault tests that stop and start it.
 *
 * initdb and postgres refuse to run as root: as root, both run as the `postgres` user (setpriv,
 * which execs, so the child's pid is the postmaster's), in a temp dir that user owns.
 *
 * No server, no pass: when none can start, `startPostgres` throws an error that says so at length,
 * and the suite that needed it fails. It is never skipped.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './process.js';

/** Where Debian installs the server binaries, newest version first; PG_BIN overrides. */
export function postgresBinDir(): string | null {
  if (process.env.PG_BIN) return fs.existsSync(path.join(process.env.PG_BIN, 'postgres')) ? process.env.PG_BIN : null;
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return null;
  const versions = fs
    .readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const dir = path.join(root, v, 'bin');
    if (fs.existsSync(path.join(dir, 'postgres')) && fs.existsSync(path.join(dir, 'initdb'))) return dir;
  }
  return null;
}

const LOUD = (why: string) =>
  new Error(
    [
      '',
      '################################################################################',
      '# NO POSTGRESQL SERVER COULD BE STARTED: the PostgreSQL suites FAIL (they are   #',
      '# never skipped). Install Debian\'s server: apt-get install postgresql           #',
      '# (.ci/run does), or point PG_BIN at a directory holding initdb and postgres.   #',
      '################################################################################',
      `Why: ${why}`,
      '',
    ].join('\n'),
  );

const SUPERUSER = 'collab_test';

export interface PostgresServer {
  port: number;
  /** The cluster's data directory (for pg_ctl). */
  dataDir: string;
  /** A connection string to `database` (default: the `postgres` database) as the superuser. */
  url(database?: string): string;
  /** A new empty database; returns its connection string. */
  freshDatabase(prefix?: string): Promise<string>;
  /** `pg_ctl stop -m <mode>`: the server goes down as an operator (fast) or a crash (immediate) would take it. */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** `pg_ctl promote`: a standby becomes a primary (waits until it accepts writes). */
  promote(): Promise<void>;
  /** Stops it and removes its files. */
  close(): Promise<void>;
  /** The server's own log (for failure messages). */
  log(): string;
}

/** The `postgres` user's ids when we run as root (servers refuse root), else null. */
export function asPostgres(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const r = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) throw LOUD('running as root and there is no `postgres` user to run initdb and postgres as');
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/** `cmd args` as the postgres user when we are root (setpriv execs: no process in between). */
export function command(bin: string, args: string[], user: { uid: number; gid: number } | null): [string, string[]] {
  if (!user) return [bin, args];
  return ['setpriv', [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', bin, ...args]];
}

const live = new Set<PostgresServer & { stopSync(): void }>();
process.on('exit', () => {
  for (const s of live) s.stopSync();
});
// Interrupted (Ctrl-C, a CI timeout): stop the servers too, then die as the signal asked.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    for (const s of live) s.stopSync();
    live.clear();
    process.kill(process.pid, signal);
  });
}

/**
 * Where the server runs. By default on this host's loopback; `netns`: inside that network
 * namespace (`ip netns exec`), listening on `host` only, and trusting connections from `trust`
 * (a CIDR, the namespaces' subnet), for the several-hosts suite (test/support/netns.ts).
 */
export interface StartOptions {
  netns?: { name: string; host: string; trust: string };
  /** A hot standby of this server: its data from `pg_basebackup -R -X stream` (streaming replication), not initdb. */
  standbyOf?: PostgresServer;
}

export async function startPostgres(options: StartOptions = {}): Promise<PostgresServer> {
  const ns = options.netns;
  const host = ns?.host ?? '127.0.0.1';
  const bin = postgresBinDir();
  if (!bin) throw LOUD('no initdb/postgres binaries under /usr/lib/postgresql/<version>/bin (and PG_BIN unset)');
  const user = asPostgres();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-pg-'));
  const dataDir = path.join(root, 'data');
  const sockets = path.join(root, 'sock');
  fs.mkdirSync(sockets);
  if (user) {
    fs.chownSync(root, user.uid, user.gid);
    fs.chownSync(sockets, user.uid, user.gid);
  }
  const run = (name: string, args: string[]) => {
    const [c, a] = command(path.join(bin, name), args, user);
    return spawnSync(c, a, { encoding: 'utf8', cwd: root });
  };
  const inNamespace = ([c, a]: [string, string[]]): [string, string[]] => (ns ? ['ip', ['netns', 'exec', ns.name, c, ...a]] : [c, a]);
  // C collation: ids and strings order by code point, as in the embedded store.
  const init = options.standbyOf
    ? run('pg_basebackup', ['-D', dataDir, '-R', '-X', 'stream', '--checkpoint=fast', '-h', '127.0.0.1', '-p', String(options.standbyOf.port), '-U', SUPERUSER])
    : run('initdb', ['-D', dataDir, '-U', SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-instructions']);
  if (init.status !== 0) {
    fs.rmSync(root, { recursive: true, force: true });
    throw LOUD(`${options.standbyOf ? 'pg_basebackup' : 'initdb'} failed (${init.status}): ${init.stderr || init.stdout}`);
  }
  if (ns) fs.appendFileSync(path.join(dataDir, 'pg_hba.conf'), `host all all ${ns.trust} trust\n`);
  const port = await freePort();
  let child: ChildProcess | null = null;
  let logText = '';
  let exited: Promise<void> = Promise.resolve();

  const launch = async () => {
    const [c, a] = inNamespace(command(
      path.join(bin, 'postgres'),
      // Small shared memory and few connections: several servers may run at once on a CI box.
      ['-D', dataDir, '-p', String(port), '-k', sockets, '-h', host, '-c', 'max_connections=200', '-c', 'shared_buffers=32MB', '-c', 'fsync=on'],
      user,
    ));
    const p = spawn(c, a, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    child = p;
    p.stdout!.on('data', (d) => (logText += d));
    p.stderr!.on('data', (d) => (logText += d));
    // The server never keeps the test process alive: it is stopped at exit (below).
    p.unref();
    (p.stdout as unknown as { unref(): void }).unref();
    (p.stderr as unknown as { unref(): void }).unref();
    exited = new Promise((resolve) => p.on('exit', () => resolve()));
    let gone = false;
    void exited.then(() => (gone = true));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (gone) throw LOUD(`postgres exited at start: ${logText}`);
      const c2 = new pg.Client({ connectionString: url('postgres'), connectionTimeoutMillis: 2000 });
      try {
        await c2.connect();
        await c2.end();
        return;
      } catch {
        await c2.end().catch(() => undefined);
      }
      if (Date.now() > deadline) throw LOUD(`postgres did not accept connections within 30 s: ${logText}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const url = (database = 'postgres') => `postgres://${SUPERUSER}@${host}:${port}/${database}`;
  let n = 0;
  const server: PostgresServer & { stopSync(): void } = {
    port,
    dataDir,
    url,
    log: () => logText,
    async freshDatabase(prefix = 'collab') {
      const name = `${prefix}_${process.pid}_${n++}`;
      const c = new pg.Client({ connectionString: url('postgres') });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${name}`);
      } finally {
        await c.end();
      }
      return url(name);
    },
    async stop(mode) {
      const r = run('pg_ctl', ['stop', '-D', dataDir, '-m', mode, '-w', '-t', '60']);
      if (r.status !== 0) throw new Error(`pg_ctl stop -m ${mode} failed: ${r.stderr || r.stdout}`);
      await awaitReferenced(exited);
      child = null;
    },
    async start() {
      if (child) throw new Error('postgres is already running');
      await launch();
    },
    async promote() {
      const r = run('pg_ctl', ['promote', '-D', dataDir, '-w', '-t', '60']);
      if (r.status !== 0) throw new Error(`pg_ctl promote failed: ${r.stderr || r.stdout}`);
    },
    async close() {
      if (child) {
        child.kill('SIGINT'); // fast shutdown: disconnects clients, then exits
        await awaitReferenced(exited);
        child = null;
      }
      live.delete(server);
      fs.rmSync(root, { recursive: true, force: true });
    },
    stopSync() {
      // At process exit nothing asynchronous runs: signal, then wait in a child shell.
      const p = child;
      if (p?.pid) {
        try {
          process.kill(p.pid, 'SIGINT');
          spawnSync('sh', ['-c', `i=0; while kill -0 ${p.pid} 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; kill -9 ${p.pid} 2>/dev/null; true`]);
        } catch {
          /* already gone */
        }
      }
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
  live.add(server);
  try {
    await launch();
  } catch (error) {
    server.stopSync();
    live.delete(server);
    throw error;
  }
  return server;
}

/**
 * Waits for `p` with the event loop held open: the server's process and its pipes are
 * unreferenced (a test run must not wait for a server at exit), so with nothing else pending
 * Node would end in the middle of the wait and skip whatever follows it.
 */
async function awaitReferenced<T>(p: Promise<T>): Promise<T> {
  const keep = setInterval(() => {}, 1000);
  try {
    return await p;
  } finally {
    clearInterval(keep);
  }
}

let shared: Promise<PostgresServer> | null = null;

/** The process's shared server (started on first use, stopped at exit). */
export function sharedPostgres(): Promise<PostgresServer> {
  shared ??= startPostgres();
  return shared;
}

/** A new database on the shared server: its connection string. */
export async function freshDatabase(prefix?: string): Promise<string> {
  return (await sharedPostgres()).freshDatabase(prefix);
}
