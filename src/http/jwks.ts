/**
 * `GET /.well-known/jwks/{apiKey}.json`: the public keys that verify an API key's user
 * tokens, as a JSON Web Key Set (RFC 7517 §5), so another service (a realtime server, a
 * file server, an edge function) checks a token the front end presents without holding any
 * secret and without calling this service per request:
 *
 *   const jwks = createRemoteJWKSet(new URL(`${base}/.well-known/jwks/${apiKey}.json`));
 *   await jwtVerify(token, jwks, { issuer: 'collab-backend', audience: apiKey, algorithms: ['ES256'] });
 *
 * Why this path: a JWKS is fetched with a plain GET by generic clients (jose, every JWT
 * library), so it cannot be one of the POST routes with an envelope; one set per API key,
 * because tokens are per API key (`aud`) and a tenant must never be handed the keys of
 * another; under `/.well-known/` with a `.json` name like the usual `jwks.json`, so caches
 * and CDNs treat it as the static document it nearly is.
 *
 * Public: no credentials, like any JWKS. It reveals whether an API key id exists (404
 * otherwise); the id is no secret (it is every token's `aud`) and is useless without an auth
 * token. Rate-limited per client address like anonymous calls. The success body is the bare
 * set (what JWT libraries read); a failure is the usual envelope.
 *
 * Caching: `cache-control: public, max-age=300` and an `etag` (a matching `if-none-match`
 * answers 304). After a rotation new tokens carry a `kid` a cached set lacks: verifiers
 * refetch on an unknown `kid` (jose's remote set does). A revocation reaches a verifier
 * within max-age; the service itself stops accepting at once.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { createHash } from 'node:crypto';
import { ApiError } from '../shared/errors.js';
import type { Services } from '../composition/services.js';
import { publicJwks } from '../usecases/user-tokens.js';
import { operationSchemas } from './openapi.js';
import type {} from './route-config.js';

const JWKS_PATH = '/.well-known/jwks/:apiKey.json';
const JWKS_MAX_AGE_SECONDS = 300;

const failure = (e: ApiError) => ({ error: { status: e.status, message: e.message } });

/** Adds the route; rate-limited per client address by src/http/rate-limits.ts's hook (registered first). */
export function installJwks(app: FastifyInstance, services: Services): void {
  app.get(JWKS_PATH, { schema: operationSchemas.jwks, config: { rateLimitByAddress: true } }, async (req, reply) => {
    const { apiKey } = req.params as { apiKey: string };
    // Ids are at most 256 characters (semantics §1): a longer one names no key.
    const set = apiKey.length <= 256 ? await publicJwks(services, apiKey, services.clock()) : null;
    if (!set) {
      // Not cached: the key may be created a moment later.
      return reply
        .status(404)
        .header('cache-control', 'no-store')
        .send(failure(new ApiError('NOT_FOUND', 'API key not found.')));
    }
    const body = JSON.stringify(set);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    void reply.header('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`).header('etag', etag);
    // Bodiless, which the route's response schemas (written for the document) cannot say: untyped.
    if (req.headers['if-none-match'] === etag) return (reply as FastifyReply).status(304).send();
    return reply.status(200).type('application/json; charset=utf-8').send(body);
  });
}
