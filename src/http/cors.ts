/**
 * CORS for browser front ends: the user-token routes (declared `userToken: true`) answer
 * pages of their API key's allowed domains (commands/allowed-domains.ts), and nothing else
 * gets a CORS header: no other route, no other origin, no API-key-header caller.
 *
 * Why two checks (docs/security.md, "Browser front ends"):
 * - A preflight (OPTIONS) carries no credentials and no custom header values, so it cannot
 *   say which API key the page will use. It is answered with CORS headers when some API key
 *   allows the origin (`allowed_domains`, one lookup by key for the origin's few candidate
 *   entries), and refused otherwise. Anyone can list any origin on a key of their own, so
 *   this check stops no attacker: it keeps origins no tenant named from getting anywhere,
 *   and the preflight grants nothing that carries authority (the request still needs a user
 *   token; no cookies are involved, so `Access-Control-Allow-Credentials` is never sent).
 * - The real request names its key (the user token's) and is answered with
 *   `Access-Control-Allow-Origin` only when that key allows the origin. A page of another
 *   origin holding a token therefore sends the request but never reads the answer. A
 *   request that failed before a caller was established (a missing or expired token, a
 *   rate limit, a malformed body) knows no key: its answer, which names nothing of any
 *   tenant, gets the preflight's check, so the front end can read the 401 and get a new
 *   token. An API-key-header caller never gets CORS headers: those credentials belong on a
 *   server, and the preflight does not allow their headers.
 * Every answer of these routes carries `Vary: Origin`, so no cache serves one origin's
 * answer to another.
 *
 * Example: key K allows `app.example.com`. A page of https://app.example.com preflights
 * resources/get (204 with the CORS headers), then POSTs with `Authorization: Bearer <K's user
 * token>` and reads the answer. A page of https://evil.example.net, listed on the attacker's
 * own key L, passes the preflight too, but its POST with K's token is answered without
 * `Access-Control-Allow-Origin`: the browser keeps the answer from it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalidArgument, permissionDenied } from '../shared/errors.js';
import { originCandidates } from '../../commands/allowed-domains.js';
import { keyAdmits, someKeyAdmits } from '../../queries/allowed-domains.js';
import type { Services } from '../composition/services.js';
import { shared } from './plugin.js';
import type {} from './route-config.js';

/** The request headers a browser page may send: a user token, JSON, and this API's own. */
const CORS_ALLOW_HEADERS = 'authorization, content-type, idempotency-key, x-request-id, x-consistency-token, last-event-id, x-dry-run, x-dry-run-page-token';
/** The answer headers a page may read besides the CORS-safelisted ones. */
const CORS_EXPOSE_HEADERS = 'x-request-id, retry-after, www-authenticate, idempotent-replayed, x-consistency-token, x-dry-run';
/**
 * How long a browser may reuse a preflight answer. Bounds how long a removed domain's pages
 * can still send requests (never read their answers: the real request is checked each time).
 */
const CORS_MAX_AGE_SECONDS = 600;

