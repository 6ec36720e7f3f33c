/**
 * Workspace mode through app.inject: workspace/create, apikey/create with production gating,
 * auth tokens get/reset; envelopes and status codes for every failure.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { authenticate } from '../src/http/auth.js';
import { ApiError } from '../src/shared/errors.js';
import { workspaceDecider, workspaceStream } from '../commands/workspace.js';
import type { FastifyRequest } from 'fastify';

const S = suite<{ h: Harness; t: Tenant }>('workspace API');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
});
S.after(async (ctx) => ctx.h.close());

const fails = (res: { status: number; body: any }, http: number, status: string, message?: RegExp) => {
  assert.is(res.status, http, JSON.stringify(res.body));
  assert.is(res.body.error.status, status);
  assert.type(res.body.error.message, 'string');
  if (message) assert.match(res.body.error.message, message);
  assert.not.ok(JSON.stringify(res.body).includes('    at '), 'no stack trace');
};

/** The operator's CLI does this; tests go through the same command. */
async function setWorkspace(h: Harness, workspaceId: string, data: { plan?: 'free' | 'paid'; productionKeysEnabled?: boolean; maxProductionKeys?: number }) {
  const r = await h.services.commands.handle(workspaceDecider, workspaceStream(workspaceId), { type: 'ChangeWorkspaceSettings', data, metadata: { now: Date.now() } }, { requestId: 't', actor: 'cli', time: Date.now(), workspaceId });
  if (r.position) await h.services.projections.waitFor(r.position, 2000);
}

S('workspace/create returns the workspace, its token and one testing key with its token', async ({ h }) => {
  const res = await h.post('/v2/workspace/create', { ownerEmail: 'ada@example.com', name: 'Ada', workspaceName: 'Analytical' });
  assert.is(res.status, 200);
  assert.is(res.body.result.status, 'success');
  assert.is(res.body.result.message, 'Workspace created successfully');
  const d = res.body.result.data;
  assert.is(d.name, 'Analytical');
  assert.match(d.owner.id, /^[A-Za-z0-9]{20}$/);
  assert.equal(d.owner, { email: 'ada@example.com', id: d.owner.id, name: 'Ada' });
  assert.match(d.id, /^[A-Za-z0-9]{20}$/);
  assert.match(d.authToken, /^[A-Za-z0-9]{48}$/);
  const keys = Object.entries(d.apiKeyList) as Array<[string, any]>;
  assert.is(keys.length, 1);
  assert.is(keys[0]![1].id, keys[0]![0]);
  assert.is(keys[0]![1].type, 'testing');
  assert.is(keys[0]![1].apiKeyName, 'Ada Test API Key');
  assert.match(keys[0]![1].authToken, /^[A-Za-z0-9]{48}$/);
  assert.ok(res.headers['x-request-id']);
});

S('workspace/create defaults: the owner is named by the email, the workspace by the owner; avatar echoed', async ({ h }) => {
  const bare = (await h.post('/v2/workspace/create', { ownerEmail: 'grace.hopper@example.com' })).body.result.data;
  assert.is(bare.owner.name, 'grace.hopper@example.com');
  assert.is(bare.name, 'grace.hopper@example.com workspace');
  assert.is(bare.owner.avatar, undefined);
  assert.is((Object.values(bare.apiKeyList)[0] as any).apiKeyName, 'Grace.hopper Test API Key');
  const named = (await h.post('/v2/workspace/create', { ownerEmail: 'g@example.com', name: 'Grace', avatar: 'https://example.com/g.png' })).body.result.data;
  assert.is(named.name, 'Grace workspace');
  assert.is(named.owner.avatar, 'https://example.com/g.png');
});

S('workspace/create validates ownerEmail', async ({ h }) => {
  fails(await h.post('/v2/workspace/create', {}), 400, 'INVALID_ARGUMENT', /data\.ownerEmail is required/);
  fails(await h.post('/v2/workspace/create', { ownerEmail: 'nope' }), 400, 'INVALID_ARGUMENT', /data\.ownerEmail must be a valid email/);
  fails(await h.post('/v2/workspace/create', { ownerEmail: { $gt: '' } }), 400, 'INVALID_ARGUMENT', /data\.ownerEmail must be a string/);
  fails(await h.post('/v2/workspace/create', { ownerEmail: 'a@b.co', name: 'x'.repeat(5000) }), 400, 'INVALID_ARGUMENT', /data\.name must be at most 200 characters/);
  fails(await h.post('/v2/workspace/create', { ownerEmail: 'a@b.co', workspaceName: '' }), 400, 'INVALID_ARGUMENT', /data\.workspaceName must not be empty/);
  fails(await h.post('/v2/workspace/create', { ownerEmail: 'a@b.co', avatar: 'x'.repeat(2001) }), 400, 'INVALID_ARGUMENT', /data\.avatar must be at most 2000 characters/);
});

