/**
 * Builds the Fastify app as a plugin over the services it is given. It never listens:
 * src/server.ts does. Tests drive it with `app.inject`.
 *
 * Every response is an envelope (semantics §1): success `{ result: { status, message,
 * data } }`, failure `{ error: { status, message, details? } }` with the canonical HTTP
 * status. Nothing, however malformed, gets a stack trace back.
 */
import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { nanoid } from 'nanoid';
import { createHash } from 'node:crypto';
import { ApiError, BugError, httpStatusOf, invalidArgument } from './shared/errors.js';
import { MAX_JSON_DEPTH, jsonDepth } from './http/json-depth.js';
import type { Services } from './composition/services.js';
import { authenticate, InvalidCredentialsError, InvalidUserTokenError, type Caller } from './http/auth.js';
import { installJwks } from './http/jwks.js';
import { RequestContext } from './http/context.js';
import type { AnyRoute, Success } from './http/route.js';
import { parseBody } from './http/validation.js';
import { fastifySchema, installOpenApi, operationSchemas } from './http/openapi.js';
import { responseCheckFile, responseCheckHook } from './http/response-check.js';
import { answersOf } from './http/schema.js';
import type { z } from 'zod';
import { workspaceRoutes } from './http/routes/workspace.js';
import { keyLifecycleRoutes } from './http/routes/key-lifecycle.js';
import { RateLimiter, RateLimitedError } from './http/rate-limit.js';
import { IdempotencyStore, bodyHash, readIdempotencyKey } from './runtime/idempotency.js';
import { edgeOptions, installEdge, MAX_PARAM_LENGTH } from './http/edge.js';
import { domainRoutes } from './http/routes/domain-routes.js';
import { agentRoutes } from './http/routes/agents.js';
import { presenceRoutes } from './http/routes/presence.js';
import { serviceConfigRoutes } from './http/routes/service-config.js';
import { tokenRoutes } from './http/routes/tokens.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { auditRoutes } from './http/routes/audit.js';
import { operationsRoutes } from './http/routes/operations.js';
import { countParked } from './ops/parked.js';
import { installOperations, neverShed } from './http/metrics.js';
import { installCors } from './http/cors.js';
import { installConsole } from './http/console.js';

export function allRoutes(services: Services): AnyRoute[] {
  return [...workspaceRoutes(services), ...keyLifecycleRoutes(), ...domainRoutes(services), ...agentRoutes(services), ...presenceRoutes(services), ...serviceConfigRoutes(services), ...tokenRoutes(services), ...webhookRoutes(services), ...auditRoutes(services), ...operationsRoutes(services)];
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function failure(error: ApiError) {
  return {
    error: {
      status: error.status,
      ...error.extra,
      message: error.message,
      ...(error.details !== undefined ? { details: error.details } : {}),
    },
  };
}

/** Maps anything thrown to an ApiError: our own as they are, Fastify's by their code. */
function toApiError(err: unknown, bodyLimit: number): { error: ApiError; internal: boolean } {
  if (err instanceof ApiError) return { error: err, internal: false };
  const e = err as { code?: string; statusCode?: number; message?: string };
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        error: new ApiError('INVALID_ARGUMENT', `The request body is larger than ${bodyLimit} bytes.`, undefined, 413),
        internal: false,
      };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { error: new ApiError('INVALID_ARGUMENT', 'The request body is not valid JSON.'), internal: false };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { error: new ApiError('INVALID_ARGUMENT', 'The request body is empty; send { "data": { ... } }.'), internal: false };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { error: new ApiError('INVALID_ARGUMENT', e.message ?? 'Invalid request body.'), internal: false };
  }
  if (err instanceof SyntaxError || (e.statusCode === 400 && typeof e.message === 'string')) {
    return { error: new ApiError('INVALID_ARGUMENT', `The request body is not valid JSON: ${e.message}`), internal: false };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { error: new ApiError('INVALID_ARGUMENT', e.message ?? 'Bad request.', undefined, e.statusCode), internal: false };
  }
  return { error: new ApiError('INTERNAL', 'Internal error.'), internal: true };
}

