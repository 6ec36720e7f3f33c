/**
 * Issuing and verifying user tokens against the API key's signing keys, which live on the
 * write side only (the workspace aggregate), sealed with the key's data key (src/secrets/).
 * `verifyUserToken` is the helper other parts of the service (and an operator's code) use to
 * check a token a client presents.
 *
 * Rotation (`rotateSigningKey`, used by the API route and the CLI): a new key signs from now
 * on; a token signed by a retired key stays valid until it expires, unless the rotation
 * revoked the previous keys, and a retired key never verifies a token issued after its
 * retirement (so a leaked old key cannot mint new tokens). A deleted API key's tokens stop
 * at once: its key document is gone and its data key destroyed.
 */
import { randomUUID } from 'node:crypto';
import { LEGACY_KID, workspaceDecider, type SigningKey, type WorkspaceState } from '../../commands/workspace.js';
import { API_KEYS, type ApiKeyDoc } from '../../projections/workspaces.js';
import { BugError, notFound, SecretUnavailableError } from '../errors.js';
import { newId, newSecret } from '../ids.js';
import type { RequestContext } from '../http/context.js';
import { workspaceStream } from '../../commands/workspace.js';
import type { Services } from '../services.js';
import { signToken, TOKEN_ISSUER, TOKEN_LIFETIME_SECONDS, TokenError, unverifiedToken, verifyToken, type TokenResource, type UserTokenClaims } from './jwt.js';
import { SIGNING_KEY_RETENTION_MS, TOKEN_CLOCK_SKEW_SECONDS } from './lifetime.js';

export interface TokenRequest {
  userId: string;
  user: { name: string; email: string; isAdmin: boolean };
  resources: TokenResource[];
}

function keysOf(state: WorkspaceState, apiKey: string): SigningKey[] {
  return state.status === 'active' && Object.hasOwn(state.keys, apiKey) ? state.keys[apiKey]!.signingKeys : [];
}
const currentKey = (state: WorkspaceState, apiKey: string) => keysOf(state, apiKey).find((k) => k.retiredAt === null);

/** Signs a token for the request's API key with its current signing key, creating the first on first use. */
export async function issueUserToken(ctx: RequestContext, req: TokenRequest): Promise<{ token: string; claims: UserTokenClaims }> {
  const { secrets, commands } = ctx.services;
  const apiKey = ctx.apiKey;
  const stream = workspaceStream(ctx.tenant!.workspaceId);
  let key = currentKey((await commands.load(workspaceDecider, stream)).state, apiKey);
  if (!key) {
    const r = await ctx.execute(workspaceDecider, stream, {
      type: 'EnsureTokenSigningSecret',
      data: { apiKey, kid: newId(), secret: await secrets.seal(apiKey, newSecret()) },
      metadata: { now: ctx.now },
    });
    key = currentKey(r.state, apiKey);
  }
  if (!key) throw new BugError('no signing key after EnsureTokenSigningSecret');
  let secret: string;
  try {
    secret = await secrets.openString(apiKey, key.secret);
  } catch (error) {
    if (error instanceof SecretUnavailableError) {
      throw new SecretUnavailableError(`The token signing key of this API key cannot be decrypted (${error.message}); rotate it with /v2/workspace/apikey/signingkey/rotate.`);
    }
    throw error;
  }
  const iat = Math.floor(ctx.now / 1000);
  const claims: UserTokenClaims = {
    iss: TOKEN_ISSUER,
    aud: apiKey,
    sub: req.userId,
    apiKey,
    user: req.user,
    resources: req.resources,
    iat,
    exp: iat + TOKEN_LIFETIME_SECONDS,
    jti: randomUUID(),
  };
  return { token: await signToken(claims, { kid: key.kid, secret }), claims };
}

/**
 * Makes a new signing key current for `apiKey` of `workspaceId`. `revokePrevious`: every
 * token signed before stops at once; otherwise they stay valid until they expire.
 */
export async function rotateSigningKey(ctx: RequestContext, workspaceId: string, apiKey: string, revokePrevious: boolean) {
  const stream = workspaceStream(workspaceId);
  // Checked before anything is sealed: sealing creates the key's data key on first use.
  const { state } = await ctx.services.commands.load(workspaceDecider, stream);
  if (state.status !== 'active') throw notFound('Workspace not found.');
  if (!Object.hasOwn(state.keys, apiKey)) throw notFound('API key not found in this workspace.');
  const kid = newId();
  const secret = await ctx.services.secrets.seal(apiKey, newSecret());
  const r = await ctx.execute(workspaceDecider, stream, {
    type: 'RotateTokenSigningKey',
    data: { apiKey, kid, secret, revokePrevious },
    metadata: { now: ctx.now },
  });
  const revokedKids = r.events.flatMap((e) => (e.type === 'ApiKeyTokenSigningKeyRotated' ? e.data.revokedKids : []));
  return { apiKey, kid, revokedKids, previousKeysValidUntilExpiry: !revokePrevious };
}

/** The API key's signing keys (unknown or deleted key: none). */
async function signingKeys(services: Services, apiKey: string): Promise<SigningKey[]> {
  const key = await services.read.get<ApiKeyDoc>(API_KEYS, apiKey);
  if (!key) return [];
  const { state } = await services.commands.load(workspaceDecider, workspaceStream(key.workspaceId));
  return keysOf(state, apiKey);
}

/**
 * Verifies a user token: algorithm, signature with the key its `kid` names, issuer, audience,
 * lifetime; when `apiKey` is given, the token must have been issued for that key. A retired
 * key verifies only tokens issued while it was current, and none once every token it could
 * have signed has expired. Throws TokenError.
 */
export async function verifyUserToken(services: Services, token: string, options: { apiKey?: string; nowMs?: number } = {}): Promise<UserTokenClaims> {
  const { kid, claims: unverified } = unverifiedToken(token);
  const claimed = unverified.apiKey;
  if (typeof claimed !== 'string') throw new TokenError('token lacks its API key');
  if (options.apiKey !== undefined && claimed !== options.apiKey) throw new TokenError('token was issued for another API key');
  const nowMs = options.nowMs ?? services.clock();
  const key = (await signingKeys(services, claimed)).find((k) => k.kid === (kid ?? LEGACY_KID));
  const usable = key && (key.retiredAt === null || key.retiredAt + SIGNING_KEY_RETENTION_MS > nowMs);
  let secret: string | undefined;
  if (key && usable) {
    try {
      secret = await services.secrets.openString(claimed, key.secret);
    } catch (error) {
      if (error instanceof SecretUnavailableError) throw new TokenError('token signing key unavailable');
      throw error;
    }
  }
  const claims = await verifyToken(token, () => secret, { nowSeconds: Math.floor(nowMs / 1000), audience: claimed });
  if (key!.retiredAt !== null && claims.iat > Math.floor(key!.retiredAt / 1000) + TOKEN_CLOCK_SKEW_SECONDS) {
    throw new TokenError('token signed by a retired signing key');
  }
  return claims;
}
