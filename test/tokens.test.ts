/** JWT signing/verification and /v2/auth/generate_token. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac } from 'node:crypto';
import { harness, type Harness, type Tenant } from './support/app.js';
import { exportJWK, generateKeyPair } from 'jose';
import { signToken, verifyToken, TokenError, TOKEN_LIFETIME_SECONDS, type UserTokenClaims, type VerificationKey } from '../src/tokens/jwt.js';
import { verifyUserToken } from '../src/usecases/user-tokens.js';
import { API_KEYS } from '../projections/workspaces.js';

const J = suite('jwt');
const claims: UserTokenClaims = {
  iss: 'collab-backend', aud: 'k1', sub: 'u1', apiKey: 'k1', user: { name: 'Ada', email: 'ada@example.com', isAdmin: false },
  resources: [], iat: 1_700_000_000, exp: 1_700_000_000 + TOKEN_LIFETIME_SECONDS, jti: 'j',
};
const rejects = async (f: () => Promise<unknown>, re: RegExp) => {
  try {
    await f();
  } catch (err) {
    assert.instance(err, TokenError);
    assert.match((err as Error).message, re);
    return;
  }
  assert.unreachable('accepted');
};
const only = (kid: string, secret: string) => (k: string | undefined) => (k === kid ? secret : undefined);
const at = (nowSeconds: number, audience = 'k1') => ({ nowSeconds, audience });
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

J('round trip with kid, iss and aud; tampered payload, signature, algorithm, wrong key or kid, audience, issuer, expiry are rejected', async () => {
  const t = await signToken(claims, { kid: 'ka', secret: 'secret-1' });
  assert.equal(JSON.parse(Buffer.from(t.split('.')[0]!, 'base64url').toString()), { alg: 'HS256', typ: 'JWT', kid: 'ka' });
  assert.equal(await verifyToken(t, only('ka', 'secret-1'), at(claims.iat + 10)), claims);
  const [h, p, s] = t.split('.') as [string, string, string];
  await rejects(() => verifyToken(`${h}.${b64({ ...claims, sub: 'admin' })}.${s}`, only('ka', 'secret-1'), at(claims.iat)), /invalid token signature/);
  await rejects(() => verifyToken(`${h}.${p}.${s.slice(0, -2)}AA`, only('ka', 'secret-1'), at(claims.iat)), /invalid token signature/);
  await rejects(() => verifyToken(t, only('ka', 'secret-2'), at(claims.iat)), /invalid token signature/);
  await rejects(() => verifyToken(t, only('kb', 'secret-1'), at(claims.iat)), /unknown or revoked token signing key/);
  const none = b64({ alg: 'none', typ: 'JWT', kid: 'ka' });
  await rejects(() => verifyToken(`${none}.${p}.`, only('ka', 'secret-1'), at(claims.iat)), /unsupported token algorithm/);
  const hs512 = b64({ alg: 'HS512', typ: 'JWT', kid: 'ka' });
  await rejects(() => verifyToken(`${hs512}.${p}.${createHmac('sha512', 'secret-1').update(`${hs512}.${p}`).digest('base64url')}`, only('ka', 'secret-1'), at(claims.iat)), /unsupported/);
  await rejects(() => verifyToken(t, only('ka', 'secret-1'), at(claims.iat, 'k2')), /aud claim is invalid/);
  const otherIssuer = await signToken({ ...claims, iss: 'someone-else' }, { kid: 'ka', secret: 'secret-1' });
  await rejects(() => verifyToken(otherIssuer, only('ka', 'secret-1'), at(claims.iat)), /iss claim is invalid/);
  const noAud = await signToken({ ...claims, aud: undefined }, { kid: 'ka', secret: 'secret-1' });
  await rejects(() => verifyToken(noAud, only('ka', 'secret-1'), at(claims.iat)), /aud claim is invalid/);
  await rejects(() => verifyToken(t, only('ka', 'secret-1'), at(claims.exp)), /expired/);
  await rejects(() => verifyToken(t, only('ka', 'secret-1'), at(claims.exp + 3600)), /expired/);
  await rejects(() => verifyToken(t, only('ka', 'secret-1'), at(claims.iat - 120)), /issued in the future/);
  await rejects(() => verifyToken('a.b', only('ka', 'secret-1'), at(claims.iat)), /malformed/);
  await rejects(() => verifyToken('!!.??.zz', only('ka', 'secret-1'), at(claims.iat)), /malformed/);
});

J('a token from before key ids (no kid, no aud, signed by hand as the old code did) verifies with the legacy key', async () => {
  const { aud: _aud, ...old } = claims;
  const header = b64({ alg: 'HS256', typ: 'JWT' });
  const body = `${header}.${b64(old)}`;
  const legacy = `${body}.${createHmac('sha256', 'secret-0').update(body).digest('base64url')}`;
  assert.equal(await verifyToken(legacy, (kid) => (kid === undefined ? 'secret-0' : undefined), at(old.iat)), old);
  await rejects(() => verifyToken(legacy, () => 'secret-0', at(old.iat, 'k2')), /another API key/);
});

J('ES256: round trip with the public key; another key, a tampered payload, HS256 keyed with the public key, or an ES256 token against a secret are rejected', async () => {
  const pair = async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const { x, y, d } = await exportJWK(privateKey);
    return { publicKey: { kty: 'EC' as const, crv: 'P-256' as const, x: x!, y: y! }, d: d! };
  };
  const a = await pair();
  const b = await pair();
  const onlyKey = (kid: string, key: VerificationKey) => (k: string | undefined) => (k === kid ? key : undefined);
  const t = await signToken(claims, { kid: 'ka', privateJwk: { ...a.publicKey, d: a.d } });
  assert.equal(JSON.parse(Buffer.from(t.split('.')[0]!, 'base64url').toString()), { alg: 'ES256', typ: 'JWT', kid: 'ka' });
  assert.equal(await verifyToken(t, onlyKey('ka', a.publicKey), at(claims.iat + 10)), claims);
  await rejects(() => verifyToken(t, onlyKey('ka', b.publicKey), at(claims.iat)), /invalid token signature/);
  const [h, , s] = t.split('.') as [string, string, string];
  await rejects(() => verifyToken(`${h}.${b64({ ...claims, sub: 'admin' })}.${s}`, onlyKey('ka', a.publicKey), at(claims.iat)), /invalid token signature/);
  // Algorithm confusion: an HS256 token whose secret is the (public) key's JSON.
  const confused = await signToken(claims, { kid: 'ka', secret: JSON.stringify(a.publicKey) });
  await rejects(() => verifyToken(confused, onlyKey('ka', a.publicKey), at(claims.iat)), /unsupported token algorithm/);
  await rejects(() => verifyToken(t, onlyKey('ka', 'secret-1'), at(claims.iat)), /unsupported token algorithm/);
  await rejects(() => verifyToken(t, onlyKey('ka', a.publicKey), at(claims.exp)), /expired/);
});

J.run();

let now = 1_700_000_000_000;
const S = suite<{ h: Harness; t: Tenant }>('generate_token API');
S.before(async (ctx) => {
  ctx.h = await harness({}, { clock: () => now });
  ctx.t = await ctx.h.tenant();
  await ctx.h.post('/v2/organizations/add', { organizations: [{ organizationId: 'org-1' }] }, ctx.t.headers);
  await ctx.h.post('/v2/organizations/documents/add', { organizationId: 'org-1', documents: [{ documentId: 'doc-1', accessType: 'restricted' }] }, ctx.t.headers);
});
S.after(async (ctx) => ctx.h.close());

const request = {
  userId: 'user-1',
  userProperties: { name: 'Ada', email: 'ada@example.com', isAdmin: true },
  permissions: { resources: [{ type: 'organization', id: 'org-1' }, { type: 'document', id: 'doc-1', organizationId: 'org-1', accessRole: 'viewer', expiresAt: 1_800_000_000 }] },
};

S('issues a 48 h ES256 token naming key, user and resources; verifiable, tamper-evident, expiring', async ({ h, t }) => {
  const res = await h.post('/v2/auth/generate_token', request, t.headers);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is(res.body.result.message, 'Token generated successfully.');
  const token = res.body.result.data.token as string;
  const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString());
  assert.equal(Object.keys(header).sort(), ['alg', 'kid', 'typ']);
  assert.is(header.alg, 'ES256');
  assert.match(header.kid, /^[A-Za-z0-9]{20}$/);
  const c = await verifyUserToken(h.services, token, { apiKey: t.apiKey });
  assert.is(c.iss, 'collab-backend');
  assert.is(c.aud, t.apiKey);
  assert.is(c.sub, 'user-1');
  assert.is(c.apiKey, t.apiKey);
  assert.equal(c.user, { name: 'Ada', email: 'ada@example.com', isAdmin: true });
  assert.equal(c.resources, [
    { type: 'organization', id: 'org-1', organizationId: 'org-1' },
    { type: 'document', id: 'doc-1', organizationId: 'org-1', accessRole: 'viewer', expiresAt: 1_800_000_000 },
  ]);
  assert.is(c.exp - c.iat, 48 * 3600);
  assert.is(c.iat, Math.floor(now / 1000));
  // tampered
  const [hd, , sig] = token.split('.');
  const forged = Buffer.from(JSON.stringify({ ...c, sub: 'someone-else' })).toString('base64url');
  try {
    await verifyUserToken(h.services, `${hd}.${forged}.${sig}`);
    assert.unreachable('tampered token accepted');
  } catch (err) {
    assert.instance(err, TokenError);
  }
  // expired
  try {
    await verifyUserToken(h.services, token, { nowMs: now + 48 * 3600 * 1000 + 1000 });
    assert.unreachable('expired token accepted');
  } catch (err) {
    assert.match((err as Error).message, /expired/);
  }
  // for another key
  const other = await h.tenant();
  try {
    await verifyUserToken(h.services, token, { apiKey: other.apiKey });
    assert.unreachable('token of another key accepted');
  } catch (err) {
    assert.match((err as Error).message, /another API key/);
  }
});

S('the signing key is per key, created once, its private half never in a read model or response', async ({ h, t }) => {
  const t1 = (await h.post('/v2/auth/generate_token', request, t.headers)).body.result.data.token;
  const t2 = (await h.post('/v2/auth/generate_token', request, t.headers)).body.result.data.token;
  assert.ok(await verifyUserToken(h.services, t1));
  assert.ok(await verifyUserToken(h.services, t2));
  const secrets = (await h.services.events.readAll()).filter((e) => e.type === 'ApiKeyTokenSigningSecretCreated');
  assert.is(secrets.length, 1, 'one secret per key');
  const made = secrets[0]!.data as { secret: string; alg: string; publicKey: { kty: string; crv: string; x: string; y: string } };
  assert.is(made.alg, 'ES256');
  assert.equal(Object.keys(made.publicKey).sort(), ['crv', 'kty', 'x', 'y'], 'the public half holds no private member');
  const sealed = made.secret;
  assert.match(sealed, /^enc:v1:/, 'stored sealed');
  // The private scalar d of a P-256 key: 32 bytes, base64url.
  const secret = (await h.services.secrets.open(t.apiKey, sealed)) as string;
  assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
  const key = await h.services.read.get(API_KEYS, t.apiKey);
  assert.not.ok(JSON.stringify(key).includes(secret) || JSON.stringify(key).includes(sealed));
  assert.not.ok(t1.includes(secret));
  // Another key signs with its own secret: its tokens do not verify with this key's.
  const other = await h.tenant();
  const { permissions: _none, ...withoutResources } = request;
  const t3 = (await h.post('/v2/auth/generate_token', withoutResources, other.headers)).body.result.data.token;
  const [hd, p] = t3.split('.');
  const sig = t1.split('.')[2];
  try {
    await verifyUserToken(h.services, `${hd}.${p}.${sig}`);
    assert.unreachable();
  } catch (err) {
    assert.instance(err, TokenError);
  }
});

S('the resources become grants, as with permissions/add', async ({ h, t }) => {
  const before = await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['grantee'], documentIds: ['doc-1'] }, t.headers);
  assert.is(before.body.result.data.grantee.documents['doc-1'].errorCode, 'permission_denied');
  const res = await h.post('/v2/auth/generate_token', { ...request, userId: 'grantee' }, t.headers);
  assert.is(res.status, 200, JSON.stringify(res.body));
  const after = await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['grantee'], documentIds: ['doc-1'] }, t.headers);
  assert.equal(after.body.result.data.grantee.documents['doc-1'], { accessRole: 'viewer', accessType: 'restricted', expiresAt: 1_800_000_000 });
  assert.equal(after.body.result.data.grantee.organization['org-1'], { accessRole: 'editor' });
});

S('a missing resource: NOT_FOUND naming it; no token, no grant', async ({ h, t }) => {
  const events = (await h.services.events.readAll()).length;
  const res = await h.post(
    '/v2/auth/generate_token',
    { ...request, userId: 'nobody-yet', permissions: { resources: [{ type: 'organization', id: 'org-1' }, { type: 'document', id: 'ghost', organizationId: 'org-1' }] } },
    t.headers,
  );
  assert.is(res.status, 404, JSON.stringify(res.body));
  assert.is(res.body.error.status, 'NOT_FOUND');
  assert.equal(res.body.error.details, { resources: { ghost: 'Document does not exist.' } });
  assert.is((await h.services.events.readAll()).length, events, 'nothing written');
});

S('bad input gets the failure envelope', async ({ h, t }) => {
  const bad = async (data: unknown, re: RegExp) => {
    const res = await h.post('/v2/auth/generate_token', data, t.headers);
    assert.is(res.status, 400, JSON.stringify(res.body));
    assert.is(res.body.error.status, 'INVALID_ARGUMENT');
    assert.match(res.body.error.message, re);
  };
  await bad({ userProperties: { name: 'a', email: 'a@b.co' } }, /data\.userId is required/);
  await bad({ userId: 'u', userProperties: { name: 'a', email: 'nope' } }, /data\.userProperties\.email must be a valid email/);
  await bad({ userId: 'u', userProperties: { name: 'a', email: 'a@b.co' }, permissions: { resources: [{ type: 'folder', id: 'f' }] } }, /data\.permissions\.resources\[0\]\.organizationId/);
  await bad({ userId: 'u', userProperties: { name: 'a', email: 'a@b.co' }, permissions: { resources: [{ type: 'space', id: 'f' }] } }, /data\.permissions\.resources\[0\]\.type must be one of/);
  const res = await h.post('/v2/auth/generate_token', request, {});
  assert.is(res.status, 401);
});

S.run();