S('secrets are stored only as hashes', async ({ h }) => {
  const res = await h.post('/v2/workspace/create', { ownerEmail: 'hash@example.com' });
  const d = res.body.result.data;
  const keyToken = (Object.values(d.apiKeyList)[0] as any).authToken;
  const log = JSON.stringify(await h.services.events.readAll());
  const models = JSON.stringify([await h.services.read.find('workspaces', {}), await h.services.read.find('api_keys', {})]);
  for (const secret of [d.authToken, keyToken]) {
    assert.not.ok(log.includes(secret), 'secret in the event log');
    assert.not.ok(models.includes(secret), 'secret in a read model');
  }
});

S('apikey/create: missing workspace headers UNAUTHENTICATED, wrong ones PERMISSION_DENIED', async ({ h, t }) => {
  const body = { ownerEmail: 'o@example.com', type: 'testing' };
  fails(await h.post('/v2/workspace/apikey/create', body), 401, 'UNAUTHENTICATED', /x-service-workspace-id/);
  fails(await h.post('/v2/workspace/apikey/create', body, { 'x-service-workspace-id': t.workspaceId }), 401, 'UNAUTHENTICATED', /x-service-workspace-auth-token/);
  fails(
    await h.post('/v2/workspace/apikey/create', body, { ...t.workspaceHeaders, 'x-service-workspace-auth-token': 'wrong' }),
    403,
    'PERMISSION_DENIED',
  );
  fails(
    await h.post('/v2/workspace/apikey/create', body, { ...t.workspaceHeaders, 'x-service-workspace-id': 'no-such-workspace' }),
    403,
    'PERMISSION_DENIED',
  );
  // The API key's own credentials are not workspace credentials.
  fails(
    await h.post('/v2/workspace/apikey/create', body, { 'x-service-workspace-id': t.apiKey, 'x-service-workspace-auth-token': t.headers['x-service-auth-token']! }),
    403,
    'PERMISSION_DENIED',
  );
});

S('apikey/create testing key with createAuthToken; the key authenticates', async ({ h, t }) => {
  const res = await h.post(
    '/v2/workspace/apikey/create',
    { ownerEmail: 'o@example.com', type: 'testing', createAuthToken: true, apiKeyName: 'Second', allowedDomains: ['app.example.com'], addLocalHostToAllowedDomains: true, useWebhookService: true, webhookServiceConfig: { authToken: 'hook-secret', rawNotificationUrl: 'https://hooks.example.com/raw' }, realtimeDBRegion: 'europe' },
    t.workspaceHeaders,
  );
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is(res.body.result.message, 'API key created successfully.');
  const { apiKey, authToken } = res.body.result.data;
  assert.type(apiKey, 'string');
  assert.type(authToken, 'string');
  const key = await h.services.read.get<any>('api_keys', apiKey);
  assert.equal(key.settings.allowedDomains, ['app.example.com', 'localhost']);
  assert.is(key.settings.useWebhookService, true);
  assert.is(key.settings.webhookServiceConfig.authToken, '__redacted__');
  assert.is(key.realtimeDBRegion, 'europe');
  assert.is(key.persistenceDBRegion, null, 'persistenceDBRegion applies to production keys only');
  // Read-your-writes: the key works on the very next request.
  const caller = await authenticate(fakeRequest({ 'x-service-api-key': apiKey, 'x-service-auth-token': authToken }), 'apiKey', h.services);
  assert.equal(caller.tenant, { apiKey, workspaceId: t.workspaceId, type: 'testing' });
});

S('apikey/create without createAuthToken returns only the key', async ({ h, t }) => {
  const res = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing' }, t.workspaceHeaders);
  assert.equal(Object.keys(res.body.result.data), ['apiKey']);
});

S('apikey/create validation: type, email, regions (unknown and empty string)', async ({ h, t }) => {
  const post = (d: unknown) => h.post('/v2/workspace/apikey/create', d, t.workspaceHeaders);
  fails(await post({ type: 'testing' }), 400, 'INVALID_ARGUMENT', /^ownerEmail is required\.$/);
  fails(await post({ ownerEmail: 'o@example.com' }), 400, 'INVALID_ARGUMENT', /data\.type is required/);
  fails(await post({ ownerEmail: 'o@example.com', type: 'staging' }), 400, 'INVALID_ARGUMENT', /data\.type must be one of "testing", "production"/);
  fails(await post({ ownerEmail: 'bad', type: 'testing' }), 400, 'INVALID_ARGUMENT', /data\.ownerEmail must be a valid email/);
  fails(await post({ ownerEmail: 'o@example.com', type: 'production', persistenceDBRegion: 'mars' }), 400, 'INVALID_ARGUMENT', /data\.persistenceDBRegion must be one of/);
  fails(await post({ ownerEmail: 'o@example.com', type: 'testing', realtimeDBRegion: '' }), 400, 'INVALID_ARGUMENT', /data\.realtimeDBRegion must be one of/);
  fails(await post({ ownerEmail: 'o@example.com', type: 'testing', allowedDomains: 'a.com' }), 400, 'INVALID_ARGUMENT', /data\.allowedDomains must be an array/);
  fails(await post({ ownerEmail: 'o@example.com', type: 'testing', webhookServiceConfig: { rawNotificationUrl: 'ftp://x' } }), 400, 'INVALID_ARGUMENT', /data\.webhookServiceConfig\.rawNotificationUrl must be an http\(s\) URL/);
  fails(await post({ ownerEmail: 'o@example.com', type: 'testing', createAuthToken: 'yes' }), 400, 'INVALID_ARGUMENT', /data\.createAuthToken must be a boolean/);
});

