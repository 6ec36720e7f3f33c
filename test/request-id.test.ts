/**
 * The request id is set once, as the request arrives (src/http/request-id.ts), so every kind
 * of answer carries it: a success, a refusal by the body parser or the validator, missing
 * credentials, a rate limit, an unknown route, the operator's routes. Each request sends its
 * own id and must get that one back; one without an id gets a generated one.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

const R = suite<{ h: Harness; t: Tenant }>('x-request-id on every answer');
// A frozen clock: the buckets never refill, so the third API-key request is refused.
R.before(async (ctx) => {
  const now = Date.now();
  ctx.h = await harness({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '2', BODY_LIMIT_BYTES: '4096' }, { clock: () => now });
  ctx.t = await ctx.h.tenant();
});
R.after(async (ctx) => ctx.h.close());

const echoed = (res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, id: string) => {
  assert.is(res.statusCode, status, res.body);
  assert.is(res.headers['x-request-id'], id, `${status} ${res.body}`);
};

R('success, validation, parser, size, credentials, rate limit and unknown route answers echo the id', async ({ h, t }) => {
  const post = (id: string, payload: string, headers: Record<string, string> = {}, url = '/v2/organizations/add') =>
    h.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers } });
  const orgs = JSON.stringify({ data: { organizations: [{ organizationId: 'rid-org' }] } });

  echoed(await post('rid-ok', orgs, t.headers), 200, 'rid-ok');
  echoed(await post('rid-invalid', JSON.stringify({ data: { organizations: 5 } }), t.headers), 400, 'rid-invalid');
  echoed(await post('rid-json', '{not json', t.headers), 400, 'rid-json');
  echoed(await post('rid-size', JSON.stringify({ data: { organizations: [{ organizationId: 'x'.repeat(5000) }] } }), t.headers), 413, 'rid-size');
  echoed(await post('rid-401', orgs), 401, 'rid-401');
  echoed(await post('rid-403', orgs, { ...t.headers, 'x-service-auth-token': 'wrong' }), 403, 'rid-403');
  // The key's bucket held two: the success and the validation refusal took them.
  const limited = await post('rid-429', orgs, t.headers);
  echoed(limited, 429, 'rid-429');
  assert.ok(limited.headers['retry-after']);
  echoed(await post('rid-404', orgs, t.headers, '/v2/no-such-route'), 404, 'rid-404');
});

R('operator routes and a generated id', async ({ h }) => {
  echoed(await h.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'rid-health' } }), 200, 'rid-health');
  echoed(await h.app.inject({ method: 'GET', url: '/openapi.json', headers: { 'x-request-id': 'rid-doc' } }), 200, 'rid-doc');
  const unknown = await h.app.inject({ method: 'GET', url: '/nothing-here' });
  assert.is(unknown.statusCode, 404);
  assert.match(String(unknown.headers['x-request-id']), /^[A-Za-z0-9_-]{16}$/);
  assert.is(JSON.parse(unknown.body).error.status, 'NOT_FOUND');
});

R.run();
