/**
 * Consistency tokens (issue 36, src/http/consistency.ts): every successful write answers
 * `x-consistency-token`; a read carrying it answers only once the read models applied the
 * write (waiting at most CONSISTENCY_WAIT_MS, then 503, never stale), through another app
 * on the same store too; a token of another key, workspace or deployment, or a changed one,
 * is INVALID_ARGUMENT.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, postgresEnv, tempDir, type Harness, type Tenant } from './support/app.js';
import { waiter } from './support/wait.js';

const HEADER = 'x-consistency-token';

const until = waiter(10_000, 5);

/** The env of a store two harnesses share: one DATA_DIR (its master key file), or one PostgreSQL database and master key. */
async function sharedStore(): Promise<Record<string, string>> {
  return process.env.TEST_STORE === 'postgres' ? postgresEnv() : { DATA_DIR: tempDir() };
}

const tokenOf = (r: { headers: Record<string, unknown> }) => {
  const v = r.headers[HEADER];
  assert.type(v, 'string', `the answer carries ${HEADER}`);
  return v as string;
};

const docIds = (body: any) => (body.result.data as Array<{ documentId: string }>).map((d) => d.documentId);

let h: Harness;
let t: Tenant;
test.before(async () => {
  h = await harness();
  t = await h.tenant();
  await h.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o1' }] }, t.headers);
});
test.after(async () => h.close());

