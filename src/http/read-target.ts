/**
 * Read replicas (POSTGRES_REPLICA_URLS, src/adapters/postgres-replicas.ts): where a read-only
 * request's reads go, chosen once when it arrives, before authentication, so that its
 * credentials are read where its data is and a request a standby answers asks the primary
 * nothing (docs/architecture.md, "Read replicas").
 *
 * The choice needs the position the request must see: its consistency token's, else the last
 * write this process made for the same caller (ReplicaSet.lastWrite). Both belong to the caller
 * its credentials claim, before they are checked: the API key or workspace id of its headers,
 * or the API key a user token names. Nothing is trusted from that: a claim that is false fails
 * authentication anyway, and a true one is the caller authentication then finds. A token that
 * does not open here counts as none; the consistency hook (src/http/consistency.ts) refuses it.
 *
 * Authentication runs on the chosen standby (src/http/authentication.ts). A refusal there is
 * asked again of the primary, and the request then reads the primary: a key, token or
 * workspace created a moment ago may not have been replayed there yet. So a standby can only
 * accept what it should no longer accept, never refuse what the primary accepts, and only
 * within the admission bound (POSTGRES_REPLICA_MAX_LAG_MS: docs/operations.md, Read replicas).
 */
import type { FastifyRequest } from 'fastify';
import type { Services } from '../composition/services.js';
import type { PostgresReadStore } from '../adapters/postgres-read-store.js';
import type { LogPosition } from '../ports/event-store.js';
import { apiKeyScope, workspaceScope } from '../secrets/positions.js';
import { unverifiedToken } from '../tokens/jwt.js';
import type { ApiRouteConfig } from './route-config.js';
import { bearerToken } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The standby this request's reads go to; null: the primary (or no read replicas). */
    readTarget: PostgresReadStore | null;
  }
}

const single = (v: string | string[] | undefined) => (typeof v === 'string' && v !== '' ? v : undefined);

/** The scope (consistency tokens', last writes') of the caller the request's credentials claim, unchecked. */
function claimedScope(req: FastifyRequest, api: ApiRouteConfig): string | null {
  if (api.auth === 'workspace') {
    const id = single(req.headers['x-service-workspace-id']);
    return id === undefined ? null : workspaceScope(id);
  }
  const apiKey = single(req.headers['x-service-api-key']);
  if (apiKey !== undefined) return apiKeyScope(apiKey);
  const bearer = api.userToken ? bearerToken(req) : undefined;
  if (bearer === undefined) return null;
  try {
    const claimed = unverifiedToken(bearer).claims.apiKey;
    return typeof claimed === 'string' ? apiKeyScope(claimed) : null;
  } catch {
    return null;
  }
}

const later = (a: LogPosition | null, b: LogPosition | null) => (a === null ? b : b === null || a >= b ? a : b);

/** The standby a read-only request on `api` reads (counted there), or null for the primary. */
export function chooseReadTarget(req: FastifyRequest, api: ApiRouteConfig, services: Services): PostgresReadStore | null {
  const replicas = services.replicas;
  if (!replicas || !api.replicaRead) return null;
  const scope = claimedScope(req, api);
  let need: LogPosition | null = null;
  if (scope !== null) {
    const header = req.headers['x-consistency-token'];
    if (header !== undefined) {
      try {
        need = services.secrets.positions.open(scope, Array.isArray(header) ? header.join(',') : header, 'x-consistency-token');
      } catch {
        // Refused by the consistency hook once the caller is known.
      }
    }
    need = later(need, replicas.lastWrite(scope));
  }
  return replicas.choose(need);
}