S('production keys: PERMISSION_DENIED, then FAILED_PRECONDITION, then created, then RESOURCE_EXHAUSTED', async ({ h }) => {
  const t = await h.tenant();
  const prod = { ownerEmail: 'o@example.com', type: 'production', createAuthToken: true };
  fails(await h.post('/v2/workspace/apikey/create', prod, t.workspaceHeaders), 403, 'PERMISSION_DENIED');
  await setWorkspace(h, t.workspaceId, { productionKeysEnabled: true, maxProductionKeys: 1 });
  fails(await h.post('/v2/workspace/apikey/create', prod, t.workspaceHeaders), 400, 'FAILED_PRECONDITION');
  await setWorkspace(h, t.workspaceId, { plan: 'paid' });
  const ok = await h.post('/v2/workspace/apikey/create', { ...prod, persistenceDBRegion: 'europe' }, t.workspaceHeaders);
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  const key = await h.services.read.get<any>('api_keys', ok.body.result.data.apiKey);
  assert.is(key.type, 'production');
  assert.is(key.persistenceDBRegion, 'europe');
  fails(await h.post('/v2/workspace/apikey/create', prod, t.workspaceHeaders), 429, 'RESOURCE_EXHAUSTED');
});

S('production key without persistenceDBRegion gets the default (first) region', async ({ h }) => {
  const t = await h.tenant();
  await setWorkspace(h, t.workspaceId, { productionKeysEnabled: true, plan: 'paid' });
  const ok = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'production' }, t.workspaceHeaders);
  const key = await h.services.read.get<any>('api_keys', ok.body.result.data.apiKey);
  assert.is(key.persistenceDBRegion, h.services.config.regions[0]);
});

S('concurrent production key requests never pass the limit', async ({ h }) => {
  const t = await h.tenant();
  await setWorkspace(h, t.workspaceId, { productionKeysEnabled: true, plan: 'paid', maxProductionKeys: 2 });
  const results = await Promise.all(
    Array.from({ length: 8 }, () => h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'production' }, t.workspaceHeaders)),
  );
  assert.is(results.filter((r) => r.status === 200).length, 2);
  assert.is(results.filter((r) => r.status === 429).length, 6);
});

S('authtokens/get lists tokens redacted; authtoken/reset returns a new token and revokes the old', async ({ h }) => {
  const t = await h.tenant();
  const list = await h.post('/v2/workspace/authtokens/get', { apiKey: t.apiKey }, t.workspaceHeaders);
  assert.is(list.status, 200);
  const tokens = list.body.result.data.authTokens;
  assert.is(tokens.length, 1);
  assert.equal(Object.keys(tokens[0]).sort(), ['createdAt', 'domains', 'name', 'token', 'tokenId']);
  assert.is(tokens[0].token, '__redacted__');
  assert.not.ok(JSON.stringify(list.body).includes(t.headers['x-service-auth-token']!));

  // The old token is used (and its match remembered for the cached key document) before the reset.
  assert.is((await authenticate(fakeRequest(t.headers), 'apiKey', h.services)).tenant?.apiKey, t.apiKey);
  assert.is((await authenticate(fakeRequest(t.headers), 'apiKey', h.services)).tenant?.apiKey, t.apiKey);
  const reset = await h.post('/v2/workspace/authtoken/reset', { apiKey: t.apiKey }, t.workspaceHeaders);
  assert.is(reset.status, 200, JSON.stringify(reset.body));
  const fresh = reset.body.result.data.newAuthToken.token as string;
  assert.match(fresh, /^[A-Za-z0-9]{48}$/);
  const oldHeaders = t.headers;
  const newHeaders = { ...t.headers, 'x-service-auth-token': fresh };
  await assertDenied(h, oldHeaders);
  const caller = await authenticate(fakeRequest(newHeaders), 'apiKey', h.services);
  assert.is(caller.tenant?.apiKey, t.apiKey);
  const after = await h.post('/v2/workspace/authtokens/get', { apiKey: t.apiKey }, t.workspaceHeaders);
  assert.equal(after.body.result.data.authTokens.map((x: any) => x.tokenId), [reset.body.result.data.newAuthToken.tokenId]);
});

