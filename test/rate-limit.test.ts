import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness } from './support/app.js';
import { RateLimiter, RateLimitedError, limitsPerProcess, perProcess } from '../src/http/rate-limit.js';
import { loadConfig } from '../src/config/config.js';

const U = suite('RateLimiter');

U('a burst, then one token per 1/rate seconds; callers are independent', () => {
  let now = 0;
  const l = new RateLimiter(2, 3, () => now);
  for (let i = 0; i < 3; i++) l.take('a');
  try {
    l.take('a');
    assert.unreachable('fourth request in the same instant allowed');
  } catch (e) {
    assert.instance(e, RateLimitedError);
    assert.is((e as RateLimitedError).retryAfterSeconds, 1);
  }
  l.take('b');
  now += 500;
  l.take('a');
  assert.throws(() => l.take('a'));
});

U('check refuses without taking; spend takes without refusing', () => {
  let now = 0;
  const l = new RateLimiter(1, 2, () => now);
  l.check('a');
  l.spend('a');
  l.check('a');
  l.spend('a');
  assert.throws(() => l.check('a'), (e: unknown) => e instanceof RateLimitedError && e.retryAfterSeconds === 1);
  l.spend('a'); // an empty bucket stays empty, no throw
  now += 1000;
  l.check('a');
  l.check('a'); // checking twice takes nothing
  l.take('a');
  assert.throws(() => l.take('a'));
});

U('serve --workers N: each API process enforces the rate and the burst divided by N, the burst at least 1', () => {
  assert.equal(perProcess({ rate: 10, burst: 20 }, 4), { rate: 2.5, burst: 5 });
  assert.equal(perProcess({ rate: 10, burst: 20 }, 1), { rate: 10, burst: 20 });
  assert.equal(perProcess({ rate: 1, burst: 3 }, 4), { rate: 0.25, burst: 1 });
  assert.equal(perProcess({ rate: 0, burst: 1 }, 3), { rate: 0, burst: 1 }, 'off stays off');
  assert.throws(() => perProcess({ rate: 1, burst: 1 }, 0));
  const c = loadConfig({ RATE_LIMIT_PER_SECOND: '10', RATE_LIMIT_BURST: '20', SIGNUP_RATE_PER_MINUTE: '12', SIGNUP_BURST: '6', AUTH_FAILURE_RATE_PER_MINUTE: '30', AUTH_FAILURE_BURST: '20' });
  const p = limitsPerProcess(c, 2);
  assert.equal(
    [p.rateLimitPerSecond, p.rateLimitBurst, p.signupRatePerMinute, p.signupBurst, p.authFailureRatePerMinute, p.authFailureBurst],
    [5, 10, 6, 3, 15, 10],
  );
  assert.is(p.port, c.port, 'everything else as configured');
});

U('a clock set back drains nothing; a look at a new caller leaves its bucket full', () => {
  let now = 10_000_000;
  const l = new RateLimiter(1, 2, () => now);
  l.check('a');
  l.check('a');
  l.take('a');
  now -= 3_600_000;
  l.take('a'); // the one token left, not minus an hour's worth
  assert.throws(() => l.take('a'));
});

U('rate 0 is off', () => {
  const l = new RateLimiter(0, 1);
  for (let i = 0; i < 1000; i++) l.take('a');
  assert.is(l.enabled, false);
});

U.run();

const H = suite('rate limiting over HTTP');

H('429 RESOURCE_EXHAUSTED with retry-after; another API key is not affected', async () => {
  let now = Date.now();
  const h = await harness({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '2' }, { clock: () => now });
  try {
    const a = await h.tenant();
    now += 10_000;
    const b = await h.tenant();
    const call = (headers: Record<string, string>) => h.post('/v2/agents/get', {}, headers);
    assert.is((await call(a.headers)).status, 200);
    assert.is((await call(a.headers)).status, 200);
    const limited = await call(a.headers);
    assert.is(limited.status, 429);
    assert.is(limited.body.error.status, 'RESOURCE_EXHAUSTED');
    assert.is(limited.headers['retry-after'], '1');
    assert.is((await call(b.headers)).status, 200);
    now += 1000;
    assert.is((await call(a.headers)).status, 200);
  } finally {
    await h.close();
  }
});

/** `n` requests at once; the statuses. */
const parallel = async (n: number, send: (i: number) => Promise<{ status: number }>) => (await Promise.all(Array.from({ length: n }, (_, i) => send(i)))).map((r) => r.status);
const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