/** The success envelope (semantics §1). */
function envelope(out: Success) {
  return {
    result: {
      status: 'success',
      message: out.message,
      ...(out.data !== undefined ? { data: out.data } : {}),
      ...(out.pageToken !== undefined ? { pageToken: out.pageToken } : {}),
      ...out.extra,
    },
  };
}

/** `JSON.stringify(envelope(out))` for an `out` without `extra`, with `data` already serialized. */
const envelopeJson = (out: Success, dataJson: string) =>
  `{"result":{"status":"success","message":${JSON.stringify(out.message)},"data":${dataJson}${
    out.pageToken !== undefined ? `,"pageToken":${JSON.stringify(out.pageToken)}` : ''
  }}}`;

/**
 * Whom a caller's rate limit and Idempotency-Keys belong to. `req.ip` is the client's behind
 * a trusted proxy (TRUST_PROXY). A user token's caller is its user of its API key: front ends
 * never replay the back end's Idempotency-Key answers (below); for the rate limit it takes
 * from its API key's bucket too (`takeRate`).
 */
const scopeOf = (caller: Caller, req: FastifyRequest) =>
  caller.tenant
    ? caller.userId !== undefined
      ? `user:${caller.tenant.apiKey}:${caller.userId}`
      : `apikey:${caller.tenant.apiKey}`
    : caller.workspaceId
      ? `workspace:${caller.workspaceId}`
      : `ip:${req.ip}`;

/**
 * Whom an Idempotency-Key belongs to: two callers must never get each other's answer.
 * - API key, workspace: that credential; a user token: its user of its API key.
 * - The operator's admin token (ADMIN_TOKEN set): the operator, by a hash of the token, so
 *   a new token starts afresh.
 * - No credentials (open sign-up): the client address and the exact body. The address is
 *   the client's only directly or behind a proxy named in TRUST_PROXY, and clients behind
 *   one NAT share it; with the body in the scope, a second client's request with the same
 *   key runs as its own unless it is byte for byte the first one from the same address,
 *   which the server cannot tell from the first client retrying (and whose replay carries
 *   no secret: they read `__redacted__`). The cost: on an open call the same key with
 *   another body runs anew instead of answering 422.
 * Example: A and B behind one untrusted proxy both send `Idempotency-Key: 1` to
 * workspace/create, A with ownerEmail a@x, B with b@x: each gets its own workspace.
 */
function idempotencyScope(caller: Caller, req: FastifyRequest, adminToken: string | undefined, hash: string): string {
  if (caller.tenant || caller.workspaceId) return scopeOf(caller, req);
  if (caller.actor === 'admin' && adminToken) return `admin:${createHash('sha256').update(adminToken).digest('hex').slice(0, 16)}`;
  return `ip:${req.ip}:body:${hash}`;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who called, set by the route's preValidation hook (authentication). */
    caller: Caller | null;
    /** The Idempotency-Key of a mutating call and the hash of the body as sent. */
    idempotency: { key: string; hash: string } | null;
  }
}