test('every successful write answers a token; a failed write and a read answer none', async () => {
  const added = await h.post('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'd1' }] }, t.headers);
  assert.is(added.status, 200);
  const first = tokenOf(added);
  assert.match(first, /^[A-Za-z0-9_-]+$/, 'opaque base64url');
  // Nothing changes: still a token (the log's head), as a client cannot tell which writes append.
  const same = await h.post('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'd1' }] }, t.headers);
  assert.is(same.status, 200);
  tokenOf(same);
  const refused = await h.post('/v2/organizations/documents/add', { organizationId: 'missing', documents: [{ documentId: 'd1' }] }, t.headers);
  assert.is(refused.status, 404);
  assert.is(refused.headers[HEADER], undefined);
  const read = await h.post('/v2/organizations/documents/get', { organizationId: 'o1' }, { ...t.headers, [HEADER]: first });
  assert.is(read.status, 200);
  assert.equal(docIds(read.body), ['d1']);
  assert.is(read.headers[HEADER], undefined, 'a read makes no token');
  // An Idempotency-Key replay answers a token too.
  const key = { ...t.headers, 'idempotency-key': 'consistency-1' };
  const once = await h.post('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'd2' }] }, key);
  const again = await h.post('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'd2' }] }, key);
  assert.is(again.headers['idempotent-replayed'], 'true');
  tokenOf(once);
  tokenOf(again);
});

test('a token of another key, another deployment, a changed or a made-up one: 400 naming the header', async () => {
  const w = await h.post('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'd3' }] }, t.headers);
  const token = tokenOf(w);
  const other = await h.tenant();
  const elsewhere = await harness();
  try {
    const t2 = await elsewhere.tenant();
    await elsewhere.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o1' }] }, t2.headers);
    const foreign = tokenOf(await elsewhere.post('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'd3' }] }, t2.headers));
    const flipped = token.slice(0, 20) + (token[20] === 'A' ? 'B' : 'A') + token.slice(21);
    const cases: Array<[string, Record<string, string>, string]> = [
      ['another key', other.headers, token],
      ['another deployment', t.headers, foreign],
      ['a changed byte', t.headers, flipped],
      ['made up', t.headers, 'not-a-token'],
      ['characters outside base64url', t.headers, `${token}=`],
    ];
    for (const [what, headers, value] of cases) {
      const r = await h.post('/v2/organizations/get', {}, { ...headers, [HEADER]: value });
      assert.is(r.status, 400, what);
      assert.is(r.body.error.status, 'INVALID_ARGUMENT', what);
      assert.match(r.body.error.message, /x-consistency-token header is not a consistency or change token of this caller/, what);
    }
    // The workspace's own calls have tokens of their own: the key's is not one of them.
    const ws = await h.post('/v2/workspace/apikeys/get', {}, { ...t.workspaceHeaders, [HEADER]: token });
    assert.is(ws.status, 400);
    const renamed = await h.post('/v2/workspace/apikey/update', { apiKey: t.apiKey, apiKeyName: 'Renamed' }, t.workspaceHeaders);
    assert.is(renamed.status, 200, JSON.stringify(renamed.body));
    const wsRead = await h.post('/v2/workspace/apikeys/get', {}, { ...t.workspaceHeaders, [HEADER]: tokenOf(renamed) });
    assert.is(wsRead.status, 200, JSON.stringify(wsRead.body));
  } finally {
    await elsewhere.close();
  }
});

test('a user token of the key reads with the key\'s token', async () => {
  const w = await h.post('/v2/users/add', { organizationId: 'o1', users: [{ userId: 'u1' }] }, t.headers);
  const gen = await h.ok('/v2/auth/generate_token', { userId: 'u1', userProperties: { name: 'U One', email: 'u1@example.com' } }, t.headers);
  const bearer = { authorization: `Bearer ${gen.data.token}` };
  const r = await h.post('/v2/auth/permissions/get', { organizationId: 'o1', userIds: ['u1'] }, { ...bearer, [HEADER]: tokenOf(w) });
  assert.is(r.status, 200, JSON.stringify(r.body));
});

test('read models behind the write: the read waits, then answers 503 naming the wait; never stale', async () => {
  const store = await sharedStore();
  // Nothing applies the projections of this app unless the test says so (a host whose applier lags).
  const lagging = await harness({ ...store, READ_YOUR_WRITES_TIMEOUT_MS: '0', CONSISTENCY_WAIT_MS: '300' }, { follow: false });
  try {
    const tl = await lagging.tenant();
    // The new key's credentials are read from the read models.
    await lagging.services.projections.catchUp();
    await lagging.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o1' }] }, tl.headers);
    await lagging.services.projections.catchUp();
    const w = await lagging.post('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: 'late' }] }, tl.headers);
    assert.is(w.status, 200);
    const token = tokenOf(w);
    const stale = await lagging.post('/v2/organizations/documents/get', { organizationId: 'o1' }, tl.headers);
    assert.equal(docIds(stale.body), [], 'without the token: what the read models hold (nothing yet)');
    const started = Date.now();
    const refused = await lagging.post('/v2/organizations/documents/get', { organizationId: 'o1' }, { ...tl.headers, [HEADER]: token });
    assert.ok(Date.now() - started >= 250, `it waited (${Date.now() - started} ms)`);
    assert.is(refused.status, 503);
    assert.is(refused.body.error.status, 'UNAVAILABLE');
    assert.match(refused.body.error.message, /after waiting 300 ms \(CONSISTENCY_WAIT_MS\)/);
    // The read models catch up while the read waits: it answers with the write. Through an app
    // on the same store that waits long enough for a loaded machine to catch up within its
    // wait (300 ms, from the moment the read begins to wait, is not), and only once the read
    // does wait (its ProjectionRunner.waitFor was called), so the catch-up does not come first.
    const patient = await harness({ ...store, READ_YOUR_WRITES_TIMEOUT_MS: '0', CONSISTENCY_WAIT_MS: '30000' }, { follow: false });
    try {
      const runner = patient.services.projections;
      const waitFor = runner.waitFor.bind(runner);
      let waits = 0;
      runner.waitFor = (position, ms) => {
        waits++;
        return waitFor(position, ms);
      };
      const waiting = patient.post('/v2/organizations/documents/get', { organizationId: 'o1' }, { ...tl.headers, [HEADER]: token });
      await until('the read to wait for the read models', () => waits > 0);
      await patient.services.projections.catchUp();
      const answered = await waiting;
      assert.is(answered.status, 200);
      assert.equal(docIds(answered.body), ['late']);
    } finally {
      await patient.close();
    }
  } finally {
    await lagging.close();
  }
});

test('written through one app, read through another on the same store with the token: always sees the write', async () => {
  const store = await sharedStore();
  // The writer never applies projections and answers at once: only the token makes the reader wait.
  const writer = await harness({ ...store, READ_YOUR_WRITES_TIMEOUT_MS: '0' }, { follow: false });
  const reader = await harness({ ...store, CONSISTENCY_WAIT_MS: '10000' });
  try {
    // Created through the reader, which applies the projections (credentials are read from them).
    const tw = await reader.tenant();
    const w0 = await writer.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1' }] }, tw.headers);
    const orgs = await reader.post('/v2/organizations/get', {}, { ...tw.headers, [HEADER]: tokenOf(w0) });
    assert.is(orgs.status, 200, JSON.stringify(orgs.body));
    for (let i = 0; i < 15; i++) {
      const w = await writer.post('/v2/organizations/documents/add', { organizationId: 'o1', documents: [{ documentId: `d${i}` }] }, tw.headers);
      assert.is(w.status, 200);
      const r = await reader.post('/v2/organizations/documents/get', { organizationId: 'o1', documentIds: [`d${i}`] }, { ...tw.headers, [HEADER]: tokenOf(w) });
      assert.is(r.status, 200, JSON.stringify(r.body));
      assert.equal(docIds(r.body), [`d${i}`], `round ${i}`);
    }
  } finally {
    await reader.close();
    await writer.close();
  }
});

test('the OpenAPI document describes both headers', async () => {
  const doc = JSON.parse((await h.app.inject({ method: 'GET', url: '/openapi.json' })).body);
  const add = doc.paths['/v2/organizations/documents/add'].post;
  const get = doc.paths['/v2/organizations/documents/get'].post;
  for (const op of [add, get]) {
    const p = (op.parameters ?? []).find((x: any) => x.name === HEADER);
    assert.ok(p, 'the request header');
    assert.is(p.in, 'header');
    assert.is(p.required, false);
  }
  assert.ok(add.responses['200'].headers?.[HEADER], 'a write answers it');
  assert.is(get.responses['200'].headers?.[HEADER], undefined, 'a read does not');
  assert.is((doc.paths['/v2/workspace/create'].post.parameters ?? []).filter((x: any) => x.name === HEADER).length, 0, 'sign-up takes none');
});

test.run();
