/**
 * CPU per request, and where it goes (issue 27), for bench/run.ts.
 *
 * - `cpuSample(pid)`: a process's CPU time so far, read from /proc: the whole process (every
 *   thread: the event loop, the background projection thread, V8's GC helpers) and its main
 *   thread alone. Two samples around a load, divided by the requests answered, give the CPU
 *   per request the read goals are judged on; reading /proc costs the measured process
 *   nothing, so the figure is the same with or without the bench looking.
 * - `stageShares(profile, from, to)`: a V8 CPU profile of the main thread (`--cpu-prof`), its
 *   samples between two instants attributed to the stages of a request (body parsing,
 *   authentication, rate limit, validation, metrics, query, serialization, socket...). The
 *   profiler is on only in the budget scenario's own processes, so the other figures are
 *   measured without it.
 *
 * How a sample is attributed: its stack from the innermost frame outwards, to the first frame
 * that names a stage: our own code (dist/, or the ceiling's bench/*.mjs) by its module, a
 * library with a stage of its own (zod, prom-client, secure-json-parse, better-sqlite3),
 * Fastify, or Node's HTTP, socket and event-loop code. Native frames (JSON.stringify, a
 * SQLite statement, a socket write's binding) and Node's utilities (crypto, buffers, events)
 * name none and count for whoever called them. Innermost rather than outermost because
 * Fastify runs a request's stages as a chain of callbacks: the body parser's callback runs
 * the authentication hook, which runs the next, all on one stack. Timestamps of V8 profiles and `process.hrtime` are the same monotonic
 * clock on Linux, so the bench's own instants select a load's stretch of the profile.
 */
import fs from 'node:fs';

/** Linux's USER_HZ: /proc reports CPU time in these ticks (100 per second on every mainstream kernel). */
const TICKS_PER_SECOND = 100;

export interface CpuSample {
  /** Whole process, microseconds (user + system). */
  processUs: number;
  /** Main thread (the event loop) alone, microseconds. */
  mainUs: number;
  /** Time the main thread was ready to run but waited for a CPU (scheduler's run-queue wait), microseconds. */
  mainWaitUs: number;
  /** CPU by thread name (V8's helpers, libuv's pool, the background thread), microseconds; the main thread excluded. */
  threads: Map<string, number>;
}

