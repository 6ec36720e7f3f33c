/**
 * Envelope encryption of the secrets a tenant configures (docs/security.md), node:crypto only,
 * AES-256-GCM throughout:
 *
 * - the **master key** (SECRETS_KEY, or the key file in DATA_DIR) never touches a store; it
 *   only wraps data keys;
 * - each API key has a **data key** (32 random bytes), stored wrapped by the master key in
 *   the key store (src/secrets/store.ts). Destroying it makes every value sealed with it
 *   unreadable, in every copy of the event log (crypto-shredding);
 * - a **sealed value** is `enc:v1:<data key id>:<base64url(iv | ciphertext | tag)>`, a plain
 *   string, so it fits wherever the clear value did (a service config's string field, any
 *   JSON position of an agent configuration). The plaintext is the value's JSON, so a number
 *   or an object comes back as one.
 *
 * Sealing is deterministic for one (data key, API key, value): the IV is an HMAC of the
 * associated data and the plaintext under a key derived for that purpose (the synthetic-IV
 * construction of RFC 5297, with GCM). The same secret sent twice seals to the same string,
 * so "nothing changed" is still detectable by comparing configurations and a retried command
 * writes the same event; what it reveals is only that two sealed values of one tenant are
 * equal. Distinct plaintexts never share an IV (a collision of a 96-bit HMAC prefix aside).
 *
 * The associated data binds a sealed value to its API key and data key: a value copied into
 * another tenant's configuration does not open there, and any change to a sealed string
 * (prefix, key id, IV, ciphertext or tag) makes opening fail.
 */
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, type KeyObject, randomBytes } from 'node:crypto';

const SEALED_PREFIX = 'enc:v1:';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9]{1,64}$/;
const SEALED = /^enc:v1:([A-Za-z0-9]{1,64}):([A-Za-z0-9_-]+)$/;

/** A sealed value could not be opened: wrong key, or the string was changed. */
export class SecretDecryptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretDecryptError';
  }
}

/** Whether `v` is a sealed value (anything else in a secret's place is a clear value from before encryption at rest). */
export const isSealed = (v: unknown): v is string => typeof v === 'string' && v.startsWith(SEALED_PREFIX);

/** The data key id a sealed value names, or null when `v` is not a well-formed sealed value. */
export function sealedKeyId(v: string): string | null {
  return SEALED.exec(v)?.[1] ?? null;
}

/**
 * How many bytes the clear value of a sealed one had (its plaintext: the value's JSON), from
 * the sealed form's length alone: base64url of IV, ciphertext (as long as the plaintext) and
 * tag. Limits count what the client sent, not what sealing made of it.
 */
export function sealedPlaintextBytes(v: string): number {
  const blob = v.slice(v.lastIndexOf(':') + 1);
  return Math.max(0, Math.floor((blob.length * 3) / 4) - IV_BYTES - TAG_BYTES);
}

/**
 * 32 bytes from SECRETS_KEY or the key file: 64 hex digits, or base64 (standard or URL
 * alphabet, padding optional). Null for anything else, so the caller names the variable.
 */
export function parseKeyMaterial(raw: string): Buffer | null {
  const s = raw.trim();
  if (/^[0-9a-fA-F]{64}$/.test(s)) return Buffer.from(s, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(s)) {
    const b = Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    return b.length === KEY_BYTES ? b : null;
  }
  return null;
}

const hmac = (key: Buffer | KeyObject, ...parts: Array<string | Buffer>) => {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest();
};

function encrypt(key: Buffer | KeyObject, iv: Buffer, plaintext: Buffer, aad: Buffer): string {
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(aad);
  const body = Buffer.concat([c.update(plaintext), c.final()]);
  return Buffer.concat([iv, body, c.getAuthTag()]).toString('base64url');
}

function decrypt(key: Buffer | KeyObject, blob: string, aad: Buffer, what: string): Buffer {
  const raw = Buffer.from(blob, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretDecryptError(`${what} is truncated`);
  const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  d.setAAD(aad);
  d.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
  try {
    return Buffer.concat([d.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), d.final()]);
  } catch {
    // GCM's tag check: a wrong key and a changed byte look the same, on purpose.
    throw new SecretDecryptError(`${what} does not open with this key (wrong key, or it was changed)`);
  }
}

