/**
 * Wire conventions (semantics §1) through app.inject: whatever arrives, the answer is an
 * envelope with the right status, never a stack trace.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness } from './support/app.js';

const S = suite<{ h: Harness }>('HTTP wire conventions');
S.before(async (ctx) => {
  ctx.h = await harness({ BODY_LIMIT_BYTES: '4096' });
});
S.after(async (ctx) => ctx.h.close());

const envelope = (res: { status: number; body: any }, http: number, status: string, message?: RegExp) => {
  assert.is(res.status, http, JSON.stringify(res.body));
  assert.type(res.body, 'object');
  assert.is(res.body.error.status, status);
  assert.type(res.body.error.message, 'string');
  if (message) assert.match(res.body.error.message, message);
  assert.not.match(JSON.stringify(res.body), /\bat .+\.(ts|js):\d+/);
};

const W = '/v2/workspace/create';

S('a body that is not an object with an object data: INVALID_ARGUMENT 400 naming the problem', async ({ h }) => {
  envelope(await h.raw(W, '{}'), 400, 'INVALID_ARGUMENT', /data is required/);
  envelope(await h.raw(W, '[]'), 400, 'INVALID_ARGUMENT', /JSON object/);
  envelope(await h.raw(W, '"text"'), 400, 'INVALID_ARGUMENT', /JSON object/);
  envelope(await h.raw(W, 'null'), 400, 'INVALID_ARGUMENT');
  envelope(await h.raw(W, '42'), 400, 'INVALID_ARGUMENT');
  envelope(await h.raw(W, '{"data":null}'), 400, 'INVALID_ARGUMENT', /data must be an object/);
  envelope(await h.raw(W, '{"data":[]}'), 400, 'INVALID_ARGUMENT', /data must be an object/);
  envelope(await h.raw(W, '{"data":"x"}'), 400, 'INVALID_ARGUMENT', /data must be an object/);
});

S('malformed JSON and empty bodies', async ({ h }) => {
  envelope(await h.raw(W, '{bad json'), 400, 'INVALID_ARGUMENT', /not valid JSON/);
  envelope(await h.raw(W, ''), 400, 'INVALID_ARGUMENT');
  const noType = await h.app.inject({ method: 'POST', url: W });
  envelope({ status: noType.statusCode, body: JSON.parse(noType.body) }, 400, 'INVALID_ARGUMENT');
});

S('any content type is read as JSON (curl -d sends form encoding)', async ({ h }) => {
  const res = await h.app.inject({
    method: 'POST',
    url: W,
    payload: JSON.stringify({ data: { ownerEmail: 'form@example.com' } }),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.is(res.statusCode, 200);
});

S('prototype poisoning is refused', async ({ h }) => {
  envelope(await h.raw(W, '{"data":{"ownerEmail":"a@b.co","__proto__":{"admin":true}}}'), 400, 'INVALID_ARGUMENT');
  envelope(await h.raw(W, '{"data":{"constructor":{"prototype":{"x":1}}}}'), 400, 'INVALID_ARGUMENT');
  assert.is(({} as any).admin, undefined);
});

S('a body over the limit: 413 with the envelope', async ({ h }) => {
  envelope(await h.raw(W, JSON.stringify({ data: { ownerEmail: 'a@b.co', name: 'x'.repeat(10_000) } })), 413, 'INVALID_ARGUMENT', /larger than 4096 bytes/);
});

S('unknown routes and wrong methods: NOT_FOUND with the envelope', async ({ h }) => {
  envelope(await h.raw('/v2/nope', '{"data":{}}'), 404, 'NOT_FOUND', /No route POST \/v2\/nope/);
  const get = await h.app.inject({ method: 'GET', url: W });
  envelope({ status: get.statusCode, body: JSON.parse(get.body) }, 404, 'NOT_FOUND');
  const put = await h.app.inject({ method: 'PUT', url: W, payload: { data: {} } });
  envelope({ status: put.statusCode, body: JSON.parse(put.body) }, 404, 'NOT_FOUND');
});

S('unknown fields inside data are ignored, and not stored', async ({ h }) => {
  const res = await h.post(W, { ownerEmail: 'extra@example.com', surprise: 'field-value-xyz' });
  assert.is(res.status, 200);
  assert.not.ok(JSON.stringify(await h.services.events.readAll()).includes('field-value-xyz'));
});

S('several problems are reported together, each naming its field', async ({ h }) => {
  const t = await h.tenant();
  const res = await h.post('/v2/workspace/apikey/create', { ownerEmail: 5, type: 'x', allowedDomains: [1] }, t.workspaceHeaders);
  envelope(res, 400, 'INVALID_ARGUMENT');
  assert.match(res.body.error.message, /data\.ownerEmail must be a string/);
  assert.match(res.body.error.message, /data\.type must be one of/);
  assert.match(res.body.error.message, /data\.allowedDomains\[0\] must be a string/);
});

S('request ids: generated, or the client\'s when sane; echoed in x-request-id and in event metadata', async ({ h }) => {
  const mine = await h.app.inject({ method: 'POST', url: W, payload: { data: { ownerEmail: 'rid@example.com' } }, headers: { 'x-request-id': 'client-req-42' } });
  assert.is(mine.headers['x-request-id'], 'client-req-42');
  const events = await h.services.events.readAll();
  assert.ok(events.some((e) => e.metadata.requestId === 'client-req-42'));
  const insane = await h.app.inject({ method: 'POST', url: W, payload: { data: {} }, headers: { 'x-request-id': 'bad id\n' + 'x'.repeat(500) } });
  assert.match(String(insane.headers['x-request-id']), /^[A-Za-z0-9_-]{16}$/);
});

S('healthz and readyz', async ({ h }) => {
  const health = await h.app.inject({ method: 'GET', url: '/healthz' });
  assert.is(health.statusCode, 200);
  await h.services.projections.catchUp();
  const ready = await h.app.inject({ method: 'GET', url: '/readyz' });
  assert.is(ready.statusCode, 200);
});

S.run();

const R = suite<{ h: Harness }>('readyz while projections lag');
R('503 UNAVAILABLE until the read models caught up', async () => {
  const h = await harness({ READ_YOUR_WRITES_TIMEOUT_MS: '0' });
  try {
    await h.services.projections.stop();
    await h.post(W, { ownerEmail: 'lag@example.com' });
    const lagging = await h.app.inject({ method: 'GET', url: '/readyz' });
    assert.is(lagging.statusCode, 503);
    assert.is(JSON.parse(lagging.body).error.status, 'UNAVAILABLE');
    await h.services.projections.catchUp();
    assert.is((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  } finally {
    await h.close();
  }
});
R.run();
