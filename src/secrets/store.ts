/**
 * The key store and the service's one door to secrets at rest (docs/security.md): seal a
 * value for an API key, open a sealed value, shred an API key's keys. The cryptography is
 * src/shared/envelope.ts; this module keeps the keys.
 *
 * Where the keys live: the shared read-store collection `secret_keys` (SQLite
 * `readmodels.db`, or MongoDB), listed in src/ops/read-models.ts as shared, so no projection
 * rebuild ever drops or replays it. Unlike every read model it cannot be rebuilt from the
 * log; that is the point: the log is immutable, so the only way to make a deleted key's
 * secrets unreadable in every copy of the log is to destroy the one thing that opens them,
 * which must therefore live outside the log. It is written in `sensitive` transactions
 * (durable at once, deleted bytes overwritten).
 *
 * - `["keyring", apiKey]`: the API key's data keys, each wrapped by the master key
 *   (`{ id, wrapped, masterKeyId, createdAt }`; the first is the one that seals), or, once
 *   the API key is deleted, `state: "shredded"` with no keys. The tombstone stays so that a
 *   request racing the deletion cannot create a fresh data key for a deleted API key: both
 *   write this one document, so one of them waits (SQLite) or conflicts and retries (MongoDB).
 * - `["master"]`: the id (a fingerprint) of the master key that wrapped them. A process
 *   started with another master key refuses to start, naming SECRETS_KEY, instead of
 *   running with every stored secret unreadable.
 *
 * Data keys are created on first use (an API key created before encryption at rest gets
 * one when it first seals something). Unwrapped data keys are cached per key-ring document
 * object: the SQLite read store hands out the same frozen object until a commit changes the
 * document, so a shredded ring is never served from the cache, in this process or another.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ConfigError } from '../config/config.js';
import { notFound, SecretUnavailableError } from '../shared/errors.js';
import { key, newId } from '../shared/ids.js';
import type { Doc, ReadStore } from '../ports/read-store.js';
import { PersonalData } from './personal.js';
import { PositionTokens } from './positions.js';
import { DataKey, isSealed, MasterKey, parseKeyMaterial, SecretDecryptError, sealedKeyId } from '../shared/envelope.js';

export const SECRET_KEYS = 'secret_keys';
/** The master key's file in DATA_DIR when SECRETS_KEY is unset. */
export const MASTER_KEY_FILE = 'secrets.key';

interface WrappedKey {
  id: string;
  wrapped: string;
  masterKeyId: string;
  createdAt: number;
}

export interface KeyRingDoc extends Doc {
  apiKey: string;
  state: 'active' | 'shredded';
  keys: WrappedKey[];
  shreddedAt: number | null;
}

interface MasterDoc extends Doc {
  masterKeyId: string;
  createdAt: number;
}

export const keyRingId = (apiKey: string) => key('keyring', apiKey);
const MASTER_DOC = key('master');
const wrapContext = (apiKey: string, dataKeyId: string) => `${apiKey}\0${dataKeyId}`;

interface Logger {
  warn(obj: unknown, msg?: string): void;
}

export class SecretStore {
  /** Unwrapped data keys by key-ring document object (see the header). */
  private readonly unwrapped = new WeakMap<object, Map<string, DataKey>>();
  /** Users' personal fields, sealed with a key per user (src/secrets/personal.ts). */
  readonly personal: PersonalData;
  /** Consistency and change tokens: log positions sealed for a caller (src/secrets/positions.ts). */
  readonly positions: PositionTokens;

  constructor(
    private readonly read: ReadStore,
    private readonly master: MasterKey,
    private readonly clock: () => number,
  ) {
    this.personal = new PersonalData(read, master, clock, SECRET_KEYS);
    this.positions = new PositionTokens(this);
  }

  get masterKeyId(): string {
    return this.master.id;
  }

  /** Key material for `purpose`, derived from the master key (MasterKey.derive). */
  deriveKey(purpose: string, bytes: number): Buffer {
    return this.master.derive(purpose, bytes);
  }

  private ring(apiKey: string): Promise<KeyRingDoc | null> {
    return this.read.get<KeyRingDoc>(SECRET_KEYS, keyRingId(apiKey));
  }