export const collabApp: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  // Before any route: @fastify/swagger collects the routes as they are added.
  await installOpenApi(app, services.config);
  // Next, so its request hooks (metrics, load shedding) cover every route added below.
  const metrics = await installOperations(app, services);
  app.decorateRequest('caller', null);
  app.decorateRequest('idempotency', null);

  // Fastify validates each route's body with the zod schema it was given (src/http/schema.ts
  // `requestEnvelope`), through parseBody so the messages are semantics §1's
  // (`data.users[2].email must be a valid email`), and the handler gets the parsed value.
  // Each body schema maps back to its route's `data` schema.
  const dataSchemas = new WeakMap<object, z.ZodType>();
  app.setValidatorCompiler(({ schema, url, httpPart }) => {
    // A GET route's path parameters (the JWKS): checked by the route itself, which answers
    // NOT_FOUND for a name that fits no key rather than INVALID_ARGUMENT.
    if (httpPart === 'params') return (params: unknown) => ({ value: params });
    const data = dataSchemas.get(schema);
    if (!data) throw new BugError(`route ${url} has a body schema that is not a route's`);
    return (body: unknown) => {
      try {
        return { value: { data: parseBody(data, body) } };
      } catch (error) {
        return { error: error as Error };
      }
    };
  });
  // Answers are written with JSON.stringify (byte for byte what they were before the
  // schemas, which document them; tests check answers against them, response-check.ts).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // Any content type is read as JSON: `curl -d` without a header still works, and there is
  // one parser (with Fastify's prototype-poisoning protection) for every body.
  // The nesting depth is checked on the raw text first (src/http/json-depth.ts), so no
  // deeper value is ever parsed, validated or stored.
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    if (jsonDepth(text) > MAX_JSON_DEPTH) {
      done(invalidArgument(`The request body is nested deeper than ${MAX_JSON_DEPTH} levels (JSON nesting depth is limited to ${MAX_JSON_DEPTH}).`), undefined);
      return;
    }
    parseJson(req, text, done);
  });

  // Every answer carries x-request-id. It is set where each answer is made (here, the 404
  // handler, the health checks and the route wrapper) rather than in an async onSend hook,
  // which cost a promise and a hook run per request.
  app.setErrorHandler((err, req, reply) => {
    void reply.header('x-request-id', req.id);
    const { error, internal } = toApiError(err, services.config.bodyLimit);
    if (internal) req.log.error({ err }, 'internal error');
    if (error instanceof RateLimitedError) void reply.header('retry-after', String(error.retryAfterSeconds));
    if (error instanceof InvalidUserTokenError) void reply.header('www-authenticate', error.challenge);
    const body = failure(
      internal ? new ApiError('INTERNAL', `Internal error (request id ${req.id}).`) : error,
    );
    void reply.status(error.httpStatus).send(body);
  });

  app.setNotFoundHandler((req, reply) => {
    void reply.header('x-request-id', req.id);
    const err = new ApiError('NOT_FOUND', `No route ${req.method} ${req.url.split('?')[0]}.`);
    void reply.status(404).send(failure(err));
  });

  app.get('/healthz', { config: neverShed, schema: operationSchemas.healthz }, async (req, reply) => {
    void reply.header('x-request-id', req.id);
    return { status: 'ok' };
  });
  app.get('/readyz', { schema: operationSchemas.readyz }, async (req, reply) => {
    void reply.header('x-request-id', req.id);
    const caughtUp = await services.projections.isCaughtUp();
    if (!caughtUp) {
      return reply.status(503).send(failure(new ApiError('UNAVAILABLE', 'Projections are catching up with the event log.')));
    }
    // Parked events do not make the service unready (the log goes on past them), but an
    // orchestrator's probe output is where an operator looks first.
    return { status: 'ready', parkedEvents: await countParked(services.read) };
  });

  const limiter = new RateLimiter(services.config.rateLimitPerSecond, services.config.rateLimitBurst, services.clock);
  // A user token's requests take from its API key's bucket and from its user's own share of
  // it, never from the share alone: ten tokens of one key together get no more than the key.
  // The share first, so a user past it is refused without costing the key (and the other
  // users) anything. Example: key 10 per second, burst 20, share 10%: a user may send 2 at
  // once, then one per second, while all the key's users and the back end together get 20.
  const userShare = services.config.rateLimitUserPercent / 100;
  const perUser = new RateLimiter(
    services.config.rateLimitPerSecond * userShare,
    Math.max(1, Math.floor(services.config.rateLimitBurst * userShare)),
    services.clock,
    100_000,
    (s) => `Rate limit exceeded for this user token's user (a share of its API key's limit); retry after ${s} s.`,
  );
  const takeRate = (caller: Caller, req: FastifyRequest) => {
    if (!limiter.enabled) return;
    if (caller.tenant && caller.userId !== undefined) perUser.take(`user:${caller.tenant.apiKey}:${caller.userId}`);
    limiter.take(caller.tenant ? `apikey:${caller.tenant.apiKey}` : scopeOf(caller, req));
  };
  // Credentials given and wrong take from a bucket per client address, on by default, so
  // guessing an API key's auth token (or a workspace's, or the admin token) is throttled.
  // Only failures count: a client creating many workspaces and keys is never slowed by it.
  // Example: 30 per minute, burst 20: 20 wrong guesses at once, then one every 2 s; while
  // the bucket is empty every credentialed request from that address is refused 429 before
  // its credentials are even checked, so a right guess then is not told apart.
  const failedAuth = new RateLimiter(
    services.config.authFailureRatePerMinute / 60,
    services.config.authFailureBurst,
    services.clock,
    100_000,
    (s) => `Too many failed authentications from this client address; retry after ${s} s.`,
  );
  // Sign-up has its own small bucket per client address, on by default: a workspace is
  // cheap to ask for and costs the service for good. Example: 10 per minute, burst 5:
  // five at once, then one every 6 s, answered 429 with retry-after in between. The message
  // is the hosted API's for this endpoint, word for word; the wait is in retry-after.
  const signups = new RateLimiter(
    services.config.signupRatePerMinute / 60,
    services.config.signupBurst,
    services.clock,
    100_000,
    () => 'Rate limit exceeded for this endpoint. Try again later.',
  );
  const idempotency = new IdempotencyStore(
    services.read,
    services.config.idempotencyTtlHours * 3_600_000,
    services.clock,
    services.config.idempotencyMaxResponseBytes,
  );
  const sweep = setInterval(() => {
    idempotency.sweep().catch((err) => app.log.warn({ err }, 'idempotency sweep failed'));
  }, 3_600_000);
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));

  /** Runs the route for an authenticated caller; a write waits for the read models first. */
  const run = async (route: AnyRoute, req: FastifyRequest, caller: Caller): Promise<Success> => {
    const data = (req.body as { data: unknown }).data;
    const ctx = new RequestContext(services, req.id, services.clock(), req.log, caller.actor, caller.tenant, caller.workspaceId, caller.userId);
    const out = await route.handler(data, ctx);
    if (ctx.lastPosition) {
      // Read-your-writes: the write is durable already; wait (bounded) until the read
      // models show it, so the client's next query sees what it just did.
      const waitStarted = performance.now();
      const caughtUp = await services.projections.waitFor(ctx.lastPosition, services.config.readYourWritesTimeoutMs);
      metrics.readYourWrites((performance.now() - waitStarted) / 1000, caughtUp);
      if (!caughtUp) req.log.warn({ position: ctx.lastPosition }, 'read models lag behind this write');
    }
    return out;
  };

  const routes = allRoutes(services);
  // Named in the refusal a user token gets on every other route (src/http/auth.ts).
  const userTokenPaths = routes.filter((r) => r.userToken).map((r) => r.path);
  for (const r of routes) if (r.userToken && r.auth !== 'apiKey') throw new BugError(`route ${r.path} takes user tokens but is not an API-key route`);
  installJwks(app, services, limiter);
  // Browser front ends: preflights and CORS headers of the user-token routes (src/http/cors.ts).
  installCors(app, services, routes);
  installConsole(app);

  /**
   * Before the body is validated: credentials, rate limits and the Idempotency-Key, so a
   * caller without credentials learns that (401) before anything about its body, and the
   * body is hashed as sent (validation drops unknown fields).
   */
  const admit = (route: AnyRoute) => async (req: FastifyRequest, reply: FastifyReply) => {
    void reply.header('x-request-id', req.id);
    // Read caches re-validate against other processes' commits before serving this request.
    services.read.beginRequest();
    // Before the admin token is checked, so guesses at it are throttled too.
    if (route.auth === 'admin' && signups.enabled) signups.take(`ip:${req.ip}`);
    if (route.auth !== 'open') failedAuth.check(`ip:${req.ip}`);
    let caller: Caller;
    try {
      caller = await authenticate(req, route.auth, services, { userToken: route.userToken === true, userTokenPaths });
    } catch (error) {
      if (error instanceof InvalidCredentialsError || error instanceof InvalidUserTokenError) failedAuth.spend(`ip:${req.ip}`);
      throw error;
    }
    takeRate(caller, req);
    req.caller = caller;
    // A read runs every time: its Idempotency-Key is accepted and ignored (idempotency.ts).
    const key = route.mutates ? readIdempotencyKey(req.headers['idempotency-key']) : undefined;
    if (key) req.idempotency = { key, hash: bodyHash(req.body) };
  };

  const checkFile = responseCheckFile();
  for (const route of routes) {
    const schema = fastifySchema(route);
    dataSchemas.set(schema.body, route.schema);
    const check = checkFile ? { onSend: responseCheckHook(route.path, answersOf(route), checkFile) } : {};
    app.post(route.path, { schema, preValidation: admit(route), ...check }, async (req, reply) => {
      void reply.header('x-request-id', req.id);
      const caller = req.caller;
      if (!caller) throw new BugError(`route ${route.path} ran without its preValidation hook`);
      const idem = req.idempotency;
      if (!idem) {
        const out = await run(route, req, caller);
        // A route that serializes its data itself (byte for byte what JSON.stringify gives,
        // only faster) gets its envelope written here; Fastify sends strings as they are.
        if (route.dataJson && out.data !== undefined && out.extra === undefined) {
          return reply.status(200).type('application/json; charset=utf-8').send(envelopeJson(out, route.dataJson(out.data)));
        }
        return reply.status(200).send(envelope(out));
      }

      const scope = idempotencyScope(caller, req, services.config.adminToken, idem.hash);
      const begun = await idempotency.begin(scope, route.path, idem.key, idem.hash);
      if ('replay' in begun) {
        return reply.status(begun.replay.status).header('idempotent-replayed', 'true').send(begun.replay.body);
      }
      if ('notKept' in begun) {
        const { status, bytes, sha256 } = begun.notKept;
        const err = new ApiError(
          'ALREADY_EXISTS',
          `The request with this Idempotency-Key was already applied (it answered ${status}), but its answer (${bytes} bytes) was larger than the ${idempotency.maxResponseBytes} bytes kept for a replay; read the current state instead.`,
          { status, bytes, sha256 },
        );
        return reply.status(err.httpStatus).header('idempotent-replayed', 'true').send(failure(err));
      }
      try {
        const body = envelope(await run(route, req, caller));
        await idempotency.complete(begun.recordId, 200, body);
        return reply.status(200).send(body);
      } catch (err) {
        const { error, internal } = toApiError(err, services.config.bodyLimit);
        // A server fault is not the request's answer: the retry runs again.
        if (internal || error.httpStatus >= 500) await idempotency.release(begun.recordId);
        else await idempotency.complete(begun.recordId, error.httpStatus, failure(error));
        throw err;
      }
    });
  }
};

export interface BuildOptions {
  logger?: FastifyServerOptions['logger'];
}

/** A ready Fastify instance around `collabApp`, with request ids and limits set. */
export async function buildApp(services: Services, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? { level: services.config.logLevel },
    bodyLimit: services.config.bodyLimit,
    // Timeouts, proxy trust and Node's own refusals in the envelope (src/http/edge.ts).
    ...edgeOptions(services.config),
    // A client's x-request-id is kept when it is sane, so its logs and ours line up.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : nanoid(16);
    },
    requestIdHeader: false,
    return503OnClosing: true,
    // maxParamLength: the JWKS path names an API key (up to 256 characters, like every id);
    // past it the edge's frameworkErrors answers 414 in the envelope (src/http/edge.ts).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
  });
  installEdge(app, services.config);
  await app.register(collabApp, { services });
  return app;
}

export { httpStatusOf };
