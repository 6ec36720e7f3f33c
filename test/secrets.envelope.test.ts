/**
 * Envelope encryption (src/shared/envelope.ts) and the key store (src/secrets/store.ts):
 * round trips, a wrong key and every kind of tampering fail, a shredded API key's values are
 * unreadable without crashing anything, clear values from before pass through, the master key
 * is checked against the store, and the key file is created once with mode 0600.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { DataKey, MasterKey, SecretDecryptError, isSealed, parseKeyMaterial, sealedKeyId } from '../src/shared/envelope.js';
import { MASTER_KEY_FILE, SECRET_KEYS, keyRingId, openSecretStore, type KeyRingDoc } from '../src/secrets/store.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { ConfigError } from '../src/config/config.js';
import { ApiError, SecretUnavailableError } from '../src/shared/errors.js';
import { tempDir } from './support/app.js';

const E = suite('envelope');

const throwsDecrypt = (f: () => unknown, what: string) => {
  try {
    f();
  } catch (err) {
    assert.instance(err, SecretDecryptError, what);
    return;
  }
  assert.unreachable(`${what}: opened`);
};

E('a sealed value opens to the value it sealed, of any JSON type; sealing is deterministic per key and tenant', () => {
  const k = DataKey.generate('dk1').key;
  for (const v of ['whsec-token', '', 0, 42.5, true, null, { a: [1, 'x'] }, 'ünï©ødé ✓']) {
    const s = k.seal('api-1', v);
    assert.ok(isSealed(s), s);
    assert.is(sealedKeyId(s), 'dk1');
    assert.equal(k.open('api-1', s), v);
    assert.not.ok(JSON.stringify(s).includes('whsec-token'));
  }
  assert.is(k.seal('api-1', 'same'), k.seal('api-1', 'same'), 'same value, same tenant: same string (change detection)');
  assert.is.not(k.seal('api-1', 'same'), k.seal('api-2', 'same'), 'another tenant: another string');
  assert.is.not(k.seal('api-1', 'one'), k.seal('api-1', 'two'));
  const other = DataKey.generate('dk1').key;
  assert.is.not(other.seal('api-1', 'same'), k.seal('api-1', 'same'), 'another data key: another string');
});

E('a wrong data key, another tenant, and every changed byte fail to open', () => {
  const k = DataKey.generate('dk1').key;
  const s = k.seal('api-1', 'the secret');
  throwsDecrypt(() => DataKey.generate('dk1').key.open('api-1', s), 'wrong key, same id');
  throwsDecrypt(() => DataKey.generate('dk2').key.open('api-1', s), 'another key id');
  throwsDecrypt(() => k.open('api-2', s), 'sealed for another API key');
  const blob = s.slice(s.lastIndexOf(':') + 1);
  const raw = Buffer.from(blob, 'base64url');
  // Flip one bit in the IV, the ciphertext and the tag in turn.
  for (const i of [0, 11, 12, raw.length - 17, raw.length - 16, raw.length - 1]) {
    const t = Buffer.from(raw);
    t[i] = t[i]! ^ 0x01;
    throwsDecrypt(() => k.open('api-1', `${s.slice(0, s.lastIndexOf(':') + 1)}${t.toString('base64url')}`), `byte ${i} changed`);
  }
  throwsDecrypt(() => k.open('api-1', s.replace('enc:v1:dk1:', 'enc:v1:dk9:')), 'key id changed');
  throwsDecrypt(() => k.open('api-1', s.slice(0, -4)), 'truncated');
  throwsDecrypt(() => k.open('api-1', 'enc:v1:dk1:AAAA'), 'too short');
  throwsDecrypt(() => k.open('api-1', 'enc:v2:dk1:' + blob), 'unknown version');
  throwsDecrypt(() => k.open('api-1', 'not sealed at all'), 'not sealed');
});

E('a data key wrapped by one master key does not unwrap with another, nor for another context, nor changed', () => {
  const m1 = new MasterKey(randomBytes(32));
  const m2 = new MasterKey(randomBytes(32));
  const dk = randomBytes(32);
  const w = m1.wrap(dk, 'api-1\0dk1');
  assert.equal(m1.unwrap(w, 'api-1\0dk1'), dk);
  assert.is.not(m1.wrap(dk, 'api-1\0dk1'), w, 'wrapping uses a fresh IV');
  throwsDecrypt(() => m2.unwrap(w, 'api-1\0dk1'), 'another master key');
  throwsDecrypt(() => m1.unwrap(w, 'api-2\0dk1'), 'another API key');
  const raw = Buffer.from(w, 'base64url');
  raw[20] = raw[20]! ^ 0x80;
  throwsDecrypt(() => m1.unwrap(raw.toString('base64url'), 'api-1\0dk1'), 'changed');
  assert.is.not(m1.id, m2.id);
  assert.match(m1.id, /^[0-9a-f]{16}$/);
  assert.equal(JSON.parse(JSON.stringify({ m1 })), { m1: { masterKeyId: m1.id } }, 'never serialized with its bytes');
});

E('key material: 64 hex digits or base64 (either alphabet) of exactly 32 bytes', () => {
  const b = randomBytes(32);
  assert.equal(parseKeyMaterial(b.toString('hex')), b);
  assert.equal(parseKeyMaterial(b.toString('base64')), b);
  assert.equal(parseKeyMaterial(b.toString('base64url')), b);
  assert.equal(parseKeyMaterial(`${b.toString('base64')}\n`), b);
  for (const bad of ['', 'x', randomBytes(31).toString('base64'), randomBytes(33).toString('base64'), randomBytes(31).toString('hex'), `${b.toString('hex')}0`]) {
    assert.is(parseKeyMaterial(bad), null, bad);
  }
});

E.run();

const K = suite<{ dir: string; store: SqliteReadStore }>('key store');
K.before.each((ctx) => {
  ctx.dir = tempDir('collab-keys-');
  ctx.store = new SqliteReadStore(path.join(ctx.dir, 'readmodels.db'));
});
K.after.each(async (ctx) => {
  await ctx.store.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

const unavailable = async (f: () => Promise<unknown>, re: RegExp) => {
  try {
    await f();
  } catch (err) {
    assert.instance(err, SecretUnavailableError);
    assert.is((err as ApiError).status, 'FAILED_PRECONDITION');
    assert.match((err as Error).message, re);
    return;
  }
  assert.unreachable('opened');
};

const ONE = 'clear value one';

K('seal and open per API key; clear values from before pass through; one data key per API key, however many ask at once', async ({ dir, store }) => {
  const secrets = await openSecretStore(store, { dataDir: dir }, Date.now);
  const [a, b, c] = await Promise.all([secrets.seal('api-1', ONE), secrets.seal('api-1', 'two'), secrets.seal('api-1', { n: 3 })]);
  assert.is(await secrets.open('api-1', a), ONE);
  assert.is(await secrets.open('api-1', b), 'two');
  assert.equal(await secrets.open('api-1', c), { n: 3 });
  assert.is(sealedKeyId(a), sealedKeyId(c), 'the same data key');
  const ring = await store.get<KeyRingDoc>(SECRET_KEYS, keyRingId('api-1'));
  assert.is(ring!.keys.length, 1);
  // A value with spaces: no base64 or hex text in the ring can hold it by chance (plain 'one' could).
  assert.not.ok(JSON.stringify(ring).includes(ONE));
  assert.is(await secrets.open('api-1', 'a clear legacy value'), 'a clear legacy value');
  assert.is(await secrets.open('api-1', 7), 7);
  const other = await secrets.seal('api-2', 'one');
  assert.is.not(sealedKeyId(other), sealedKeyId(a), 'each API key has its own data key');
  await unavailable(() => secrets.open('api-2', a), /missing/);
  await unavailable(() => secrets.open('api-3', a), /missing/);
});

K('a shredded API key: its values are unreadable, with an error, not a crash; sealing for it is NOT_FOUND; other keys unaffected', async ({ dir, store }) => {
  const secrets = await openSecretStore(store, { dataDir: dir }, Date.now);
  const a = await secrets.seal('api-1', 'doomed');
  const b = await secrets.seal('api-2', 'kept');
  const wrapped = (await store.get<KeyRingDoc>(SECRET_KEYS, keyRingId('api-1')))!.keys[0]!.wrapped;
  await secrets.shred('api-1');
  await secrets.shred('api-1');
  assert.ok(await secrets.isShredded('api-1'));
  await unavailable(() => secrets.open('api-1', a), /deleted/);
  try {
    await secrets.seal('api-1', 'again');
    assert.unreachable('sealed for a deleted key');
  } catch (err) {
    assert.instance(err, ApiError);
    assert.is((err as ApiError).status, 'NOT_FOUND');
  }
  assert.is(await secrets.open('api-2', b), 'kept');
  // A fresh store over the same files (another process) cannot read it either.
  const again = await openSecretStore(store, { dataDir: dir }, Date.now);
  await unavailable(() => again.open('api-1', a), /deleted/);
  // The wrapped key is gone from the database file and its WAL, not only from the table.
  for (const f of ['readmodels.db', 'readmodels.db-wal']) {
    const p = path.join(dir, f);
    if (fs.existsSync(p)) assert.not.ok(fs.readFileSync(p).includes(Buffer.from(wrapped)), `${f} still holds the wrapped data key`);
  }
});

K('the key file: created once with mode 0600, read on later starts; a missing file while keys exist is refused', async ({ dir, store }) => {
  const file = path.join(dir, MASTER_KEY_FILE);
  const [s1, s2] = await Promise.all([openSecretStore(store, { dataDir: dir }, Date.now), openSecretStore(store, { dataDir: dir }, Date.now)]);
  assert.is(s1.masterKeyId, s2.masterKeyId, 'processes starting together agree on one key');
  assert.is(fs.statSync(file).mode & 0o777, 0o600);
  assert.ok(parseKeyMaterial(fs.readFileSync(file, 'utf8')));
  assert.equal(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp')), [], 'no temporary files left');
  const sealed = await s1.seal('api-1', 'v');
  const later = await openSecretStore(store, { dataDir: dir }, Date.now);
  assert.is(await later.open('api-1', sealed), 'v');
  fs.renameSync(file, `${file}.bak`);
  try {
    await openSecretStore(store, { dataDir: dir }, Date.now);
    assert.unreachable('started without its master key');
  } catch (err) {
    assert.instance(err, ConfigError);
    assert.is((err as ConfigError).variable, 'SECRETS_KEY');
    assert.match((err as Error).message, /is missing, but the key store holds data keys/);
  }
  assert.not.ok(fs.existsSync(file), 'no new key was made');
});

K('SECRETS_KEY: used instead of a file; another key than the store was started with is refused, naming the variable', async ({ dir, store }) => {
  const key = randomBytes(32);
  const s = await openSecretStore(store, { dataDir: dir, secretsKey: key }, Date.now);
  assert.not.ok(fs.existsSync(path.join(dir, MASTER_KEY_FILE)), 'no key file when SECRETS_KEY is set');
  const sealed = await s.seal('api-1', 'v');
  assert.is(await (await openSecretStore(store, { dataDir: dir, secretsKey: Buffer.from(key) }, Date.now)).open('api-1', sealed), 'v');
  for (const config of [{ dataDir: dir, secretsKey: randomBytes(32) }, { dataDir: dir }]) {
    try {
      await openSecretStore(store, config, Date.now);
      assert.unreachable('started with another master key');
    } catch (err) {
      assert.instance(err, ConfigError);
      assert.is((err as ConfigError).variable, 'SECRETS_KEY');
      assert.match((err as Error).message, new RegExp(`wrapped by master key ${s.masterKeyId}`));
    }
  }
});

K('a key file other users can read starts with a warning', async ({ dir, store }) => {
  fs.writeFileSync(path.join(dir, MASTER_KEY_FILE), `${randomBytes(32).toString('base64')}\n`, { mode: 0o644 });
  fs.chmodSync(path.join(dir, MASTER_KEY_FILE), 0o644);
  const warnings: string[] = [];
  await openSecretStore(store, { dataDir: dir }, Date.now, { warn: (_o, m) => warnings.push(m ?? '') });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /chmod 600/);
});

K('a file that holds no key is refused, naming SECRETS_KEY', async ({ dir, store }) => {
  fs.writeFileSync(path.join(dir, MASTER_KEY_FILE), 'not a key\n', { mode: 0o600 });
  try {
    await openSecretStore(store, { dataDir: dir }, Date.now);
    assert.unreachable('accepted');
  } catch (err) {
    assert.instance(err, ConfigError);
    assert.is((err as ConfigError).variable, 'SECRETS_KEY');
  }
});

K.run();
