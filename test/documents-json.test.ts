/**
 * documents/get answers names and ids with every kind of character JSON escapes (quotes,
 * controls, lone surrogates, line separators) as JSON.stringify writes them, with and without
 * a pageToken, and the same with an Idempotency-Key as without.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

const S = suite<{ h: Harness; t: Tenant }>('documents/get JSON');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
});
S.after(async (ctx) => ctx.h.close());

const tricky = ['', 'plain', 'quote"d', 'back\\slash', 'new\nline', '\u0000\u001f\u007f', 'é ü 漢字', '😀', '\ud800', 'a\udfff', '</script>', '\u2028\u2029', 'x'.repeat(2000)];

S('documents/get answers what the generic envelope would, with and without pageToken', async ({ h, t }) => {
  const ok = async (r: string, d: unknown) => assert.is((await h.post(r, d, t.headers)).status, 200);
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'o' }] });
  await ok('/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'f"\\' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f"\\', documents: tricky.filter((s) => s && s.length < 100).map((s) => ({ documentId: `d${s}`, documentName: s })) });
  await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'root' }] });
  for (const data of [{ organizationId: 'o' }, { organizationId: 'o', pageSize: 3 }, { organizationId: 'o', folderId: 'f"\\' }, { organizationId: 'o', documentIds: ['root', 'dplain'] }]) {
    const res = await h.app.inject({ method: 'POST', url: '/v2/organizations/documents/get', payload: { data }, headers: t.headers });
    assert.is(res.statusCode, 200);
    assert.is(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.ok(res.headers['x-request-id']);
    const body = JSON.parse(res.body);
    assert.is(res.body, JSON.stringify(body));
    assert.equal(Object.keys(body.result), ['status', 'message', 'data', ...('pageToken' in body.result ? ['pageToken'] : [])]);
    assert.is(res.headers['content-length'], String(Buffer.byteLength(res.body)));
  }
  // The same request with an Idempotency-Key goes the generic way: same body.
  const data = { organizationId: 'o', pageSize: 3 };
  const fast = await h.app.inject({ method: 'POST', url: '/v2/organizations/documents/get', payload: { data }, headers: t.headers });
  const generic = await h.app.inject({ method: 'POST', url: '/v2/organizations/documents/get', payload: { data }, headers: { ...t.headers, 'idempotency-key': 'k1' } });
  assert.is(fast.body, generic.body);
  assert.is(fast.headers['content-type'], generic.headers['content-type']);
});

S.run();
