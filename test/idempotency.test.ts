/**
 * Idempotency-Key: replay without re-applying, 422 on another body, 409 while in flight,
 * secrets redacted on replay, scoped per caller, kept at least 24 h.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { IdempotencyStore, PENDING_TAKEOVER_MS, IDEMPOTENCY_KEYS } from '../src/http/idempotency.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { ApiError } from '../src/errors.js';
import { rejects } from './support/assert.js';

const S = suite<{ h: Harness; t: Tenant }>('Idempotency-Key over HTTP');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
});
S.after(async (ctx) => ctx.h.close());

const keyCount = async (h: Harness, workspaceId: string) => (await h.services.read.find('api_keys', { workspaceId })).length;

S('the same key and body: the first response again, nothing applied twice, secrets redacted', async ({ h, t }) => {
  const body = { ownerEmail: 'o@example.com', type: 'testing', createAuthToken: true };
  const headers = { ...t.workspaceHeaders, 'idempotency-key': 'create-key-1' };
  const before = await keyCount(h, t.workspaceId);
  const first = await h.post('/v2/workspace/apikey/create', body, headers);
  const again = await h.post('/v2/workspace/apikey/create', body, headers);
  assert.is(first.status, 200);
  assert.is(again.status, 200);
  assert.is(again.headers['idempotent-replayed'], 'true');
  assert.is(again.body.result.data.apiKey, first.body.result.data.apiKey);
  assert.is(again.body.result.data.authToken, '__redacted__');
  assert.is(await keyCount(h, t.workspaceId), before + 1);
  const stored = JSON.stringify(await h.services.read.find(IDEMPOTENCY_KEYS, {}));
  assert.not.ok(stored.includes(first.body.result.data.authToken), 'no secret kept in the idempotency record');
});

S('the same key with another body: 422', async ({ h, t }) => {
  const headers = { ...t.workspaceHeaders, 'idempotency-key': 'create-key-2' };
  await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing' }, headers);
  const other = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'other@example.com', type: 'testing' }, headers);
  assert.is(other.status, 422);
  assert.is(other.body.error.status, 'INVALID_ARGUMENT');
  assert.match(other.body.error.message, /different request body/);
});

S('a refused request is replayed as refused', async ({ h, t }) => {
  const headers = { ...t.workspaceHeaders, 'idempotency-key': 'bad-1' };
  const first = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'nope', type: 'testing' }, headers);
  const again = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'nope', type: 'testing' }, headers);
  assert.is(first.status, 400);
  assert.is(again.status, 400);
  assert.equal(again.body, first.body);
});

S('keys are scoped per caller: another workspace may use the same key', async ({ h, t }) => {
  const other = await h.tenant();
  const body = { ownerEmail: 'o@example.com', type: 'testing' };
  const a = await h.post('/v2/workspace/apikey/create', body, { ...t.workspaceHeaders, 'idempotency-key': 'shared' });
  const b = await h.post('/v2/workspace/apikey/create', body, { ...other.workspaceHeaders, 'idempotency-key': 'shared' });
  assert.is(a.status, 200);
  assert.is(b.status, 200);
  assert.is.not(a.body.result.data.apiKey, b.body.result.data.apiKey);
});

S('a malformed key: INVALID_ARGUMENT', async ({ h, t }) => {
  const res = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing' }, { ...t.workspaceHeaders, 'idempotency-key': 'x'.repeat(300) });
  assert.is(res.status, 400);
  assert.match(res.body.error.message, /Idempotency-Key/);
});

S.run();

const U = suite('IdempotencyStore');

U('in flight: 409; after a crash the pending record is taken over; expired records are swept', async () => {
  let now = 1_000_000;
  const read = new SqliteReadStore(':memory:');
  const store = new IdempotencyStore(read, 24 * 3_600_000, () => now);
  const first = await store.begin('apikey:k', '/r', 'K', 'h1');
  assert.ok('recordId' in first);
  const err = await rejects(store.begin('apikey:k', '/r', 'K', 'h1'));
  assert.is((err as ApiError).httpStatus, 409);
  now += PENDING_TAKEOVER_MS + 1;
  const takeover = await store.begin('apikey:k', '/r', 'K', 'h1');
  assert.ok('recordId' in takeover, 'an abandoned pending record is taken over');
  await store.complete((takeover as { recordId: string }).recordId, 200, { ok: 1 });
  now += 23 * 3_600_000;
  const replay = await store.begin('apikey:k', '/r', 'K', 'h1');
  assert.equal(replay, { replay: { status: 200, body: { ok: 1 } } }, 'kept for at least 24 h');
  now += 2 * 3_600_000;
  assert.is(await store.sweep(), 1);
  assert.ok('recordId' in (await store.begin('apikey:k', '/r', 'K', 'h1')), 'after expiry the key is new again');
  await read.close();
});

U.run();
