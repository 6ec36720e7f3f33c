/**
 * Rotation and deletion through the API (issue 12): the workspace auth token, an API key's
 * token-signing key (with and without revoking the tokens the previous keys signed), and an
 * API key (its tokens stop at once, its documents leave the read models, its events stay for
 * audit with their secrets shredded, a rebuild afterwards neither crashes nor parks).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { refused } from './support/tokens.js';
import { harness, type Harness, type Tenant } from './support/app.js';
import { SignJWT, importJWK } from 'jose';
import { verifyUserToken } from '../src/usecases/user-tokens.js';
import { workspaceDecider, workspaceStream } from '../commands/workspace.js';
import { API_KEYS } from '../projections/workspaces.js';
import { AGENTS } from '../projections/agents.js';
import { AUDIT_EVENTS, type AuditEventDoc } from '../projections/audit.js';
import { rebuildReadModels } from '../src/ops/rebuild.js';
import { allProjections } from '../projections/index.js';
import { countParked } from '../src/ops/parked.js';
import { SecretUnavailableError } from '../src/shared/errors.js';
import { DELIVERIES, type DeliveryDoc } from '../src/webhooks/outbox.js';
import { SECRET_KEYS, keyRingId } from '../src/secrets/store.js';

let now = 1_700_000_000_000;
const H = 3_600_000;
const S = suite<{ h: Harness; t: Tenant }>('secrets lifecycle API');
S.before.each(async (ctx) => {
  ctx.h = await harness({}, { clock: () => now });
  ctx.t = await ctx.h.tenant();
});
S.after.each(async (ctx) => ctx.h.close());

const ok = (r: { status: number; body: any }) => {
  assert.is(r.status, 200, JSON.stringify(r.body));
  return r.body.result.data;
};
/** Queues a delivery for `apiKey` as the follower would, and waits until the sender has dealt with it. */
async function deliveryOutcome(h: Harness, t: Tenant, id: string): Promise<DeliveryDoc> {
  // Without `head`, as an older version queued it: markHeads schedules it like any upgrade.
  const doc = {
    _id: `test-${id}`, apiKey: t.apiKey, workspaceId: t.workspaceId, webhookId: id, endpoint: 'raw', eventId: id, eventType: 'OrganizationAdded',
    stream: `organization-["${t.apiKey}","o1"]`, position: '0', url: 'https://hooks.invalid/x', body: '{}', status: 'pending', attempts: [],
    nextAttemptAt: 0, leaseUntil: 0, createdAt: now, completedAt: null, lastError: null,
  } as Omit<DeliveryDoc, 'head'> as DeliveryDoc;
  await h.services.read.transaction((tx) => tx.upsert(DELIVERIES, doc));
  await h.services.webhooks.markHeads();
  const deadline = Date.now() + 10_000;
  for (;;) {
    const d = await h.services.read.get<DeliveryDoc>(DELIVERIES, doc._id);
    if (d && d.status !== 'pending') return d;
    if (Date.now() > deadline) throw new Error(`delivery ${id} still pending: ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const tokenFor = async (h: Harness, headers: Record<string, string>) =>
  ok(await h.post('/v2/auth/generate_token', { userId: 'u1', userProperties: { name: 'U', email: 'u@example.com' } }, headers)).token as string;
const kidOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid as string;

S('workspace auth token: rotated, returned once; the old one stops at once', async ({ h, t }) => {
  const before = await h.post('/v2/workspace/authtokens/get', { apiKey: t.apiKey }, t.workspaceHeaders);
  assert.is(before.status, 200);
  const r = ok(await h.post('/v2/workspace/workspaceauthtoken/rotate', {}, t.workspaceHeaders));
  assert.is(r.workspaceId, t.workspaceId);
  assert.match(r.authToken, /^[A-Za-z0-9]{48}$/);
  const old = await h.post('/v2/workspace/authtokens/get', { apiKey: t.apiKey }, t.workspaceHeaders);
  assert.is(old.status, 403);
  assert.is(old.body.error.status, 'PERMISSION_DENIED');
  const fresh = { ...t.workspaceHeaders, 'x-service-workspace-auth-token': r.authToken };
  assert.is((await h.post('/v2/workspace/authtokens/get', { apiKey: t.apiKey }, fresh)).status, 200);
  // API-key credentials are another matter: untouched.
  assert.is((await h.post('/v2/agents/get', {}, t.headers)).status, 200);
  // Not stored in clear, not even in the rotation event.
  const log = JSON.stringify(await h.services.events.readAll());
  assert.not.ok(log.includes(r.authToken));
  assert.is((await h.post('/v2/workspace/workspaceauthtoken/rotate', {}, t.headers)).status, 401, 'API-key credentials cannot rotate it');
});

S('signing key rotation: new tokens carry the new kid; old ones stay valid until they expire; a retired key mints nothing new', async ({ h, t }) => {
  const t1 = await tokenFor(h, t.headers);
  now += H;
  const r = ok(await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey: t.apiKey }, t.workspaceHeaders));
  assert.equal(r.revokedKids, []);
  assert.is(r.previousKeysValidUntilExpiry, true);
  assert.is.not(r.kid, kidOf(t1));
  const t2 = await tokenFor(h, t.headers);
  assert.is(kidOf(t2), r.kid);
  assert.is((await verifyUserToken(h.services, t1)).sub, 'u1', 'the token of the previous key is still valid');
  assert.is((await verifyUserToken(h.services, t2)).sub, 'u1');
  // Someone holding the retired key's private half cannot mint a token after its retirement.
  const { state } = await h.services.commands.load(workspaceDecider, workspaceStream(t.workspaceId));
  const retired = state.status === 'active' ? state.keys[t.apiKey]!.signingKeys[0]! : null;
  assert.is(retired!.alg, 'ES256');
  const d = (await h.services.secrets.open(t.apiKey, retired!.secret)) as string;
  const iat = Math.floor(now / 1000) + 120;
  const minted = await new SignJWT({ iss: 'collab-backend', aud: t.apiKey, sub: 'intruder', apiKey: t.apiKey, user: {}, resources: [], iat, exp: iat + 3600, jti: 'x' })
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: retired!.kid })
    .sign(await importJWK({ ...retired!.publicKey!, d }, 'ES256'));
  now += 5 * 60_000;
  await refused(h, minted, /retired signing key/);
  // 48 h after issue, t1 has expired like any token (the key that signed it verifies until then).
  const issuedAt = now - H - 5 * 60_000;
  assert.ok(await verifyUserToken(h.services, t1, { nowMs: issuedAt + 48 * H - 1000 }));
  now = issuedAt + 48 * H;
  await refused(h, t1, /expired/);
});

S('signing key rotation with revokePrevious: every earlier token stops at once', async ({ h, t }) => {
  const t1 = await tokenFor(h, t.headers);
  ok(await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey: t.apiKey }, t.workspaceHeaders));
  const t2 = await tokenFor(h, t.headers);
  const r = ok(await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey: t.apiKey, revokePrevious: true }, t.workspaceHeaders));
  assert.equal(r.revokedKids.sort(), [kidOf(t1), kidOf(t2)].sort());
  await refused(h, t1, /unknown or revoked/);
  await refused(h, t2, /unknown or revoked/);
  const t3 = await tokenFor(h, t.headers);
  assert.is(kidOf(t3), r.kid);
  assert.ok(await verifyUserToken(h.services, t3));
});

S('rotation and deletion refusals: a key of another workspace, an unknown key, bad input', async ({ h, t }) => {
  const other = await h.tenant();
  for (const path of ['/v2/workspace/apikey/signingkey/rotate', '/v2/workspace/apikey/delete']) {
    const r = await h.post(path, { apiKey: other.apiKey }, t.workspaceHeaders);
    assert.is(r.status, 404, `${path}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.error.message, 'API key not found in this workspace.');
    assert.is((await h.post(path, { apiKey: 'no-such-key' }, t.workspaceHeaders)).status, 404);
    const bad = await h.post(path, { apiKey: '' }, t.workspaceHeaders);
    assert.is(bad.status, 400);
    assert.match(bad.body.error.message, /data\.apiKey/);
  }
  const badRevoke = await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey: t.apiKey, revokePrevious: 'yes' }, t.workspaceHeaders);
  assert.is(badRevoke.status, 400);
  assert.match(badRevoke.body.error.message, /data\.revokePrevious/);
  // The other workspace's key still works, and its data key was not touched.
  assert.is((await h.post('/v2/agents/get', {}, other.headers)).status, 200);
  assert.not.ok(await h.services.secrets.isShredded(other.apiKey));
});