/** One header's value as one string; a repeated header counts as absent. */
function single(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** For a message: an origin as sent, quoted and cut short (it is the client's text). */
const quoted = (s: string) => JSON.stringify(s.length > 300 ? `${s.slice(0, 300)}...` : s);

function addVary(reply: FastifyReply, value: string): void {
  const current = reply.getHeader('vary');
  void reply.header('vary', typeof current === 'string' && current !== '' ? `${current}, ${value}` : value);
}

/**
 * Whether the answer to `req` (a user-token route's) may be read by its page: the caller's
 * API key admits the request's Origin (a caller not established yet: some key does). Resolves
 * the origin to allow, or undefined (no Origin, a server's call, an origin not admitted).
 */
async function admittedOrigin(services: Services, req: FastifyRequest): Promise<string | undefined> {
  const origin = single(req, 'origin');
  const candidates = origin === undefined ? null : originCandidates(origin);
  if (!candidates) return undefined;
  const caller = req.caller;
  const ok = caller
    ? caller.userId !== undefined && caller.tenant !== undefined
      ? await keyAdmits(services.read, caller.tenant.apiKey, candidates)
      : false
    : await someKeyAdmits(services.read, candidates);
  return ok ? origin : undefined;
}

/**
 * The CORS headers of an answer a route writes itself, outside the onSend hooks (the change
 * stream, src/http/routes/changes-stream.ts): `Vary: Origin`, and the allowed origin under
 * the same rule as every user-token route's answer.
 */
export async function corsHeaders(services: Services, req: FastifyRequest): Promise<Record<string, string>> {
  const origin = await admittedOrigin(services, req);
  return { vary: 'Origin', ...(origin !== undefined ? { 'access-control-allow-origin': origin, 'access-control-expose-headers': CORS_EXPOSE_HEADERS } : {}) };
}

/**
 * Registers the preflight route of each user-token route (`paths`: their paths, POST; `getPaths`:
 * the GET ones, the change stream) and the hook that answers their real requests. Register
 * before the routes are added.
 */
export const cors = shared<{ services: Services; paths: readonly string[]; getPaths?: readonly string[] }>('cors', async (app, { services, paths, getPaths = [] }) => {
  const methodOf = new Map<string, 'GET' | 'POST'>([...paths.map((p) => [p, 'POST'] as const), ...getPaths.map((p) => [p, 'GET'] as const)]);
  for (const [path, allowed] of methodOf) {
    app.options(path, { schema: { hide: true } }, async (req, reply) => {
      addVary(reply, 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
      // Read caches re-validate against other processes' commits (as the authentication hook does).
      services.read.beginRequest();
      const origin = single(req, 'origin');
      const method = single(req, 'access-control-request-method');
      if (origin === undefined || method === undefined) {
        throw invalidArgument('OPTIONS here answers CORS preflights only: send Origin and Access-Control-Request-Method.');
      }
      if (method !== allowed) {
        throw invalidArgument(
          allowed === 'POST'
            ? `Access-Control-Request-Method ${quoted(method)}: every route of this API is POST but the change stream (GET).`
            : `Access-Control-Request-Method ${quoted(method)}: ${path} is GET.`,
        );
      }
      const candidates = originCandidates(origin);
      if (!candidates || !(await someKeyAdmits(services.read, candidates))) {
        throw permissionDenied(`Origin ${quoted(origin)} is not an allowed domain of any API key (add it with /v2/workspace/domains/add; only https pages, or http on localhost and 127.0.0.1).`);
      }
      void reply
        .header('access-control-allow-origin', origin)
        .header('access-control-allow-methods', allowed)
        .header('access-control-allow-headers', CORS_ALLOW_HEADERS)
        .header('access-control-max-age', String(CORS_MAX_AGE_SECONDS));
      return reply.status(204).send();
    });
  }

  // Every route's answers pass here; only the user-token routes' POSTs are looked at, and
  // only one with an Origin header waits for a read (a server calling without one does not).
  app.addHook('onSend', (req, reply, payload, done) => {
    // The change stream's refusals (429, 401...) come here too; its stream writes its own (corsHeaders).
    if ((req.method !== 'POST' && req.method !== 'GET') || !req.routeOptions.config.api?.userToken) return done(null, payload);
    addVary(reply, 'Origin');
    if (single(req, 'origin') === undefined) return done(null, payload);
    admittedOrigin(services, req).then(
      (origin) => {
        if (origin !== undefined) void reply.header('access-control-allow-origin', origin).header('access-control-expose-headers', CORS_EXPOSE_HEADERS);
        done(null, payload);
      },
      (err: unknown) => {
        // The answer is made already; without the check it goes out as it would to a
        // server, without CORS headers.
        req.log.warn({ err }, 'CORS origin check failed');
        done(null, payload);
      },
    );
  });
});
