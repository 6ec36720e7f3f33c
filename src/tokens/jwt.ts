/**
 * The user tokens of `/v2/auth/generate_token`: compact JWTs (RFC 7519), ES256 (ECDSA over
 * P-256) with the API key's current signing key, signed and verified by `jose` (no
 * hand-written JWT code). The signing keys are generated per API key, their private halves
 * kept sealed on the write side (workspace aggregate: `ApiKeyTokenSigningSecretCreated`,
 * `ApiKeyTokenSigningKeyRotated`), never returned and never in a read model; their public
 * halves are published as a JWKS (src/usecases/user-tokens.ts `publicJwks`), so other services
 * verify tokens without holding any secret.
 *
 * - Header `{ alg: "ES256", typ: "JWT", kid }`: `kid` names the signing key, so a key can be
 *   rotated while the tokens the previous one signed stay valid until they expire.
 * - Claims: `iss` ("collab-backend"), `aud` (the API key the token was issued for), `sub`
 *   (the user id), `apiKey`, `user`, `resources`, `iat`, `exp` (iat + 48 h), `jti`.
 * - Verification accepts exactly the algorithm of the key `kid` names (ES256 for a public
 *   key, HS256 for a secret: never `none`, never one algorithm's token checked with the
 *   other's key), checks the signature (inside jose), `typ`, `iss`, `aud`, `exp` (strictly:
 *   a token is expired at its `exp`) and `iat` (at most a minute ahead of this clock).
 * - Tokens signed before asymmetric signing are HS256 with the key's shared secret: they
 *   verify until they expire. Tokens issued before key ids carry neither `kid` nor `aud`:
 *   they are verified with the key's first (LEGACY_KID) key and their `apiKey` claim.
 */
import { SignJWT, decodeJwt, decodeProtectedHeader, errors, importJWK, jwtVerify, type JWK, type JWTPayload } from 'jose';
import type { SigningPublicKey } from '../../commands/workspace.js';
import { TOKEN_CLOCK_SKEW_SECONDS, TOKEN_LIFETIME_SECONDS } from '../../commands/token-lifetime.js';

export { TOKEN_LIFETIME_SECONDS };
export const TOKEN_ISSUER = 'collab-backend';

export interface TokenResource {
  type: 'organization' | 'folder' | 'document';
  id: string;
  organizationId?: string;
  accessRole?: 'editor' | 'viewer';
  expiresAt?: number;
  /** Access context as requested (semantics §4a): `{ access: { field: value | value[] } }`. */
  context?: { access?: Record<string, string | number | Array<string | number>> };
}

export interface UserTokenClaims {
  iss: string;
  /** The API key the token was issued for (and checked against). Absent from tokens issued before key ids. */
  aud?: string;
  /** The user id. */
  sub: string;
  /** The API key (tenant) the token was issued for. */
  apiKey: string;
  user: { name: string; email: string; isAdmin: boolean };
  resources: TokenResource[];
  /** Unix seconds. */
  iat: number;
  exp: number;
  jti: string;
}

/**
 * A signing key in clear (opened from its sealed form just for this use): an ES256 private
 * JWK (the public key plus `d`), or an HS256 secret (only tests sign with one now: tokens
 * an earlier version issued).
 */
export type SigningKeyMaterial = { kid: string; privateJwk: SigningPublicKey & { d: string } } | { kid: string; secret: string };

/** What verifies the tokens of one `kid`: an ES256 public key, or an HS256 key's secret. */
export type VerificationKey = SigningPublicKey | string;

const bytes = (secret: string) => new TextEncoder().encode(secret);

export class TokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenError';
  }
}

export async function signToken(claims: UserTokenClaims, key: SigningKeyMaterial): Promise<string> {
  const jwt = new SignJWT({ ...claims } as unknown as JWTPayload);
  if ('secret' in key) return jwt.setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: key.kid }).sign(bytes(key.secret));
  const privateKey = await importJWK({ ...key.privateJwk } as JWK, 'ES256');
  return jwt.setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: key.kid }).sign(privateKey);
}

/**
 * The header's `kid` and the claims, unchecked: only to find the key to verify with. Never
 * trust the result before `verifyToken` passed.
 */
export function unverifiedToken(token: string): { kid: string | undefined; claims: Partial<UserTokenClaims> } {
  if (typeof token !== 'string' || token.length > 16_384) throw new TokenError('malformed token');
  try {
    const header = decodeProtectedHeader(token);
    const claims = decodeJwt(token) as Partial<UserTokenClaims>;
    if (header.kid !== undefined && typeof header.kid !== 'string') throw new TokenError('malformed token header');
    return { kid: header.kid, claims };
  } catch (error) {
    if (error instanceof TokenError) throw error;
    throw new TokenError('malformed token');
  }
}

function tokenError(error: unknown): TokenError {
  if (error instanceof TokenError) return error;
  if (error instanceof errors.JWTExpired) return new TokenError('token expired');
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) return new TokenError('unsupported token algorithm');
  if (error instanceof errors.JWSSignatureVerificationFailed) return new TokenError('invalid token signature');
  if (error instanceof errors.JWTClaimValidationFailed) return new TokenError(`token ${error.claim} claim is invalid`);
  return new TokenError('malformed token');
}

export interface VerifyOptions {
  nowSeconds: number;
  /** The API key the token must have been issued for (`aud`); required for tokens that carry a `kid`. */
  audience: string;
}

/**
 * Checks algorithm, signature (with the key `keyFor` gives for the header's `kid`: a public
 * key verifies ES256 only, a secret HS256 only; undefined: no such key), type, issuer,
 * audience and lifetime; returns the claims or throws TokenError.
 */
export async function verifyToken(
  token: string,
  keyFor: (kid: string | undefined) => VerificationKey | undefined,
  options: VerifyOptions,
): Promise<UserTokenClaims> {
  const { kid } = unverifiedToken(token);
  const key = keyFor(kid);
  if (key === undefined) throw new TokenError('unknown or revoked token signing key');
  try {
    const asymmetric = typeof key !== 'string';
    const verifier = asymmetric ? await importJWK({ ...key } as JWK, 'ES256') : bytes(key);
    const { payload } = await jwtVerify(token, verifier, {
      algorithms: [asymmetric ? 'ES256' : 'HS256'],
      typ: 'JWT',
      issuer: TOKEN_ISSUER,
      // Tokens from before key ids have no `aud`: their `apiKey` claim is checked below.
      ...(kid !== undefined ? { audience: options.audience } : {}),
      requiredClaims: ['exp', 'iat', 'sub'],
      currentDate: new Date(options.nowSeconds * 1000),
      clockTolerance: 0,
    });
    const claims = payload as unknown as UserTokenClaims;
    if (claims.iat > options.nowSeconds + TOKEN_CLOCK_SKEW_SECONDS) throw new TokenError('token issued in the future');
    if (typeof claims.apiKey !== 'string' || typeof claims.sub !== 'string') throw new TokenError('token lacks its subject or API key');
    if (claims.apiKey !== options.audience) throw new TokenError('token was issued for another API key');
    return claims;
  } catch (error) {
    throw tokenError(error);
  }
}
