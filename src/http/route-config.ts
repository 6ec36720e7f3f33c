/**
 * What the hooks need to know of an API route, carried in Fastify's route `config` and read
 * back as `request.routeOptions.config.api`: the authentication it takes, whether it accepts
 * user tokens, whether it changes anything (Idempotency-Key answers are kept only then). The
 * route modules keep writing `defineRoute` records (route.ts); `apiConfig` translates one when
 * it is registered (src/http/api-routes.ts).
 *
 * Routes outside the API (health checks, /metrics, the documents, the JWKS, CORS preflights,
 * an unmatched path) have no `api`: the API's hooks let them through untouched.
 */
import type { Caller } from './auth.js';
import type { AnyRoute, AuthMode } from './route.js';

export interface ApiRouteConfig {
  path: string;
  auth: AuthMode;
  /** Accepts `Authorization: Bearer <user token>` in place of the API-key headers (route.ts). */
  userToken: boolean;
  /** Changes something: a retry with the same Idempotency-Key gets the first answer back. */
  mutates: boolean;
  /** Its reads, authentication included, may go to a read replica (src/http/read-target.ts); absent: never. */
  replicaRead?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on the API's routes only. */
    api?: ApiRouteConfig;
    /** Rate-limited per client address, as anonymous calls are (the JWKS, src/http/jwks.ts). */
    rateLimitByAddress?: true;
  }
  interface FastifyRequest {
    /** Who called, set by the authentication hook on the API's routes (src/http/authentication.ts); null elsewhere. */
    caller: Caller | null;
  }
}

/**
 * Whether a route's reads may go to a read replica: a tenant's or workspace's read-only route.
 * Not a mutating one (what it reads to decide must be the primary's), nor the operator's (its
 * answers describe the primary: checkpoints, parked events), nor the change feed: a page reads
 * the changes read model up to this process's applied position and moves its cursor there, so
 * a standby behind that position would make it skip changes for good.
 */
const isReplicaRead = (route: AnyRoute) => !route.mutates && (route.auth === 'apiKey' || route.auth === 'workspace') && !route.path.startsWith('/v2/changes/');

export const apiConfig = (route: AnyRoute): ApiRouteConfig => ({
  path: route.path,
  auth: route.auth,
  userToken: route.userToken === true,
  mutates: route.mutates,
  replicaRead: isReplicaRead(route),
});
