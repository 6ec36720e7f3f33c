/**
 * Issuing and verifying user tokens against the API key's signing keys, which live on the
 * write side only (the workspace aggregate), their private halves sealed with the key's data
 * key (src/secrets/). `verifyUserToken` is the helper other parts of the service (and an
 * operator's code) use to check a token a client presents; `authenticateUserToken` is the
 * same check for `Authorization: Bearer` (src/http/auth.ts); `publicJwks` is what other
 * services verify with.
 *
 * Keys are ES256 (P-256): the first is generated on the key's first token, a new one on each
 * rotation (`rotateSigningKey`, used by the API route and the CLI). An API key whose current
 * key is an HS256 one from before asymmetric signing gets an ES256 key on its next token, as
 * if rotated. A new key signs from now on; a token signed by a retired key stays valid until
 * it expires, unless the rotation revoked the previous keys, and a retired key never
 * verifies a token issued after its retirement (so a leaked old key cannot mint new tokens).
 * A deleted API key's tokens stop at once: its key document is gone and its data key
 * destroyed.
 */
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import { LEGACY_KID, workspaceDecider, workspaceStream, type SigningKey, type SigningPublicKey, type WorkspaceState } from '../../commands/workspace.js';
import { API_KEYS, type ApiKeyDoc } from '../../projections/workspaces.js';
import { BugError, notFound, SecretUnavailableError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import type { TenantContext } from './context.js';
import type { Services } from '../composition/services.js';
import { signToken, TOKEN_ISSUER, TOKEN_LIFETIME_SECONDS, TokenError, unverifiedToken, verifyToken, type TokenResource, type UserTokenClaims, type VerificationKey } from '../tokens/jwt.js';
import { SIGNING_KEY_RETENTION_MS, TOKEN_CLOCK_SKEW_SECONDS } from '../../commands/token-lifetime.js';

export interface TokenRequest {
  userId: string;
  user: { name: string; email: string; isAdmin: boolean };
  resources: TokenResource[];
}

function keysOf(state: WorkspaceState, apiKey: string): SigningKey[] {
  return state.status === 'active' && Object.hasOwn(state.keys, apiKey) ? state.keys[apiKey]!.signingKeys : [];
}
const currentKey = (state: WorkspaceState, apiKey: string) => keysOf(state, apiKey).find((k) => k.retiredAt === null);

/** A fresh ES256 key for `apiKey`: its id, its private scalar sealed for the key, its public half. */
async function newSigningKey(services: Pick<Services, 'secrets'>, apiKey: string): Promise<{ kid: string; secret: string; publicKey: SigningPublicKey }> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const { x, y, d } = await exportJWK(privateKey);
  if (!x || !y || !d) throw new BugError('an exported P-256 key lacks x, y or d');
  return { kid: newId(), secret: await services.secrets.seal(apiKey, d), publicKey: { kty: 'EC', crv: 'P-256', x, y } };
}