  /** The data key `id` of a ring, unwrapped; null when the ring does not hold it. */
  private dataKey(ring: KeyRingDoc, id: string): DataKey | null {
    let keys = this.unwrapped.get(ring);
    const hit = keys?.get(id);
    if (hit) return hit;
    const w = ring.keys.find((k) => k.id === id);
    if (!w) return null;
    if (w.masterKeyId !== this.master.id) {
      throw new SecretUnavailableError(`A data key of this API key was wrapped by master key ${w.masterKeyId}; this service runs with ${this.master.id}.`);
    }
    let bytes: Buffer;
    try {
      bytes = this.master.unwrap(w.wrapped, wrapContext(ring.apiKey, id));
    } catch (error) {
      if (error instanceof SecretDecryptError) throw new SecretUnavailableError(`A data key of this API key cannot be unwrapped: ${error.message}.`);
      throw error;
    }
    const k = new DataKey(id, bytes);
    if (Object.isFrozen(ring)) {
      if (!keys) this.unwrapped.set(ring, (keys = new Map()));
      keys.set(id, k);
    }
    return k;
  }

  /**
   * A function that seals values for `apiKey` with its data key, created on first use.
   * NOT_FOUND when the API key was deleted (its ring is shredded).
   */
  async sealer(apiKey: string): Promise<(value: unknown) => string> {
    let ring = await this.ring(apiKey);
    if (!ring || ring.keys.length === 0) ring = await this.createDataKey(apiKey);
    const k = this.dataKey(ring, ring.keys[0]!.id)!;
    return (value) => k.seal(apiKey, value);
  }

  async seal(apiKey: string, value: unknown): Promise<string> {
    return (await this.sealer(apiKey))(value);
  }

  /** The API key's ring with a data key in it, creating the key unless another process just did. */
  private createDataKey(apiKey: string): Promise<KeyRingDoc> {
    return this.read.transaction(
      async (tx) => {
        const ring = await tx.get<KeyRingDoc>(SECRET_KEYS, keyRingId(apiKey));
        if (ring?.state === 'shredded') throw notFound('API key not found.');
        if (ring && ring.keys.length > 0) return ring;
        const id = newId();
        const bytes = randomBytes(32);
        const doc: KeyRingDoc = {
          _id: keyRingId(apiKey),
          apiKey,
          state: 'active',
          keys: [{ id, wrapped: this.master.wrap(bytes, wrapContext(apiKey, id)), masterKeyId: this.master.id, createdAt: this.clock() }],
          shreddedAt: null,
        };
        bytes.fill(0);
        await tx.upsert(SECRET_KEYS, doc);
        return doc;
      },
      { sensitive: true },
    );
  }

  /**
   * The clear value of a stored secret: a sealed value is opened with the API key's data
   * key; anything else is a value stored in clear before encryption at rest and is returned
   * as it is (the upgrade path: docs/security.md). SecretUnavailableError when the data key
   * is gone (the API key was deleted, or the key store lost it) or the value does not open.
   */
  async open(apiKey: string, stored: unknown): Promise<unknown> {
    if (!isSealed(stored)) return stored;
    const id = sealedKeyId(stored);
    if (!id) throw new SecretUnavailableError('A stored secret of this API key is malformed.');
    const ring = await this.ring(apiKey);
    if (ring?.state === 'shredded') throw new SecretUnavailableError('The API key was deleted: its secrets were destroyed.');
    const k = ring ? this.dataKey(ring, id) : null;
    if (!k) throw new SecretUnavailableError('The data key that encrypted this secret is missing from the key store.');
    try {
      return k.open(apiKey, stored);
    } catch (error) {
      if (error instanceof SecretDecryptError) throw new SecretUnavailableError(`A stored secret of this API key cannot be decrypted: ${error.message}.`);
      throw error;
    }
  }

  /** `open` for a secret that must be a string (service configs, signing secrets). */
  async openString(apiKey: string, stored: string): Promise<string> {
    const v = await this.open(apiKey, stored);
    if (typeof v !== 'string') throw new SecretUnavailableError('A stored secret of this API key is not a string.');
    return v;
  }

