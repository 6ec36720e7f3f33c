/**
 * Personal data at rest (docs/privacy.md): a user's name, e-mail and initial are sealed with
 * a data key of their own before they reach the log, and that key is destroyed when their
 * data is deleted (users/data/delete). The log is immutable; destroying the one key that
 * opens those fields erases them from every copy of it, and from every read model a rebuild
 * or an audit replay makes: the events still say that user `u1` was added, never who `u1` was.
 *
 * The keys live beside the API keys' ones, in the shared `secret_keys` collection
 * (src/secrets/store.ts: outside the log, never rebuilt, written in `sensitive`
 * transactions that overwrite deleted bytes), one document per user:
 * `["person", apiKey, userId]` = `{ keys: [wrapped data key], state }`, `state: "shredded"`
 * and no keys once deleted. A user added again after a deletion gets a fresh key: the old
 * events stay unreadable, the new ones open.
 *
 * A sealed field is the same `enc:v1:<key id>:...` string as a secret, bound (associated
 * data) to the API key and the user, so it does not open as another user's. A field that is
 * not sealed is a value written in clear before this module existed: it is shown as it is
 * (docs/privacy.md says what deletion does to those).
 */
import { randomBytes } from 'node:crypto';
import type { Doc, ReadStore } from '../ports/read-store.js';
import { DataKey, isSealed, type MasterKey, SecretDecryptError, sealedKeyId } from '../shared/envelope.js';
import { evictOldest } from '../shared/evict.js';
import { key, newId } from '../shared/ids.js';

/** A data key wrapped by the master key, as the API keys' rings keep them (src/secrets/store.ts). */
interface WrappedKey {
  id: string;
  wrapped: string;
  masterKeyId: string;
  createdAt: number;
}

interface PersonKeysDoc extends Doc {
  apiKey: string;
  userId: string;
  state: 'active' | 'shredded';
  keys: WrappedKey[];
  shreddedAt: number | null;
}

const personKeysId = (apiKey: string, userId: string) => key('person', apiKey, userId);
/** What a sealed field is bound to: its API key and user (the `apiKey` argument of DataKey.seal). */
const sealContext = (apiKey: string, userId: string) => `person\0${apiKey}\0${userId}`;
const wrapContext = (apiKey: string, userId: string, dataKeyId: string) => `person\0${apiKey}\0${userId}\0${dataKeyId}`;

/** Unwrapped data keys kept in memory (a users/get page of 1000 users unwraps each once). */
const MAX_CACHED_KEYS = 10_000;
/** Opened values kept in memory. */
const MAX_CACHED_VALUES = 50_000;

/** Sets `k` in a bounded Map, dropping an eighth of the oldest entries when full (src/shared/evict.ts). */
function remember<K, V>(map: Map<K, V>, max: number, k: K, v: V): V {
  if (map.size >= max) evictOldest(map, Math.ceil(max / 8));
  map.set(k, v);
  return v;
}

export class PersonalData {
  /**
   * Unwrapped data keys by their wrapped form, and opened values by their sealed form. The
   * read store's own cache is emptied by every commit, so caching by document object would
   * miss on a busy service. Both are consulted only after the user's current key document
   * was read and still lists the key: once a user's key is destroyed (here or in another
   * process), nothing cached for it is ever returned again; it stays in memory until evicted.
   */
  private readonly keys = new Map<string, DataKey>();
  private readonly values = new Map<string, unknown>();

  constructor(
    private readonly read: ReadStore,
    private readonly master: MasterKey,
    private readonly clock: () => number,
    /** The key store's collection (src/secrets/store.ts SECRET_KEYS), which builds this. */
    private readonly collection: string,
  ) {}

  private doc(apiKey: string, userId: string): Promise<PersonKeysDoc | null> {
    return this.read.get<PersonKeysDoc>(this.collection, personKeysId(apiKey, userId));
  }

  /** The document's data key `id` unwrapped; null when it does not list it or it does not unwrap with this master key. */
  private dataKey(doc: PersonKeysDoc, id: string): DataKey | null {
    const w = doc.keys.find((k) => k.id === id);
    if (!w || w.masterKeyId !== this.master.id) return null;
    const hit = this.keys.get(w.wrapped);
    if (hit) return hit;
    try {
      return remember(this.keys, MAX_CACHED_KEYS, w.wrapped, new DataKey(id, this.master.unwrap(w.wrapped, wrapContext(doc.apiKey, doc.userId, id))));
    } catch (error) {
      if (error instanceof SecretDecryptError) return null;
      throw error;
    }
  }

  /** A function sealing values for this user, with their data key (created on first use, or anew after a deletion). */
  async sealer(apiKey: string, userId: string): Promise<(value: string) => string> {
    let doc = await this.doc(apiKey, userId);
    if (!doc || doc.keys.length === 0) doc = await this.createKey(apiKey, userId);
    const k = this.dataKey(doc, doc.keys[0]!.id);
    if (!k) throw new Error('a personal data key does not unwrap with the master key that wrapped it');
    const context = sealContext(apiKey, userId);
    return (value) => k.seal(context, value);
  }

  private async createKey(apiKey: string, userId: string): Promise<PersonKeysDoc> {
    await this.prepare(apiKey, [userId]);
    const doc = await this.doc(apiKey, userId);
    if (!doc || doc.keys.length === 0) throw new Error('a personal data key was created but cannot be read back');
    return doc;
  }

