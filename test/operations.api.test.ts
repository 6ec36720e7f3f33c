/**
 * The operator's routes (src/http/routes/operations.ts): projection status, parked events,
 * retry and skip, behind the admin token. The parked event is the one test/parked.test.ts
 * reproduces (test/support/poison.ts): an AgentCreated nested 1000 levels deep, which the agents projection cannot
 * write, so a retry fails again and says why.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness } from './support/app.js';
import { parkPoison, type Poison } from './support/poison.js';

const ADMIN = 'operations-test-admin-token';
const admin = { 'x-service-admin-token': ADMIN };

const O = suite<{ h: Harness; apiKey: string; poison: Poison }>('operations routes (admin token)');
O.before(async (ctx) => {
  ctx.h = await harness({ ADMIN_TOKEN: ADMIN });
  ctx.apiKey = (await ctx.h.tenant()).apiKey;
  ctx.poison = await parkPoison(ctx.h, ctx.apiKey);
});
O.after(async (ctx) => ctx.h.close());

O('without the admin token: 401; with a wrong one: 403', async ({ h }) => {
  for (const path of ['/v2/admin/projections/get', '/v2/admin/parked/get', '/v2/admin/parked/retry', '/v2/admin/parked/skip']) {
    const none = await h.post(path, { id: 'x' });
    assert.is(none.status, 401, `${path}: ${JSON.stringify(none.body)}`);
    const wrong = await h.post(path, { id: 'x' }, { 'x-service-admin-token': 'nope' });
    assert.is(wrong.status, 403, path);
  }
});

O('status: every projection with its lag, and the parked count', async ({ h }) => {
  const st = (await h.ok('/v2/admin/projections/get', {}, admin)).data;
  assert.ok(st.projections.length > 3, JSON.stringify(st.projections));
  assert.ok(st.projections.some((p: { name: string }) => p.name === 'agents'));
  for (const p of st.projections) assert.type(p.lag, 'number');
  const parked = (await h.ok('/v2/admin/parked/get', {}, admin)).data;
  assert.is(st.parked, parked.length);
});

O('parked/get lists the poison event; retry fails again with the new error and counts the attempt; skip hides it', async ({ h, apiKey, poison }) => {
  const rows = (await h.ok('/v2/admin/parked/get', {}, admin)).data as { id: string; follower: string; apiKey: string; attempts: number; error: string }[];
  const row = rows.find((r) => r.follower === 'agents');
  assert.ok(row, JSON.stringify(rows));
  assert.is(row.apiKey, apiKey);
  const retried = await h.post('/v2/admin/parked/retry', { id: row.id }, admin);
  assert.is(retried.status, 400, JSON.stringify(retried.body));
  assert.is(retried.body.error.status, 'FAILED_PRECONDITION');
  assert.match(retried.body.error.message, /failed again: /);
  assert.match(retried.body.error.message, poison.error);
  const after = ((await h.ok('/v2/admin/parked/get', {}, admin)).data as typeof rows).find((r) => r.id === row.id);
  assert.is(after?.attempts, row.attempts + 1);

  const skipped = (await h.ok('/v2/admin/parked/skip', { id: row.id }, admin)).data;
  assert.is(skipped.status, 'skipped');
  assert.not.ok(((await h.ok('/v2/admin/parked/get', {}, admin)).data as typeof rows).some((r) => r.id === row.id));
  const all = (await h.ok('/v2/admin/parked/get', { all: true }, admin)).data as (typeof rows[number] & { status: string })[];
  assert.is(all.find((r) => r.id === row.id)?.status, 'skipped');
});

O('an unknown id is NOT_FOUND, naming it', async ({ h }) => {
  for (const path of ['/v2/admin/parked/retry', '/v2/admin/parked/skip']) {
    const r = await h.post(path, { id: 'agents:nope' }, admin);
    assert.is(r.status, 404, JSON.stringify(r.body));
    assert.match(r.body.error.message, /agents:nope/);
  }
});

O.run();

const Open = suite('operations routes without ADMIN_TOKEN');
Open('refused with FAILED_PRECONDITION: parked records name other tenants', async () => {
  const h = await harness();
  try {
    const r = await h.post('/v2/admin/parked/get', {});
    assert.is(r.body.error?.status, 'FAILED_PRECONDITION', JSON.stringify(r.body));
    assert.match(r.body.error.message, /ADMIN_TOKEN/);
  } finally {
    await h.close();
  }
});
Open.run();
