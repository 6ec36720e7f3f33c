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

export class PersonalData {
  /** Unwrapped data keys by key document object (frozen, replaced on every commit: src/secrets/store.ts). */
  private readonly unwrapped = new WeakMap<object, DataKey>();

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

  /** The document's current data key unwrapped; null when it has none or it does not unwrap with this master key. */
  private dataKey(doc: PersonKeysDoc, id: string): DataKey | null {
    const hit = this.unwrapped.get(doc);
    if (hit?.id === id) return hit;
    const w = doc.keys.find((k) => k.id === id);
    if (!w || w.masterKeyId !== this.master.id) return null;
    let k: DataKey;
    try {
      k = new DataKey(id, this.master.unwrap(w.wrapped, wrapContext(doc.apiKey, doc.userId, id)));
    } catch (error) {
      if (error instanceof SecretDecryptError) return null;
      throw error;
    }
    if (Object.isFrozen(doc) && id === doc.keys[0]?.id) this.unwrapped.set(doc, k);
    return k;
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

  private createKey(apiKey: string, userId: string): Promise<PersonKeysDoc> {
    return this.read.transaction(
      async (tx) => {
        const now = await tx.get<PersonKeysDoc>(this.collection, personKeysId(apiKey, userId));
        if (now && now.keys.length > 0) return now;
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
        await tx.upsert(this.collection, doc);
        return doc;
      },
      { sensitive: true },
    );
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
      const id = sealedKeyId(v);
      const k = doc && id ? this.dataKey(doc, id) : null;
      out[name] = k ? openOrNull(k, sealContext(apiKey, userId), v) : null;
    }
    return out as { [K in keyof T]: T[K] | null };
  }

  /** Destroys the user's data keys: every field sealed with them, in any copy of the log, is unreadable from now on. Idempotent. */
  async shred(apiKey: string, userId: string): Promise<void> {
    const doc: PersonKeysDoc = { _id: personKeysId(apiKey, userId), apiKey, userId, state: 'shredded', keys: [], shreddedAt: this.clock() };
    await this.read.transaction((tx) => tx.upsert(this.collection, doc), { sensitive: true });
  }
}

function openOrNull(k: DataKey, context: string, sealed: string): unknown {
  try {
    return k.open(context, sealed);
  } catch (error) {
    if (error instanceof SecretDecryptError) return null;
    throw error;
  }
}