S('API key deletion: tokens stop at once, reads forget it, events stay for audit with secrets shredded; a rebuild is clean', async ({ h, t }) => {
  ok(await h.post('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { authToken: 'whsec-doomed-0123456789', rawNotificationUrl: 'https://hooks.example.com/x' } }, t.headers));
  ok(await h.post('/v2/agents/create', { agentId: 'a1', name: 'A', execution: { mcpServers: [{ name: 's', url: 'https://mcp.example.com', auth: { type: 'bearer', token: 'mcp-doomed' } }] } }, t.headers));
  ok(await h.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1' }] }, t.headers));
  const userToken = await tokenFor(h, t.headers);
  const other = await h.tenant();
  ok(await h.post('/v2/agents/create', { agentId: 'a1', name: 'B', execution: { mcpServers: [{ name: 's', url: 'https://mcp.example.com', auth: 'other-kept-secret' }] } }, other.headers));

  const del = ok(await h.post('/v2/workspace/apikey/delete', { apiKey: t.apiKey }, t.workspaceHeaders));
  assert.equal(del, { apiKey: t.apiKey, deleted: true });
  // Its auth token and user tokens stop at once.
  const denied = await h.post('/v2/agents/get', {}, t.headers);
  assert.is(denied.status, 403);
  await refused(h, userToken, /unknown or revoked/);
  // Reads forget it.
  assert.is((await h.post('/v2/workspace/authtokens/get', { apiKey: t.apiKey }, t.workspaceHeaders)).status, 404);
  assert.is(await h.services.read.get(API_KEYS, t.apiKey), null);
  assert.equal(await h.services.read.find(AGENTS, { apiKey: t.apiKey }), []);
  // Nothing more can be done with it; deleting again is harmless.
  assert.is((await h.post('/v2/workspace/authtoken/reset', { apiKey: t.apiKey }, t.workspaceHeaders)).status, 404);
  assert.is((await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey: t.apiKey }, t.workspaceHeaders)).status, 404);
  ok(await h.post('/v2/workspace/apikey/delete', { apiKey: t.apiKey }, t.workspaceHeaders));
  // Its events stay; their secrets cannot be opened by anyone any more.
  const events = await h.services.events.readAll();
  const config = events.find((e) => e.type === 'ApiKeyServiceConfigUpdated' && (e.data as { apiKey: string }).apiKey === t.apiKey)!;
  const sealed = (config.data as { config: Record<string, string> }).config.authToken!;
  assert.match(sealed, /^enc:v1:/);
  try {
    await h.services.secrets.open(t.apiKey, sealed);
    assert.unreachable('opened a shredded secret');
  } catch (err) {
    assert.instance(err, SecretUnavailableError);
  }
  assert.ok(events.some((e) => e.type === 'ApiKeyDeleted'));
  const audit = await h.services.read.find<AuditEventDoc>(AUDIT_EVENTS, { apiKey: t.apiKey });
  assert.ok(audit.some((a) => a.type === 'ApiKeyDeleted'), 'the deletion is in the key history');
  assert.ok(audit.some((a) => a.type === 'AgentCreated'), 'its history stays');
  // What the audit index shows holds no ciphertext either. It keeps one kind beside, never
  // shown by the audit: a user event's personal fields sealed with the user's key, for the
  // change feed (projections/audit.ts `personal`); those keys went with the API key.
  const shown = audit.map(({ personal: _kept, ...row }) => row);
  assert.not.ok(JSON.stringify(shown).includes('enc:v1:'), 'the audit index shows no ciphertext either');
  const kept = audit.filter((a) => a.personal);
  assert.ok(kept.length > 0, 'generate_token\'s profile is kept sealed');
  for (const a of kept) {
    const opened = await h.services.secrets.personal.open(t.apiKey, a.data.userId as string, a.personal!);
    assert.ok(Object.values(opened).every((v) => v === null), `${a.type}: its sealed fields open no more`);
  }
  // The other tenant is untouched.
  assert.is(ok(await h.post('/v2/agents/get', { agentId: 'a1' }, other.headers)).agent.name, 'B');
  // A delivery still queued for it is not sent.
  const d = await deliveryOutcome(h, t, 'after-delete');
  assert.is(d.status, 'failed');
  assert.is(d.lastError, 'Not sent: the webhook service was turned off.');
  assert.equal(d.attempts, []);
  // A rebuild replays ciphertext nobody can open: no crash, nothing parked, same answers.
  const r = await rebuildReadModels({ events: h.services.events, generations: h.services.generations, projections: allProjections });
  assert.is(r.to, r.from + 1);
  assert.is(await countParked(h.services.read), 0);
  assert.is(await h.services.read.get(API_KEYS, t.apiKey), null);
  assert.equal(await h.services.read.find(AGENTS, { apiKey: t.apiKey }), []);
  assert.ok((await h.services.read.find(AUDIT_EVENTS, { apiKey: t.apiKey })).length >= audit.length);
  assert.is(ok(await h.post('/v2/agents/get', { agentId: 'a1' }, other.headers)).agent.name, 'B');
  assert.is((await h.post('/v2/agents/get', {}, t.headers)).status, 403);
  // The key store is not a read model: a second rebuild (which drops the first generation's
  // collections) leaves it alone. The other tenant's secret still opens; the deleted one's not.
  await rebuildReadModels({ events: h.services.events, generations: h.services.generations, projections: allProjections });
  const otherAgent = (await h.services.events.readAll()).find((e) => e.type === 'AgentCreated' && e.metadata.apiKey === other.apiKey)!;
  const otherSealed = (otherAgent.data as { config: { execution: { mcpServers: Array<{ auth: string }> } } }).config.execution.mcpServers[0]!.auth;
  assert.match(otherSealed, /^enc:v1:/);
  assert.is(await h.services.secrets.open(other.apiKey, otherSealed), 'other-kept-secret');
  assert.ok(await h.services.secrets.isShredded(t.apiKey));
});

S('a refused API key creation leaves no data key behind', async ({ h, t }) => {
  const rings = async () => (await h.services.read.find(SECRET_KEYS, {})).length;
  const before = await rings();
  const refused = await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'production', useWebhookService: true, webhookServiceConfig: { authToken: 'whsec-refused-0123', rawNotificationUrl: 'https://hooks.example.com/x' } }, t.workspaceHeaders);
  assert.is(refused.status, 403, JSON.stringify(refused.body));
  assert.is(await rings(), before);
  ok(await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing', useWebhookService: true, webhookServiceConfig: { authToken: 'whsec-ok-0123', rawNotificationUrl: 'https://hooks.example.com/x' } }, t.workspaceHeaders));
  assert.is(await rings(), before + 1);
});

