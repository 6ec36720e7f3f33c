/**
 * Idempotency-Key: replay without re-applying, 422 on another body, 409 while in flight,
 * secrets redacted on replay, scoped per caller, kept at least 24 h; only mutating routes
 * keep answers, and what one key keeps is bounded (issue 11, finding 5).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { IdempotencyStore, PENDING_TAKEOVER_MS, IDEMPOTENCY_KEYS } from '../src/runtime/idempotency.js';
import { allRoutes } from '../src/app.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { ApiError } from '../src/shared/errors.js';
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

const B = suite<{ h: Harness; t: Tenant }>('Idempotency-Key: mutating routes only, bounded per key');
B.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  await ctx.h.post('/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, ctx.t.headers);
});
B.after(async (ctx) => ctx.h.close());

const records = async (h: Harness) => h.services.read.find<{ _id: string } & Record<string, unknown>>(IDEMPOTENCY_KEYS, {});

B('every route says whether it mutates, and exactly the /get, /list, /explain, /history and /status routes are reads', async ({ h }) => {
  const routes = allRoutes(h.services);
  assert.ok(routes.length >= 50, `all routes listed (${routes.length})`);
  for (const r of routes) {
    assert.type(r.mutates, 'boolean', `${r.path} is classified`);
    // permissions/explain answers a question, like a /get; so does access/history (issue 25 names it so),
    // and users/data/delete/status (the hosted path).
    assert.is(r.mutates, !/\/(get|list|explain|history|status)$/.test(r.path), `${r.path}: mutates ${r.mutates}`);
  }
  const paths = routes.map((r) => r.path);
  assert.is(new Set(paths).size, paths.length, 'one definition per path');
});

B('a large permissions/get with an Idempotency-Key runs and stores nothing', async ({ h, t }) => {
  // 100 users x 100 folders with long ids: an answer of megabytes from a request of kilobytes.
  const folderIds = Array.from({ length: 100 }, (_, i) => `folder-${i}-${'f'.repeat(200)}`);
  const userIds = Array.from({ length: 100 }, (_, i) => `user-${i}-${'u'.repeat(100)}`);
  assert.is((await h.post('/v2/organizations/folders/add', { organizationId: 'o', folders: folderIds.map((folderId) => ({ folderId })) }, t.headers)).status, 200);
  const before = (await records(h)).length;
  const headers = { ...t.headers, 'idempotency-key': 'big-read' };
  const body = { organizationId: 'o', userIds, folderIds };
  const first = await h.post('/v2/auth/permissions/get', body, headers);
  assert.is(first.status, 200, JSON.stringify(first.body).slice(0, 300));
  assert.ok(JSON.stringify(first.body).length > 1_048_576, 'the answer is large');
  assert.is((await records(h)).length, before, 'no idempotency record for a read');
  const again = await h.post('/v2/auth/permissions/get', body, headers);
  assert.is(again.status, 200);
  assert.is(again.headers['idempotent-replayed'], undefined, 'a read is run again, not replayed');
  // Accepted and ignored on reads: even a key that would be malformed on a write.
  assert.is((await h.post('/v2/organizations/get', { organizationId: 'o' }, { ...t.headers, 'idempotency-key': 'x'.repeat(300) })).status, 200);
  assert.is((await records(h)).length, before);
});

B('a mutating answer over the bound is not kept: status, size and hash only; a retry gets 409 saying so, nothing is applied twice', async ({ h, t }) => {
  // 1000 folders with 256-character ids: a body under 1 MiB, an answer over 256 KiB.
  const folders = Array.from({ length: 1000 }, (_, i) => ({ folderId: `${String(i).padStart(4, '0')}${'b'.repeat(252)}` }));
  const headers = { ...t.headers, 'idempotency-key': 'big-write' };
  const first = await h.post('/v2/organizations/folders/add', { organizationId: 'o', folders }, headers);
  assert.is(first.status, 200);
  const answerBytes = Buffer.byteLength(JSON.stringify(first.body));
  assert.ok(answerBytes > 262_144, `the answer (${answerBytes} bytes) is over the default bound`);
  const record = (await records(h)).find((r) => r._id.includes('big-write'))!;
  assert.ok(record, 'the write has its record');
  assert.is(record.response, undefined, 'the answer is not kept');
  assert.is(record.status, 200);
  assert.is(record.responseBytes, answerBytes);
  assert.match(String(record.responseSha256), /^[0-9a-f]{64}$/);
  assert.ok(JSON.stringify(record).length < 2048, `the record is small (${JSON.stringify(record).length} bytes)`);
  const eventsBefore = (await h.services.events.readAll()).length;
  const retry = await h.post('/v2/organizations/folders/add', { organizationId: 'o', folders }, headers);
  assert.is(retry.status, 409);
  assert.is(retry.body.error.status, 'ALREADY_EXISTS');
  assert.match(retry.body.error.message, /already applied \(it answered 200\).*larger than the 262144 bytes kept/);
  assert.equal(retry.body.error.details, { status: 200, bytes: answerBytes, sha256: record.responseSha256 });
  assert.is(retry.headers['idempotent-replayed'], 'true');
  assert.is((await h.services.events.readAll()).length, eventsBefore, 'nothing applied twice');
});

B('IDEMPOTENCY_MAX_RESPONSE_BYTES sets the bound; an answer within it is replayed whole', async () => {
  const h = await harness({ IDEMPOTENCY_MAX_RESPONSE_BYTES: '2048' });
  try {
    const t = await h.tenant();
    const small = await h.post('/v2/organizations/add', { organizations: [{ organizationId: 's' }] }, { ...t.headers, 'idempotency-key': 'small' });
    const replay = await h.post('/v2/organizations/add', { organizations: [{ organizationId: 's' }] }, { ...t.headers, 'idempotency-key': 'small' });
    assert.equal(replay.body, small.body);
    assert.is(replay.headers['idempotent-replayed'], 'true');
    const organizations = Array.from({ length: 100 }, (_, i) => ({ organizationId: `org-${i}` }));
    const big = await h.post('/v2/organizations/add', { organizations }, { ...t.headers, 'idempotency-key': 'big' });
    assert.ok(Buffer.byteLength(JSON.stringify(big.body)) > 2048);
    const again = await h.post('/v2/organizations/add', { organizations }, { ...t.headers, 'idempotency-key': 'big' });
    assert.is(again.status, 409);
    assert.match(again.body.error.message, /larger than the 2048 bytes kept/);
  } finally {
    await h.close();
  }
});

B.run();

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

U('an answer over maxResponseBytes: only status, size and hash are kept, and begin says so', async () => {
  const read = new SqliteReadStore(':memory:');
  const store = new IdempotencyStore(read, 24 * 3_600_000, () => 1, 64);
  const small = await store.begin('s', '/r', 'A', 'h');
  await store.complete((small as { recordId: string }).recordId, 200, { ok: 'x'.repeat(40) });
  assert.equal(await store.begin('s', '/r', 'A', 'h'), { replay: { status: 200, body: { ok: 'x'.repeat(40) } } }, '56 bytes are kept');
  const big = await store.begin('s', '/r', 'B', 'h');
  await store.complete((big as { recordId: string }).recordId, 200, { ok: 'x'.repeat(60), authToken: 'secret' });
  const begun = await store.begin('s', '/r', 'B', 'h');
  assert.ok('notKept' in begun, JSON.stringify(begun));
  const { notKept } = begun as { notKept: { status: number; bytes: number; sha256: string } };
  assert.is(notKept.status, 200);
  assert.is(notKept.bytes, JSON.stringify({ ok: 'x'.repeat(60), authToken: '__redacted__' }).length, 'measured with secrets redacted');
  const stored = JSON.stringify(await read.find(IDEMPOTENCY_KEYS, {}));
  assert.not.ok(stored.includes('x'.repeat(60)), 'the large answer is not stored');
  assert.not.ok(stored.includes('secret'));
  await read.close();
});

U.run();
