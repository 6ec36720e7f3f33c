/**
 * Authentication as a hook: every API route's request gets `request.caller` from the
 * credentials its route's `config.api.auth` asks for (src/http/auth.ts has the four modes),
 * or its refusal; routes without `config.api` are left alone.
 *
 * Why preValidation and not onRequest: a body Fastify cannot read (not JSON, too large, nested
 * too deep) is refused before its credentials are looked at (test/limits.edge.test.ts: "a
 * deep body is refused before authentication"), while a caller without credentials hears 401
 * before anything about its body's fields. preValidation is the stage between the two: after
 * the parser, before the validator.
 *
 * Guessing is throttled here too, before credentials are checked: a bucket per client address
 * for failed authentications, and sign-up's own bucket on the admin routes.
 */
import type { FastifyRequest } from 'fastify';
import type { Services } from '../composition/services.js';
import { BugError } from '../shared/errors.js';
import { authenticate, InvalidCredentialsError, InvalidUserTokenError, type AuthOptions, type Caller } from './auth.js';
import { chooseReadTarget } from './read-target.js';
import type { ApiRouteConfig } from './route-config.js';
import { RateLimiter } from './rate-limit.js';
import { shared } from './plugin.js';

/**
 * Whom a caller's rate limit and Idempotency-Keys belong to. `req.ip` is the client's behind
 * a trusted proxy (TRUST_PROXY). A user token's caller is its user of its API key: front ends
 * never replay the back end's Idempotency-Key answers (src/http/idempotency.ts); for the rate
 * limit it takes from its API key's bucket too (src/http/rate-limits.ts).
 */
export const scopeOf = (caller: Caller, req: FastifyRequest) =>
  caller.tenant
    ? caller.userId !== undefined
      ? `user:${caller.tenant.apiKey}:${caller.userId}`
      : `apikey:${caller.tenant.apiKey}`
    : caller.workspaceId
      ? `workspace:${caller.workspaceId}`
      : `ip:${req.ip}`;

/** The buckets checked before credentials are. */
function guessThrottles(services: Services) {
  const { config, clock } = services;
  return {
    // Credentials given and wrong take from a bucket per client address, on by default, so
    // guessing an API key's auth token (or a workspace's, or the admin token) is throttled.
    // Only failures count: a client creating many workspaces and keys is never slowed by it.
    // Example: 30 per minute, burst 20: 20 wrong guesses at once, then one every 2 s; while
    // the bucket is empty every credentialed request from that address is refused 429 before
    // its credentials are even checked, so a right guess then is not told apart.
    failedAuth: new RateLimiter(config.authFailureRatePerMinute / 60, config.authFailureBurst, clock, 100_000, (s) =>
      `Too many failed authentications from this client address; retry after ${s} s.`),
    // Sign-up has its own small bucket per client address, on by default: a workspace is
    // cheap to ask for and costs the service for good. Example: 10 per minute, burst 5:
    // five at once, then one every 6 s, answered 429 with retry-after in between. The message
    // is the hosted API's for this endpoint, word for word; the wait is in retry-after.
    signups: new RateLimiter(config.signupRatePerMinute / 60, config.signupBurst, clock, 100_000, () =>
      'Rate limit exceeded for this endpoint. Try again later.'),
  };
}

/**
 * Authenticates on the server the request reads (src/http/read-target.ts): a read replica's
 * copy of the credentials, or the primary's. Credentials a standby refuses are asked again of
 * the primary, which may hold ones the standby has not replayed yet; the request then reads the
 * primary. Writes, and every route not routed, authenticate on the primary.
 */
async function authenticateWhereRead(req: FastifyRequest, api: ApiRouteConfig, services: Services, options: AuthOptions): Promise<Caller> {
  const target = req.readTarget;
  const replicas = services.replicas;
  if (!target || !replicas) return authenticate(req, api.auth, services, options);
  try {
    return await replicas.on(target, () => authenticate(req, api.auth, services, options));
  } catch (error) {
    if (!(error instanceof InvalidCredentialsError || error instanceof InvalidUserTokenError)) throw error;
    replicas.toPrimary(target);
    req.readTarget = null;
    return authenticate(req, api.auth, services, options);
  }
}

export const authentication = shared<{ services: Services }>('authentication', async (app, { services }) => {
  app.decorateRequest('caller', null);
  app.decorateRequest('readTarget', null);
  const { failedAuth, signups } = guessThrottles(services);
  // Named in the refusal a user token gets on every other route (src/http/auth.ts), in the
  // order the routes are added; complete before the first request arrives.
  const userTokenPaths: string[] = [];
  app.addHook('onRoute', ({ config }) => {
    const api = config?.api;
    if (!api?.userToken) return;
    if (api.auth !== 'apiKey') throw new BugError(`route ${api.path} takes user tokens but is not an API-key route`);
    userTokenPaths.push(api.path);
  });

  app.addHook('preValidation', async (req) => {
    const api = req.routeOptions.config.api;
    if (!api) return;
    // Read caches re-validate against other processes' commits before serving this request.
    services.read.beginRequest();
    // Before the admin token is checked, so guesses at it are throttled too.
    if (api.auth === 'admin' && signups.enabled) signups.take(`ip:${req.ip}`);
    if (api.auth !== 'open') failedAuth.check(`ip:${req.ip}`);
    try {
      req.readTarget = chooseReadTarget(req, api, services);
      req.caller = await authenticateWhereRead(req, api, services, { userToken: api.userToken, userTokenPaths });
    } catch (error) {
      if (error instanceof InvalidCredentialsError || error instanceof InvalidUserTokenError) failedAuth.spend(`ip:${req.ip}`);
      throw error;
    }
  });
});