S('a lost data key: no crash; deliveries fail saying so, generate_token names the way out; setting the secret again or rotating recovers', async ({ h, t }) => {
  ok(await h.post('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { authToken: 'whsec-lost-0123456789', rawNotificationUrl: 'https://hooks.invalid/x' } }, t.headers));
  await tokenFor(h, t.headers);
  // The key store loses the key's ring (a restore without it, say).
  await h.services.read.transaction((tx) => tx.delete(SECRET_KEYS, keyRingId(t.apiKey)));
  const d = await deliveryOutcome(h, t, 'lost-key');
  assert.is(d.status, 'failed');
  assert.is(d.lastError, 'Not sent: the webhook authToken cannot be decrypted (its data key is gone).');
  const refusedToken = await h.post('/v2/auth/generate_token', { userId: 'u1', userProperties: { name: 'U', email: 'u@example.com' } }, t.headers);
  assert.is(refusedToken.status, 400);
  assert.is(refusedToken.body.error.status, 'FAILED_PRECONDITION');
  assert.match(refusedToken.body.error.message, /\/v2\/workspace\/apikey\/signingkey\/rotate/);
  // Reads never needed the key.
  assert.is(ok(await h.post('/v2/workspace/webhookconfig/update', { processedNotificationUrl: 'https://hooks.invalid/p' }, t.headers)).webhookServiceConfig.authToken, '__redacted__');
  // Recovery: a new secret and a new signing key, sealed with a new data key.
  ok(await h.post('/v2/workspace/webhookconfig/update', { webhookServiceConfig: { authToken: 'whsec-new-0123456789' } }, t.headers));
  const { state } = await h.services.commands.load(workspaceDecider, workspaceStream(t.workspaceId));
  const stored = state.status === 'active' ? state.keys[t.apiKey]!.services.webhook.config.authToken! : '';
  assert.is(await h.services.secrets.open(t.apiKey, stored), 'whsec-new-0123456789');
  ok(await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey: t.apiKey }, t.workspaceHeaders));
  assert.ok(await verifyUserToken(h.services, await tokenFor(h, t.headers)));
});

S.run();
