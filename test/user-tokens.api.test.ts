/**
 * Front ends with user tokens (issue 16, item 4): ES256 tokens, the published JWKS another
 * service verifies them with (across rotation), HS256 tokens from before still verifying
 * until they expire, and `Authorization: Bearer <user token>` accepted on exactly the
 * user-scoped routes, for the token's user only.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createLocalJWKSet, generateKeyPair, importJWK, jwtVerify, SignJWT, type JSONWebKeySet } from 'jose';
import { refused } from './support/tokens.js';
import { harness, type Harness, type Response, type Tenant } from './support/app.js';
import { allRoutes } from '../src/app.js';
import { workspaceDecider, workspaceStream } from '../commands/workspace.js';
import { newEventId } from '../src/shared/ids.js';
import { signToken } from '../src/tokens/jwt.js';
import { verifyUserToken } from '../src/usecases/user-tokens.js';
import { operationSchemas } from '../src/http/openapi.js';

const H = 3_600_000;
let now = 1_750_000_000_000;

const jwksUrl = (apiKey: string) => `/.well-known/jwks/${encodeURIComponent(apiKey)}.json`;
const headerOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { alg: string; kid: string; typ: string };
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function jwks(h: Harness, apiKey: string, headers: Record<string, string> = {}) {
  const res = await h.app.inject({ method: 'GET', url: jwksUrl(apiKey), headers });
  return { status: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : undefined };
}

async function tokenFor(h: Harness, t: Tenant, userId: string, resources: unknown[] = []): Promise<string> {
  const res = await h.post('/v2/auth/generate_token', { userId, userProperties: { name: userId, email: `${userId}@example.com` }, ...(resources.length ? { permissions: { resources } } : {}) }, t.headers);
  assert.is(res.status, 200, JSON.stringify(res.body));
  return res.body.result.data.token as string;
}

/** Another service's check: only the published keys, no access to this service's stores. */
const verifyElsewhere = (set: JSONWebKeySet, token: string, apiKey: string) =>
  jwtVerify(token, createLocalJWKSet(set), { issuer: 'collab-backend', audience: apiKey, algorithms: ['ES256'], currentDate: new Date(now) });

const refusedElsewhere = async (set: JSONWebKeySet, token: string, apiKey: string) => {
  try {
    await verifyElsewhere(set, token, apiKey);
  } catch {
    return;
  }
  assert.unreachable('verified with keys that should not verify it');
};


// ---- JWKS ----

const K = suite<{ h: Harness }>('user tokens: ES256 and the JWKS');
K.before(async (ctx) => {
  ctx.h = await harness({}, { clock: () => now });
});
K.after(async (ctx) => ctx.h.close());