H('user tokens take from their API key\'s bucket: ten tokens of a key with burst 5 get at most 5 of 100 through', async () => {
  let now = Date.now();
  const h = await harness({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '5' }, { clock: () => now });
  try {
    const t = await h.tenant();
    now += 60_000;
    assert.is((await h.post('/v2/organizations/add', { organizations: [{ organizationId: 'org-1' }] }, t.headers)).status, 200);
    const tokens: string[] = [];
    for (let i = 0; i < 10; i++) {
      now += 60_000; // each setup call on a full bucket
      const res = await h.post('/v2/auth/generate_token', { userId: `u${i}`, userProperties: { name: `u${i}`, email: `u${i}@example.com` } }, t.headers);
      assert.is(res.status, 200, JSON.stringify(res.body));
      tokens.push(res.body.result.data.token);
    }
    now += 60_000;
    const statuses = await parallel(100, (i) =>
      h.post('/v2/auth/resources/get', { organizationId: 'org-1', userId: `u${i % 10}`, type: 'document' }, { authorization: `Bearer ${tokens[i % 10]}` }));
    assert.is(count(statuses, 200) + count(statuses, 429), 100, JSON.stringify(statuses));
    assert.ok(count(statuses, 200) <= 5, `${count(statuses, 200)} of 100 got through a key with burst 5`);
    // The key's own back end shares that bucket: it is empty now.
    assert.is((await h.post('/v2/agents/get', {}, t.headers)).status, 429);
  } finally {
    await h.close();
  }
});

H('a user token has its share of the key (RATE_LIMIT_USER_PERCENT); refused past it without costing the key', async () => {
  let now = Date.now();
  const h = await harness({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '20', RATE_LIMIT_USER_PERCENT: '10' }, { clock: () => now });
  try {
    const t = await h.tenant();
    now += 60_000;
    assert.is((await h.post('/v2/organizations/add', { organizations: [{ organizationId: 'org-1' }] }, t.headers)).status, 200);
    now += 60_000;
    const minted = await h.post('/v2/auth/generate_token', { userId: 'u1', userProperties: { name: 'u1', email: 'u1@example.com' } }, t.headers);
    assert.is(minted.status, 200, JSON.stringify(minted.body));
    now += 60_000;
    const bearer = { authorization: `Bearer ${minted.body.result.data.token}` };
    const statuses = await parallel(30, () => h.post('/v2/auth/resources/get', { organizationId: 'org-1', userId: 'u1', type: 'document' }, bearer));
    assert.is(count(statuses, 200), 2, `10% of a burst of 20: ${JSON.stringify(statuses)}`);
    const refused = await h.post('/v2/auth/resources/get', { organizationId: 'org-1', userId: 'u1', type: 'document' }, bearer);
    assert.is(refused.status, 429);
    assert.match(refused.body.error.message, /user token's user/);
    assert.ok(refused.headers['retry-after']);
    // The 29 refused took nothing from the key: 18 of its 20 are left.
    const key = await parallel(30, () => h.post('/v2/agents/get', {}, t.headers));
    assert.is(count(key, 200), 18, JSON.stringify(key));
  } finally {
    await h.close();
  }
});

H('failed authentications take from a bucket per client address (on by default); only failures count', async () => {
  let now = Date.now();
  const h = await harness({ AUTH_FAILURE_RATE_PER_MINUTE: '6', AUTH_FAILURE_BURST: '3' }, { clock: () => now });
  try {
    const t = await h.tenant();
    const wrong = { ...t.headers, 'x-service-auth-token': 'guess' };
    // Successes and missing credentials are not guesses: many of them cost nothing.
    for (let i = 0; i < 10; i++) assert.is((await h.post('/v2/agents/get', {}, t.headers)).status, 200);
    for (let i = 0; i < 10; i++) assert.is((await h.post('/v2/agents/get', {}, {})).status, 401);
    for (let i = 0; i < 10; i++) await h.tenant();
    for (let i = 0; i < 3; i++) assert.is((await h.post('/v2/agents/get', {}, wrong)).status, 403, `guess ${i + 1}`);
    const limited = await h.post('/v2/agents/get', {}, wrong);
    assert.is(limited.status, 429);
    assert.is(limited.body.error.status, 'RESOURCE_EXHAUSTED');
    assert.match(limited.body.error.message, /failed authentications from this client address; retry after 10 s/);
    assert.is(limited.headers['retry-after'], '10');
    // While it is empty a right guess is not told apart from a wrong one.
    assert.is((await h.post('/v2/agents/get', {}, t.headers)).status, 429);
    assert.is((await h.post('/v2/workspace/authtokens/get', {}, { ...t.workspaceHeaders, 'x-service-workspace-auth-token': 'guess' })).status, 429);
    // An invalid user token counts too; a new token every 10 s.
    now += 10_000;
    const badToken = await h.post('/v2/auth/resources/get', { organizationId: 'o', userId: 'u', type: 'document' }, { authorization: 'Bearer not-a-token' });
    assert.is(badToken.status, 401);
    assert.is((await h.post('/v2/agents/get', {}, t.headers)).status, 429);
    now += 10_000;
    assert.is((await h.post('/v2/agents/get', {}, t.headers)).status, 200);
  } finally {
    await h.close();
  }
});

H.run();
