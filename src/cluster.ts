/**
 * `serve --workers N`: this process becomes a node:cluster primary that serves nothing itself.
 * It forks N API processes (`--role api`), which all listen on the configured port through
 * cluster's shared handle, and one background process (`--role worker`: projections, webhooks,
 * the deletion cascade), which listens on nothing (see server.ts). With `--role api --workers N`
 * only the API processes are forked: the projections are applied by a worker run elsewhere.
 *
 * Why a background process rather than the worker role in this primary: on Linux the primary
 * accepts every connection and hands it to an API process (cluster's round-robin), so a
 * projection batch, a long synchronous stretch of SQLite writes, would stall the hand-off for
 * every request; and a crash in the background work would take the supervisor, and with it
 * every API process, down. Forked, it is restarted like any other child.
 *
 * Supervision: a child that exits while the primary is not stopping is logged and forked again
 * after a back-off (0.5 s, doubling up to 30 s; back to 0.5 s once a child ran 10 s), so a crash
 * loop does not spin. A child that fails before every child has once been serving means the
 * service cannot start (a port in use, a store that does not open): everything stops, exit 1,
 * as a single `serve` would. SIGTERM/SIGINT: the API processes get SIGTERM (each finishes its
 * in-flight requests, as a single `serve` does), then, once they are gone, the background
 * process; exit 0 once all have exited cleanly, 1 if one failed its shutdown or had to be
 * killed after `shutdownTimeoutMs`.
 *
 * This module only forks and supervises; server.ts stays the only module that listens, and the
 * children run its normal serve path.
 */
import cluster, { type Worker } from 'node:cluster';
import os from 'node:os';
import { ConfigError } from './config/config.js';
import { CLUSTER_RELAY_ENV, isNoticeMessage, relayNotice, type NoticeMessage } from './runtime/notices.js';

const MAX_WORKERS = 64;

