/**
 * CORS for browser front ends (issue 22, src/http/cors.ts) through app.inject: preflights
 * of the user-token routes are answered for origins some key allows and refused otherwise;
 * a real request gets `Access-Control-Allow-Origin` only when its user token's key allows
 * the origin; no other route, origin or credential gets a CORS header; `Vary: Origin`.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

interface Ctx {
  h: Harness;
  /** Allows https://app.example.com and http://localhost:3000. */
  a: Tenant;
  /** Allows https://evil.example.net only: an attacker's own key. */
  b: Tenant;
  tokenA: string;
}

const RESOURCES = '/v2/auth/resources/get';
const A_ORIGIN = 'https://app.example.com';
const B_ORIGIN = 'https://evil.example.net';

const S = suite<Ctx>('CORS');
S.before(async (ctx) => {
  const h = (ctx.h = await harness());
  ctx.a = await h.tenant();
  ctx.b = await h.tenant();
  assert.is((await h.post('/v2/workspace/domains/add', { domains: [A_ORIGIN, 'localhost:3000'] }, ctx.a.headers)).status, 200);
  assert.is((await h.post('/v2/workspace/domains/add', { domains: [B_ORIGIN] }, ctx.b.headers)).status, 200);
  assert.is((await h.post('/v2/organizations/add', { organizations: [{ organizationId: 'org-1' }] }, ctx.a.headers)).status, 200);
  const t = await h.post('/v2/auth/generate_token', { userId: 'u1', userProperties: { name: 'U', email: 'u@example.com' } }, ctx.a.headers);
  assert.is(t.status, 200, JSON.stringify(t.body));
  ctx.tokenA = t.body.result.data.token;
});
S.after(async (ctx) => ctx.h.close());

const STREAM = '/v2/changes/stream';

