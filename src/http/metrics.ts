/**
 * Operations: `GET /metrics` (Prometheus text, prom-client) and load shedding
 * (@fastify/under-pressure). docs/operations.md "Metrics and load shedding" lists every
 * metric with its meaning.
 *
 * Each app has its own Registry (never prom-client's global one), so a process (or a test
 * run) may build several apps without their metrics colliding.
 *
 * Scrape cost is bounded: the store-backed gauges are indexed counts (parked events, pending
 * and failed webhook deliveries, open breakers), one read of at most 2 x METRIC_WORKSPACES
 * workspace documents (src/webhooks/outbox.ts webhookHealth), one checkpoint read per projection, and for a lagging
 * projection one read of at most LAG_SCAN_LIMIT events from its checkpoint (projections that
 * share a checkpoint share the read).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import underPressure from '@fastify/under-pressure';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ApiError } from '../shared/errors.js';
import type { Services } from '../composition/services.js';
import { LOG_START, type LogPosition } from '../ports/event-store.js';
import { countParked } from '../ops/parked.js';
import { DELIVERIES, METRIC_WORKSPACES, webhookHealth } from '../webhooks/outbox.js';
import { operationSchemas } from './openapi.js';
import { shared } from './plugin.js';
import { describeHeldBack, heldBackTooLong } from '../runtime/held-back.js';

/** Events counted behind a projection's checkpoint per scrape; past it the gauge reads this (saturated). */
export const LAG_SCAN_LIMIT = 1000;

/** The route label of a request no route matched: the raw URL would make labels unbounded. */
export const UNMATCHED_ROUTE = '(unmatched)';

/**
 * Route config that exempts a route from load shedding: under-pressure calls a route's own
 * `pressureHandler` instead of refusing, and one that returns nothing lets the request through.
 * A liveness probe answered 503 under load would get a busy but healthy process restarted.
 */
const neverShed = { pressureHandler: () => undefined };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Read by @fastify/under-pressure, whose types do not declare it on route config. */
    pressureHandler?: (request: FastifyRequest, reply: FastifyReply, type: string, value: number | undefined) => Promise<void> | void;
  }
}

export interface AppMetrics {
  registry: Registry;
  /** A write waited `seconds` for the read models; `caughtUp` false: it answered at the timeout. */
  readYourWrites(seconds: number, caughtUp: boolean): void;
}

const bearer = /^Bearer ([\x21-\x7e]+)$/;
const digest = (s: string) => createHash('sha256').update(s).digest();

/** The envelope of semantics §1, sent here because these answers are not the API's routes'. */
const failureBody = (status: string, message: string) => ({ error: { status, message } });

/** Events the log holds back from readers (EventStore.heldBack; docs/operations.md, Long transactions). */
function heldBackGauges(registers: Registry[]) {
  return {
    heldBackEvents: new Gauge({
      name: 'collab_log_held_back_events',
      help: 'Events committed to the log that no reader may see yet, because an older transaction is still open (PostgreSQL; counted up to 10,000; docs/operations.md, Long transactions).',
      registers,
    }),
    heldBackSeconds: new Gauge({
      name: 'collab_log_held_back_seconds',
      help: 'How long the oldest of collab_log_held_back_events has waited, seconds.',
      registers,
    }),
  };
}

/** Read replicas (POSTGRES_REPLICA_URLS; docs/operations.md, Read replicas). */
function replicaMetrics(registers: Registry[]) {
  return {
    replicaUp: new Gauge({
      name: 'collab_read_replica_up',
      help: 'Whether the read replica (a hot standby, host:port) is admitted to answer reads: it answers, is in recovery and its replay lag is within POSTGRES_REPLICA_MAX_LAG_MS.',
      labelNames: ['replica'] as const,
      registers,
    }),
    replicaLag: new Gauge({
      name: 'collab_read_replica_lag_seconds',
      help: "The read replica's replay lag at its last probe: the age of its last replayed commit while received WAL waits to be replayed, 0 when it replayed everything it received.",
      labelNames: ['replica'] as const,
      registers,
    }),
    replicaRequests: new Counter({
      name: 'collab_read_replica_requests_total',
      help: "Read-only requests by where their reads went: a replica (host:port), or 'primary' when no admitted replica had applied what the request needed.",
      labelNames: ['target'] as const,
      registers,
    }),
    replicaFallbacks: new Counter({
      name: 'collab_read_replica_fallbacks_total',
      help: 'Reads that failed on the read replica and were asked again of the primary (the replica is then left out until healthy).',
      labelNames: ['replica'] as const,
      registers,
    }),
  };
}

