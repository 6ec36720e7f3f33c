#!/usr/bin/env node
// What `npm test` needs beyond Node, checked before anything runs (README, Quick start): the
// PostgreSQL suites start a throwaway server from PostgreSQL's server binaries, the browser
// tests drive Chromium, and the several-hosts suite makes network namespaces with `ip netns`
// (root). Where one is missing, `npm test` installs it as `.ci/run` does (Debian's packages,
// as root or with passwordless sudo); where it cannot, it stops at once with one message
// naming what is missing, the package that brings it and the variable that points elsewhere,
// instead of failing those suites twenty minutes later.
//
//   node scripts/test-prereqs.mjs     checks (and installs where it can); exit 1 with the message otherwise
//
// COLLAB_TEST_NO_INSTALL=1 checks only (no apt-get). Node built-ins only.
import { existsSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The PostgreSQL bin directory the suites would use (test/support/postgres.ts looks the same way), or null. */
function postgresBin(env) {
  if (env.PG_BIN) return existsSync(path.join(env.PG_BIN, 'postgres')) && existsSync(path.join(env.PG_BIN, 'initdb')) ? env.PG_BIN : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  for (const v of readdirSync(root).filter((d) => /^\d+$/.test(d)).sort((a, b) => Number(b) - Number(a))) {
    const dir = path.join(root, v, 'bin');
    if (existsSync(path.join(dir, 'postgres')) && existsSync(path.join(dir, 'initdb'))) return dir;
  }
  return null;
}

const onPath = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/** What is missing, each with the Debian package that brings it and how to point elsewhere. */
export function missing(env = process.env) {
  const out = [];
  if (!postgresBin(env)) {
    out.push({ what: 'PostgreSQL server binaries (initdb, postgres)', pkg: 'postgresql', instead: env.PG_BIN ? `PG_BIN=${env.PG_BIN} holds no initdb and postgres` : 'or set PG_BIN to a directory holding initdb and postgres' });
  }
  const chromium = env.CHROMIUM_PATH || '/usr/bin/chromium';
  if (!existsSync(chromium)) {
    out.push({ what: `Chromium (${chromium})`, pkg: 'chromium', instead: 'or set CHROMIUM_PATH to a Chromium or Chrome binary' });
  }
  const pgbouncer = env.PGBOUNCER_BIN || '/usr/sbin/pgbouncer';
  if (!existsSync(pgbouncer)) {
    out.push({ what: `pgbouncer (${pgbouncer}, for the pooler suite)`, pkg: 'pgbouncer', instead: 'or set PGBOUNCER_BIN to a pgbouncer binary' });
  }
  if (!onPath('ip')) out.push({ what: '`ip` (network namespaces for the several-hosts suite)', pkg: 'iproute2', instead: 'and run the tests as root' });
  if (process.getuid && process.getuid() !== 0) {
    out.push({ what: 'root (the several-hosts suite makes network namespaces: `ip netns add`)', pkg: null, instead: 'run npm test as root (a container or a throwaway VM, as CI does)' });
  }
  return out;
}

/** apt-get as root or through passwordless sudo; null where neither is possible. */
function aptRunner(env) {
  if (env.COLLAB_TEST_NO_INSTALL === '1' || !onPath('apt-get')) return null;
  if (process.getuid?.() === 0) return [];
  if (onPath('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0) return ['sudo', '-n'];
  return null;
}

function install(prefix, pkgs) {
  process.stderr.write(`npm test needs ${pkgs.join(', ')}: installing Debian's package${pkgs.length > 1 ? 's' : ''} (apt-get install ${pkgs.join(' ')})\n`);
  const run = (args) => {
    const [cmd, ...rest] = [...prefix, ...args];
    return spawnSync(cmd, rest, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0;
  };
  return run(['apt-get', 'update', '-qq']) && run(['apt-get', 'install', '-y', '-qq', ...pkgs]);
}

export function message(items) {
  return [
    'npm test cannot run everything on this machine: it needs',
    ...items.map((m) => `  - ${m.what}: ${m.pkg ? `Debian/Ubuntu package \`${m.pkg}\`, ` : ''}${m.instead}`),
    ...(items.some((m) => m.pkg) ? [`Install them (apt-get install ${items.filter((m) => m.pkg).map((m) => m.pkg).join(' ')}) and run npm test again.`] : []),
    'What each is for: (README, Quick start).',
    '',
  ].join('\n');
}

/** Checks, installs what it can, and returns the message for what is still missing (null: all there). */
export function ensureTestPrereqs(env = process.env) {
  let items = missing(env);
  if (items.length === 0) return null;
  const apt = aptRunner(env);
  if (apt) {
    const pkgs = [...new Set(items.map((m) => m.pkg).filter(Boolean))];
    if (pkgs.length) install(apt, pkgs);
    items = missing(env);
    if (items.length === 0) return null;
  }
  return message(items);
}

const isEntry = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntry) {
  const why = ensureTestPrereqs();
  if (why) {
    process.stderr.write(why);
    process.exit(1);
  }
}
