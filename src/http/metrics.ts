/**
 * Operations: `GET /metrics` (Prometheus text, prom-client) and load shedding
 * (@fastify/under-pressure). docs/operations.md "Metrics and load shedding" lists every
 * metric with its meaning.
 *
 * Each app has its own Registry (never prom-client's global one), so a process (or a test
 * run) may build several apps without their metrics colliding.
 *
 * Scrape cost is bounded: the store-backed gauges are indexed counts (parked events, pending
 * and failed webhook deliveries), one checkpoint read per projection, and for a lagging
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
import { DELIVERIES } from '../webhooks/outbox.js';
import { operationSchemas } from './openapi.js';

/** Events counted behind a projection's checkpoint per scrape; past it the gauge reads this (saturated). */
export const LAG_SCAN_LIMIT = 1000;

/** The route label of a request no route matched: the raw URL would make labels unbounded. */
export const UNMATCHED_ROUTE = '(unmatched)';

/**
 * Route config that exempts a route from load shedding: under-pressure calls a route's own
 * `pressureHandler` instead of refusing, and one that returns nothing lets the request through.
 * A liveness probe answered 503 under load would get a busy but healthy process restarted.
 */
export const neverShed = { pressureHandler: () => undefined };

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

/** The envelope of semantics §1, sent here because these answers are made before any route runs. */
const failureBody = (status: string, message: string) => ({ error: { status, message } });

/**
 * Adds the request hooks, the `/metrics` route and (when a threshold is set) load shedding to
 * `app`. Call it before the routes are added: the hooks cover the routes added after them.
 */
export async function installOperations(app: FastifyInstance, services: Services): Promise<AppMetrics> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: 'collab_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'collab_http_request_duration_seconds',
    help: 'Time from a request arriving to its answer being sent, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    registers: [registry],
  });
  const appends = new Histogram({
    name: 'collab_event_append_duration_seconds',
    help: 'Duration of event appends made by this process (the event store round trip), appends that landed.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const rywWaits = new Histogram({
    name: 'collab_read_your_writes_wait_seconds',
    help: 'Time writes waited for the read models to show them before answering.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const rywTimeouts = new Counter({
    name: 'collab_read_your_writes_timeouts_total',
    help: 'Writes that answered before the read models showed them (READ_YOUR_WRITES_TIMEOUT_MS passed).',
    registers: [registry],
  });
  const lagEvents = new Gauge({
    name: 'collab_projection_lag_events',
    help: `Events in the log after the projection's checkpoint (saturates at ${LAG_SCAN_LIMIT}).`,
    labelNames: ['projection'] as const,
    registers: [registry],
  });
  const lagSeconds = new Gauge({
    name: 'collab_projection_lag_seconds',
    help: "Age of the oldest event the projection has not applied yet; 0 when it is at the log's head.",
    labelNames: ['projection'] as const,
    registers: [registry],
  });
  const parked = new Gauge({
    name: 'collab_parked_events',
    help: 'Events parked because a projection or follower could not apply them (collab projections parked).',
    registers: [registry],
  });
  const queueDepth = new Gauge({
    name: 'collab_webhook_queue_depth',
    help: 'Webhook deliveries pending (queued or waiting for a retry), all processes together.',
    registers: [registry],
  });
  const failedDeliveries = new Gauge({
    name: 'collab_webhook_deliveries_failed',
    help: 'Webhook deliveries given up (kept for WEBHOOK_RETENTION_DAYS), all processes together.',
    registers: [registry],
  });

  services.commands.onAppendTimed = (seconds) => appends.observe(seconds);

  // A callback hook, not an async one: it runs on every answer, and a promise per request costs.
  app.addHook('onResponse', (req, reply, done) => {
    const matched = req.is404 ? UNMATCHED_ROUTE : req.routeOptions.url ?? UNMATCHED_ROUTE;
    requests.inc({ method: req.method, route: matched, status: reply.statusCode });
    durations.observe({ method: req.method, route: matched }, reply.elapsedTime / 1000);
    done();
  });

  /** Reads the store-backed gauges; each is a count on an index or a bounded read. */
  const refresh = async () => {
    const now = services.clock();
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
    const [lags, parkedCount, pending, failed] = await Promise.all([
      Promise.all(checkpoints.map(async ([name, from]) => [name, await lagAt(from)] as const)),
      countParked(services.read),
      services.read.count(DELIVERIES, { status: 'pending' }),
      services.read.count(DELIVERIES, { status: 'failed' }),
    ]);
    for (const [name, lag] of lags) {
      lagEvents.set({ projection: name }, lag.events);
      lagSeconds.set({ projection: name }, lag.seconds);
    }
    parked.set(parkedCount);
    queueDepth.set(pending);
    failedDeliveries.set(failed);
  };

  const token = services.config.metricsToken;
  const tokenDigest = token ? digest(token) : undefined;
  /** Constant-time on digests of equal length, so neither the token's bytes nor its length leak. */
  const authorized = (req: FastifyRequest) => {
    if (!tokenDigest) return services.config.metricsOpen;
    const m = bearer.exec(req.headers.authorization ?? '');
    return m !== null && timingSafeEqual(digest(m[1]!), tokenDigest);
  };

  app.get('/metrics', { config: neverShed, schema: operationSchemas.metrics }, async (req: FastifyRequest, reply: FastifyReply) => {
    void reply.header('x-request-id', req.id);
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
    await refresh();
    return reply.type(registry.contentType).send(await registry.metrics());
  });

  const { shedMaxEventLoopDelayMs, shedMaxHeapUsedBytes, shedMaxRssBytes, shedRetryAfterSeconds } = services.config;
  if (shedMaxEventLoopDelayMs > 0 || shedMaxHeapUsedBytes > 0 || shedMaxRssBytes > 0) {
    // under-pressure builds the error once and hands it to the error handler (src/app.ts),
    // which answers it in the envelope; it sets retry-after itself.
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

  return {
    registry,
    readYourWrites(seconds, caughtUp) {
      rywWaits.observe(seconds);
      if (!caughtUp) rywTimeouts.inc();
    },
  };
}