K('a token verifies elsewhere with the published JWKS only; the set holds public keys, cache headers, 304 on its etag', async ({ h }) => {
  const t = await h.tenant();
  const before = await jwks(h, t.apiKey);
  assert.is(before.status, 200, 'a key without tokens yet has a set, empty');
  assert.equal(before.body, { keys: [] });
  const token = await tokenFor(h, t, 'u1');
  const header = headerOf(token);
  assert.equal({ alg: header.alg, typ: header.typ }, { alg: 'ES256', typ: 'JWT' });
  const res = await jwks(h, t.apiKey);
  assert.is(res.status, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.is(res.headers['cache-control'], 'public, max-age=300');
  assert.ok(res.headers.etag, 'etag');
  assert.is(res.body.keys.length, 1);
  const [key] = res.body.keys;
  assert.equal(Object.keys(key).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y'], 'no private member (d) or anything else');
  assert.equal({ kty: key.kty, crv: key.crv, alg: key.alg, use: key.use, kid: key.kid }, { kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: header.kid });
  // The answer is what the document declares.
  assert.ok(operationSchemas.jwks.response[200].content['application/json'].schema.safeParse(res.body).success, 'matches its declared schema');
  const { payload } = await verifyElsewhere(res.body, token, t.apiKey);
  assert.is(payload.sub, 'u1');
  assert.is(payload.aud, t.apiKey);
  // Tampered: the published key refuses it too.
  const [hd, , sig] = token.split('.');
  const forged = Buffer.from(JSON.stringify({ ...payload, sub: 'admin' })).toString('base64url');
  await refusedElsewhere(res.body, `${hd}.${forged}.${sig}`, t.apiKey);
  const again = await jwks(h, t.apiKey, { 'if-none-match': String(res.headers.etag) });
  assert.is(again.status, 304);
  assert.is(again.body, undefined);
});

K('an unknown API key: 404 in the envelope, not cached; another key\'s set does not verify this key\'s tokens', async ({ h }) => {
  const res = await jwks(h, 'no-such-key');
  assert.is(res.status, 404);
  assert.equal(res.body, { error: { status: 'NOT_FOUND', message: 'API key not found.' } });
  assert.is(res.headers['cache-control'], 'no-store');
  assert.ok(operationSchemas.jwks.response[404].content['application/json'].schema.safeParse(res.body).success);
  assert.is((await jwks(h, 'x'.repeat(300))).status, 404);
  const a = await h.tenant();
  const b = await h.tenant();
  const tokenA = await tokenFor(h, a, 'u1');
  await tokenFor(h, b, 'u1');
  const setB = (await jwks(h, b.apiKey)).body;
  assert.is(setB.keys.length, 1);
  await refusedElsewhere(setB, tokenA, a.apiKey);
  await refusedElsewhere(setB, tokenA, b.apiKey);
});

K('after rotation the set lists the new key first and the old one; both tokens verify elsewhere; a revoked or fully expired key leaves the set', async ({ h }) => {
  const t = await h.tenant();
  const t1 = await tokenFor(h, t, 'u1');
  const oldSet = (await jwks(h, t.apiKey)).body;
  now += H;
  const r = await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey: t.apiKey }, t.workspaceHeaders);
  assert.is(r.status, 200, JSON.stringify(r.body));
  const t2 = await tokenFor(h, t, 'u2');
  assert.is(headerOf(t2).kid, r.body.result.data.kid);
  assert.is(headerOf(t2).alg, 'ES256');
  const set = (await jwks(h, t.apiKey)).body;
  assert.equal(set.keys.map((k: { kid: string }) => k.kid), [headerOf(t2).kid, headerOf(t1).kid]);
  assert.is((await verifyElsewhere(set, t1, t.apiKey)).payload.sub, 'u1');
  assert.is((await verifyElsewhere(set, t2, t.apiKey)).payload.sub, 'u2');
  // A verifier holding the set from before the rotation lacks the new kid: it must refetch.
  await refusedElsewhere(oldSet, t2, t.apiKey);
  // 48 h + 1 min after the retirement every token of the old key has expired: it leaves the set.
  now += 48 * H + 60_000;
  assert.equal((await jwks(h, t.apiKey)).body.keys.map((k: { kid: string }) => k.kid), [headerOf(t2).kid]);
  // revokePrevious: only the new key is published.
  const r2 = await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey: t.apiKey, revokePrevious: true }, t.workspaceHeaders);
  assert.is(r2.status, 200);
  assert.equal((await jwks(h, t.apiKey)).body.keys.map((k: { kid: string }) => k.kid), [r2.body.result.data.kid]);
  // A deleted API key has no set.
  assert.is((await h.post('/v2/workspace/apikey/delete', { apiKey: t.apiKey }, t.workspaceHeaders)).status, 200);
  assert.is((await jwks(h, t.apiKey)).status, 404);
});

