/**
 * Opaque page tokens (semantics §4, §4a; docs/security.md, Page tokens).
 *
 * A token is `base64url(iv | ciphertext | tag)`: the keyset cursor of the last row served
 * (`[value, id]` as JSON), sealed with AES-256-GCM under a key derived (HKDF) from the
 * service's master key for this one purpose, with the hash of the query's filters (tenant
 * included) as associated data. So a token
 *
 * - reveals nothing: not the log position a cursor often is (which would show a tenant the
 *   platform's write volume), not the API key inside a row id;
 * - opens only for the query that made it: another caller's token, another query's (other
 *   filters, another organization), or one with any byte changed fails GCM's tag check and
 *   is INVALID_ARGUMENT naming the field. A client cannot forge a cursor either, which the
 *   base64 JSON of before allowed (edit `after.value`, encode again);
 * - opens in every process of one deployment and after restarts: the key comes from the
 *   master key (SECRETS_KEY, or DATA_DIR's key file), which they all share.
 *
 * The IV is an HMAC of the associated data and the cursor (the synthetic-IV construction
 * src/shared/envelope.ts uses): the same page of the same query gives the same token, and
 * distinct cursors never share an IV however many tokens are made, which a random 96-bit IV
 * would only promise up to about 2^32 tokens per key.
 *
 * The key is installed by each services instance as it opens (src/composition/services.ts), and removed
 * as it closes: queries take no key parameter. A process serves one deployment, so one key
 * is installed in production. A test process may hold several services at once, each with
 * its own master key: a token is sealed with the most recently installed key and opened with
 * any installed one (newest first); the query hash in the associated data (which holds the
 * API key) is what keeps tenants apart, not the choice of key. Using tokens with no key
 * installed is a bug and throws.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { invalidArgument } from '../src/shared/errors.js';
import type { Scalar } from '../src/ports/read-store.js';

export interface Cursor {
  value: Scalar;
  id: string;
}

/** What derives a key for one purpose from the master key (src/secrets/store.ts's SecretStore). */
export interface KeyDeriver {
  deriveKey(purpose: string, bytes: number): Buffer;
}

/** The HKDF purpose of the page-token key; a new version of the format takes a new one. */
const PAGE_TOKEN_PURPOSE = 'page-token/v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The keys are KeyObjects, made once as the key is installed: given a Buffer, every
 * createHmac and createCipheriv call makes a KeyObject of it first, which on Node 24 cost more
 * than the sealing itself (docs/performance.md, "Per-request budget (issue 27)").
 */
interface PageKey extends TokenKey {
  /** Tells installed keys apart (not secret: an HMAC of the key). */
  id: string;
  holders: number;
}

/** Installed keys, oldest first. */
const installed: PageKey[] = [];

/**
 * Installs the page-token key derived from `secrets`' master key; returns what removes it
 * again (once per install). Two services on one master key share one entry.
 */
export function installPageTokenKey(secrets: KeyDeriver): () => void {
  const material = secrets.deriveKey(PAGE_TOKEN_PURPOSE, 64);
  const enc = material.subarray(0, 32);
  const iv = material.subarray(32, 64);
  const id = createHmac('sha256', enc).update('collab/page-token/id').digest('hex').slice(0, 16);
  let k = installed.find((x) => x.id === id);
  if (k) {
    k.holders++;
    // The newest install seals: move it to the end.
    installed.splice(installed.indexOf(k), 1);
    installed.push(k);
  } else {
    k = { id, enc: createSecretKey(enc), iv: createSecretKey(iv), holders: 1 };
    installed.push(k);
  }
  const key = k;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--key.holders === 0) installed.splice(installed.indexOf(key), 1);
  };
}

function sealingKey(): PageKey {
  const k = installed[installed.length - 1];
  if (!k) throw new Error('page tokens used before any services instance installed their key (src/composition/services.ts assemble does, from the master key)');
  return k;
}

/** The associated data: the format, then the hash of the query (filters and tenant). */
const associatedData = (query: unknown) =>
  Buffer.concat([Buffer.from('collab/page-token/v1\0'), createHash('sha256').update(JSON.stringify(query)).digest()]);

/** The two keys a sealed token needs: one encrypts, one makes the synthetic IV. */
export interface TokenKey {
  enc: KeyObject;
  iv: KeyObject;
}

/** KeyObjects for a TokenKey from 64 bytes of derived material (32 for each). */
export const tokenKeyOf = (material: Buffer): TokenKey => ({
  enc: createSecretKey(material.subarray(0, 32)),
  iv: createSecretKey(material.subarray(32, 64)),
});

/**
 * `base64url(iv | ciphertext | tag)` of `plaintext` under `k`, bound to `aad`: the sealing of
 * page tokens, also used for consistency tokens (src/secrets/positions.ts).
 */
export function sealToken(k: TokenKey, aad: Buffer, plaintext: Buffer): string {
  const iv = createHmac('sha256', k.iv).update(aad).update(plaintext).digest().subarray(0, IV_BYTES);
  const c = createCipheriv('aes-256-gcm', k.enc, iv);
  c.setAAD(aad);
  const body = Buffer.concat([c.update(plaintext), c.final()]);
  return Buffer.concat([iv, body, c.getAuthTag()]).toString('base64url');
}

/** The bytes of a token's text, or null when it cannot be one (other characters, too short). */
export function tokenBytes(token: string): Buffer | null {
  // base64url without padding, nothing else: Buffer.from would skip other characters.
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return null;
  const raw = Buffer.from(token, 'base64url');
  return raw.length <= IV_BYTES + TAG_BYTES ? null : raw;
}

export function encodePageToken(query: unknown, after: Cursor): string {
  return sealToken(sealingKey(), associatedData(query), Buffer.from(JSON.stringify([after.value, after.id]), 'utf8'));
}

/** The plaintext of `raw` (tokenBytes) under `k`, or null when it does not open (wrong key, associated data or bytes). */
export function openToken(k: TokenKey, raw: Buffer, aad: Buffer): Buffer | null {
  const d = createDecipheriv('aes-256-gcm', k.enc, raw.subarray(0, IV_BYTES));
  d.setAAD(aad);
  d.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
  try {
    return Buffer.concat([d.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), d.final()]);
  } catch {
    return null;
  }
}

export function decodePageToken(token: string | undefined, query: unknown, field = 'data.pageToken'): Cursor | undefined {
  if (token === undefined) return undefined;
  const bad = () => invalidArgument(`${field} is not a valid page token for this query.`);
  if (installed.length === 0) sealingKey();
  const raw = tokenBytes(token);
  if (!raw) throw bad();
  const aad = associatedData(query);
  let plaintext: Buffer | null = null;
  for (let i = installed.length - 1; i >= 0 && plaintext === null; i--) plaintext = openToken(installed[i]!, raw, aad);
  if (plaintext === null) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(plaintext.toString('utf8'));
  } catch {
    throw bad();
  }
  // Only this module seals tokens, so a token that opens holds what encodePageToken wrote;
  // checked all the same, as a cursor reaches the store's keyset comparisons.
  if (!Array.isArray(parsed) || parsed.length !== 2) throw bad();
  const [value, id] = parsed as unknown[];
  if (typeof id !== 'string' || !(typeof value === 'string' || typeof value === 'number')) throw bad();
  return { value, id };
}

export const DEFAULT_PAGE_SIZE = 1000;
export const MAX_PAGE_SIZE = 1000;