/** The key that wraps data keys. Its `id` (a fingerprint) is safe to store and to show. */
export class MasterKey {
  readonly id: string;
  private readonly key: Buffer;

  constructor(bytes: Uint8Array) {
    if (bytes.length !== KEY_BYTES) throw new Error(`a master key has ${KEY_BYTES} bytes, got ${bytes.length}`);
    this.key = Buffer.from(bytes);
    this.id = hmac(this.key, 'collab/master-key-id').subarray(0, 8).toString('hex');
  }

  /** A fresh data key's bytes wrapped for `context` (the API key and data key id it belongs to). */
  wrap(dataKey: Buffer, context: string): string {
    return encrypt(this.key, randomBytes(IV_BYTES), dataKey, Buffer.from(`collab/data-key\0${context}`));
  }

  unwrap(wrapped: string, context: string): Buffer {
    const k = decrypt(this.key, wrapped, Buffer.from(`collab/data-key\0${context}`), 'a wrapped data key');
    if (k.length !== KEY_BYTES) throw new SecretDecryptError('a wrapped data key has the wrong length');
    return k;
  }

  /**
   * `bytes` of key material for one purpose other than wrapping data keys (HKDF-SHA256,
   * RFC 5869, the purpose as its info), so that the master key itself only ever wraps: the
   * page-token key (queries/paging.ts) is `derive('page-token/v1', 64)`. The same master
   * key derives the same bytes in every process and after every restart.
   */
  derive(purpose: string, bytes: number): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), `collab/derived/${purpose}`, bytes));
  }

  /** Never printed, logged or serialized by accident. */
  toJSON() {
    return { masterKeyId: this.id };
  }
}

/** One API key's data key, unwrapped (in memory only). */
export class DataKey {
  // KeyObjects, made once: given a Buffer, every createHmac and createCipheriv makes a
  // KeyObject of it first, which costs more than the cipher itself (docs/performance.md,
  // "Personal data sealed per user"); a user's name is sealed and opened on hot paths.
  private readonly encKey: KeyObject;
  private readonly ivKey: KeyObject;

  constructor(readonly id: string, bytes: Buffer) {
    if (!KEY_ID.test(id)) throw new Error(`invalid data key id ${JSON.stringify(id)}`);
    if (bytes.length !== KEY_BYTES) throw new Error(`a data key has ${KEY_BYTES} bytes, got ${bytes.length}`);
    // Separate keys for the cipher and the synthetic IV, derived from the one stored key.
    this.encKey = createSecretKey(hmac(bytes, 'collab/secret/enc'));
    this.ivKey = createSecretKey(hmac(bytes, 'collab/secret/iv'));
  }

  /** Generates a fresh data key. */
  static generate(id: string): { key: DataKey; bytes: Buffer } {
    const bytes = randomBytes(KEY_BYTES);
    return { key: new DataKey(id, bytes), bytes };
  }

  private aad(apiKey: string) {
    return Buffer.from(`collab/secret\0${apiKey}\0${this.id}`);
  }

  /** `value` (any JSON value) sealed for `apiKey`. */
  seal(apiKey: string, value: unknown): string {
    const json = JSON.stringify(value);
    if (json === undefined) throw new Error('cannot seal undefined');
    const plaintext = Buffer.from(json, 'utf8');
    const aad = this.aad(apiKey);
    const iv = hmac(this.ivKey, aad, Buffer.from([0]), plaintext).subarray(0, IV_BYTES);
    return `${SEALED_PREFIX}${this.id}:${encrypt(this.encKey, iv, plaintext, aad)}`;
  }

  /** The value `sealed` holds; SecretDecryptError when it is malformed, changed, or not this key's. */
  open(apiKey: string, sealed: string): unknown {
    const m = SEALED.exec(sealed);
    if (!m) throw new SecretDecryptError('a sealed value is malformed');
    if (m[1] !== this.id) throw new SecretDecryptError('a sealed value names another data key');
    const plaintext = decrypt(this.encKey, m[2]!, this.aad(apiKey), 'a sealed value');
    try {
      return JSON.parse(plaintext.toString('utf8'));
    } catch {
      throw new SecretDecryptError('a sealed value holds no JSON');
    }
  }

  toJSON() {
    return { dataKeyId: this.id };
  }
}