K('an HS256 key from before asymmetric signing: its tokens verify until they expire, it is never published, the next token is ES256', async ({ h }) => {
  const t = await h.tenant();
  // The state an earlier version left: an HS256 key (no alg), sealed.
  const secret = 'an-hs256-signing-secret-of-48-characters-exactly';
  const stream = workspaceStream(t.workspaceId);
  const { revision } = await h.services.commands.load(workspaceDecider, stream);
  await h.services.events.append(stream, [{
    id: newEventId(),
    type: 'ApiKeyTokenSigningSecretCreated',
    data: { workspaceId: t.workspaceId, apiKey: t.apiKey, kid: 'hs1', secret: await h.services.secrets.seal(t.apiKey, secret), createdAt: now },
    metadata: { requestId: 'legacy', actor: 'legacy', time: now, workspaceId: t.workspaceId, apiKey: t.apiKey },
  }], revision);
  const iat = Math.floor(now / 1000);
  const legacy = await signToken(
    { iss: 'collab-backend', aud: t.apiKey, sub: 'u1', apiKey: t.apiKey, user: { name: 'U', email: 'u@example.com', isAdmin: false }, resources: [], iat, exp: iat + 48 * 3600, jti: 'j' },
    { kid: 'hs1', secret },
  );
  assert.is(headerOf(legacy).alg, 'HS256');
  assert.is((await verifyUserToken(h.services, legacy, { apiKey: t.apiKey })).sub, 'u1');
  assert.equal((await jwks(h, t.apiKey)).body, { keys: [] }, 'a shared secret is never published');
  // It is a user token like any other on the user-scoped routes.
  await h.post('/v2/organizations/add', { organizations: [{ organizationId: 'org-1' }] }, t.headers);
  assert.is((await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u1'] }, bearer(legacy))).status, 200);
  // The next token: a new ES256 key takes over; the HS256 one keeps verifying its token.
  now += 60_000;
  const fresh = await tokenFor(h, t, 'u2');
  assert.is(headerOf(fresh).alg, 'ES256');
  assert.is.not(headerOf(fresh).kid, 'hs1');
  const set = (await jwks(h, t.apiKey)).body;
  assert.equal(set.keys.map((k: { kid: string }) => k.kid), [headerOf(fresh).kid]);
  await verifyElsewhere(set, fresh, t.apiKey);
  assert.is((await verifyUserToken(h.services, legacy)).sub, 'u1');
  // Someone holding the old secret mints nothing new with it.
  const minted = await signToken(
    { iss: 'collab-backend', aud: t.apiKey, sub: 'intruder', apiKey: t.apiKey, user: { name: 'I', email: 'i@example.com', isAdmin: false }, resources: [], iat: Math.floor(now / 1000) + 120, exp: Math.floor(now / 1000) + 3600, jti: 'x' },
    { kid: 'hs1', secret },
  );
  now += 5 * 60_000;
  await refused(h, minted, /retired signing key/);
  now = iat * 1000 + 48 * H - 1000;
  assert.ok(await verifyUserToken(h.services, legacy), 'valid until its exp');
  now = iat * 1000 + 48 * H;
  await refused(h, legacy, /expired/);
});

K.run();

// ---- Bearer user tokens on the routes ----

interface Ctx {
  h: Harness;
  t: Tenant;
  /** u1's token: u1 may open doc-open, not doc-closed. */
  token: string;
}

/** The user-scoped routes (issue 16): those of them this build serves must take user tokens, and no other route may. */
const USER_SCOPED = [
  '/v2/auth/permissions/get',
  '/v2/auth/resources/get',
  '/v2/auth/permissions/explain',
  '/v2/presence/add',
  '/v2/presence/update',
  '/v2/presence/get',
  '/v2/presence/delete',
];

const B = suite<Ctx>('user tokens as Authorization: Bearer');
B.before(async (ctx) => {
  now = 1_760_000_000_000;
  // These tests send dozens of refused tokens from one address on purpose; the failed-auth
  // throttle that would answer them 429 has its own test (test/rate-limit.test.ts).
  ctx.h = await harness({ AUTH_FAILURE_RATE_PER_MINUTE: '0' }, { clock: () => now });
  ctx.t = await ctx.h.tenant();
  const { h, t } = ctx;
  assert.is((await h.post('/v2/organizations/add', { organizations: [{ organizationId: 'org-1' }] }, t.headers)).status, 200);
  const docs = await h.post('/v2/organizations/documents/add', {
    organizationId: 'org-1',
    documents: [{ documentId: 'doc-open', accessType: 'restricted' }, { documentId: 'doc-closed', accessType: 'restricted' }],
  }, t.headers);
  assert.is(docs.status, 200, JSON.stringify(docs.body));
  ctx.token = await tokenFor(h, t, 'u1', [{ type: 'document', id: 'doc-open', organizationId: 'org-1', accessRole: 'viewer' }]);
});
B.after(async (ctx) => ctx.h.close());

const denied = (res: Response, re: RegExp) => {
  assert.is(res.status, 403, JSON.stringify(res.body));
  assert.is(res.body.error.status, 'PERMISSION_DENIED');
  assert.match(res.body.error.message, re);
};
const invalid = (res: Response, re: RegExp) => {
  assert.is(res.status, 401, JSON.stringify(res.body));
  assert.is(res.body.error.status, 'UNAUTHENTICATED');
  assert.match(res.body.error.message, re);
  assert.is(res.headers['www-authenticate'], 'Bearer error="invalid_token"');
};

B('permissions/get: the token\'s own user only', async ({ h, token }) => {
  const ok = await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u1'], documentIds: ['doc-open', 'doc-closed'] }, bearer(token));
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  assert.is(ok.body.result.data.u1.documents['doc-open'].accessRole, 'viewer');
  assert.is(ok.body.result.data.u1.documents['doc-closed'].errorCode, 'permission_denied');
  assert.is((await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u1', 'u1'] }, bearer(token))).status, 200, 'the same user twice is still itself');
  denied(await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u1', 'u2'] }, bearer(token)), /data\.userIds may name only "u1"/);
  denied(await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u2'] }, bearer(token)), /its own user only/);
});

B('resources/get and permissions/explain: the token\'s own user only; users/get (who else can open it) never', async ({ h, token }) => {
  const mine = await h.post('/v2/auth/resources/get', { organizationId: 'org-1', userId: 'u1', type: 'document' }, bearer(token));
  assert.is(mine.status, 200, JSON.stringify(mine.body));
  assert.equal(mine.body.result.data, [{ id: 'doc-open', accessRole: 'viewer', accessType: 'restricted' }]);
  const why = await h.post('/v2/auth/permissions/explain', { organizationId: 'org-1', userId: 'u1', documentId: 'doc-open' }, bearer(token));
  assert.is(why.status, 200, JSON.stringify(why.body));
  assert.is(why.body.result.data.entry.accessRole, 'viewer');
  // What its user may not open is refused as a missing one (test/user-tokens.missing.test.ts).
  denied(await h.post('/v2/auth/permissions/explain', { organizationId: 'org-1', userId: 'u1', documentId: 'doc-closed' }, bearer(token)), /may not open document "doc-closed"/);
  denied(await h.post('/v2/auth/resources/get', { organizationId: 'org-1', userId: 'u2', type: 'document' }, bearer(token)), /data\.userId may name only "u1"/);
  denied(await h.post('/v2/auth/permissions/explain', { organizationId: 'org-1', userId: 'u2', documentId: 'doc-open' }, bearer(token)), /data\.userId may name only "u1"/);
  // Who else can open a document is the back end's to say: a share dialog asks through it.
  denied(await h.post('/v2/auth/users/get', { organizationId: 'org-1', documentId: 'doc-open' }, bearer(token)), /accepted only on the user-scoped routes/);
});

B('presence: the user writes its own entry and reads presence on documents it may open, nothing else', async ({ h, t, token }) => {
  const entry = { organizationId: 'org-1', documentId: 'doc-open' };
  // Someone else, present through the back end.
  assert.is((await h.post('/v2/presence/add', { ...entry, users: [{ userId: 'u2' }] }, t.headers)).status, 200);
  const added = await h.post('/v2/presence/add', { ...entry, users: [{ userId: 'u1', name: 'One' }] }, bearer(token));
  assert.is(added.status, 200, JSON.stringify(added.body));
  assert.equal(added.body.result.data, { success: true });
  const updated = await h.post('/v2/presence/update', { ...entry, users: [{ userId: 'u1', status: 'away' }] }, bearer(token));
  assert.equal(updated.body.result.data, { success: true });
  const got = await h.post('/v2/presence/get', entry, bearer(token));
  assert.is(got.status, 200, JSON.stringify(got.body));
  assert.equal(got.body.result.data.map((p: { userId: string; status: string }) => [p.userId, p.status]).sort(), [['u1', 'away'], ['u2', 'online']]);

  denied(await h.post('/v2/presence/add', { ...entry, users: [{ userId: 'u2', status: 'offline' }] }, bearer(token)), /data\.users\[\]\.userId may name only "u1"/);
  denied(await h.post('/v2/presence/add', { ...entry, users: [{ userId: 'u1' }, { userId: 'u2' }] }, bearer(token)), /its own user only/);
  denied(await h.post('/v2/presence/update', { ...entry, users: [{ userId: 'u2' }] }, bearer(token)), /its own user only/);
  denied(await h.post('/v2/presence/delete', { ...entry, userIds: ['u2'] }, bearer(token)), /data\.userIds may name only "u1"/);
  for (const documentId of ['doc-closed', 'no-such-doc']) {
    const closed = { organizationId: 'org-1', documentId };
    denied(await h.post('/v2/presence/add', { ...closed, users: [{ userId: 'u1' }] }, bearer(token)), /may not open document/);
    denied(await h.post('/v2/presence/update', { ...closed, users: [{ userId: 'u1' }] }, bearer(token)), /may not open document/);
    denied(await h.post('/v2/presence/get', closed, bearer(token)), /may not open document/);
    denied(await h.post('/v2/presence/delete', { ...closed, userIds: ['u1'] }, bearer(token)), /may not open document/);
  }
  denied(await h.post('/v2/presence/get', { organizationId: 'no-such-org', documentId: 'doc-open' }, bearer(token)), /may not open document/);
  denied(await h.post('/v2/presence/get', { organizationId: 'org-1' }, bearer(token)), /must name data\.documentId/);
  // Nothing the refusals touched changed: u2 is still online.
  const after = await h.post('/v2/presence/get', { ...entry, userIds: ['u2'] }, t.headers);
  assert.is(after.body.result.data[0].status, 'online');

  const removed = await h.post('/v2/presence/delete', { ...entry, userIds: ['u1'] }, bearer(token));
  assert.is(removed.status, 200, JSON.stringify(removed.body));
  assert.equal((await h.post('/v2/presence/get', entry, t.headers)).body.result.data.map((p: { userId: string }) => p.userId), ['u2']);
});

B('losing access closes the document to the token at once, though the token still names it', async ({ h, t }) => {
  const token = await tokenFor(h, t, 'u3', [{ type: 'document', id: 'doc-open', organizationId: 'org-1' }]);
  const entry = { organizationId: 'org-1', documentId: 'doc-open' };
  assert.is((await h.post('/v2/presence/get', entry, bearer(token))).status, 200);
  const removed = await h.post('/v2/auth/permissions/remove', { userId: 'u3', permissions: { resources: [{ type: 'document', id: 'doc-open', organizationId: 'org-1' }] } }, t.headers);
  assert.is(removed.status, 200, JSON.stringify(removed.body));
  denied(await h.post('/v2/presence/get', entry, bearer(token)), /may not open document/);
});

B('the API key\'s own headers win over a Bearer token: the back end still acts for anyone', async ({ h, t, token }) => {
  const both = { ...t.headers, ...bearer(token) };
  const res = await h.post('/v2/presence/add', { organizationId: 'org-1', documentId: 'doc-closed', users: [{ userId: 'u9' }] }, both);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is((await h.post('/v2/organizations/get', {}, both)).status, 200);
  assert.is((await h.post('/v2/workspace/authtokens/get', { apiKey: t.apiKey }, { ...t.workspaceHeaders, ...bearer(token) })).status, 200);
  // Only one of the two headers: the API-key mode's own answer (missing header), not the token's.
  const half = await h.post('/v2/presence/get', { organizationId: 'org-1', documentId: 'doc-open' }, { 'x-service-api-key': t.apiKey, ...bearer(token) });
  assert.is(half.status, 401);
  assert.match(half.body.error.message, /Missing authentication header\(s\): x-service-auth-token/);
});

B('refused tokens: expired, tampered, unsigned, garbage, signed by another API key\'s key, revoked, of a deleted key', async ({ h, t, token }) => {
  const call = (tok: string) => h.post('/v2/presence/get', { organizationId: 'org-1', documentId: 'doc-open' }, bearer(tok));
  // Tampered payload: claims to be another user.
  const [hd, p, sig] = token.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  invalid(await call(`${hd}.${Buffer.from(JSON.stringify({ ...claims, sub: 'u2' })).toString('base64url')}.${sig}`), /invalid token signature/);
  invalid(await call(`${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT', kid: headerOf(token).kid })).toString('base64url')}.${p}.`), /unsupported token algorithm/);
  invalid(await call('not-a-token'), /malformed/);
  // Signed with another API key's current key, claiming this key (its kid is not this key's).
  const other = await h.tenant();
  await tokenFor(h, other, 'u1');
  const { state } = await h.services.commands.load(workspaceDecider, workspaceStream(other.workspaceId));
  const otherKey = state.status === 'active' ? state.keys[other.apiKey]!.signingKeys[0]! : null;
  const d = (await h.services.secrets.open(other.apiKey, otherKey!.secret)) as string;
  const otherPrivate = await importJWK({ ...otherKey!.publicKey!, d }, 'ES256');
  const crossSigned = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: otherKey!.kid }).sign(otherPrivate);
  invalid(await call(crossSigned), /unknown or revoked token signing key/);
  // ... and with this key's kid in the header: the signature fails.
  const kidSpoofed = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: headerOf(token).kid }).sign(otherPrivate);
  invalid(await call(kidSpoofed), /invalid token signature/);
  // A key pair nobody knows, and an HS256 token keyed with the published public key (algorithm confusion).
  const { privateKey } = await generateKeyPair('ES256');
  invalid(await call(await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: headerOf(token).kid }).sign(privateKey)), /invalid token signature/);
  const published = JSON.stringify((await jwks(h, t.apiKey)).body.keys[0]);
  const confused = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: headerOf(token).kid }).sign(new TextEncoder().encode(published));
  invalid(await call(confused), /unsupported token algorithm/);
  // The other key's own token is its tenant's: it reaches nothing of this tenant.
  const theirs = await tokenFor(h, other, 'u1');
  denied(await call(theirs), /may not open document/);
  // Expired, by the service's clock.
  const saved = now;
  now = claims.exp * 1000;
  invalid(await call(token), /expired/);
  now = saved;
  assert.is((await call(token)).status, 200, 'valid again before its exp: the refusal was the clock');
  // Revoked by a rotation, then the API key deleted.
  const t2 = await h.tenant();
  await h.post('/v2/organizations/add', { organizations: [{ organizationId: 'org-1' }] }, t2.headers);
  const before = await tokenFor(h, t2, 'u1');
  const probe = (tok: string) => h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u1'] }, bearer(tok));
  assert.is((await probe(before)).status, 200);
  assert.is((await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey: t2.apiKey, revokePrevious: true }, t2.workspaceHeaders)).status, 200);
  invalid(await probe(before), /unknown or revoked/);
  const after = await tokenFor(h, t2, 'u1');
  assert.is((await probe(after)).status, 200);
  assert.is((await h.post('/v2/workspace/apikey/delete', { apiKey: t2.apiKey }, t2.workspaceHeaders)).status, 200);
  invalid(await probe(after), /unknown or revoked/);
});

