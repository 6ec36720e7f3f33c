/**
 * The background work of a process (projections, webhook delivery, deletion cascades) on a
 * worker thread, so the core that answers requests does not also apply read models.
 *
 * Why: a documents/add of 100 documents costs the request's core about 90 us per document
 * when the same thread also writes every read-model and audit row; with the projections on
 * the second core the request path keeps only the command and its append (docs/performance.md).
 *
 * The thread is an ordinary `--role worker` (src/composition/services.ts) on its own connections to the
 * same store files, holding the same leases, so nothing here is new for correctness: the
 * multi-process rules apply (compare-and-set checkpoints, leases, the read cache re-checking
 * other connections' commits). What the thread adds is speed of notice, in both directions:
 *
 * - main -> thread `appended`: the log grew (the thread's own store does not see this
 *   process's appends, so without it the thread would find them only at its next poll);
 * - thread -> main `applied(position)`: every projection passed `position`; the main runner
 *   (an observer) answers the requests waiting for read-your-writes at once.
 *
 * A thread that dies is started again after a pause; its work is durable (checkpoints and the
 * cascade queue are in the read store), so a restart resumes where the last commit left it.
 */
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config/config.js';
import type { LogPosition } from '../ports/event-store.js';
import type { RunnerLogger } from './projection-runner.js';

export type ToThread = { type: 'appended' } | { type: 'settle'; id: number } | { type: 'stop' };
export type FromThread =
  | { type: 'ready' }
  | { type: 'applied'; position: LogPosition }
  | { type: 'settled'; id: number; error?: string }
  | { type: 'log'; level: 'error' | 'warn' | 'info'; obj: unknown; msg?: string }
  | { type: 'stopped' };

export interface BackgroundOptions {
  logger: RunnerLogger;
  /** Every projection passed this position (the main runner's `observed`). */
  onApplied: (position: LogPosition) => void;
  /** Pause before starting a thread that died again. */
  restartMs?: number;
  /** How long `stop` waits for the thread to finish its batch and close before ending it. */
  stopTimeoutMs?: number;
}

/**
 * The thread's entry. Compiled (dist/, production), this module is background.js and the
 * worker is background-worker.js beside it, plain JavaScript. Run from the sources (tsx:
 * development and tests), this module is background.ts, and the thread needs tsx's loader
 * registered before it can import background-worker.ts: background-entry.mjs does that. The
 * worker thread does not inherit the loader from the process that started it.
 */
const ENTRY = import.meta.url.endsWith('.ts') ? new URL('../background-entry.mjs', import.meta.url) : new URL('../background-worker.js', import.meta.url);

export class BackgroundThread {
  private worker: Worker | null = null;
  private stopping = false;
  private pendingPoke = false;
  private nextId = 0;
  private readonly settling = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private exited: Promise<void> = Promise.resolve();
  /**
   * The thread's lease holder id, the same for every thread started: a thread started after
   * one died (main saw it exit, so two never run at once) takes its leases over at once.
   */
  private readonly leaseHolder = `${os.hostname()}:${process.pid}:background-${randomUUID().slice(0, 8)}`;

  constructor(
    private readonly config: Config,
    private readonly options: BackgroundOptions,
  ) {}

  /** Starts the thread; resolves once it has opened its stores and started following the log. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      // execArgv: [] keeps flags such as --cpu-prof to the main thread; from the sources the
      // entry registers tsx itself (ENTRY), so the thread runs the same code as the process.
      const worker = new Worker(ENTRY, { workerData: { config: this.config, leaseHolder: this.leaseHolder }, execArgv: [] });
      this.worker = worker;
      let ready = false;
      worker.on('message', (m: FromThread) => {
        switch (m.type) {
          case 'ready':
            ready = true;
            resolve();
            return;
          case 'applied':
            this.options.onApplied(m.position);
            return;
          case 'settled': {
            const s = this.settling.get(m.id);
            this.settling.delete(m.id);
            if (m.error) s?.reject(new Error(m.error));
            else s?.resolve();
            return;
          }
          case 'log':
            this.options.logger[m.level](m.obj, m.msg);
            return;
          case 'stopped':
            return;
        }
      });
      worker.on('error', (err) => {
        this.options.logger.error({ err }, 'background thread failed');
        if (!ready) reject(err);
      });
      this.exited = new Promise((done) =>
        worker.once('exit', (code) => {
          if (this.worker === worker) this.worker = null;
          for (const s of this.settling.values()) s.reject(new Error('The background thread stopped.'));
          this.settling.clear();
          done();
          if (!ready) return reject(new Error(`background thread exited with code ${code} while starting`));
          if (!this.stopping) {
            this.options.logger.error({ code }, 'background thread exited; starting it again');
            setTimeout(() => {
              if (!this.stopping) this.start().catch((err) => this.options.logger.error({ err }, 'background thread did not start again'));
            }, this.options.restartMs ?? 1000).unref();
          }
        }),
      );
    });
  }

  /** The log grew: tell the thread, once per turn of the event loop however many appends. */
  poke(): void {
    if (this.pendingPoke || !this.worker) return;
    this.pendingPoke = true;
    setImmediate(() => {
      this.pendingPoke = false;
      this.post({ type: 'appended' });
    });
  }

  /** Until read models are caught up with the log and no cascade work is left (tests, CLI). */
  settle(): Promise<void> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.worker) return reject(new Error('The background thread is not running.'));
      this.settling.set(id, { resolve, reject });
      this.post({ type: 'settle', id });
    });
  }

  /** Stops the thread after its current batch (it closes its stores) and waits for it to exit. */
  async stop(): Promise<void> {
    this.stopping = true;
    const worker = this.worker;
    if (!worker) return this.exited;
    this.post({ type: 'stop' });
    // A thread stuck in a batch is ended after a grace period: its work is transactional, so
    // nothing committed is lost and nothing half-done is kept.
    const force = setTimeout(() => void worker.terminate(), this.options.stopTimeoutMs ?? 8000);
    await this.exited;
    clearTimeout(force);
  }

  /** Whether a thread is running now (false between a failure and its restart). */
  get running(): boolean {
    return this.worker !== null;
  }

  /** Ends the thread abruptly, as a crash would; it is started again like after any failure (tests). */
  async terminate(): Promise<void> {
    await this.worker?.terminate();
  }

  private post(m: ToThread) {
    this.worker?.postMessage(m);
  }
}