/** The metrics of one app, in its own registry. */
function createMetrics(registry: Registry) {
  const registers = [registry];
  return {
    requests: new Counter({
      name: 'collab_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'] as const,
      registers,
    }),
    durations: new Histogram({
      name: 'collab_http_request_duration_seconds',
      help: 'Time from a request arriving to its answer being sent, by method and route pattern.',
      labelNames: ['method', 'route'] as const,
      registers,
    }),
    appends: new Histogram({
      name: 'collab_event_append_duration_seconds',
      help: 'Duration of event appends made by this process (the event store round trip), appends that landed.',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    rywWaits: new Histogram({
      name: 'collab_read_your_writes_wait_seconds',
      help: 'Time writes waited for the read models to show them before answering.',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    rywTimeouts: new Counter({
      name: 'collab_read_your_writes_timeouts_total',
      help: 'Writes that answered before the read models showed them (READ_YOUR_WRITES_TIMEOUT_MS passed).',
      registers,
    }),
    lagEvents: new Gauge({
      name: 'collab_projection_lag_events',
      help: `Events in the log after the projection's checkpoint (saturates at ${LAG_SCAN_LIMIT}).`,
      labelNames: ['projection'] as const,
      registers,
    }),
    lagSeconds: new Gauge({
      name: 'collab_projection_lag_seconds',
      help: "Age of the oldest event the projection has not applied yet; 0 when it is at the log's head.",
      labelNames: ['projection'] as const,
      registers,
    }),
    parked: new Gauge({
      name: 'collab_parked_events',
      help: 'Events parked because a projection or follower could not apply them (collab projections parked).',
      registers,
    }),
    queueDepth: new Gauge({
      name: 'collab_webhook_queue_depth',
      help: 'Webhook deliveries pending (queued or waiting for a retry), all processes together.',
      registers,
    }),
    workspaceQueueDepth: new Gauge({
      name: 'collab_webhook_workspace_queue_depth',
      help: `Webhook deliveries pending, of the ${METRIC_WORKSPACES} workspaces with the deepest queues and of workspaces with an open breaker (at most ${2 * METRIC_WORKSPACES} workspaces).`,
      labelNames: ['workspace'] as const,
      registers,
    }),
    workspaceBreakersOpen: new Gauge({
      name: 'collab_webhook_workspace_breakers_open',
      help: 'Webhook endpoints whose breaker is open (parked, or probing), of the workspaces collab_webhook_workspace_queue_depth names.',
      labelNames: ['workspace'] as const,
      registers,
    }),
    ...heldBackGauges(registers),
    ...replicaMetrics(registers),
    breakersOpen: new Gauge({
      name: 'collab_webhook_breakers_open',
      help: 'Webhook endpoints whose breaker is open (parked, or probing), all workspaces together.',
      registers,
    }),
    failedDeliveries: new Gauge({
      name: 'collab_webhook_deliveries_failed',
      help: 'Webhook deliveries given up (kept for WEBHOOK_RETENTION_DAYS), all processes together.',
      registers,
    }),
  };
}

type Metrics = ReturnType<typeof createMetrics>;

/** How far each projection is behind the log's head; projections that share a checkpoint share the read. */
async function projectionLags(services: Services, now: number) {
  const [head, checkpoints] = await Promise.all([
    services.events.headPosition(),
    Promise.all(services.projections.projections.map(async (p) => [p.name, (await services.read.getCheckpoint(p.name)) ?? LOG_START] as const)),
  ]);
  const behind = new Map<LogPosition, Promise<{ events: number; seconds: number }>>();
  const lagAt = (from: LogPosition) => {
    let lag = behind.get(from);
    if (!lag) {
      lag = from >= head
        ? Promise.resolve({ events: 0, seconds: 0 })
        : services.events.readAll({ after: from, maxCount: LAG_SCAN_LIMIT }).then((batch) => ({
            events: batch.length,
            seconds: batch.length > 0 ? Math.max(0, (now - batch[0]!.metadata.time) / 1000) : 0,
          }));
      behind.set(from, lag);
    }
    return lag;
  };
  return Promise.all(checkpoints.map(async ([name, from]) => [name, await lagAt(from)] as const));
}

/** Counted so far, by metric and label: the counters move by what was added since the last scrape. */
const counted = new WeakMap<Metrics, Map<string, number>>();

function refreshReplicas(services: Services, m: Metrics) {
  const replicas = services.replicas;
  if (!replicas) return;
  let seen = counted.get(m);
  if (!seen) counted.set(m, (seen = new Map()));
  const add = (counter: Counter<string>, label: Record<string, string>, total: number) => {
    const key = `${counter === m.replicaRequests ? 'r' : 'f'}:${Object.values(label)[0]}`;
    const delta = total - (seen.get(key) ?? 0);
    if (delta > 0 || !seen.has(key)) counter.inc(label, delta);
    seen.set(key, total);
  };
  for (const r of replicas.status()) {
    m.replicaUp.set({ replica: r.name }, r.up ? 1 : 0);
    m.replicaLag.set({ replica: r.name }, r.lagSeconds);
    add(m.replicaRequests, { target: r.name }, r.requests);
    add(m.replicaFallbacks, { replica: r.name }, r.fallbacks);
  }
  add(m.replicaRequests, { target: 'primary' }, replicas.primaryRequests);
}

/** Reads the store-backed gauges; each is a count on an index or a bounded read. */
async function refreshGauges(services: Services, m: Metrics): Promise<void> {
  const now = services.clock();
  const [lags, held, parkedCount, pending, failed, health] = await Promise.all([
    projectionLags(services, now),
    services.events.heldBack?.() ?? null,
    countParked(services.read),
    services.read.count(DELIVERIES, { status: 'pending' }),
    services.read.count(DELIVERIES, { status: 'failed' }),
    webhookHealth(services.read),
  ]);
  // Events held back by an open transaction are behind every projection, though no reader sees them yet.
  const heldSeconds = held ? Math.max(0, (now - held.oldestTime) / 1000) : 0;
  for (const [name, lag] of lags) {
    m.lagEvents.set({ projection: name }, lag.events + (held?.events ?? 0));
    m.lagSeconds.set({ projection: name }, Math.max(lag.seconds, heldSeconds));
  }
  refreshReplicas(services, m);
  m.heldBackEvents.set(held?.events ?? 0);
  m.heldBackSeconds.set(heldSeconds);
  m.parked.set(parkedCount);
  m.queueDepth.set(pending);
  m.failedDeliveries.set(failed);
  m.breakersOpen.set(health.breakersOpen);
  // Only this scrape's workspaces: one that left the list must not keep its last value.
  m.workspaceQueueDepth.reset();
  m.workspaceBreakersOpen.reset();
  for (const w of health.workspaces) {
    m.workspaceQueueDepth.set({ workspace: w.workspaceId }, w.pending);
    m.workspaceBreakersOpen.set({ workspace: w.workspaceId }, w.breakersOpen);
  }
}

/** `GET /metrics`, behind METRICS_TOKEN when the operator set one. */
function metricsRoute(app: FastifyInstance, services: Services, registry: Registry, m: Metrics): void {
  const token = services.config.metricsToken;
  const tokenDigest = token ? digest(token) : undefined;
  /** Constant-time on digests of equal length, so neither the token's bytes nor its length leak. */
  const authorized = (req: FastifyRequest) => {
    if (!tokenDigest) return services.config.metricsOpen;
    const match = bearer.exec(req.headers.authorization ?? '');
    return match !== null && timingSafeEqual(digest(match[1]!), tokenDigest);
  };

  app.get('/metrics', { config: neverShed, schema: operationSchemas.metrics }, async (req: FastifyRequest, reply: FastifyReply) => {
    if (!tokenDigest && !services.config.metricsOpen) {
      return reply
        .status(403)
        .send(failureBody('PERMISSION_DENIED', 'GET /metrics is closed: under NODE_ENV=production it needs METRICS_TOKEN (then Authorization: Bearer <METRICS_TOKEN>), or METRICS_OPEN=1.'));
    }
    if (!authorized(req)) {
      return reply
        .status(401)
        .header('www-authenticate', 'Bearer')
        .send(failureBody('UNAUTHENTICATED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.'));
    }
    await refreshGauges(services, m);
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}

/** Load shedding (@fastify/under-pressure) when the operator set a threshold. */
async function loadShedding(app: FastifyInstance, config: Services['config']): Promise<void> {
  const { shedMaxEventLoopDelayMs, shedMaxHeapUsedBytes, shedMaxRssBytes, shedRetryAfterSeconds } = config;
  if (shedMaxEventLoopDelayMs <= 0 && shedMaxHeapUsedBytes <= 0 && shedMaxRssBytes <= 0) return;
  // under-pressure builds the error once and hands it to the error handler
  // (src/http/answers.ts), which answers it in the envelope; it sets retry-after itself.
  class Overloaded extends ApiError {
    constructor() {
      super('UNAVAILABLE', `The server is overloaded; retry after ${shedRetryAfterSeconds} s.`);
    }
  }
  await app.register(underPressure, {
    maxEventLoopDelay: shedMaxEventLoopDelayMs,
    maxHeapUsedBytes: shedMaxHeapUsedBytes,
    maxRssBytes: shedMaxRssBytes,
    retryAfter: shedRetryAfterSeconds,
    customError: Overloaded,
  });
}

/** `GET /healthz` (liveness, never shed) and `GET /readyz` (the read models caught up). */
function healthRoutes(app: FastifyInstance, services: Services): void {
  app.get('/healthz', { config: neverShed, schema: operationSchemas.healthz }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: operationSchemas.readyz }, async (_req, reply) => {
    const caughtUp = await services.projections.isCaughtUp();
    if (!caughtUp) return reply.status(503).send(failureBody('UNAVAILABLE', 'Projections are catching up with the event log.'));
    // Caught up with what readers can see, but not with what was written (docs/operations.md, Long transactions).
    const held = await heldBackTooLong(services.events, services.clock());
    if (held) return reply.status(503).send(failureBody('UNAVAILABLE', `Projections cannot catch up with the event log: ${describeHeldBack(held, services.clock())}.`));
    // Parked events do not make the service unready (the log goes on past them), but an
    // orchestrator's probe output is where an operator looks first.
    return { status: 'ready', parkedEvents: await countParked(services.read) };
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's metrics (src/http/metrics.ts `operations`), for what only a route knows. */
    appMetrics: AppMetrics;
  }
}

/**
 * The operator's side of the app: request metrics (an onResponse hook), `/metrics`, the
 * health checks and (when a threshold is set) load shedding; `app.appMetrics` for the rest.
 * Register it before the routes: its hooks cover the routes added after them.
 */
export const operations = shared<{ services: Services }>('operations', async (app, { services }) => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const m = createMetrics(registry);
  services.commands.onAppendTimed = (seconds) => m.appends.observe(seconds);

  // A callback hook, not an async one: it runs on every answer, and a promise per request costs.
  app.addHook('onResponse', (req, reply, done) => {
    const matched = req.is404 ? UNMATCHED_ROUTE : req.routeOptions.url ?? UNMATCHED_ROUTE;
    m.requests.inc({ method: req.method, route: matched, status: reply.statusCode });
    m.durations.observe({ method: req.method, route: matched }, reply.elapsedTime / 1000);
    done();
  });
  metricsRoute(app, services, registry, m);
  await loadShedding(app, services.config);
  healthRoutes(app, services);

  app.decorate('appMetrics', {
    registry,
    readYourWrites(seconds: number, caughtUp: boolean) {
      m.rywWaits.observe(seconds);
      if (!caughtUp) m.rywTimeouts.inc();
    },
  } satisfies AppMetrics);
});