function ticksOf(statPath: string, reaped = false): number {
  const stat = fs.readFileSync(statPath, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces: utime and
  // stime are the 14th and 15th fields of the line, the 12th and 13th after ")"; cutime and
  // cstime, the children it has waited for, the next two.
  const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(after[11]) + Number(after[12]) + (reaped ? Number(after[13]) + Number(after[14]) : 0);
}

export function cpuSample(pid: number): CpuSample {
  const us = (ticks: number) => (ticks * 1e6) / TICKS_PER_SECOND;
  const threads = new Map<string, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    if (tid === String(pid)) continue;
    try {
      const name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      threads.set(name, (threads.get(name) ?? 0) + us(ticksOf(`/proc/${pid}/task/${tid}/stat`)));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  // schedstat: time on a CPU, time waiting on a run queue (nanoseconds), timeslices.
  const wait = Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1000;
  return { processUs: us(ticksOf(`/proc/${pid}/stat`)), mainUs: us(ticksOf(`/proc/${pid}/task/${pid}/stat`)), mainWaitUs: wait, threads };
}

/** CPU per request between two samples: whole process, main thread, the main thread's wait for a CPU, and each other thread name's. */
export function perRequest(before: CpuSample, after: CpuSample, answered: number) {
  const per = (us: number) => (answered > 0 ? us / answered : NaN);
  const threads: Record<string, number> = {};
  for (const [name, us] of after.threads) {
    const d = per(us - (before.threads.get(name) ?? 0));
    if (d > 0) threads[name] = d;
  }
  return { cpuUs: per(after.processUs - before.processUs), mainCpuUs: per(after.mainUs - before.mainUs), mainWaitUs: per(after.mainWaitUs - before.mainWaitUs), threads };
}

/**
 * The CPU of a PostgreSQL server so far, microseconds: its postmaster (the pid in its data
 * directory's postmaster.pid) and every process under it, the backends serving the service's
 * connections included, and the processes that have ended (the postmaster's reaped children:
 * a backend whose connection closed between two samples still counts).
 */
export function postgresCpuUs(dataDir: string): number {
  let total = 0;
  const pids = postgresPids(dataDir);
  for (const pid of pids) {
    try {
      total += (ticksOf(`/proc/${pid}/stat`, pid === pids[0]) * 1e6) / TICKS_PER_SECOND;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

/** A PostgreSQL server's processes now: its postmaster (postmaster.pid) and every process under it. */
export function postgresPids(dataDir: string): number[] {
  const root = Number(fs.readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const pids: number[] = [];
  const walk = (pid: number) => {
    pids.push(pid);
    try {
      for (const child of fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean)) walk(Number(child));
    } catch {
      // The process ended between the listing and the read.
    }
  };
  walk(root);
  return pids;
}

/** The stages, in the order a request meets them; the table prints them in this order. */
export const STAGES = [
  'HTTP & socket (Node)',
  'framework (Fastify: routing, hooks, reply)',
  'request id & edge hooks',
  'body parsing (JSON, depth)',
  'authentication',
  'rate limit',
  'validation',
  'query (handler, read store)',
  'serialization',
  'CORS (user-token routes)',
  'metrics',
  'event loop & timers (Node)',
  'GC',
  'V8 & native, unattributed',
] as const;
type Stage = (typeof STAGES)[number];

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The stage our own frame (or a library with a stage of its own) belongs to; undefined: not ours. */
function ownerStage({ url, functionName }: CallFrame): Stage | undefined {
  if (!url) return undefined;
  if (url.includes('/node_modules/')) {
    const dep = url.split('/node_modules/').pop()!;
    if (dep.startsWith('secure-json-parse/')) return 'body parsing (JSON, depth)';
    if (dep.startsWith('zod/')) return 'validation';
    if (dep.startsWith('prom-client/') || dep.startsWith('tdigest/') || dep.startsWith('bintrees/')) return 'metrics';
    if (dep.startsWith('better-sqlite3/')) return 'query (handler, read store)';
    if (dep.startsWith('nanoid/')) return 'request id & edge hooks';
    return undefined;
  }
  if (url.includes('/bench/')) return 'query (handler, read store)';
  if (!url.includes('/dist/')) return undefined;
  if (functionName === 'parseJsonBody' || url.endsWith('/src/http/json-depth.js')) return 'body parsing (JSON, depth)';
  if (functionName === 'validateBody' || url.endsWith('/src/http/validation.js')) return 'validation';
  if (functionName === 'serializeAnswer') return 'serialization';
  if (/\/src\/http\/(authentication|auth)\.js$|\/queries\/credentials\.js$|\/src\/shared\/ids\.js$/.test(url)) return 'authentication';
  if (/\/src\/http\/rate-limits?\.js$/.test(url)) return 'rate limit';
  if (url.endsWith('/src/http/metrics.js')) return 'metrics';
  if (url.endsWith('/src/http/cors.js')) return 'CORS (user-token routes)';
  if (/\/src\/http\/(request-id|edge)\.js$/.test(url)) return 'request id & edge hooks';
  return 'query (handler, read store)';
}

/** Fastify's, Node's HTTP and socket code, Node's event loop, or GC; undefined: a frame that names no stage. */
function frameworkStage({ url, functionName }: CallFrame): Stage | undefined {
  if (!url) {
    if (functionName === '(garbage collector)') return 'GC';
    if (/^(writev|writeUtf8String|writeLatin1String|writeBuffer|writeGeneric|onStreamRead|onread)$/i.test(functionName)) return 'HTTP & socket (Node)';
    return undefined;
  }
  if (url.includes('/node_modules/')) {
    const dep = url.split('/node_modules/').pop()!;
    if (dep.startsWith('fastify/lib/content-type-parser') || dep.startsWith('secure-json-parse/')) return 'body parsing (JSON, depth)';
    return 'framework (Fastify: routing, hooks, reply)';
  }
  if (/^node:(_http_|net$|stream|internal\/streams|internal\/stream_base|internal\/http)/.test(url)) return 'HTTP & socket (Node)';
  if (/^node:(internal\/process\/task_queues|internal\/timers|timers|internal\/async_hooks)/.test(url)) return 'event loop & timers (Node)';
  return undefined;
}

export interface StageShares {
  /** Share of the busy (non-idle) samples, 0..1, per stage. */
  shares: Map<Stage, number>;
  /** The heaviest functions (self time) of each stage: "name file:line" and share. */
  top: Map<Stage, Array<[string, number]>>;
  /** Busy time sampled in the window, seconds. */
  busySeconds: number;
}

/** The stages of the samples of `file` between `fromUs` and `toUs` (the profile's clock, process.hrtime's). */
export function stageShares(file: string, fromUs: number, toUs: number): StageShares {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOfNode = new Map<number, Stage | null>();
  const classify = (id: number): Stage | null => {
    const known = stageOfNode.get(id);
    if (known !== undefined) return known;
    const leaf = byId.get(id)!.callFrame;
    if (leaf.functionName === '(idle)') return null;
    const chain: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) chain.push(byId.get(at)!.callFrame);
    let stage: Stage | undefined;
    for (let i = 0; i < chain.length && !stage; i++) stage = ownerStage(chain[i]!) ?? frameworkStage(chain[i]!);
    const out = stage ?? 'V8 & native, unattributed';
    stageOfNode.set(id, out);
    return out;
  };
  const selfByStage = new Map<Stage, number>();
  const selfByNode = new Map<number, number>();
  let busy = 0;
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    if (t < fromUs || t >= toUs) continue;
    const dt = p.timeDeltas[i + 1] ?? 0;
    const stage = classify(p.samples[i]!);
    if (stage === null) continue;
    selfByStage.set(stage, (selfByStage.get(stage) ?? 0) + dt);
    selfByNode.set(p.samples[i]!, (selfByNode.get(p.samples[i]!) ?? 0) + dt);
    busy += dt;
  }
  const shares = new Map(STAGES.map((s) => [s, busy ? (selfByStage.get(s) ?? 0) / busy : 0]));
  const fnShares = new Map<Stage, Map<string, number>>();
  for (const [id, dt] of selfByNode) {
    const stage = classify(id)!;
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const where = url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(dist\/)?(?=src\/|queries\/|projections\/|commands\/|bench\/)/, '');
    const name = `${functionName || '(anonymous)'}${where ? ` ${where}:${lineNumber + 1}` : ''}`;
    const m = fnShares.get(stage) ?? new Map<string, number>();
    m.set(name, (m.get(name) ?? 0) + dt / busy);
    fnShares.set(stage, m);
  }
  const top = new Map([...fnShares].map(([s, m]) => [s, [...m].sort((a, b) => b[1] - a[1]).slice(0, 4)]));
  return { shares, top, busySeconds: busy / 1e6 };
}

/** The main thread's profile among those `--cpu-prof` wrote in `dir` for process `pid` (thread 0). */
export function mainThreadProfile(dir: string, pid: number): string {
  const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile') && f.includes(`.${pid}.0.`));
  if (!file) throw new Error(`no main-thread CPU profile of process ${pid} in ${dir} (${fs.readdirSync(dir).join(', ')})`);
  return `${dir}/${file}`;
}