S('token routes refuse keys of another workspace, unknown keys and unknown token ids', async ({ h, t }) => {
  const other = await h.tenant();
  fails(await h.post('/v2/workspace/authtokens/get', { apiKey: other.apiKey }, t.workspaceHeaders), 404, 'NOT_FOUND', /^API key not found\.$/);
  fails(await h.post('/v2/workspace/authtoken/reset', { apiKey: other.apiKey }, t.workspaceHeaders), 404, 'NOT_FOUND', /^API key not found\.$/);
  fails(await h.post('/v2/workspace/authtoken/reset', { apiKey: 'x'.repeat(300) }, t.workspaceHeaders), 400, 'INVALID_ARGUMENT', /at most 256/);
  fails(await h.post('/v2/workspace/authtoken/reset', { apiKey: t.apiKey, tokenId: 'nope' }, t.workspaceHeaders), 404, 'NOT_FOUND', /Auth token not found/);
  // The other workspace's key still works: nothing was revoked across workspaces.
  const caller = await authenticate(fakeRequest(other.headers), 'apiKey', h.services);
  assert.is(caller.tenant?.apiKey, other.apiKey);
});

S('API-key authentication: missing headers, wrong token, unknown key', async ({ h, t }) => {
  const err = async (headers: Record<string, string>) => {
    try {
      await authenticate(fakeRequest(headers), 'apiKey', h.services);
    } catch (e) {
      assert.instance(e, ApiError);
      return (e as ApiError).status;
    }
    return 'accepted';
  };
  assert.is(await err({}), 'UNAUTHENTICATED');
  assert.is(await err({ 'x-service-api-key': t.apiKey }), 'UNAUTHENTICATED');
  assert.is(await err({ ...t.headers, 'x-service-auth-token': 'wrong' }), 'PERMISSION_DENIED');
  assert.is(await err({ ...t.headers, 'x-service-api-key': 'unknown' }), 'PERMISSION_DENIED');
  assert.is(await err({ 'x-service-api-key': t.apiKey, 'x-service-auth-token': t.workspaceHeaders['x-service-workspace-auth-token']! }), 'PERMISSION_DENIED');
  assert.is(await err(t.headers), 'accepted');
});

S('API-key routes through HTTP: 401 without headers, 403 with a wrong pair, 200 with the key', async ({ h, t }) => {
  fails(await h.post('/v2/agents/get', {}), 401, 'UNAUTHENTICATED', /x-service-api-key/);
  fails(await h.post('/v2/agents/get', {}, { ...t.headers, 'x-service-auth-token': 'nope' }), 403, 'PERMISSION_DENIED');
  fails(await h.post('/v2/agents/get', {}, t.workspaceHeaders), 401, 'UNAUTHENTICATED');
  const ok = await h.post('/v2/agents/get', {}, t.headers);
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  // Auth comes before validation: a bad body with bad credentials is still a 403.
  fails(await h.post('/v2/agents/get', { filter: 5 }, { ...t.headers, 'x-service-auth-token': 'nope' }), 403, 'PERMISSION_DENIED');
});

function fakeRequest(headers: Record<string, string>): FastifyRequest {
  return { headers } as unknown as FastifyRequest;
}

async function assertDenied(h: Harness, headers: Record<string, string>) {
  try {
    await authenticate(fakeRequest(headers), 'apiKey', h.services);
  } catch (e) {
    assert.is((e as ApiError).status, 'PERMISSION_DENIED');
    return;
  }
  assert.unreachable('revoked token still accepted');
}

S.run();

// ---- admin token ----

const A = suite<{ h: Harness }>('workspace/create behind ADMIN_TOKEN');
const ADMIN = 'admin-token-0123456789';
A.before(async (ctx) => {
  ctx.h = await harness({ ADMIN_TOKEN: ADMIN });
});
A.after(async (ctx) => ctx.h.close());

A('without the admin header: UNAUTHENTICATED; wrong: PERMISSION_DENIED; right: created', async ({ h }) => {
  fails(await h.post('/v2/workspace/create', { ownerEmail: 'a@b.co' }), 401, 'UNAUTHENTICATED', /x-service-admin-token/);
  fails(await h.post('/v2/workspace/create', { ownerEmail: 'a@b.co' }, { 'x-service-admin-token': 'nope' }), 403, 'PERMISSION_DENIED');
  const ok = await h.post('/v2/workspace/create', { ownerEmail: 'a@b.co' }, { 'x-service-admin-token': ADMIN });
  assert.is(ok.status, 200);
});

A.run();