  /**
   * Destroys the API key's data keys (crypto-shredding): every value ever sealed with them,
   * in the log and in any copy of it, is unreadable from now on, its users' personal fields
   * included (src/secrets/personal.ts). Idempotent.
   */
  async shred(apiKey: string): Promise<void> {
    const doc: KeyRingDoc = { _id: keyRingId(apiKey), apiKey, state: 'shredded', keys: [], shreddedAt: this.clock() };
    await this.read.transaction((tx) => tx.upsert(SECRET_KEYS, doc), { sensitive: true });
    await this.personal.shredAll(apiKey);
  }

  /** Whether the API key's keys were shredded. */
  async isShredded(apiKey: string): Promise<boolean> {
    return (await this.ring(apiKey))?.state === 'shredded';
  }
}

function readKeyFile(file: string, logger?: Logger): Buffer {
  const text = fs.readFileSync(file, 'utf8');
  const bytes = parseKeyMaterial(text);
  if (!bytes) throw new ConfigError('SECRETS_KEY', `is unset, and the key file ${file} does not hold a 32-byte key (base64 or 64 hex digits)`);
  const mode = fs.statSync(file).mode & 0o777;
  if (mode & 0o077) logger?.warn({ file, mode: mode.toString(8) }, `the master key file ${file} is readable by other users (mode ${mode.toString(8)}): chmod 600 it`);
  return bytes;
}

/**
 * Creates the key file once, whatever the number of processes starting together on one
 * DATA_DIR: each writes a complete temporary file (0600, synced) and links it into place;
 * a link fails when the name exists, so the first one wins and the others read it.
 */
function createKeyFile(file: string): void {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeSync(fd, `${randomBytes(32).toString('base64')}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.linkSync(tmp, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    fs.unlinkSync(tmp);
  }
  try {
    const dir = fs.openSync(path.dirname(file), 'r');
    fs.fsyncSync(dir);
    fs.closeSync(dir);
  } catch {
    // Not every platform can sync a directory; the file itself is synced.
  }
}

/**
 * The master key: SECRETS_KEY when set; otherwise DATA_DIR/secrets.key, created (0600) on
 * the first start. A missing key file while the store holds data keys is refused: a new key
 * would make every stored secret unreadable.
 */
function masterKeyBytes(config: { secretsKey?: Uint8Array; dataDir: string }, stored: MasterDoc | null, logger?: Logger): Buffer {
  if (config.secretsKey) return Buffer.from(config.secretsKey);
  const file = path.join(config.dataDir, MASTER_KEY_FILE);
  if (!fs.existsSync(file)) {
    if (stored) {
      throw new ConfigError(
        'SECRETS_KEY',
        `is unset and the key file ${file} is missing, but the key store holds data keys wrapped by master key ${stored.masterKeyId}: restore that file, or set SECRETS_KEY to that key (a new key would leave every stored secret unreadable)`,
      );
    }
    fs.mkdirSync(config.dataDir, { recursive: true });
    createKeyFile(file);
  }
  return readKeyFile(file, logger);
}

/** Opens the key store over `read` with the configured master key, checking it against the store's. */
export async function openSecretStore(
  read: ReadStore,
  config: { secretsKey?: Uint8Array; dataDir: string },
  clock: () => number,
  logger?: Logger,
): Promise<SecretStore> {
  const stored = await read.get<MasterDoc>(SECRET_KEYS, MASTER_DOC);
  const master = new MasterKey(masterKeyBytes(config, stored, logger));
  const mismatch = (id: string) =>
    new ConfigError(
      'SECRETS_KEY',
      `${config.secretsKey ? 'is' : `is unset and the key file ${path.join(config.dataDir, MASTER_KEY_FILE)} holds`} master key ${master.id}, but the key store's data keys were wrapped by master key ${id}: start with that key`,
    );
  if (stored && stored.masterKeyId !== master.id) throw mismatch(stored.masterKeyId);
  if (!stored) {
    await read.transaction(
      async (tx) => {
        const now = await tx.get<MasterDoc>(SECRET_KEYS, MASTER_DOC);
        if (now && now.masterKeyId !== master.id) throw mismatch(now.masterKeyId);
        if (!now) await tx.upsert(SECRET_KEYS, { _id: MASTER_DOC, masterKeyId: master.id, createdAt: clock() } satisfies MasterDoc);
      },
      { sensitive: true },
    );
  }
  return new SecretStore(read, master, clock);
}
