/**
 * The per-caller rate limit as a hook (the buckets are src/http/rate-limit.ts's): after
 * authentication, each API request takes a token from its caller's bucket (API key,
 * workspace, or client address for open routes); a route with `config.rateLimitByAddress`
 * (the JWKS) takes from its client address's. Refused: 429 RESOURCE_EXHAUSTED with
 * retry-after (the error handler, src/http/answers.ts).
 *
 * Register after src/http/authentication.ts: hooks of one stage run in the order they were
 * added, and this one needs `request.caller`.
 */
import type { Services } from '../composition/services.js';
import { BugError } from '../shared/errors.js';
import { scopeOf } from './authentication.js';
import { RateLimiter } from './rate-limit.js';
import { shared } from './plugin.js';
import type {} from './route-config.js';

export const rateLimits = shared<{ services: Services }>('rate-limits', async (app, { services }) => {
  const { config, clock } = services;
  const limiter = new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst, clock);
  // A user token's requests take from its API key's bucket and from its user's own share of
  // it, never from the share alone: ten tokens of one key together get no more than the key.
  // The share first, so a user past it is refused without costing the key (and the other
  // users) anything. Example: key 10 per second, burst 20, share 10%: a user may send 2 at
  // once, then one per second, while all the key's users and the back end together get 20.
  const userShare = config.rateLimitUserPercent / 100;
  const perUser = new RateLimiter(
    config.rateLimitPerSecond * userShare,
    Math.max(1, Math.floor(config.rateLimitBurst * userShare)),
    clock,
    100_000,
    (s) => `Rate limit exceeded for this user token's user (a share of its API key's limit); retry after ${s} s.`,
  );
  if (!limiter.enabled) return;

  // A callback hook, not an async one (no promise per request); a refusal goes to done().
  app.addHook('preValidation', (req, _reply, done) => {
    const { api, rateLimitByAddress } = req.routeOptions.config;
    try {
      if (api) {
        const caller = req.caller;
        if (!caller) throw new BugError(`route ${api.path}: the rate limit ran before authentication`);
        if (caller.tenant && caller.userId !== undefined) perUser.take(`user:${caller.tenant.apiKey}:${caller.userId}`);
        limiter.take(caller.tenant ? `apikey:${caller.tenant.apiKey}` : scopeOf(caller, req));
      } else if (rateLimitByAddress) {
        limiter.take(`ip:${req.ip}`);
      }
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  });
});
