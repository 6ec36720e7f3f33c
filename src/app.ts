/**
 * Builds the Fastify app as a plugin over the services it is given. It never listens:
 * src/server.ts does. Tests drive it with `app.inject`.
 *
 * One plugin per concern, each in src/http, registered in the order their hooks must run:
 * request id (onRequest), the operator's routes and metrics, how bodies are read and answers
 * written (src/http/answers.ts: every answer an envelope), then for the API's routes
 * authentication, the rate limit and idempotency (preValidation, preHandler, onSend), CORS,
 * and the routes themselves, whose options the hooks read from `config.api`.
 */
import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyServerOptions } from 'fastify';
import type { Services } from './composition/services.js';
import { installJwks } from './http/jwks.js';
import type { AnyRoute } from './http/route.js';
import { installOpenApi } from './http/openapi.js';
import { workspaceRoutes } from './http/routes/workspace.js';
import { allowedDomainRoutes } from './http/routes/allowed-domains.js';
import { keyLifecycleRoutes } from './http/routes/key-lifecycle.js';
import { edgeOptions, installEdge, MAX_PARAM_LENGTH } from './http/edge.js';
import { domainRoutes } from './http/routes/domain-routes.js';
import { agentRoutes } from './http/routes/agents.js';
import { presenceRoutes } from './http/routes/presence.js';
import { serviceConfigRoutes } from './http/routes/service-config.js';
import { workspaceSettingsRoutes } from './http/routes/workspace-settings.js';
import { tokenRoutes } from './http/routes/tokens.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { advancedWebhookRoutes } from './http/routes/advanced-webhooks.js';
import { auditRoutes } from './http/routes/audit.js';
import { changeRoutes } from './http/routes/changes.js';
import { CHANGES_STREAM_PATH, ChangeStreams, changesStream } from './http/routes/changes-stream.js';
import { operations } from './http/metrics.js';
import { cors } from './http/cors.js';
import { genReqId, requestIdHeader } from './http/request-id.js';
import { answers } from './http/answers.js';
import { requestCancel } from './http/cancel.js';
import { authentication } from './http/authentication.js';
import { rateLimits } from './http/rate-limits.js';
import { idempotency } from './http/idempotency.js';
import { consistency } from './http/consistency.js';
import { apiRoutes } from './http/api-routes.js';
import { dryRun } from './http/dry-run.js';
import { operationsRoutes } from './http/routes/operations.js';
import { installConsole } from './http/console.js';

export function allRoutes(services: Services): AnyRoute[] {
  return [...workspaceRoutes(services), ...allowedDomainRoutes(), ...keyLifecycleRoutes(), ...domainRoutes(services), ...agentRoutes(services), ...presenceRoutes(services), ...serviceConfigRoutes(services), ...workspaceSettingsRoutes(), ...tokenRoutes(services), ...webhookRoutes(services), ...advancedWebhookRoutes(services), ...auditRoutes(services), ...changeRoutes(), ...operationsRoutes(services)];
}

const collabApp: FastifyPluginAsync<{ services: Services; streams: ChangeStreams }> = async (app, { services, streams }) => {
  await app.register(requestIdHeader);
  // Every request's AbortSignal: the client leaving or the request timeout ends its work.
  await app.register(requestCancel, { requestTimeoutMs: services.config.requestTimeoutMs });
  // Before any route: @fastify/swagger collects the routes as they are added.
  await installOpenApi(app, services.config);
  // Next, so its request hooks (metrics, load shedding) cover every route added below.
  await app.register(operations, { services });
  await app.register(answers, { bodyLimit: services.config.bodyLimit });
  // preValidation hooks run in this order: who calls, then how often it may.
  await app.register(authentication, { services });
  await app.register(rateLimits, { services });
  // x-dry-run: after the caller is known, before the Idempotency-Key is read (a dry run ignores it).
  await app.register(dryRun);
  await app.register(idempotency, { services });
  // x-consistency-token: a read waits for the read models to reach it; a write answers one.
  await app.register(consistency, { services });
  installJwks(app, services);

  const routes = allRoutes(services);
  // Browser front ends: preflights and CORS headers of the user-token routes (src/http/cors.ts).
  await app.register(cors, { services, paths: routes.filter((r) => r.userToken).map((r) => r.path), getPaths: [CHANGES_STREAM_PATH] });
  // The console's page and assets (src/http/console.ts): outside the API's hooks' concerns.
  installConsole(app);
  await app.register(apiRoutes, { services, routes });
  // The one GET of the API: changes/get's changes as Server-Sent Events (src/http/routes/changes-stream.ts).
  await app.register(changesStream, { services, streams });
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
    genReqId,
    requestIdHeader: false,
    return503OnClosing: true,
    // maxParamLength: the JWKS path names an API key (up to 256 characters, like every id);
    // past it the edge's frameworkErrors answers 414 in the envelope (src/http/edge.ts).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
  });
  installEdge(app, services.config);
  const streams = new ChangeStreams(services);
  app.decorate('changeStreams', streams);
  await app.register(collabApp, { services, streams });
  return app;
}

