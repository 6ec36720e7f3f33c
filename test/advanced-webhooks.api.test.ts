/**
 * Advanced webhooks' routes beyond their hosted examples (those are
 * test/fixtures/hosted/workspace/advancedwebhook*.json): the first-enable rule, paging, the
 * endpoints-per-key limit, every input's bounds, the destination policy at configuration
 * time, secrets never in a read model nor in the log in clear, rotation, and one key never
 * seeing another's endpoints. Delivery: test/webhooks.advanced.test.ts.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { MAX_ENDPOINTS_PER_KEY } from '../commands/advanced-webhooks.js';
import { ADVANCED_WEBHOOK_ENDPOINTS } from '../projections/advanced-webhooks.js';
import { LOG_START } from '../src/ports/event-store.js';

const S = suite<{ h: Harness; t: Tenant }>('advanced webhooks API');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
});
S.after(async (ctx) => ctx.h.close());

const fails = (res: { status: number; body: any }, http: number, status: string, message?: RegExp | string) => {
  assert.is(res.status, http, JSON.stringify(res.body));
  assert.is(res.body.error.status, status);
  if (typeof message === 'string') assert.is(res.body.error.message, message);
  else if (message) assert.match(res.body.error.message, message);
};

const P = '/v2/workspace/advancedwebhook/endpoints';

S('before the first enable: settings at their defaults, other updates and every endpoint route FAILED_PRECONDITION', async ({ h }) => {
  const t = await h.tenant();
  const got = await h.ok('/v2/workspace/advancedwebhookconfig/get', {}, t.headers);
  assert.equal(got.data, { isEnabled: false, encryptData: false, encodeData: false, publicKey: '', enableDataProtection: false });
  fails(await h.post('/v2/workspace/advancedwebhookconfig/update', { encodeData: true }, t.headers), 400, 'FAILED_PRECONDITION', /not configured/);
  fails(await h.post(`${P}/create`, { url: 'https://example.com/h' }, t.headers), 400, 'FAILED_PRECONDITION', /not configured/);
  fails(await h.post(`${P}/get`, {}, t.headers), 400, 'FAILED_PRECONDITION', /not configured/);
  await h.ok('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true }, t.headers);
  await h.ok('/v2/workspace/advancedwebhookconfig/update', { isEnabled: false }, t.headers);
  fails(await h.post(`${P}/get`, {}, t.headers), 400, 'FAILED_PRECONDITION', /disabled for this workspace/);
});

S('bounds: URL, filters, channels, metadata, rate limit, public key; the destination policy at configuration time', async ({ h, t }) => {
  await h.ok('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true }, t.headers);
  const bad: Array<[unknown, RegExp]> = [
    [{ url: `https://example.com/${'x'.repeat(2048)}` }, /url/],
    [{ url: 'ftp://example.com/' }, /url must be a valid http\(s\) URL/],
    [{ url: 'http://127.0.0.1:8080/' }, /destination policy: 127\.0\.0\.1 is a loopback address/],
    [{ url: 'http://[::ffff:10.0.0.1]/' }, /destination policy/],
    [{ url: 'https://example.com/', filterTypes: [] }, /filterTypes/],
    [{ url: 'https://example.com/', filterTypes: Array.from({ length: 101 }, (_, i) => `T${i}`) }, /filterTypes/],
    [{ url: 'https://example.com/', filterTypes: ['x'.repeat(129)] }, /filterTypes/],
    [{ url: 'https://example.com/', channels: ['comments'] }, /channels/],
    [{ url: 'https://example.com/', metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, /metadata/],
    [{ url: 'https://example.com/', metadata: { k: 1 } }, /metadata/],
    [{ url: 'https://example.com/', rateLimit: 0 }, /rateLimit/],
    [{ url: 'https://example.com/', rateLimit: 1.5 }, /rateLimit/],
    [{ url: 'https://example.com/', description: 'd'.repeat(1025) }, /description/],
  ];
  for (const [data, why] of bad) fails(await h.post(`${P}/create`, data, t.headers), 400, 'INVALID_ARGUMENT', why);
  fails(await h.post('/v2/workspace/advancedwebhookconfig/update', { publicKey: 'not a key' }, t.headers), 400, 'INVALID_ARGUMENT', /publicKey must be the base64 of an RSA public key/);
  fails(await h.post('/v2/workspace/advancedwebhookconfig/update', { encryptData: true }, t.headers), 400, 'INVALID_ARGUMENT', /encryptData needs a publicKey/);
  fails(await h.post('/v2/workspace/advancedwebhookconfig/update', { publicKey: 'k'.repeat(8193) }, t.headers), 400, 'INVALID_ARGUMENT');
  fails(await h.post(`${P}/get`, { limit: 251 }, t.headers), 400, 'INVALID_ARGUMENT');
  fails(await h.post(`${P}/get`, { iterator: 'made-up' }, t.headers), 400, 'INVALID_ARGUMENT', /iterator/);
  const e = await h.ok(`${P}/create`, { url: 'https://example.com/a' }, t.headers);
  fails(await h.post(`${P}/update`, { endpointId: e.data.id, url: 'http://169.254.169.254/' }, t.headers), 400, 'INVALID_ARGUMENT', /link-local/);
  await h.ok(`${P}/delete`, { endpointId: e.data.id }, t.headers);
});

S(`at most ${MAX_ENDPOINTS_PER_KEY} endpoints per key; endpoints/get pages them in creation order; another key sees none`, async ({ h }) => {
  const t = await h.tenant();
  const other = await h.tenant();
  await h.ok('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true }, t.headers);
  await h.ok('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true }, other.headers);
  const ids: string[] = [];
  for (let i = 0; i < MAX_ENDPOINTS_PER_KEY; i++) ids.push((await h.ok(`${P}/create`, { url: `https://example.com/${i}` }, t.headers)).data.id);
  fails(await h.post(`${P}/create`, { url: 'https://example.com/one-more' }, t.headers), 429, 'RESOURCE_EXHAUSTED', /at most 50 advanced webhook endpoints/);
  const seen: string[] = [];
  let iterator: string | undefined;
  for (let pages = 0; pages < 10; pages++) {
    const page = (await h.ok(`${P}/get`, { limit: 20, ...(iterator ? { iterator } : {}) }, t.headers)).data;
    seen.push(...page.endpoints.map((e: any) => e.id));
    assert.is(page.prevIterator, null);
    if (page.done) {
      assert.is(page.iterator, null);
      break;
    }
    iterator = page.iterator;
  }
  assert.equal(seen, ids, 'every endpoint once, in creation order');
  assert.equal((await h.ok(`${P}/get`, {}, other.headers)).data.endpoints, []);
  fails(await h.post(`${P}/secret/get`, { endpointId: ids[0] }, other.headers), 404, 'NOT_FOUND', 'Advanced webhook provider request failed.');
  fails(await h.post(`${P}/delete`, { endpointId: ids[0] }, other.headers), 404, 'NOT_FOUND');
  // The page token is bound to its key.
  const first = (await h.ok(`${P}/get`, { limit: 1 }, t.headers)).data;
  fails(await h.post(`${P}/get`, { iterator: first.iterator }, other.headers), 400, 'INVALID_ARGUMENT');
});

S('the signing secret: whsec_ form, answered on every read (each read in the audit), never in a read model nor in the log in clear; rotation changes it', async ({ h, t }) => {
  await h.ok('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true }, t.headers);
  const e = (await h.ok(`${P}/create`, { url: 'https://example.com/secret', filterTypes: ['DocumentAdded'] }, t.headers)).data;
  assert.not.ok('secret' in e, 'create does not answer the secret');
  const { secret } = (await h.ok(`${P}/secret/get`, { endpointId: e.id }, t.headers)).data;
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
  assert.is((await h.ok(`${P}/secret/get`, { endpointId: e.id }, t.headers)).data.secret, secret, 'a second read answers it again, as the hosted API does');
  const before = h.services.clock();
  const rotated = (await h.ok(`${P}/secret/rotate`, { endpointId: e.id }, t.headers)).data;
  const grace = Date.parse(rotated.previousSecretValidUntil) - 24 * 3600 * 1000;
  assert.ok(grace >= before && grace <= h.services.clock(), 'a day of grace from the rotation');
  const next = (await h.ok(`${P}/secret/get`, { endpointId: e.id }, t.headers)).data.secret;
  assert.is.not(next, secret);
  assert.match(next, /^whsec_/);
  assert.is((await h.ok(`${P}/secret/get`, { endpointId: e.id }, t.headers)).data.secret, next);
  const audit = (await h.ok('/v2/audit/events/get', { types: ['AdvancedWebhookSecretRevealed'] }, t.headers)).data;
  assert.is(audit.length, 4, 'each of the four reads is in the audit');
  assert.ok(audit.every((a: { actor: string; data: Record<string, unknown> }) => a.actor === `apikey:${t.apiKey}` && a.data.endpointId === e.id));
  const docs = JSON.stringify(await h.services.read.find(ADVANCED_WEBHOOK_ENDPOINTS, { apiKey: t.apiKey }));
  assert.ok(docs.includes(e.id));
  const log = JSON.stringify(await h.services.events.readAll({ after: LOG_START, maxCount: 100_000 }));
  for (const s of [secret, next]) {
    assert.not.ok(docs.includes(s.slice(6)), 'no secret in the read model');
    assert.not.ok(log.includes(s.slice(6)), 'no secret in the log in clear');
  }
});

S('update: a partial change, answered after the write; nothing to change appends nothing; unknown endpoint NOT_FOUND', async ({ h, t }) => {
  await h.ok('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true }, t.headers);
  const e = (await h.ok(`${P}/create`, { url: 'https://example.com/u', uid: 'mine', metadata: { team: 'a' } }, t.headers)).data;
  assert.equal({ ...e, id: 'x', createdAt: 'x', updatedAt: 'x' }, {
    id: 'x', url: 'https://example.com/u', description: null, filterTypes: null, channels: null, disabled: false, rateLimit: null, uid: 'mine', metadata: { team: 'a' }, disabledReason: null, createdAt: 'x', updatedAt: 'x',
  });
  fails(await h.post(`${P}/update`, { endpointId: e.id }, t.headers), 400, 'INVALID_ARGUMENT', 'At least one endpoint field besides endpointId must be provided.');
  const u = (await h.ok(`${P}/update`, { endpointId: e.id, channels: ['document', 'document'], rateLimit: 5 }, t.headers)).data;
  assert.equal([u.channels, u.rateLimit, u.url, u.uid], [['document'], 5, 'https://example.com/u', 'mine']);
  const head = await h.services.events.headPosition();
  await h.ok(`${P}/update`, { endpointId: e.id, rateLimit: 5 }, t.headers);
  assert.is(await h.services.events.headPosition(), head, 'no event for no change');
  fails(await h.post(`${P}/update`, { endpointId: 'ep_nope', disabled: true }, t.headers), 404, 'NOT_FOUND', 'Advanced webhook provider request failed.');
  const listed = (await h.ok(`${P}/get`, {}, t.headers)).data.endpoints.find((x: any) => x.id === e.id);
  assert.equal(listed.channels, ['document']);
});

S.run();