const preflight = (h: Harness, url: string, origin: string | undefined, extra: Record<string, string> = {}) =>
  h.app.inject({
    method: 'OPTIONS',
    url,
    headers: { ...(origin !== undefined ? { origin } : {}), 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type', ...extra },
  });

const corsHeaders = (headers: Record<string, unknown>) => Object.keys(headers).filter((k) => k.startsWith('access-control-'));
const varies = (headers: Record<string, unknown>, what: string) =>
  String(headers.vary ?? '').split(',').map((s) => s.trim().toLowerCase()).includes(what.toLowerCase());

S('a preflight from an allowed origin is answered with the CORS headers, before any credentials', async ({ h }) => {
  for (const origin of [A_ORIGIN, 'https://www.app.example.com', 'http://localhost:3000']) {
    const res = await preflight(h, RESOURCES, origin);
    assert.is(res.statusCode, 204, `${origin}: ${res.body}`);
    assert.is(res.headers['access-control-allow-origin'], origin);
    assert.is(res.headers['access-control-allow-methods'], 'POST');
    assert.is(res.headers['access-control-allow-headers'], 'authorization, content-type, idempotency-key, x-request-id, x-consistency-token, last-event-id, x-dry-run, x-dry-run-page-token');
    assert.is(res.headers['access-control-max-age'], '600');
    assert.not.ok(res.headers['access-control-allow-credentials'], 'no credentials mode');
    assert.ok(varies(res.headers, 'Origin'), `Vary: ${res.headers.vary}`);
  }
  // Every user-token route has one.
  for (const path of ['/v2/auth/permissions/get', '/v2/auth/permissions/explain', '/v2/presence/add', '/v2/presence/get']) {
    assert.is((await preflight(h, path, A_ORIGIN)).statusCode, 204, path);
  }
});

S('a preflight from an origin no key allows gets no CORS header, in the failure envelope', async ({ h }) => {
  for (const origin of ['https://foreign.example.org', 'http://app.example.com', 'https://app.example.com.evil.net', 'https://localhost.evil.net', 'null', 'http://localhost:3001']) {
    const res = await preflight(h, RESOURCES, origin);
    assert.is(res.statusCode, 403, `${origin}: ${res.statusCode}`);
    assert.is(JSON.parse(res.body).error.status, 'PERMISSION_DENIED');
    assert.equal(corsHeaders(res.headers), [], origin);
  }
  const noOrigin = await preflight(h, RESOURCES, undefined);
  assert.is(noOrigin.statusCode, 400);
  assert.equal(corsHeaders(noOrigin.headers), []);
  const get = await preflight(h, RESOURCES, A_ORIGIN, { 'access-control-request-method': 'GET' });
  assert.is(get.statusCode, 400);
  assert.equal(corsHeaders(get.headers), []);
});

S('a route that takes no user token has no preflight and never gets CORS headers', async ({ h, a }) => {
  for (const path of ['/v2/workspace/domains/get', '/v2/auth/users/get', '/v2/organizations/get', '/v2/auth/generate_token', '/v2/workspace/create', '/v2/no/such/route']) {
    const res = await preflight(h, path, A_ORIGIN);
    assert.is(res.statusCode, 404, path);
    assert.equal(corsHeaders(res.headers), [], path);
  }
  const res = await h.app.inject({ method: 'POST', url: '/v2/workspace/domains/get', payload: { data: {} }, headers: { ...a.headers, origin: A_ORIGIN } });
  assert.is(res.statusCode, 200);
  assert.equal(corsHeaders(res.headers), []);
});

S('the real request: Access-Control-Allow-Origin only for an origin its user token\'s key allows; Vary: Origin always', async ({ h, tokenA }) => {
  const post = (origin: string | undefined, headers: Record<string, string> = { authorization: `Bearer ${tokenA}` }) =>
    h.app.inject({ method: 'POST', url: RESOURCES, payload: { data: { userId: 'u1', organizationId: 'org-1', type: 'document' } }, headers: { ...headers, ...(origin ? { origin } : {}) } });

  const allowed = await post(A_ORIGIN);
  assert.is(allowed.statusCode, 200, allowed.body);
  assert.is(allowed.headers['access-control-allow-origin'], A_ORIGIN);
  assert.match(String(allowed.headers['access-control-expose-headers']), /x-request-id/);
  assert.ok(varies(allowed.headers, 'Origin'));

  // The attacker's origin passes a preflight (its own key lists it) but never reads the answer.
  assert.is((await preflight(h, RESOURCES, B_ORIGIN)).statusCode, 204);
  const foreign = await post(B_ORIGIN);
  assert.equal(corsHeaders(foreign.headers), []);
  assert.ok(varies(foreign.headers, 'Origin'));

  // A server calling without Origin: as before, plus Vary.
  const server = await post(undefined);
  assert.is(server.statusCode, 200);
  assert.equal(corsHeaders(server.headers), []);
  assert.ok(varies(server.headers, 'Origin'));
});

S('API-key headers never get CORS headers, even from an allowed origin', async ({ h, a }) => {
  const res = await h.app.inject({ method: 'POST', url: RESOURCES, payload: { data: { userId: 'u1', organizationId: 'org-1', type: 'document' } }, headers: { ...a.headers, origin: A_ORIGIN } });
  assert.is(res.statusCode, 200, res.body);
  assert.equal(corsHeaders(res.headers), []);
});

S('a request refused before a caller exists (bad token) is readable by an allowed origin only, so a front end can renew its token', async ({ h }) => {
  const bad = (origin: string) => h.app.inject({ method: 'POST', url: RESOURCES, payload: { data: { userId: 'u1', organizationId: 'org-1', type: 'document' } }, headers: { authorization: 'Bearer not.a.token', origin } });
  const allowed = await bad(A_ORIGIN);
  assert.is(allowed.statusCode, 401);
  assert.is(allowed.headers['access-control-allow-origin'], A_ORIGIN);
  const foreign = await bad('https://foreign.example.org');
  assert.is(foreign.statusCode, 401);
  assert.equal(corsHeaders(foreign.headers), []);
});

S('a removed domain stops at once: no CORS headers on the next request or preflight', async ({ h, a, tokenA }) => {
  assert.is((await h.post('/v2/workspace/domains/add', { domains: ['https://later.example.com'] }, a.headers)).status, 200);
  const post = () => h.app.inject({ method: 'POST', url: RESOURCES, payload: { data: { userId: 'u1', organizationId: 'org-1', type: 'document' } }, headers: { authorization: `Bearer ${tokenA}`, origin: 'https://later.example.com' } });
  assert.is((await post()).headers['access-control-allow-origin'], 'https://later.example.com');
  assert.is((await h.post('/v2/workspace/domains/delete', { domains: ['later.example.com'] }, a.headers)).status, 200);
  assert.equal(corsHeaders((await post()).headers), []);
  assert.is((await preflight(h, RESOURCES, 'https://later.example.com')).statusCode, 403);
});

S('the change stream (GET): its preflight allows GET and Last-Event-ID, by the same rule; the stream and its refusals get CORS headers as any user-token answer', async ({ h, a, tokenA }) => {
  const ok = await preflight(h, STREAM, A_ORIGIN, { 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization,last-event-id' });
  assert.is(ok.statusCode, 204, ok.body);
  assert.is(ok.headers['access-control-allow-origin'], A_ORIGIN);
  assert.is(ok.headers['access-control-allow-methods'], 'GET');
  const post = await preflight(h, STREAM, A_ORIGIN);
  assert.is(post.statusCode, 400, 'the stream is GET');
  assert.equal(corsHeaders(post.headers), []);
  const foreign = await preflight(h, STREAM, 'https://foreign.example.org', { 'access-control-request-method': 'GET' });
  assert.is(foreign.statusCode, 403);
  assert.equal(corsHeaders(foreign.headers), []);
  // A refusal before the stream (a changed token): readable by the allowed page.
  const refused = await h.app.inject({ method: 'GET', url: STREAM, headers: { origin: A_ORIGIN, authorization: `Bearer ${tokenA}`, 'last-event-id': 'changed' } });
  assert.is(refused.statusCode, 400);
  assert.is(refused.headers['access-control-allow-origin'], A_ORIGIN);
  // The stream itself, over a socket: allowed for the key's own origin, not for another's.
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}${STREAM}`;
  for (const [origin, allowed] of [[A_ORIGIN, true], [B_ORIGIN, false]] as const) {
    const controller = new AbortController();
    const res = await fetch(url, { headers: { origin, authorization: `Bearer ${tokenA}` }, signal: controller.signal });
    assert.is(res.status, 200);
    assert.is(res.headers.get('access-control-allow-origin'), allowed ? origin : null, origin);
    assert.ok(varies(Object.fromEntries(res.headers), 'Origin'));
    controller.abort();
  }
  // API-key headers: no CORS header, as on every route.
  const controller = new AbortController();
  const server = await fetch(url, { headers: { origin: A_ORIGIN, ...a.headers }, signal: controller.signal });
  assert.is(server.headers.get('access-control-allow-origin'), null);
  controller.abort();
});

S.run();