/** `--workers` value: an integer 1..64, or `auto` (the CPUs this process may use, at most 64). */
export function parseWorkers(value: string): number {
  if (value === 'auto') return Math.max(1, Math.min(MAX_WORKERS, os.availableParallelism()));
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > MAX_WORKERS) {
    throw new ConfigError('--workers', `must be an integer from 1 to ${MAX_WORKERS} or auto, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/**
 * How many API processes share the configured limits, told to each child in its environment:
 * each enforces its share of every request limit (src/http/rate-limit.ts `limitsPerProcess`),
 * so the service as a whole holds the configured one.
 */
const API_PROCESSES_ENV = 'COLLAB_API_PROCESSES';

/** The number of API processes this cluster child shares its limits with; 1 outside a cluster. */
export function sharedLimitProcesses(env: NodeJS.ProcessEnv = process.env): number {
  if (!cluster.isWorker) return 1;
  const n = Number(env[API_PROCESSES_ENV]);
  return Number.isInteger(n) && n >= 1 && n <= MAX_WORKERS ? n : 1;
}

/** The message a child sends its primary once it serves (API) or works (background). */
const SERVING_MESSAGE = 'collab:serving';

export function tellPrimaryServing(role: string): void {
  if (cluster.isWorker) process.send?.({ type: SERVING_MESSAGE, role });
}

type ChildRole = 'api' | 'worker';
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LEVELS: Record<Level, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

export interface SuperviseOptions {
  /** The module the children run: server.ts from the sources, dist/src/server.js built. */
  serverModule: string;
  workers: number;
  /** Fork the background process too (`--role all`, the default). */
  background: boolean;
  logLevel: Level;
  /** Back-off of restarts (tests may shorten it). */
  restartInitialMs?: number;
  restartMaxMs?: number;
  /** A child that ran this long before exiting resets the back-off. */
  stableMs?: number;
  /** Longer than a child's own 10 s limit, so a child normally ends itself first. */
  shutdownTimeoutMs?: number;
}

interface Slot {
  role: ChildRole;
  /** 1..N for API processes, 0 for the background one; in log lines. */
  index: number;
  worker: Worker | null;
  startedAt: number;
  failures: number;
  restart: NodeJS.Timeout | null;
}

/**
 * Lines like the children's (pino's JSON: numeric level, time, pid, hostname, msg), on stdout
 * with theirs, so one log shows the supervisor's decisions among the children's lines.
 */
function primaryLogger(level: Level) {
  const min = LEVELS[level];
  const write = (n: number) => (obj: Record<string, unknown>, msg: string) => {
    if (n < min) return;
    process.stdout.write(JSON.stringify({ level: n, time: Date.now(), pid: process.pid, hostname: os.hostname(), role: 'primary', ...obj, msg }) + '\n');
  };
  return { error: write(50), warn: write(40), info: write(30) };
}

/** Runs the cluster until a signal stops it; resolves with the exit code for the primary. */
export function superviseCluster(options: SuperviseOptions): Promise<number> {
  return new Supervisor(options).run();
}

/** The primary's state and decisions: which child runs in which slot, restarts, the stop. */
class Supervisor {
  private readonly log: ReturnType<typeof primaryLogger>;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly stableMs: number;
  private readonly shutdownTimeoutMs: number;
  private readonly execArgv: string[];
  private readonly slots: Slot[] = [];
  private started = false;
  private stopping = false;
  private killed = false;
  private failedExit = false;
  private finish: (code: number) => void = () => {};
  private readonly done = new Promise<number>((resolve) => (this.finish = resolve));
  private readonly serving = new Set<Slot>();
  private onServing: (() => void) | null = null;
  /** Called on every child's exit while stopping. */
  private readonly exitWaiters = new Set<() => void>();

  constructor(private readonly options: SuperviseOptions) {
    this.log = primaryLogger(options.logLevel);
    this.initialMs = options.restartInitialMs ?? 500;
    this.maxMs = options.restartMaxMs ?? 30_000;
    this.stableMs = options.stableMs ?? 10_000;
    this.shutdownTimeoutMs = options.shutdownTimeoutMs ?? 15_000;
    // From the sources the children need tsx's loader like this process. `npx collab` registers
    // it in-process (bin/collab.mjs), so it is not always in execArgv: add it then, by absolute
    // path, since --import resolves from the working directory.
    this.execArgv = [...process.execArgv];
    if (options.serverModule.endsWith('.ts') && !this.execArgv.some((a) => a.includes('tsx'))) {
      this.execArgv.push('--import', import.meta.resolve('tsx'));
    }
    if (options.background) this.slots.push({ role: 'worker', index: 0, worker: null, startedAt: 0, failures: 0, restart: null });
    for (let i = 1; i <= options.workers; i++) this.slots.push({ role: 'api', index: i, worker: null, startedAt: 0, failures: 0, restart: null });
  }

  run(): Promise<number> {
    // Not once: a second signal (a group-wide one after ours) must not kill the primary, whose
    // children would then exit at once instead of finishing their requests.
    process.on('SIGTERM', () => this.stop('SIGTERM'));
    process.on('SIGINT', () => this.stop('SIGINT'));
    void this.start();
    return this.done;
  }

  /**
   * The background process first: processes opening one fresh DATA_DIR together race to
   * create its files and tables, and the API processes' writes wait for its projections anyway.
   */
  private async start(): Promise<void> {
    const bg = this.slots.filter((s) => s.role === 'worker');
    for (const s of bg) this.fork(s);
    await this.waitServing(bg);
    if (this.stopping) return;
    const api = this.slots.filter((s) => s.role === 'api');
    for (const s of api) this.fork(s);
    await this.waitServing(this.slots);
    if (this.stopping) return;
    this.started = true;
    const { workers, background } = this.options;
    this.log.info({ apiProcesses: workers, background }, `serving with ${workers} API process${workers === 1 ? '' : 'es'}`);
  }

  private waitServing(wanted: Slot[]): Promise<void> {
    return new Promise<void>((resolve) => {
      const check = () => {
        if (this.stopping || wanted.every((s) => this.serving.has(s))) {
          this.onServing = null;
          resolve();
        }
      };
      this.onServing = check;
      check();
    });
  }

  /** The running children but `from`, as the notice relay sends to them. */
  private noticeTargets(from: Slot) {
    return this.slots
      .filter((s) => s !== from && s.worker?.isConnected())
      .map((s) => ({ role: s.role, send: (m: NoticeMessage) => void s.worker!.send(m, undefined, () => {}) }));
  }

  private fork(slot: Slot): void {
    slot.restart = null;
    cluster.setupPrimary({ exec: this.options.serverModule, args: ['--role', slot.role], execArgv: this.execArgv });
    // Children whose cluster has its background process hear each other through this primary;
    // the others (`--role api --workers`: the worker runs elsewhere) watch the store instead.
    const worker = cluster.fork({ [API_PROCESSES_ENV]: String(this.options.workers), [CLUSTER_RELAY_ENV]: this.options.background ? '1' : '0' });
    slot.worker = worker;
    slot.startedAt = Date.now();
    const pid = worker.process.pid;
    this.log.info({ child: slot.role, slot: slot.index, childPid: pid }, `started ${slot.role === 'api' ? 'API' : 'background'} process`);
    // An IPC or signalling error must not end the supervisor (an unhandled 'error' would).
    worker.on('error', (err) => this.log.error({ child: slot.role, slot: slot.index, childPid: pid, err: String(err) }, 'child error'));
    worker.on('message', (m: { type?: string }) => {
      // A child appended or applied: the others that wait on it hear at once (src/runtime/notices.ts).
      if (isNoticeMessage(m)) return relayNotice(m, this.noticeTargets(slot));
      if (m?.type !== SERVING_MESSAGE) return;
      this.serving.add(slot);
      this.onServing?.();
    });
    worker.on('exit', (code, signal) => this.exited(slot, pid, code, signal));
  }

  private exited(slot: Slot, pid: number | undefined, code: number | null, signal: string | null): void {
    slot.worker = null;
    const wasServing = this.serving.delete(slot);
    const fields = { child: slot.role, slot: slot.index, childPid: pid, code, signal };
    if (this.stopping) {
      // A child still starting has no handler for SIGTERM yet and ends by the signal itself:
      // a clean stop too, since it never took a request.
      const clean = code === 0 || (signal === 'SIGTERM' && !wasServing);
      if (!clean) this.failedExit = true;
      this.log.info(fields, 'child exited');
      for (const w of [...this.exitWaiters]) w();
      return;
    }
    if (!this.started) {
      this.log.error(fields, 'child failed while starting; stopping');
      this.stop('start failure', true);
      return;
    }
    slot.failures = Date.now() - slot.startedAt >= this.stableMs ? 1 : slot.failures + 1;
    const delay = Math.min(this.maxMs, this.initialMs * 2 ** (slot.failures - 1));
    this.log.error({ ...fields, restartInMs: delay }, 'child exited unexpectedly; restarting');
    slot.restart = setTimeout(() => this.fork(slot), delay);
  }

  /** SIGTERM to these children; SIGKILL to those still running after the timeout. Resolves once all have exited. */
  private terminate(targets: Slot[]): Promise<void> {
    return new Promise<void>((resolve) => {
      const running = () => targets.filter((s) => s.worker !== null);
      const force = setTimeout(() => {
        for (const s of running()) {
          this.killed = true;
          this.log.error({ child: s.role, slot: s.index, childPid: s.worker!.process.pid }, `child still running after ${this.shutdownTimeoutMs} ms; killing it`);
          s.worker!.process.kill('SIGKILL');
        }
      }, this.shutdownTimeoutMs);
      const check = () => {
        if (running().length > 0) return;
        clearTimeout(force);
        this.exitWaiters.delete(check);
        resolve();
      };
      this.exitWaiters.add(check);
      for (const s of running()) s.worker!.process.kill('SIGTERM');
      check();
    });
  }

  private stop(reason: string, failure = false): void {
    if (this.stopping) return;
    this.stopping = true;
    if (failure) this.failedExit = true;
    this.log.info({ reason }, 'stopping every child');
    for (const s of this.slots) {
      if (s.restart) clearTimeout(s.restart);
      s.restart = null;
    }
    // The API processes first, the background process once they are gone: a write in flight
    // waits for the projections to show it (read-your-writes), which only the background
    // process applies; stopped first, it would leave such writes waiting for their timeout.
    void (async () => {
      await this.terminate(this.slots.filter((s) => s.role === 'api'));
      await this.terminate(this.slots.filter((s) => s.role === 'worker'));
      this.finish(this.killed || this.failedExit ? 1 : 0);
    })();
  }
}
