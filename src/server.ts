/**
 * The only module that listens. Loads configuration (failing fast with the variable's
 * name), opens the stores, serves, and shuts down gracefully on SIGTERM/SIGINT: stop
 * accepting, finish in-flight requests, stop the projections, close the stores. With
 * `--workers N` this process supervises N API processes and a background process instead
 * (src/cluster.ts), each of which runs this module's serve.
 */
import Fastify from 'fastify';
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { checkServing, ConfigError, loadConfig, type Config } from './config/config.js';
import { openServices, type Services } from './composition/services.js';
import { buildApp } from './app.js';
import { countParked } from './ops/parked.js';
import type { RunnerLogger } from './runtime/projection-runner.js';
import { edgeOptions, installEdge } from './http/edge.js';
import { parseWorkers, sharedLimitProcesses, superviseCluster, tellPrimaryServing } from './cluster.js';
import { limitsPerProcess } from './http/rate-limit.js';
import { processNotices } from './runtime/notices.js';
import { describeHeldBack, heldBackTooLong } from './runtime/held-back.js';

export type Role = 'all' | 'api' | 'worker';
export const ROLES: readonly Role[] = ['all', 'api', 'worker'];

export interface ServeArgs {
  role: Role;
  /** `--workers N`: run as a cluster of N API processes (src/cluster.ts). */
  workers?: number;
}

/**
 * `serve [--role api|worker|all] [--workers N|auto]`: throws a ConfigError naming the flag on
 * anything else. `--workers` with the default role (or `all`) forks N API processes and one
 * background process; with `--role api`, only the N API processes (the worker runs elsewhere).
 * With `--role worker` it is refused: workers take turns under one lease, so N of them on one
 * host would do the work of one.
 */
export function parseServeArgs(args: string[]): ServeArgs {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { role: { type: 'string' }, workers: { type: 'string' } }, strict: true, allowPositionals: false });
  } catch (e) {
    throw new ConfigError('serve', (e as Error).message);
  }
  const role = (parsed.values.role ?? 'all') as Role;
  if (!ROLES.includes(role)) throw new ConfigError('--role', `must be api, worker or all, got ${JSON.stringify(parsed.values.role)}`);
  if (parsed.values.workers === undefined) return { role };
  const workers = parseWorkers(parsed.values.workers);
  if (role === 'worker') {
    throw new ConfigError('--workers', 'cannot be combined with --role worker (one worker holds the projections lease at a time); use --role all or api');
  }
  return { role, workers };
}

/**
 * A worker applies projections and delivers webhooks (under their leases) and serves only
 * GET /healthz and /readyz, for orchestrators.
 */
async function workerApp(services: Services, config: Config) {
  const app = Fastify({ logger: { level: config.logLevel }, return503OnClosing: true, ...edgeOptions(config) });
  installEdge(app, config);
  app.get('/healthz', async () => ({ status: 'ok', role: 'worker' }));
  app.get('/readyz', async (_req, reply) => {
    if (!(await services.projections.isCaughtUp())) {
      return reply.status(503).send({ error: { status: 'UNAVAILABLE', message: 'Projections are catching up with the event log.' } });
    }
    const held = await heldBackTooLong(services.events, services.clock());
    if (held) return reply.status(503).send({ error: { status: 'UNAVAILABLE', message: `Projections cannot catch up with the event log: ${describeHeldBack(held, services.clock())}.` } });
    return { status: 'ready', role: 'worker', parkedEvents: await countParked(services.read) };
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.status(404).send({ error: { status: 'NOT_FOUND', message: `No route ${req.method} ${req.url.split('?')[0]} (this process runs --role worker).` } });
  });
  return app;
}

/**
 * The background work's logger (projections, webhooks, cascades, the background thread): the
 * app's own once it exists, JSON lines on stderr while the stores open before it. Without it a
 * parked event or a store outage would go unreported.
 */
