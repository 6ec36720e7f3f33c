/**
 * The API's routes: each `defineRoute` record (route.ts) becomes one Fastify POST route with
 * its schemas (src/http/openapi.ts `fastifySchema`), its options in `config.api` for the
 * hooks (src/http/route-config.ts: authentication, rate limit, idempotency, CORS), and a
 * handler that runs the record's handler and writes the success envelope. Register after the
 * plugins whose hooks the routes need.
 */
import type { FastifyRequest } from 'fastify';
import type { Services } from '../composition/services.js';
import { apiKeyScope, workspaceScope } from '../secrets/positions.js';
import { BugError } from '../shared/errors.js';
import { envelope } from './answers.js';
import { RequestContext } from './context.js';
import type { AppMetrics } from './metrics.js';
import { fastifySchema } from './openapi.js';
import { responseCheckFile, responseCheckHook } from './response-check.js';
import type { AnyRoute, Success } from './route.js';
import { apiConfig } from './route-config.js';
import { answersOf } from './schema.js';
import { shared } from './plugin.js';
import type {} from './consistency.js';
import { describeHeldBack } from '../runtime/held-back.js';
import { dryRunServices, withAccessChanges } from './dry-run.js';

/** Runs `route` for the authenticated caller; a write waits for the read models first. */
async function run(route: AnyRoute, req: FastifyRequest, services: Services, metrics: AppMetrics): Promise<Success> {
  const caller = req.caller;
  if (!caller) throw new BugError(`route ${route.path} ran without its authentication hook`);
  const data = (req.body as { data: unknown }).data;
  // x-dry-run: true (src/http/dry-run.ts): decided into an overlay, nothing appended, so no wait below.
  const dry = req.dryRun ? dryRunServices(services) : null;
  const ctx = new RequestContext(dry?.services ?? services, req.id, services.clock(), req.log, caller.actor, caller.tenant, caller.workspaceId, caller.userId, req.workSignal);
  // Read replicas (POSTGRES_REPLICA_URLS): a read-only request reads where it was authenticated
  // (src/http/read-target.ts); a write is remembered for its caller's next reads without a token.
  const session = caller.tenant ? apiKeyScope(caller.tenant.apiKey) : caller.workspaceId ? workspaceScope(caller.workspaceId) : null;
  const out = services.replicas && !dry ? await services.replicas.on(req.readTarget, () => route.handler(data, ctx)) : await route.handler(data, ctx);
  if (dry) return withAccessChanges(req, services, dry.commands, caller.tenant?.apiKey, out);
  // The position of the answer's consistency token (src/http/consistency.ts).
  req.appendedPosition = ctx.lastPosition ?? null;
  if (ctx.lastPosition && session) services.replicas?.wrote(session, ctx.lastPosition);
  if (ctx.lastPosition) {
    // Read-your-writes: the write is durable already; wait (bounded) until the read
    // models show it, so the client's next query sees what it just did.
    const waitStarted = performance.now();
    const caughtUp = await services.projections.waitFor(ctx.lastPosition, services.config.readYourWritesTimeoutMs);
    metrics.readYourWrites((performance.now() - waitStarted) / 1000, caughtUp);
    if (!caughtUp) {
      // An open transaction elsewhere is the usual cause on PostgreSQL: name it where an operator looks.
      const held = await services.events.heldBack?.().catch(() => null);
      req.log.warn({ position: ctx.lastPosition, ...(held ? { heldBack: held } : {}) }, held ? `read models lag behind this write: ${describeHeldBack(held, services.clock())}` : 'read models lag behind this write');
    }
  }
  return out;
}

/**
 * The success envelope, written by the serializer (JSON.stringify) like every answer: on the
 * rows the store returns, JSON.stringify writes documents/get's page faster than the
 * hand-written writer it replaced (docs/performance.md, "Fastify hooks and plugins (issue 24)").
 */
const handlerOf = (route: AnyRoute, services: Services, metrics: AppMetrics) => async (req: FastifyRequest) => envelope(await run(route, req, services, metrics));

export const apiRoutes = shared<{ services: Services; routes: readonly AnyRoute[] }>('api-routes', async (app, { services, routes }) => {
  const checkFile = responseCheckFile();
  for (const route of routes) {
    app.post(route.path, {
      schema: fastifySchema(route),
      config: { api: apiConfig(route) },
      ...(checkFile ? { onSend: responseCheckHook(route.path, answersOf(route), checkFile) } : {}),
      handler: handlerOf(route, services, app.appMetrics),
    });
  }
});