B('a user token\'s Idempotency-Key is its own: the back end\'s answer under the same key is never replayed to it', async ({ h, t, token }) => {
  const body = { organizationId: 'org-1', documentId: 'doc-open', users: [{ userId: 'u1' }] };
  const first = await h.post('/v2/presence/add', body, { ...t.headers, 'idempotency-key': 'same-key' });
  assert.is(first.status, 200);
  const mine = await h.post('/v2/presence/add', body, { ...bearer(token), 'idempotency-key': 'same-key' });
  assert.is(mine.status, 200);
  assert.is(mine.headers['idempotent-replayed'], undefined, 'ran as its own request');
  const again = await h.post('/v2/presence/add', body, { ...bearer(token), 'idempotency-key': 'same-key' });
  assert.is(again.headers['idempotent-replayed'], 'true', 'its own retry is replayed');
});

B('every route: with only a user token, PERMISSION_DENIED except on the user-scoped routes, which accept it', async ({ h, token }) => {
  const routes = allRoutes(h.services);
  const flagged = routes.filter((r) => r.userToken).map((r) => r.path).sort();
  assert.equal(flagged, USER_SCOPED.filter((p) => routes.some((r) => r.path === p)).sort(), 'exactly the user-scoped routes take user tokens');
  assert.ok(flagged.length >= 5);
  let refusedCount = 0;
  for (const route of routes) {
    const res = await h.post(route.path, {}, bearer(token));
    if (route.userToken) {
      // Past authentication: the empty body is what fails.
      assert.is(res.status, 400, `${route.path}: ${JSON.stringify(res.body)}`);
      assert.is(res.body.error.status, 'INVALID_ARGUMENT', route.path);
    } else {
      assert.is(res.status, 403, `${route.path}: ${JSON.stringify(res.body)}`);
      assert.is(res.body.error.status, 'PERMISSION_DENIED', route.path);
      assert.match(res.body.error.message, /^User tokens \(Authorization: Bearer\) are accepted only on the user-scoped routes \(.*\/v2\/presence\/add.*\)/, route.path);
      assert.is(res.headers['www-authenticate'], undefined);
      refusedCount++;
    }
  }
  assert.is(refusedCount, routes.length - flagged.length);
  // A token that is not even valid is refused the same way there: the route decides first.
  const res = await h.post('/v2/organizations/get', {}, bearer('garbage'));
  assert.is(res.status, 403);
  // Another Authorization scheme is none of ours: the usual missing-credentials answer.
  const basic = await h.post('/v2/organizations/get', {}, { authorization: 'Basic dTpw' });
  assert.is(basic.status, 401);
  assert.match(basic.body.error.message, /Missing authentication header/);
});

B('the OpenAPI document offers the userToken scheme on exactly the flagged routes, and publishes the JWKS route', async ({ h }) => {
  const doc = JSON.parse((await h.app.inject({ method: 'GET', url: '/openapi.json' })).body);
  const scheme = doc.components.securitySchemes.userToken;
  assert.equal([scheme.type, scheme.scheme, scheme.bearerFormat], ['http', 'bearer', 'JWT']);
  for (const route of allRoutes(h.services)) {
    const security = doc.paths[route.path].post.security as Array<Record<string, unknown>>;
    const offers = security.some((s) => 'userToken' in s);
    assert.is(offers, route.userToken === true, route.path);
  }
  const jwksOp = doc.paths['/.well-known/jwks/{apiKey}.json'].get;
  assert.equal(jwksOp.tags, ['Tokens']);
  assert.ok(jwksOp.responses['200'].content['application/json'].schema.properties.keys);
  assert.ok(jwksOp.responses['404']);
});

B.run();
