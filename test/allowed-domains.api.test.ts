/**
 * `/v2/workspace/domains/add`, `delete`, `get` through the app (issue 22): the calling key's
 * list only, bad input in the failure envelope naming the entry, the per-key bound, and the
 * same normalization on apikey/create's `allowedDomains`. The documented examples run as
 * hosted fixtures (test/fixtures/hosted/workspace/domains-*.json).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Response, type Tenant } from './support/app.js';
import { MAX_DOMAIN_INPUT, MAX_DOMAINS_PER_CALL, MAX_DOMAINS_PER_KEY } from '../commands/allowed-domains.js';

const S = suite<{ h: Harness; a: Tenant; b: Tenant }>('allowed domains');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.a = await ctx.h.tenant();
  ctx.b = await ctx.h.tenant();
});
S.after(async (ctx) => ctx.h.close());

const ADD = '/v2/workspace/domains/add';
const DELETE = '/v2/workspace/domains/delete';
const GET = '/v2/workspace/domains/get';

const ok = (res: Response) => {
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.result.data;
};
const fails = (res: Response, status: number, code: string, re: RegExp) => {
  assert.is(res.status, status, JSON.stringify(res.body));
  assert.is(res.body.error.status, code);
  assert.match(res.body.error.message, re);
};
const list = async (h: Harness, headers: Record<string, string>) => ok(await h.post(GET, {}, headers)).allowedDomains as string[];

/** A second key of `t`'s workspace, with its auth token. */
async function secondKey(h: Harness, t: Tenant, extra: Record<string, unknown> = {}) {
  const d = ok(await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing', createAuthToken: true, ...extra }, t.workspaceHeaders));
  return { 'x-service-api-key': d.apiKey as string, 'x-service-auth-token': d.authToken as string };
}

S('each key has its own list: another key of the same workspace and another workspace see none of it', async ({ h, a, b }) => {
  const a2 = await secondKey(h, a);
  ok(await h.post(ADD, { domains: ['https://app.example.com'] }, a.headers));
  assert.equal(await list(h, a.headers), ['app.example.com']);
  assert.equal(await list(h, a2), []);
  assert.equal(await list(h, b.headers), []);
  // Removing it through another key removes nothing of a's.
  const other = ok(await h.post(DELETE, { domains: ['app.example.com'] }, b.headers));
  assert.equal(other, { domainsRemoved: [], skippedDomains: ['app.example.com'] });
  assert.equal(await list(h, a.headers), ['app.example.com']);
  ok(await h.post(DELETE, { domains: ['app.example.com'] }, a.headers));
  assert.equal(await list(h, a.headers), []);
});

S('API-key credentials only: workspace headers and user tokens are refused', async ({ h, a }) => {
  fails(await h.post(ADD, { domains: ['example.com'] }, a.workspaceHeaders), 401, 'UNAUTHENTICATED', /x-service-api-key/);
  const token = ok(await h.post('/v2/auth/generate_token', { userId: 'u1', userProperties: { name: 'U', email: 'u@example.com' } }, a.headers)).token as string;
  fails(await h.post(ADD, { domains: ['evil.example.net'] }, { authorization: `Bearer ${token}` }), 403, 'PERMISSION_DENIED', /User tokens/);
  fails(await h.post(GET, {}, { authorization: `Bearer ${token}` }), 403, 'PERMISSION_DENIED', /User tokens/);
  assert.equal(await list(h, a.headers), []);
});

S('bad input answers INVALID_ARGUMENT naming the field, and nothing is added', async ({ h, a }) => {
  fails(await h.post(ADD, {}, a.headers), 400, 'INVALID_ARGUMENT', /data\.domains/);
  fails(await h.post(ADD, { domains: 'example.com' }, a.headers), 400, 'INVALID_ARGUMENT', /data\.domains must be an array/);
  fails(await h.post(ADD, { domains: [] }, a.headers), 400, 'INVALID_ARGUMENT', /data\.domains must not be empty/);
  fails(await h.post(ADD, { domains: [5] }, a.headers), 400, 'INVALID_ARGUMENT', /data\.domains\[0\] must be a string/);
  fails(await h.post(ADD, { domains: ['x'.repeat(MAX_DOMAIN_INPUT + 1)] }, a.headers), 400, 'INVALID_ARGUMENT', new RegExp(`data\\.domains\\[0\\] must be at most ${MAX_DOMAIN_INPUT} characters`));
  const many = Array.from({ length: MAX_DOMAINS_PER_CALL + 1 }, (_, i) => `d${i}.example.com`);
  fails(await h.post(ADD, { domains: many }, a.headers), 400, 'INVALID_ARGUMENT', new RegExp(`data\\.domains must have at most ${MAX_DOMAINS_PER_CALL} items`));
  fails(await h.post(DELETE, { domains: many }, a.headers), 400, 'INVALID_ARGUMENT', new RegExp(`at most ${MAX_DOMAINS_PER_CALL} items`));
  // One bad entry refuses the whole call, naming it.
  const res = await h.post(ADD, { domains: ['good.example.com', 'http://plain.example.com'] }, a.headers);
  fails(res, 400, 'INVALID_ARGUMENT', /^data\.domains\[1\] \("http:\/\/plain\.example\.com"\) uses http:\/\//);
  assert.equal(res.body.error.details.fields, [{ field: 'data.domains[1]', code: 'invalid_domain' }]);
  fails(await h.post(ADD, { domains: ['https://example.com/path'] }, a.headers), 400, 'INVALID_ARGUMENT', /data\.domains\[0\].*no path/);
  fails(await h.post(ADD, { domains: ['*.com'] }, a.headers), 400, 'INVALID_ARGUMENT', /data\.domains\[0\]/);
  fails(await h.post(ADD, { domains: ['__proto__'] }, a.headers), 400, 'INVALID_ARGUMENT', /data\.domains\[0\]/);
  assert.equal(await list(h, a.headers), []);
});

S(`a key holds at most ${MAX_DOMAINS_PER_KEY} entries: past it RESOURCE_EXHAUSTED and nothing added`, async ({ h, a }) => {
  const k = await secondKey(h, a);
  const first = Array.from({ length: MAX_DOMAINS_PER_KEY - 1 }, (_, i) => `d${i}.example.com`);
  ok(await h.post(ADD, { domains: first }, k));
  fails(await h.post(ADD, { domains: ['x.example.com', 'y.example.com'] }, k), 429, 'RESOURCE_EXHAUSTED', new RegExp(`at most ${MAX_DOMAINS_PER_KEY}`));
  assert.is((await list(h, k)).length, MAX_DOMAINS_PER_KEY - 1);
  // What it holds already does not count again.
  assert.equal(ok(await h.post(ADD, { domains: ['d0.example.com', 'x.example.com'] }, k)), { domainsAdded: ['x.example.com'], skippedDomains: ['d0.example.com'] });
  assert.is((await list(h, k)).length, MAX_DOMAINS_PER_KEY);
});

S('apikey/create normalizes allowedDomains as domains/add does, and refuses what it would', async ({ h, a }) => {
  const k = await secondKey(h, a, { allowedDomains: ['https://www.Example.com/', 'example.com'], addLocalHostToAllowedDomains: true });
  assert.equal(await list(h, k), ['example.com', 'localhost']);
  fails(
    await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing', allowedDomains: ['example.com', 'ftp://example.com'] }, a.workspaceHeaders),
    400,
    'INVALID_ARGUMENT',
    /^data\.allowedDomains\[1\] \("ftp:\/\/example\.com"\) has the scheme ftp/,
  );
  fails(
    await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing', allowedDomains: Array.from({ length: MAX_DOMAINS_PER_KEY }, (_, i) => `d${i}.example.com`), addLocalHostToAllowedDomains: true }, a.workspaceHeaders),
    400,
    'INVALID_ARGUMENT',
    new RegExp(`at most ${MAX_DOMAINS_PER_KEY} allowed domains`),
  );
});

S('a deleted key\'s entries leave the index with it', async ({ h, a }) => {
  const k = await secondKey(h, a);
  ok(await h.post(ADD, { domains: ['gone.example.com'] }, k));
  const index = () => h.services.read.find('allowed_domains', { domain: 'gone.example.com' });
  assert.is((await index()).length, 1);
  ok(await h.post('/v2/workspace/apikey/delete', { apiKey: k['x-service-api-key'] }, a.workspaceHeaders));
  assert.is((await index()).length, 0);
});

S.run();
