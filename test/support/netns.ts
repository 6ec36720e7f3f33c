/**
 * Several hosts on this one machine, for the suites that cut a host's link (issue 23, item 5).
 *
 * Each host is a network namespace of its own (`ip netns add`), with its loopback up and one end
 * of a veth pair as `eth0`, holding its own address on one private /24. The other ends sit in a
 * bridge in the root namespace, which holds the subnet's first address: the test process (the
 * clients) reaches every host through it, and the hosts reach each other through the bridge.
 * Each host also gets a UTS namespace with its own hostname (`unshare --uts`), so the processes
 * on it see what processes on separate machines see: another hostname, and a pid that means
 * nothing on their own host (the lease's same-host shortcut, src/runtime/lease.ts, never
 * applies across them).
 *
 *   root namespace:  bridge cb<id> 10.a.b.1/24 -- veth cv<id>h<n> ==== eth0 10.a.b.<n+2>  namespace <host>
 *
 * `cut(host)` sets the root side of the host's veth down: the host's eth0 loses its carrier and
 * every packet either way is dropped, as when a cable is pulled or a switch port dies. Its TCP
 * connections are not reset (nothing tells either end): they stall, and resume if the link comes
 * back before either end gives up. `restore(host)` sets it up again.
 *
 * Names carry the test process's pid and a counter (namespaces `collab-<pid>x<n>-<host>`), so
 * two runs never collide, and a run killed before its cleanup is swept by the next one (its pid
 * is gone). `close()` ends every process started on a host, then deletes the namespaces and the
 * bridge; it also runs at process exit and on SIGINT/SIGTERM/SIGHUP, so a failing test leaves
 * nothing behind.
 *
 * Not root, or no `ip netns`: `createNetwork` throws an error that says so at length, and the
 * suite fails. It is never skipped.
 */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT, type Service } from './process.js';

const LOUD = (why: string) =>
  new Error(
    [
      '',
      '################################################################################',
      '# NO NETWORK NAMESPACES: the several-hosts suites FAIL (they are never skipped). #',
      '# They need root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2 (`ip netns`, #',
      '# veth and bridge links) and util-linux (`unshare`). .ci/run warns if not root. #',
      '################################################################################',
      `Why: ${why}`,
      '',
    ].join('\n'),
  );

function ip(args: string[], allowFail = false): string {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.error) throw LOUD(`\`ip ${args.join(' ')}\` could not run: ${r.error.message}`);
  if (r.status !== 0 && !allowFail) throw new Error(`ip ${args.join(' ')} failed (${r.status}): ${r.stderr.trim()}`);
  return r.stdout;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const NS_NAME = /^collab-(\d+)x(\d+)-/;
const LINK_NAME = /^c[bv](\d+)x\d+/;

/** Kills what still runs in a namespace, then deletes it (deleting it also deletes its veth pair). */
function deleteNamespace(ns: string) {
  const pids = ip(['netns', 'pids', ns], true).split(/\s+/).filter(Boolean).map(Number);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  ip(['netns', 'del', ns], true);
}

/** Namespaces and links left behind by runs whose process is gone (killed before cleaning up). */
function sweepStale() {
  for (const line of ip(['netns', 'list'], true).split('\n')) {
    const ns = line.split(' ')[0] ?? '';
    const m = NS_NAME.exec(ns);
    if (m && !alive(Number(m[1]))) deleteNamespace(ns);
  }
  for (const line of ip(['-o', 'link', 'show'], true).split('\n')) {
    const name = /^\d+:\s+([^:@\s]+)/.exec(line)?.[1] ?? '';
    const m = LINK_NAME.exec(name);
    if (m && !alive(Number(m[1]))) ip(['link', 'del', name], true);
  }
}

export interface Host {
  /** The host's short name (`db`, `api1`); also its hostname inside its namespace. */
  name: string;
  /** Its network namespace. */
  ns: string;
  /** Its address on the subnet. */
  address: string;
  /** The root namespace's end of its veth pair: what `cut` sets down. */
  link: string;
}

export interface Network {
  /** The subnet, as a CIDR (`10.a.b.0/24`). */
  cidr: string;
  /** The root namespace's address on it (the clients'). */
  gateway: string;
  addHost(name: string): Host;
  /** Pulls the host's cable: its link goes down, its connections stall. */
  cut(host: Host): void;
  restore(host: Host): void;
  /** Whether the host's link is up (for failure messages). */
  isUp(host: Host): boolean;
  /**
   * Runs `node --import tsx <script> ...args` on the host (its namespace, its hostname), as
   * test/support/process.ts's startService does on this one; `port` is where it listens.
   */
  start(host: Host, env: Record<string, string>, script: string, args: string[], port?: number): Service;
  /** Ends every process started on a host, deletes the namespaces and the bridge. Safe twice. */
  close(): Promise<void>;
}

const networks = new Set<{ closeSync(): void }>();
process.on('exit', () => {
  for (const n of networks) n.closeSync();
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    for (const n of networks) n.closeSync();
    networks.clear();
    process.kill(process.pid, signal);
  });
}

let counter = 0;

