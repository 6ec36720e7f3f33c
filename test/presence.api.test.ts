/** /v2/presence/*: add, update (heartbeat), get, delete, expiry after the idle TTL, tenancy. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { PRESENCE } from '../src/presence/store.js';
import { loadConfig, ConfigError } from '../src/config/config.js';

let now = 1_700_000_000_000;
const S = suite<{ h: Harness; t: Tenant }>('presence API');
S.before(async (ctx) => {
  ctx.h = await harness({ PRESENCE_TTL_SECONDS: '30' }, { clock: () => now });
  ctx.t = await ctx.h.tenant();
});
S.after(async (ctx) => ctx.h.close());

const ok = (res: { status: number; body: any }, message?: string) => {
  assert.is(res.status, 200, JSON.stringify(res.body));
  if (message) assert.is(res.body.result.message, message);
  return res.body.result.data;
};
const doc = { organizationId: 'org', documentId: 'doc' };

S('add, then get lists the users with their status', async ({ h, t }) => {
  const d = ok(await h.post('/v2/presence/add', { ...doc, users: [{ userId: 'u1', name: 'Ada', email: 'ada@example.com' }, { userId: 'u2', status: 'away' }] }, t.headers), 'Presence added successfully.');
  assert.equal(d, { success: true });
  const list = ok(await h.post('/v2/presence/get', doc, t.headers), 'Presence retrieved successfully.');
  assert.equal(list, [
    { userId: 'u1', documentId: 'doc', name: 'Ada', email: 'ada@example.com', status: 'online', lastSeenAt: now, expiresAt: Math.floor((now + 30_000) / 1000) },
    { userId: 'u2', documentId: 'doc', status: 'away', lastSeenAt: now, expiresAt: Math.floor((now + 30_000) / 1000) },
  ]);
});

S('update refreshes present users and names the absent ones, who are not added', async ({ h, t }) => {
  now += 20_000;
  const d = ok(await h.post('/v2/presence/update', { ...doc, users: [{ userId: 'u1', status: 'away' }, { userId: 'ghost' }] }, t.headers));
  assert.equal(d, { success: false, notPresent: ['ghost'] });
  assert.equal(ok(await h.post('/v2/presence/update', { ...doc, users: [{ userId: 'u1' }] }, t.headers), 'Presence updated successfully.'), { success: true });
  const list = ok(await h.post('/v2/presence/get', doc, t.headers));
  assert.not.ok(list.some((u: any) => u.userId === 'ghost'), 'update adds nobody');
  const u1 = list.find((u: any) => u.userId === 'u1');
  assert.is(u1.status, 'away');
  assert.is(u1.name, 'Ada', 'fields not given are kept');
});

S('entries expire after the TTL without update, and are swept', async ({ h, t }) => {
  now += 15_000; // u2 idle 35 s, u1 idle 15 s
  const list = ok(await h.post('/v2/presence/get', doc, t.headers));
  assert.equal(list.map((u: any) => u.userId), ['u1']);
  ok(await h.post('/v2/presence/add', { ...doc, users: [{ userId: 'u3' }] }, t.headers));
  const stored = await h.services.read.find(PRESENCE, {});
  assert.not.ok(stored.some((d: any) => d.userId === 'u2'), 'expired entry swept on write');
  const upd = ok(await h.post('/v2/presence/update', { ...doc, users: [{ userId: 'u2' }] }, t.headers));
  assert.equal(upd, { success: false, notPresent: ['u2'] });
});

S('get by organization, by userIds; delete removes; other keys see nothing', async ({ h, t }) => {
  ok(await h.post('/v2/presence/add', { organizationId: 'org', documentId: 'doc2', users: [{ userId: 'u9' }] }, t.headers));
  const org = ok(await h.post('/v2/presence/get', { organizationId: 'org' }, t.headers));
  assert.equal(org.map((u: any) => `${u.documentId}/${u.userId}`).sort(), ['doc/u1', 'doc/u3', 'doc2/u9']);
  assert.equal(ok(await h.post('/v2/presence/get', { ...doc, userIds: ['u3'] }, t.headers)).map((u: any) => u.userId), ['u3']);
  const other = await h.tenant();
  assert.equal(ok(await h.post('/v2/presence/get', { organizationId: 'org' }, other.headers)), []);
  assert.equal(ok(await h.post('/v2/presence/delete', { ...doc, userIds: ['u1', 'nobody'] }, t.headers), 'Presence deleted successfully.'), { success: true });
  assert.equal(ok(await h.post('/v2/presence/get', doc, t.headers)).map((u: any) => u.userId), ['u3']);
});

S('bad input gets the failure envelope', async ({ h, t }) => {
  const bad = async (url: string, data: unknown, re: RegExp) => {
    const res = await h.post(url, data, t.headers);
    assert.is(res.status, 400, JSON.stringify(res.body));
    assert.is(res.body.error.status, 'INVALID_ARGUMENT');
    assert.match(res.body.error.message, re);
  };
  await bad('/v2/presence/add', { ...doc, users: [] }, /data\.users must not be empty/);
  await bad('/v2/presence/add', { ...doc, users: [{ userId: 'x', status: 'busy' }] }, /data\.users\[0\]\.status must be one of/);
  await bad('/v2/presence/add', { organizationId: 'org', users: [{ userId: 'x' }] }, /data\.documentId is required/);
  await bad('/v2/presence/update', { ...doc, users: [{ userId: 'x', email: 'nope' }] }, /data\.users\[0\]\.email must be a valid email/);
  await bad('/v2/presence/delete', { ...doc }, /data\.userIds is required/);
  const res = await h.post('/v2/presence/get', doc, {});
  assert.is(res.status, 401);
});

S('PRESENCE_TTL_SECONDS is validated and named on error', () => {
  assert.is(loadConfig({}).presenceTtlSeconds, 60);
  assert.is(loadConfig({ PRESENCE_TTL_SECONDS: '5' }).presenceTtlSeconds, 5);
  for (const v of ['0', 'abc', '-1', '100000']) {
    try {
      loadConfig({ PRESENCE_TTL_SECONDS: v });
      assert.unreachable(`accepted ${v}`);
    } catch (err) {
      assert.instance(err, ConfigError);
      assert.match((err as Error).message, /^PRESENCE_TTL_SECONDS: /);
    }
  }
});

S.run();
