/**
 * Consistency tokens (issue 36; docs/guide.md, Consistency tokens), two hooks on the API's routes:
 *
 * - onSend: every successful call of a mutating route answers `x-consistency-token`, the log
 *   position its events reached sealed for the caller (src/secrets/positions.ts). A call that
 *   appended nothing (a users/add repeating what is stored, an Idempotency-Key replay, a
 *   presence write) answers the log's head as it answers: at least as far as anything the
 *   call saw, so a read with it never misses what the call acted on.
 * - preHandler: a call that sends `x-consistency-token` runs only once this process's read
 *   models have applied at least its position: it waits (at most CONSISTENCY_WAIT_MS), the
 *   way a write waits for its own events (read-your-writes, src/http/api-routes.ts: the same
 *   ProjectionRunner.waitFor, which follows the checkpoints another process or host stores
 *   when this one does not apply them), then answers UNAVAILABLE naming the wait, never
 *   a stale answer. A token that does not open for the caller is INVALID_ARGUMENT.
 *
 * Tokens belong to a scope: an API key (its own headers and its user tokens alike) or a
 * workspace's own calls. Routes without one (sign-up, the operator's) neither answer nor
 * read the header. Instance hooks: they run before the route's own (idempotency's replay
 * happens after the wait, and still answers a token).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../composition/services.js';
import type { LogPosition } from '../ports/event-store.js';
import { ApiError } from '../shared/errors.js';
import { apiKeyScope, workspaceScope } from '../secrets/positions.js';
import type { Caller } from './auth.js';
import { shared } from './plugin.js';
import type {} from './route-config.js';

const CONSISTENCY_HEADER = 'x-consistency-token';

declare module 'fastify' {
  interface FastifyRequest {
    /** The highest log position the call appended (set by src/http/api-routes.ts), for its consistency token. */
    appendedPosition: LogPosition | null;
    /** The position of the call's own x-consistency-token, once its read models reached it. */
    consistencyPosition: LogPosition | null;
  }
}

/** Whose tokens a caller makes and accepts: an API key's (with its user tokens), or a workspace's; null for sign-up and the operator. */
function positionScope(caller: Caller | null): string | null {
  if (caller?.tenant) return apiKeyScope(caller.tenant.apiKey);
  if (caller?.workspaceId) return workspaceScope(caller.workspaceId);
  return null;
}

/**
 * The read models reach `position` within CONSISTENCY_WAIT_MS, or UNAVAILABLE naming the wait.
 * Also changes/get's wait for its `since`.
 */
export async function waitForPosition(services: Pick<Services, 'projections' | 'config'>, position: LogPosition, what: string): Promise<void> {
  const ms = services.config.consistencyWaitMs;
  if (await services.projections.waitFor(position, ms)) return;
  throw new ApiError(
    'UNAVAILABLE',
    `The read models have not reached the position of ${what} after waiting ${ms} ms (CONSISTENCY_WAIT_MS): ` +
      'answering now could miss the write it marks. Send the request again with the same token.',
  );
}

export const consistency = shared<{ services: Services }>('consistency', async (app, { services }) => {
  app.decorateRequest('appendedPosition', null);
  app.decorateRequest('consistencyPosition', null);
  const tokens = services.secrets.positions;

  app.addHook('preHandler', async (req: FastifyRequest) => {
    if (!req.routeOptions.config.api) return;
    const header = req.headers[CONSISTENCY_HEADER];
    if (header === undefined) return;
    const scope = positionScope(req.caller);
    if (scope === null) return;
    const position = tokens.open(scope, Array.isArray(header) ? header.join(',') : header, `The ${CONSISTENCY_HEADER} header`);
    await waitForPosition(services, position, `its ${CONSISTENCY_HEADER}`);
    req.consistencyPosition = position;
  });

  app.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply, payload) => {
    if (!req.routeOptions.config.api?.mutates || reply.statusCode >= 300) return payload;
    const scope = positionScope(req.caller);
    if (scope === null) return payload;
    const position = req.appendedPosition ?? (await services.events.headPosition());
    void reply.header(CONSISTENCY_HEADER, tokens.seal(scope, position));
    return payload;
  });
});
