import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness } from './support/app.js';
import { RateLimiter, RateLimitedError } from '../src/http/rate-limit.js';

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

H.run();