  /**
   * Creates the data keys the users lack, all in one synced transaction: a batch (users/add
   * of 1000 users) pays one disk sync, not one per user. The key must be durable before an
   * event sealed with it is appended, or a crash would leave that event unreadable.
   */
  async prepare(apiKey: string, userIds: readonly string[]): Promise<void> {
    const ids = [...new Set(userIds)];
    const have = await this.read.getMany<PersonKeysDoc>(this.collection, ids.map((u) => personKeysId(apiKey, u)));
    const ready = new Set(have.filter((d) => d.keys.length > 0).map((d) => d.userId));
    const missing = ids.filter((u) => !ready.has(u));
    if (missing.length === 0) return;
    await this.read.transaction(
      async (tx) => {
        const now = await tx.getMany<PersonKeysDoc>(this.collection, missing.map((u) => personKeysId(apiKey, u)));
        const made = new Set(now.filter((d) => d.keys.length > 0).map((d) => d.userId));
        await tx.bulk(missing.filter((u) => !made.has(u)).map((u) => ({ op: 'upsert' as const, collection: this.collection, doc: this.newKeyDoc(apiKey, u) })));
      },
      { sensitive: true },
    );
  }

  private newKeyDoc(apiKey: string, userId: string): PersonKeysDoc {
    const id = newId();
    const bytes = randomBytes(32);
    const doc: PersonKeysDoc = {
      _id: personKeysId(apiKey, userId),
      apiKey,
      userId,
      state: 'active',
      keys: [{ id, wrapped: this.master.wrap(bytes, wrapContext(apiKey, userId, id)), masterKeyId: this.master.id, createdAt: this.clock() }],
      shreddedAt: null,
    };
    bytes.fill(0);
    return doc;
  }

  /**
   * Opens the stored fields of one user: a sealed field opens to its value, or to null when
   * its key was destroyed (or is missing); a field in clear (written before sealing) is
   * returned as it is.
   */
  async open<T extends Record<string, unknown>>(apiKey: string, userId: string, fields: T): Promise<{ [K in keyof T]: T[K] | null }> {
    const out: Record<string, unknown> = { ...fields };
    let doc: PersonKeysDoc | null | undefined;
    for (const [name, v] of Object.entries(fields)) {
      if (!isSealed(v)) continue;
      doc ??= await this.doc(apiKey, userId);
      out[name] = doc ? this.openOne(doc, v) : null;
    }
    return out as { [K in keyof T]: T[K] | null };
  }

  private openOne(doc: PersonKeysDoc, sealed: string): unknown {
    const id = sealedKeyId(sealed);
    if (!id || !doc.keys.some((k) => k.id === id)) return null;
    if (this.values.has(sealed)) return this.values.get(sealed);
    const k = this.dataKey(doc, id);
    return k ? remember(this.values, MAX_CACHED_VALUES, sealed, openOrNull(k, sealContext(doc.apiKey, doc.userId), sealed)) : null;
  }

  /** Destroys the user's data keys: every field sealed with them, in any copy of the log, is unreadable from now on. Idempotent. */
  async shred(apiKey: string, userId: string): Promise<void> {
    const doc: PersonKeysDoc = { _id: personKeysId(apiKey, userId), apiKey, userId, state: 'shredded', keys: [], shreddedAt: this.clock() };
    const before = await this.doc(apiKey, userId);
    await this.read.transaction((tx) => tx.upsert(this.collection, doc), { sensitive: true });
    for (const k of before?.keys ?? []) this.keys.delete(k.wrapped);
  }

  /**
   * Destroys every user's data keys of a deleted API key (src/secrets/store.ts `shred`): its
   * users' names and e-mails become unreadable in every copy of the log, as its secrets do.
   * The documents go entirely (no tombstones: the key can never seal again).
   */
  async shredAll(apiKey: string): Promise<void> {
    await this.read.ensureIndexes([{ collection: this.collection, fields: ['apiKey', 'userId'] }]);
    for (;;) {
      const n = await this.read.transaction(async (tx) => {
        const found = await tx.find<PersonKeysDoc>(this.collection, { apiKey }, { limit: SHRED_BATCH });
        const people = found.filter((d) => typeof d.userId === 'string');
        await tx.bulk(people.map((d) => ({ op: 'delete' as const, collection: this.collection, id: d._id })));
        return found.length;
      }, { sensitive: true });
      if (n < SHRED_BATCH) return;
    }
  }
}

/**
 * A sealer for a dry run (x-dry-run: true, src/http/dry-run.ts): a fresh data key kept in
 * memory only and dropped with the request, so a previewed users/add or users/update seals
 * its fields as the real call would (the same form and length) and stores no key.
 */
export function unstoredSealer(): (value: string) => string {
  const { key: k, bytes } = DataKey.generate(newId());
  bytes.fill(0);
  return (value) => k.seal('dry-run', value);
}

/** Key documents removed per transaction when an API key goes. */
const SHRED_BATCH = 1000;

function openOrNull(k: DataKey, context: string, sealed: string): unknown {
  try {
    return k.open(context, sealed);
  } catch (error) {
    if (error instanceof SecretDecryptError) return null;
    throw error;
  }
}
