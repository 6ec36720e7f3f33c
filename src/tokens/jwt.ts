/**
 * The user tokens of `/v2/auth/generate_token`: compact JWTs (RFC 7519), HS256 (HMAC-SHA256)
 * with the API key's own signing secret, node:crypto only. The secret is generated once per
 * key and kept on the write side (workspace aggregate, `ApiKeyTokenSigningSecretCreated`);
 * it is never returned and never in a read model.
 *
 * Verification accepts only `alg: HS256` (never `none`, never another algorithm), compares
 * signatures in constant time, and checks `exp` (and `iat`, allowing a minute of clock skew).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const TOKEN_LIFETIME_SECONDS = 48 * 60 * 60;
export const TOKEN_ISSUER = 'collab-backend';
/** Tolerated clock difference between the signer and a verifier. */
const SKEW_SECONDS = 60;

export interface TokenResource {
  type: 'organization' | 'folder' | 'document';
  id: string;
  organizationId?: string;
  accessRole?: 'editor' | 'viewer';
  expiresAt?: number;
}

export interface UserTokenClaims {
  iss: string;
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

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

const sign = (input: string, secret: string) => createHmac('sha256', secret).update(input).digest();

export function signToken(claims: UserTokenClaims, secret: string): string {
  const body = `${HEADER}.${b64url(JSON.stringify(claims))}`;
  return `${body}.${b64url(sign(body, secret))}`;
}

export class TokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenError';
  }
}

function decodePart(part: string, what: string): Record<string, unknown> {
  if (!/^[A-Za-z0-9_-]+$/.test(part)) throw new TokenError(`malformed token ${what}`);
  try {
    const v = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
    return v as Record<string, unknown>;
  } catch {
    throw new TokenError(`malformed token ${what}`);
  }
}

/**
 * Reads the claims without checking them: only to find which key's secret to verify with.
 * Never trust the result before `verifyToken` passed.
 */
export function unverifiedClaims(token: string): Partial<UserTokenClaims> {
  const parts = token.split('.');
  if (parts.length !== 3) throw new TokenError('malformed token');
  return decodePart(parts[1]!, 'payload') as Partial<UserTokenClaims>;
}

/** Checks signature, algorithm and lifetime; returns the claims or throws TokenError. */
export function verifyToken(token: string, secret: string, nowSeconds: number): UserTokenClaims {
  const parts = token.split('.');
  if (parts.length !== 3) throw new TokenError('malformed token');
  const [h, p, s] = parts as [string, string, string];
  const header = decodePart(h, 'header');
  if (header.alg !== 'HS256') throw new TokenError('unsupported token algorithm');
  if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new TokenError('malformed token signature');
  const expected = sign(`${h}.${p}`, secret);
  const given = Buffer.from(s, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new TokenError('invalid token signature');
  const claims = decodePart(p, 'payload') as unknown as UserTokenClaims;
  if (typeof claims.exp !== 'number' || claims.exp <= nowSeconds) throw new TokenError('token expired');
  if (typeof claims.iat === 'number' && claims.iat > nowSeconds + SKEW_SECONDS) throw new TokenError('token issued in the future');
  if (typeof claims.apiKey !== 'string' || typeof claims.sub !== 'string') throw new TokenError('token lacks its subject or API key');
  return claims;
}