/** A subnet 10.a.b.0/24 that no address or route of the root namespace touches. */
function freeSubnet(): [number, number] {
  const used = ip(['-o', '-4', 'addr', 'show'], true) + ip(['-4', 'route', 'show'], true);
  for (let i = 0; i < 200; i++) {
    const a = 100 + Math.floor(Math.random() * 150);
    const b = Math.floor(Math.random() * 256);
    if (!used.includes(`10.${a}.${b}.`) && !used.includes(`10.${a}.0.0/16`) && !/(^|\s)10\.0\.0\.0\/8/.test(used)) return [a, b];
  }
  throw new Error('no free 10.a.b.0/24 subnet found');
}

export function createNetwork(): Network {
  if (process.platform !== 'linux') throw LOUD(`network namespaces are Linux only (this is ${process.platform})`);
  if (process.getuid?.() !== 0) throw LOUD(`this process runs as uid ${process.getuid?.()}, not root: \`ip netns add\` needs root`);
  for (const tool of ['ip', 'unshare', 'hostname']) {
    const r = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' });
    if (r.status !== 0) throw LOUD(`\`${tool}\` is not installed (iproute2, util-linux, hostname)`);
  }
  sweepStale();
  const id = `${process.pid}x${counter++}`;
  const [a, b] = freeSubnet();
  const prefix = `10.${a}.${b}`;
  const bridge = `cb${id}`;
  const hosts: Host[] = [];
  const services: Service[] = [];
  let closed = false;

  const closeSync = () => {
    if (closed) return;
    closed = true;
    networks.delete(handle);
    for (const s of services) {
      try {
        if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
      } catch {
        /* gone */
      }
    }
    for (const h of hosts) deleteNamespace(h.ns);
    ip(['link', 'del', bridge], true);
  };
  const handle = { closeSync };
  networks.add(handle);

  try {
    ip(['link', 'add', bridge, 'type', 'bridge']);
  } catch (error) {
    closed = true;
    networks.delete(handle);
    throw LOUD(`could not create a bridge: ${(error as Error).message}`);
  }
  ip(['addr', 'add', `${prefix}.1/24`, 'dev', bridge]);
  ip(['link', 'set', bridge, 'up']);

  const network: Network = {
    cidr: `${prefix}.0/24`,
    gateway: `${prefix}.1`,
    addHost(name) {
      if (!/^[a-z][a-z0-9]{0,9}$/.test(name)) throw new Error(`host name ${JSON.stringify(name)}: lower-case letters and digits, at most 10`);
      if (hosts.length >= 250) throw new Error('at most 250 hosts');
      const n = hosts.length;
      const host: Host = { name, ns: `collab-${id}-${name}`, address: `${prefix}.${n + 2}`, link: `cv${id}h${n}` };
      if (host.link.length > 15) throw new Error(`interface name ${host.link} is longer than 15 characters`);
      try {
        ip(['netns', 'add', host.ns]);
      } catch (error) {
        throw LOUD(`\`ip netns add\` failed: ${(error as Error).message}`);
      }
      hosts.push(host);
      const inside = `ci${id}h${n}`.slice(0, 15);
      ip(['link', 'add', host.link, 'type', 'veth', 'peer', 'name', inside]);
      ip(['link', 'set', inside, 'netns', host.ns]);
      ip(['-n', host.ns, 'link', 'set', inside, 'name', 'eth0']);
      ip(['-n', host.ns, 'addr', 'add', `${host.address}/24`, 'dev', 'eth0']);
      ip(['-n', host.ns, 'link', 'set', 'lo', 'up']);
      ip(['-n', host.ns, 'link', 'set', 'eth0', 'up']);
      ip(['link', 'set', host.link, 'master', bridge]);
      ip(['link', 'set', host.link, 'up']);
      return host;
    },
    cut(host) {
      ip(['link', 'set', host.link, 'down']);
    },
    restore(host) {
      ip(['link', 'set', host.link, 'up']);
    },
    isUp(host) {
      return /state UP|,UP[,>]/.test(ip(['-o', 'link', 'show', host.link], true));
    },
    start(host, env, script, args, port = 8080) {
      // `ip netns exec` and `unshare` exec their command, and so does the shell: the child's
      // pid is node's, so signals (kill -9) reach the service itself.
      const child = spawn(
        'ip',
        ['netns', 'exec', host.ns, 'unshare', '--uts', '--', 'sh', '-c', 'hostname "$0" && exec "$@"', host.name, process.execPath, '--import', 'tsx', path.join(ROOT, script), ...args],
        {
          cwd: ROOT,
          env: { ...process.env, LOG_LEVEL: 'warn', SIGNUP_RATE_PER_MINUTE: '0', ...env, HOST: host.address, PORT: String(port) },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      child.stdout!.on('data', (c) => (out += c));
      child.stderr!.on('data', (c) => (out += c));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.on('exit', (code, signal) => resolve({ code, signal })),
      );
      const s: Service = { child, url: `http://${host.address}:${port}`, output: () => out, exited };
      services.push(s);
      return s;
    },
    async close() {
      for (const s of services) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
      await Promise.all(services.map((s) => s.exited));
      closeSync();
    },
  };
  return network;
}