/** Signs a token for the request's API key with its current ES256 signing key, creating it on first use. */
export async function issueUserToken(ctx: TenantContext & { readonly tenant?: { readonly workspaceId: string } }, req: TokenRequest): Promise<{ token: string; claims: UserTokenClaims }> {
  const { secrets, commands } = ctx.services;
  const apiKey = ctx.apiKey;
  const stream = workspaceStream(ctx.tenant!.workspaceId);
  let key = currentKey((await commands.load(workspaceDecider, stream)).state, apiKey);
  if (key?.alg !== 'ES256') {
    // None yet, or an HS256 key from before asymmetric signing (replaced, still verifying).
    const r = await ctx.execute(workspaceDecider, stream, {
      type: 'EnsureTokenSigningSecret',
      data: { apiKey, ...(await newSigningKey(ctx.services, apiKey)) },
    });
    key = currentKey(r.state, apiKey);
  }
  if (key?.alg !== 'ES256' || !key.publicKey) throw new BugError('no ES256 signing key after EnsureTokenSigningSecret');
  let d: string;
  try {
    d = await secrets.openString(apiKey, key.secret);
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
  return { token: await signToken(claims, { kid: key.kid, privateJwk: { ...key.publicKey, d } }), claims };
}

/**
 * Makes a new ES256 signing key current for `apiKey` of `workspaceId`. `revokePrevious`:
 * every token signed before stops at once; otherwise they stay valid until they expire.
 */
export async function rotateSigningKey(ctx: TenantContext, workspaceId: string, apiKey: string, revokePrevious: boolean) {
  const stream = workspaceStream(workspaceId);
  // Checked before anything is sealed: sealing creates the key's data key on first use.
  const { state } = await ctx.services.commands.load(workspaceDecider, stream);
  if (state.status !== 'active') throw notFound('Workspace not found.');
  if (!Object.hasOwn(state.keys, apiKey)) throw notFound('API key not found in this workspace.');
  const fresh = await newSigningKey(ctx.services, apiKey);
  const r = await ctx.execute(workspaceDecider, stream, {
    type: 'RotateTokenSigningKey',
    data: { apiKey, ...fresh, revokePrevious },
  });
  const revokedKids = r.events.flatMap((e) => (e.type === 'ApiKeyTokenSigningKeyRotated' ? e.data.revokedKids : []));
  return { apiKey, kid: fresh.kid, revokedKids, previousKeysValidUntilExpiry: !revokePrevious };
}

/** The API key's document and signing keys (unknown or deleted key: null). */
async function keyAndSigningKeys(services: Services, apiKey: string): Promise<{ doc: ApiKeyDoc; keys: SigningKey[] } | null> {
  const doc = await services.read.get<ApiKeyDoc>(API_KEYS, apiKey);
  if (!doc) return null;
  const { state } = await services.commands.load(workspaceDecider, workspaceStream(doc.workspaceId));
  return { doc, keys: keysOf(state, apiKey) };
}

/** Whether a key may still verify a token at `nowMs`: current, or retired less than a token lifetime ago. */
const verifiesAt = (key: SigningKey, nowMs: number) => key.retiredAt === null || key.retiredAt + SIGNING_KEY_RETENTION_MS > nowMs;

/**
 * `verifyUserToken`, also returning the API key's document (the tenant a Bearer caller acts
 * for). Throws TokenError.
 */
export async function authenticateUserToken(
  services: Services,
  token: string,
  options: { apiKey?: string; nowMs?: number } = {},
): Promise<{ claims: UserTokenClaims; apiKey: ApiKeyDoc }> {
  const { kid, claims: unverified } = unverifiedToken(token);
  const claimed = unverified.apiKey;
  if (typeof claimed !== 'string') throw new TokenError('token lacks its API key');
  if (options.apiKey !== undefined && claimed !== options.apiKey) throw new TokenError('token was issued for another API key');
  const nowMs = options.nowMs ?? services.clock();
  const found = await keyAndSigningKeys(services, claimed);
  const key = found?.keys.find((k) => k.kid === (kid ?? LEGACY_KID));
  let verifier: VerificationKey | undefined;
  if (key && verifiesAt(key, nowMs)) {
    if (key.alg === 'ES256') {
      // Public: nothing to open.
      verifier = key.publicKey;
    } else {
      try {
        verifier = await services.secrets.openString(claimed, key.secret);
      } catch (error) {
        if (error instanceof SecretUnavailableError) throw new TokenError('token signing key unavailable');
        throw error;
      }
    }
  }
  const claims = await verifyToken(token, () => verifier, { nowSeconds: Math.floor(nowMs / 1000), audience: claimed });
  if (key!.retiredAt !== null && claims.iat > Math.floor(key!.retiredAt / 1000) + TOKEN_CLOCK_SKEW_SECONDS) {
    throw new TokenError('token signed by a retired signing key');
  }
  return { claims, apiKey: found!.doc };
}

/**
 * Verifies a user token: algorithm, signature with the key its `kid` names, issuer, audience,
 * lifetime; when `apiKey` is given, the token must have been issued for that key. A retired
 * key verifies only tokens issued while it was current, and none once every token it could
 * have signed has expired. Throws TokenError.
 */
export async function verifyUserToken(services: Services, token: string, options: { apiKey?: string; nowMs?: number } = {}): Promise<UserTokenClaims> {
  return (await authenticateUserToken(services, token, options)).claims;
}

/** One published key (RFC 7517 §4, RFC 7518 §6.2). */
export interface PublishedJwk extends SigningPublicKey {
  kid: string;
  alg: 'ES256';
  use: 'sig';
}

/**
 * The JWK Set of `apiKey` (null: no such key): the public keys that may still verify one of
 * its live tokens, the current key first. HS256 keys are never published (their secret is
 * the key); a key whose tokens have all expired is left out, as `verifyUserToken` refuses
 * them anyway.
 */
export async function publicJwks(services: Services, apiKey: string, nowMs: number): Promise<{ keys: PublishedJwk[] } | null> {
  const found = await keyAndSigningKeys(services, apiKey);
  if (!found) return null;
  const keys = found.keys
    .filter((k) => k.alg === 'ES256' && k.publicKey && verifiesAt(k, nowMs))
    .sort((a, b) => (a.retiredAt === null ? -1 : b.retiredAt === null ? 1 : b.retiredAt - a.retiredAt))
    .map((k): PublishedJwk => ({ kty: 'EC', crv: 'P-256', x: k.publicKey!.x, y: k.publicKey!.y, kid: k.kid, alg: 'ES256', use: 'sig' }));
  return { keys };
}