function deferredLogger(level: Config['logLevel']) {
  const rank = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity }[level];
  let target: RunnerLogger | null = null;
  const early = (lvl: 'error' | 'warn' | 'info', n: number) => (obj: unknown, msg?: string) => {
    if (n < rank) return;
    const o = obj instanceof Error || (obj as { err?: unknown })?.err instanceof Error
      ? { err: String((obj as { err?: unknown }).err ?? obj) }
      : obj;
    process.stderr.write(JSON.stringify({ level: lvl, time: Date.now(), msg, ...(typeof o === 'object' && o ? o : { value: o }) }) + '\n');
  };
  const fallback = { error: early('error', 50), warn: early('warn', 40), info: early('info', 30) };
  const logger: RunnerLogger = {
    error: (obj, msg) => (target ?? fallback).error(obj, msg),
    warn: (obj, msg) => (target ?? fallback).warn(obj, msg),
    info: (obj, msg) => (target ?? fallback).info(obj, msg),
  };
  return { logger, attach: (to: RunnerLogger) => void (target = to) };
}

export async function serve(config: Config, role: Role = 'all') {
  const log = deferredLogger(config.logLevel);
  // Wakes the worker when an API process appends, and the API processes when the worker has
  // applied, across processes (src/runtime/notices.ts); polling stays as the safety net.
  const notices = processNotices(role, config.dataDir, log.logger);
  const services = await openServices(config, {
    role,
    thread: config.backgroundThread,
    logger: log.logger,
    decorateEvents: (events) => notices.decorate(events),
    onApplied: (position) => notices.onApplied(position),
    readReplicas: role !== 'worker',
  });
  notices.attach(services);
  const app = role === 'worker' ? await workerApp(services, config) : await buildApp(services);
  log.attach(app.log);
  app.addHook('onClose', async () => {
    await services.close();
    notices.close();
  });
  // A background process forked by `serve --workers` listens on nothing: in a cluster child,
  // listening on the port would join the API processes' shared handle and take a share of
  // their connections, answering 404. Its primary supervises it instead of a health probe.
  if (cluster.isWorker && role === 'worker') await app.ready();
  else await app.listen({ port: config.port, host: config.host });
  app.log.info({ role }, `serving as ${role}`);
  if (role !== 'worker' && !config.adminToken) {
    app.log.warn(
      { host: config.host },
      `workspace sign-up is open (no ADMIN_TOKEN): anyone who reaches ${config.host}:${config.port} can create workspaces${config.host === '127.0.0.1' ? ' (loopback only; set HOST to listen elsewhere)' : ''}`,
    );
  }
  tellPrimaryServing(role);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      app.log.error('shutdown took longer than 10 s; exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    // A keep-alive connection whose request was in flight when closing began is not idle then,
    // so the server's one sweep of idle connections misses it and close() would wait for the
    // client to hang up. Sweeping again closes each as soon as its response is out.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 25);
    sweep.unref();
    app.close().then(
      () => process.exit(0),
      (err) => {
        app.log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  // A cluster child (serve --workers) can be told twice: by its primary, which forwards the
  // stop, and directly (Ctrl-C signals the terminal's whole process group, systemd the whole
  // cgroup). The second must not end it mid-shutdown with the signal's default action.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    if (cluster.isWorker) process.on(signal, () => shutdown(signal));
    else process.once(signal, () => shutdown(signal));
  }
  return app;
}

export async function main(args: string[] = process.argv.slice(2)) {
  let config: Config;
  let parsed: ServeArgs;
  try {
    config = loadConfig();
    checkServing(config);
    parsed = parseServeArgs(args);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (parsed.workers !== undefined) {
    // Children run this module again, each with its role (src/cluster.ts).
    const code = await superviseCluster({
      serverModule: fileURLToPath(import.meta.url),
      workers: parsed.workers,
      background: parsed.role === 'all',
      logLevel: config.logLevel,
    });
    process.exit(code);
  }
  // An API process of `serve --workers N` enforces its share of each limit (cluster.ts).
  const processes = sharedLimitProcesses();
  if (processes > 1) config = limitsPerProcess(config, processes);
  try {
    await serve(config, parsed.role);
  } catch (err) {
    process.stderr.write(`failed to start: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

const isEntry = process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry) void main();
