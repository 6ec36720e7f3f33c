/**
 * Issuing and verifying user tokens against the API key's signing secret, which lives on
 * the write side only (the workspace aggregate). `verifyUserToken` is the helper other
 * parts of the service (and an operator's code) use to check a token a client presents.
 */
import { randomUUID } from 'node:crypto';
import { workspaceDecider } from '../../commands/workspace.js';
import { API_KEYS, type ApiKeyDoc } from '../../projections/workspaces.js';
import { newSecret } from '../ids.js';
import type { RequestContext } from '../http/context.js';
import { workspaceStream } from '../http/routes/workspace.js';
import type { Services } from '../services.js';
import { signToken, TOKEN_ISSUER, TOKEN_LIFETIME_SECONDS, TokenError, unverifiedClaims, verifyToken, type TokenResource, type UserTokenClaims } from './jwt.js';

export interface TokenRequest {
  userId: string;
  user: { name: string; email: string; isAdmin: boolean };
  resources: TokenResource[];
}

/** Signs a token for the request's API key, creating the key's secret on first use. */
export async function issueUserToken(ctx: RequestContext, req: TokenRequest): Promise<{ token: string; claims: UserTokenClaims }> {
  const r = await ctx.execute(workspaceDecider, workspaceStream(ctx.tenant!.workspaceId), {
    type: 'EnsureTokenSigningSecret',
    data: { apiKey: ctx.apiKey, secret: newSecret() },
    metadata: { now: ctx.now },
  });
  const secret = r.state.status === 'active' ? r.state.keys[ctx.apiKey]?.tokenSigningSecret : undefined;
  if (!secret) throw new Error('bug: no signing secret after EnsureTokenSigningSecret');
  const iat = Math.floor(ctx.now / 1000);
  const claims: UserTokenClaims = {
    iss: TOKEN_ISSUER,
    sub: req.userId,
    apiKey: ctx.apiKey,
    user: req.user,
    resources: req.resources,
    iat,
    exp: iat + TOKEN_LIFETIME_SECONDS,
    jti: randomUUID(),
  };
  return { token: signToken(claims, secret), claims };
}

/** The key's signing secret, or undefined (unknown key, or no token ever issued). */
async function signingSecret(services: Services, apiKey: string): Promise<string | undefined> {
  const key = await services.read.get<ApiKeyDoc>(API_KEYS, apiKey);
  if (!key) return undefined;
  const { state } = await services.commands.load(workspaceDecider, workspaceStream(key.workspaceId));
  return state.status === 'active' ? state.keys[apiKey]?.tokenSigningSecret : undefined;
}

/**
 * Verifies a user token: signature with its API key's secret, algorithm, lifetime; when
 * `apiKey` is given, the token must have been issued for that key. Throws TokenError.
 */
export async function verifyUserToken(services: Services, token: string, options: { apiKey?: string; nowMs?: number } = {}): Promise<UserTokenClaims> {
  const claimed = unverifiedClaims(token).apiKey;
  if (typeof claimed !== 'string') throw new TokenError('token lacks its API key');
  if (options.apiKey !== undefined && claimed !== options.apiKey) throw new TokenError('token was issued for another API key');
  const secret = await signingSecret(services, claimed);
  // Unknown key: verify against a throwaway secret, so the failure takes the usual path.
  return verifyToken(token, secret ?? newSecret(), Math.floor((options.nowMs ?? services.clock()) / 1000));
}
