/**
 * Authentication for the four modes of route.ts. Missing headers: UNAUTHENTICATED; a wrong
 * pair: PERMISSION_DENIED (spec "Authentication" rule 1, applied to API keys too).
 *
 * User tokens (`Authorization: Bearer <token from /v2/auth/generate_token>`) are the one
 * other credential, accepted only on routes declared `userToken: true` (route.ts), in place
 * of the API-key headers; the caller is then the token's API key acting as the token's user
 * only (`Caller.userId`, `RequestContext.actingUser()`). The rules, when a request carries
 * a Bearer token:
 * - the route's own credential headers are present too (any of them): they win and the
 *   Bearer token is ignored, so a back end that also forwards a user's Authorization header
 *   keeps working;
 * - otherwise, on a route without the flag: PERMISSION_DENIED naming the routes that take
 *   user tokens (before the token is even checked);
 * - on a flagged route: the token is verified (src/usecases/user-tokens.ts: signature with the
 *   key its `kid` names, `typ`, `iss`, `aud` = its API key, `exp`, `iat`); an invalid one is
 *   UNAUTHENTICATED with `www-authenticate: Bearer error="invalid_token"` (RFC 6750 §3.1):
 *   the client should get a new token. A valid token used beyond its user is the route's
 *   PERMISSION_DENIED (src/http/acting-user.ts).
 */
import type { FastifyRequest } from 'fastify';
import { timingSafeEqual, createHash } from 'node:crypto';
import { ApiError, permissionDenied, unauthenticated } from '../shared/errors.js';
import { verifyApiKey, verifyWorkspace } from '../../queries/credentials.js';
import { authenticateUserToken } from '../usecases/user-tokens.js';
import { TokenError } from '../tokens/jwt.js';
import type { Services } from '../composition/services.js';
import type { AuthMode } from './route.js';
import type { Tenant } from './context.js';

export interface Caller {
  actor: string;
  tenant?: Tenant;
  workspaceId?: string;
  /** Set when a user token authenticated the call: the user the caller acts as, and only as. */
  userId?: string;
}

/** An invalid user token: 401 with the RFC 6750 challenge (src/http/answers.ts sets the header). */
export class InvalidUserTokenError extends ApiError {
  readonly challenge = 'Bearer error="invalid_token"';
  constructor(reason: string) {
    super('UNAUTHENTICATED', `The user token is not valid: ${reason}. Get a new one from your back end (/v2/auth/generate_token).`);
  }
}

/**
 * Credentials that were given and are wrong (an unknown API key, a wrong auth token, a wrong
 * admin token): PERMISSION_DENIED as before, a class of its own so the authentication hook
 * (src/http/authentication.ts) counts it against the client's failed-authentication bucket. Missing headers are not a guess and do not count.
 */
export class InvalidCredentialsError extends ApiError {
  constructor(message: string) {
    super('PERMISSION_DENIED', message);
  }
}

/** What authentication needs to know of the route besides its mode. */
export interface AuthOptions {
  /** The route takes a user token in place of the API-key headers. */
  userToken: boolean;
  /** Every route that does, named in the refusal of the others. */
  userTokenPaths: readonly string[];
}

const NO_USER_TOKENS: AuthOptions = { userToken: false, userTokenPaths: [] };

/** A header value as one string; a repeated header or an absurd length counts as malformed. */
function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || v.length > 512) throw permissionDenied(`Header ${name} is malformed.`);
  return v;
}

function requireHeaders(req: FastifyRequest, names: [string, string]): [string, string] {
  const values = names.map((n) => header(req, n));
  const missing = names.filter((_, i) => values[i] === undefined);
  if (missing.length > 0) throw unauthenticated(`Missing authentication header(s): ${missing.join(', ')}.`);
  return values as [string, string];
}

/** Each mode's own credential headers. */
const CREDENTIAL_HEADERS: Record<AuthMode, readonly string[]> = {
  open: [],
  admin: ['x-service-admin-token'],
  workspace: ['x-service-workspace-id', 'x-service-workspace-auth-token'],
  apiKey: ['x-service-api-key', 'x-service-auth-token'],
};

const BEARER = /^Bearer +(\S+) *$/i;

/**
 * The Bearer token of the Authorization header, if it carries one (another scheme, Basic
 * say, is none of ours and ignored). Tokens are bounded like every input: jwt.ts refuses
 * more than 16 KiB.
 */
export function bearerToken(req: FastifyRequest): string | undefined {
  const v = req.headers.authorization;
  if (typeof v !== 'string') return undefined;
  return BEARER.exec(v)?.[1];
}

const digest = (s: string) => createHash('sha256').update(s).digest();

async function userTokenCaller(services: Services, token: string): Promise<Caller> {
  try {
    const { claims, apiKey } = await authenticateUserToken(services, token);
    return {
      actor: `user:${claims.sub}`,
      tenant: { apiKey: apiKey._id, workspaceId: apiKey.workspaceId, type: apiKey.type },
      userId: claims.sub,
    };
  } catch (error) {
    if (error instanceof TokenError) throw new InvalidUserTokenError(error.message);
    throw error;
  }
}

export async function authenticate(req: FastifyRequest, mode: AuthMode, services: Services, options: AuthOptions = NO_USER_TOKENS): Promise<Caller> {
  const bearer = bearerToken(req);
  if (bearer !== undefined && !CREDENTIAL_HEADERS[mode].some((h) => req.headers[h] !== undefined)) {
    if (mode === 'apiKey' && options.userToken) return userTokenCaller(services, bearer);
    const where = options.userTokenPaths.length > 0 ? `the user-scoped routes (${options.userTokenPaths.join(', ')})` : 'no route';
    const needs = CREDENTIAL_HEADERS[mode].length > 0 ? `; this route needs ${CREDENTIAL_HEADERS[mode].join(' and ')}` : '';
    throw permissionDenied(`User tokens (Authorization: Bearer) are accepted only on ${where}${needs}.`);
  }

  switch (mode) {
    case 'open':
      return { actor: 'anonymous' };
    case 'admin': {
      const expected = services.config.adminToken;
      if (!expected) return { actor: 'anonymous' };
      const given = header(req, 'x-service-admin-token');
      if (!given) throw unauthenticated('Missing authentication header(s): x-service-admin-token.');
      if (!timingSafeEqual(digest(given), digest(expected))) throw new InvalidCredentialsError('Invalid admin token.');
      return { actor: 'admin' };
    }
    case 'workspace': {
      const [id, token] = requireHeaders(req, ['x-service-workspace-id', 'x-service-workspace-auth-token']);
      const ws = await verifyWorkspace(services.read, id, token);
      if (!ws) throw new InvalidCredentialsError('Invalid workspace credentials.');
      return { actor: `workspace:${ws._id}`, workspaceId: ws._id };
    }
    case 'apiKey': {
      const [apiKey, token] = requireHeaders(req, ['x-service-api-key', 'x-service-auth-token']);
      const key = await verifyApiKey(services.read, apiKey, token);
      if (!key) throw new InvalidCredentialsError('Invalid API key or auth token.');
      return {
        actor: `apikey:${key._id}`,
        tenant: { apiKey: key._id, workspaceId: key.workspaceId, type: key.type },
      };
    }
  }
}
