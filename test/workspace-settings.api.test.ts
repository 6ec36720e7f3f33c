/**
 * The workspace routes of issue 28 beyond their hosted examples (those are
 * test/fixtures/hosted/workspace/): apikeys/get paging and filters, one workspace never
 * seeing or changing another's keys, the bounds of every input, no secret in a read, and
 * updates that change nothing appending nothing.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

const S = suite<{ h: Harness; t: Tenant; other: Tenant }>('workspace settings API');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  ctx.other = await ctx.h.tenant();
});
S.after(async (ctx) => ctx.h.close());

const ok = (res: { status: number; body: any }) => {
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.result;
};
const fails = (res: { status: number; body: any }, http: number, status: string, message?: RegExp | string) => {
  assert.is(res.status, http, JSON.stringify(res.body));
  assert.is(res.body.error.status, status);
  if (typeof message === 'string') assert.is(res.body.error.message, message);
  else if (message) assert.match(res.body.error.message, message);
};

S('apikeys/get pages the workspace\'s keys in id order; a token is bound to its query', async ({ h, t, other }) => {
  for (let i = 0; i < 3; i++) ok(await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing', apiKeyName: `K${i}` }, t.workspaceHeaders));
  const first = ok(await h.post('/v2/workspace/apikeys/get', { pageSize: 3 }, t.workspaceHeaders));
  assert.is(first.data.length, 3);
  assert.type(first.nextPageToken, 'string');
  assert.is(first.pageToken, first.nextPageToken);
  const second = ok(await h.post('/v2/workspace/apikeys/get', { pageSize: 3, pageToken: first.nextPageToken }, t.workspaceHeaders));
  assert.is(second.data.length, 1);
  assert.not.ok('nextPageToken' in second, 'no token on the last page');
  const ids = [...first.data, ...second.data].map((k: any) => k.id);
  assert.equal(ids, [...ids].sort(), 'id order');
  assert.ok(ids.includes(t.apiKey));
  const ws = ok(await h.post('/v2/workspace/get', {}, t.workspaceHeaders));
  assert.equal(Object.keys(ws.data.apiKeyList).sort(), ids, 'workspace/get lists the same keys');
  // Another workspace, or another filter, cannot use the token.
  fails(await h.post('/v2/workspace/apikeys/get', { pageSize: 3, pageToken: first.nextPageToken }, other.workspaceHeaders), 400, 'INVALID_ARGUMENT', /pageToken/);
  fails(await h.post('/v2/workspace/apikeys/get', { pageSize: 3, apiKeys: ids, pageToken: first.nextPageToken }, t.workspaceHeaders), 400, 'INVALID_ARGUMENT', /pageToken/);
  // The filter pages too.
  const f1 = ok(await h.post('/v2/workspace/apikeys/get', { apiKeys: [...ids].reverse(), pageSize: 2 }, t.workspaceHeaders));
  assert.equal(f1.data.map((k: any) => k.id), ids.slice(0, 2));
  const f2 = ok(await h.post('/v2/workspace/apikeys/get', { apiKeys: [...ids].reverse(), pageSize: 2, pageToken: f1.nextPageToken }, t.workspaceHeaders));
  assert.equal(f2.data.map((k: any) => k.id), ids.slice(2));
  assert.not.ok('nextPageToken' in f2);
});

S('one workspace never sees or renames another\'s keys', async ({ h, t, other }) => {
  const seen = ok(await h.post('/v2/workspace/apikeys/get', { apiKeys: [other.apiKey, t.apiKey] }, t.workspaceHeaders));
  assert.equal(seen.data.map((k: any) => k.id), [t.apiKey]);
  const ws = ok(await h.post('/v2/workspace/get', {}, other.workspaceHeaders));
  assert.equal(Object.keys(ws.data.apiKeyList), [other.apiKey]);
  fails(await h.post('/v2/workspace/apikey/update', { apiKey: other.apiKey, apiKeyName: 'Taken' }, t.workspaceHeaders), 404, 'NOT_FOUND', 'API key not found.');
  const after = ok(await h.post('/v2/workspace/apikeys/get', {}, other.workspaceHeaders));
  assert.ok(after.data[0].apiKeyName !== 'Taken');
  // API-key credentials are not workspace credentials.
  fails(await h.post('/v2/workspace/get', {}, t.headers), 401, 'UNAUTHENTICATED');
});

S('workspace/get shows no secret: the workspace token redacted, no key token', async ({ h, t }) => {
  const res = await h.post('/v2/workspace/get', {}, t.workspaceHeaders);
  const d = ok(res).data;
  assert.is(d.authToken, '__redacted__');
  const body = JSON.stringify(res.body);
  assert.not.ok(body.includes(t.workspaceHeaders['x-service-workspace-auth-token']!), 'the workspace token is not in the answer');
  assert.not.ok(body.includes(t.headers['x-service-auth-token']!), 'the key token is not in the answer');
  for (const k of Object.values(d.apiKeyList) as any[]) assert.equal(Object.keys(k).sort(), ['apiKeyName', 'id', 'type']);
});

S('every input is bounded', async ({ h, t }) => {
  const w = t.workspaceHeaders;
  fails(await h.post('/v2/workspace/apikeys/get', { pageSize: 0 }, w), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikeys/get', { pageSize: 101 }, w), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikeys/get', { apiKeys: Array.from({ length: 101 }, (_, i) => `k${i}`) }, w), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikeys/get', { pageToken: 'x'.repeat(4097) }, w), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikey/update', { apiKey: t.apiKey, apiKeyName: '' }, w), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikey/update', { apiKey: t.apiKey, apiKeyName: 'n'.repeat(257) }, w), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikey/update', { apiKey: t.apiKey }, w), 400, 'INVALID_ARGUMENT');
  ok(await h.post('/v2/workspace/apikey/update', { apiKey: t.apiKey, apiKeyName: 'n'.repeat(256) }, w));
  const k = t.headers;
  fails(await h.post('/v2/workspace/apikeyconfig/update', { aiModelApiKey: [] }, k), 400, 'INVALID_ARGUMENT');
  const seven = Array.from({ length: 7 }, () => ({ provider: 'openai', customerApiKey: 'sk-1234567890' }));
  fails(await h.post('/v2/workspace/apikeyconfig/update', { aiModelApiKey: seven }, k), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikeyconfig/update', { aiModelApiKey: [{ provider: 'openai', customerApiKey: 'k'.repeat(1025) }] }, k), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikeyconfig/update', { aiModelApiKey: [{ provider: 'openai', customerApiKey: '' }] }, k), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikeyconfig/update', { defaultDocumentAccessType: 'private' }, k), 400, 'INVALID_ARGUMENT');
  fails(await h.post('/v2/workspace/apikeyconfig/update', { requireJwtToken: 'yes' }, k), 400, 'INVALID_ARGUMENT');
});

S('an update that changes nothing appends nothing; one that does is read back', async ({ h, t }) => {
  const count = async () => (await h.services.events.readAll()).length;
  ok(await h.post('/v2/workspace/apikey/update', { apiKey: t.apiKey, apiKeyName: 'Same' }, t.workspaceHeaders));
  let before = await count();
  ok(await h.post('/v2/workspace/apikey/update', { apiKey: t.apiKey, apiKeyName: 'Same' }, t.workspaceHeaders));
  assert.is(await count(), before, 'the same name: no event');
  const echoed = ok(await h.post('/v2/workspace/apikeyconfig/update', { enablePrivateComments: true, requireAutoOrgUser: true }, t.headers));
  assert.equal(echoed.data, { enablePrivateComments: true, requireAutoOrgUser: true });
  before = await count();
  const again = ok(await h.post('/v2/workspace/apikeyconfig/update', { enablePrivateComments: true }, t.headers));
  assert.equal(again.data, { enablePrivateComments: true }, 'the hosted answer when the value already matches');
  assert.is(await count(), before, 'the same values: no event');
  const cfg = ok(await h.post('/v2/workspace/apikeyconfig/get', {}, t.headers)).data;
  assert.is(cfg.isPrivateCommentsEnabled, true);
  assert.is(cfg.requireAutoOrgUser, true);
  assert.match(cfg.ownerEmail, /@/);
  assert.is(cfg.requireJwtToken, false, 'untouched fields keep their values');
});

S.run();
