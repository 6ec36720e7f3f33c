/**
 * Limits at the edge (issue 11 findings 1, 3, 4 and 8's presence part; semantics §1
 * Limits). Each refusal is INVALID_ARGUMENT with a message naming the limit, and nothing
 * is appended to the event log:
 * - JSON nesting depth at most 32 anywhere in a body (the agent with strategyOptions nested
 *   1000, 3000 and 100,000 levels deep that stopped every projection);
 * - folder tree depth at most FOLDER_MAX_DEPTH (default 100), on adds and subtree moves;
 * - permissions/get: at most 100 userIds and 10,000 cells;
 * - an agent configuration at most 64 KiB, on create and on the merged result of an update;
 * - presence/get paged: 2500 entries come back in pages, none lost or repeated.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Response, type Tenant } from './support/app.js';
import { MAX_JSON_DEPTH, jsonDepth } from '../src/http/json-depth.js';
import { MAX_AGENT_CONFIG_BYTES } from '../commands/agent-config.js';
import { PRESENCE_SCAN_BUDGET } from '../src/presence/store.js';

const refused = (r: Response, message: RegExp, where = '') => {
  assert.is(r.status, 400, `${where} ${JSON.stringify(r.body).slice(0, 300)}`);
  assert.is(r.body.error.status, 'INVALID_ARGUMENT', where);
  assert.match(r.body.error.message, message, where);
};
const okData = (r: Response, where = '') => {
  assert.is(r.status, 200, `${where} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body.result.data;
};

/** `{"k":{"k":...1...}}`, `levels` objects deep. */
const nestedObjects = (levels: number) => '{"k":'.repeat(levels) + '1' + '}'.repeat(levels);

// ---- JSON depth ----

const J = suite('limits: JSON nesting depth (unit)');

J('jsonDepth counts containers, ignores brackets in strings and escaped quotes', () => {
  assert.is(jsonDepth('1'), 0);
  assert.is(jsonDepth('{}'), 1);
  assert.is(jsonDepth('{"data":{"a":[1]}}'), 3);
  assert.is(jsonDepth('{"a":"[[[{{{"}'), 1);
  assert.is(jsonDepth('{"a":"\\"[[[","b":[]}'), 2);
  assert.is(jsonDepth('{"a":"\\\\","b":[[]]}'), 3, 'an escaped backslash does not escape the closing quote');
  assert.is(jsonDepth('[[],[],[[]]]'), 3);
});

J('jsonDepth stops counting past the limit: a million-level body is one loop, no stack', () => {
  const text = '['.repeat(1_048_576);
  assert.is(jsonDepth(text), MAX_JSON_DEPTH + 1);
  assert.is(jsonDepth(text, 10), 11);
});

const D = suite<{ h: Harness; t: Tenant }>('limits: JSON nesting depth (API)');
D.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
});
D.after(async (ctx) => ctx.h.close());

for (const levels of [1000, 3000, 100_000]) {
  D(`agents/create with strategyOptions nested ${levels} levels: 400 naming the limit, nothing appended, the read side still ready`, async ({ h, t }) => {
    const before = await h.services.events.headPosition();
    const payload = `{"data":{"agentId":"deep-${levels}","name":"Deep","contextGathering":{"strategies":[],"strategyOptions":${nestedObjects(levels)}}}}`;
    const r = await h.raw('/v2/agents/create', payload, t.headers);
    refused(r, /nested deeper than 32 levels/);
    assert.is(await h.services.events.headPosition(), before, 'the log head did not move');
    assert.is((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    // The agent does not exist.
    assert.is((await h.post('/v2/agents/get', { agentId: `deep-${levels}` }, t.headers)).status, 404);
  });
}

D('32 levels in a body are accepted, 33 refused; brackets inside strings do not count', async ({ h, t }) => {
  // body (1) > data (2) > contextGathering (3) > strategyOptions (4) > 28 more objects = 32.
  const body = (inner: number) =>
    `{"data":{"name":"A","contextGathering":{"strategies":[],"strategyOptions":${nestedObjects(inner)}}}}`;
  assert.is(jsonDepth(body(29)), 32);
  okData(await h.raw('/v2/agents/create', body(29), t.headers), '32 levels');
  refused(await h.raw('/v2/agents/create', body(30), t.headers), /nested deeper than 32 levels/, '33 levels');
  const brackets = `{"data":{"name":"B","description":"${'['.repeat(500)}${'{'.repeat(500)}"}}`;
  okData(await h.raw('/v2/agents/create', brackets, t.headers), 'brackets in a string');
});

D('a deep body is refused before authentication and without a parse (no credentials needed)', async ({ h }) => {
  const r = await h.raw('/v2/organizations/add', '['.repeat(500_000));
  refused(r, /nested deeper than 32 levels/);
});

D("Fastify's prototype-poisoning protection still applies", async ({ h, t }) => {
  const r = await h.raw('/v2/organizations/add', '{"data":{"organizations":[{"organizationId":"o","__proto__":{"polluted":true}}]}}', t.headers);
  assert.is(r.status, 400);
  assert.is(r.body.error.status, 'INVALID_ARGUMENT');
  assert.is(({} as any).polluted, undefined);
});

// ---- folder depth ----

const F = suite<{ h: Harness; t: Tenant }>('limits: folder tree depth');
F.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  await ctx.h.post('/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, ctx.t.headers);
});
F.after(async (ctx) => ctx.h.close());

/** folderIds `${prefix}1` .. `${prefix}${n}`, each under the previous; the first under `under`. */
const chain = (prefix: string, n: number, under?: string) =>
  Array.from({ length: n }, (_, i) => ({
    folderId: `${prefix}${i + 1}`,
    ...(i > 0 ? { parentFolderId: `${prefix}${i}` } : under ? { parentFolderId: under } : {}),
  }));

F('a chain of 101 levels is refused whole, nothing stored; 100 levels work', async ({ h, t }) => {
  const before = await h.services.events.headPosition();
  refused(await h.post('/v2/organizations/folders/add', { organizationId: 'o', folders: chain('x', 101) }, t.headers), /data\.folders\[100\].*limited to 100 levels/);
  assert.is(await h.services.events.headPosition(), before, 'nothing appended');
  assert.equal(okData(await h.post('/v2/organizations/folders/get', { organizationId: 'o' }, t.headers)), []);

  const added = okData(await h.post('/v2/organizations/folders/add', { organizationId: 'o', folders: chain('c', 100) }, t.headers));
  assert.is(Object.values(added).filter((o: any) => o.success).length, 100);
  const deepest = okData(await h.post('/v2/organizations/folders/get', { organizationId: 'o', folderId: 'c100', maxDepth: 0 }, t.headers));
  assert.is(deepest[0].ancestors.length, 100, '"root" and the 99 folders above');
  // One more level under the 100th, in a later call: refused, nothing stored.
  const mid = await h.services.events.headPosition();
  refused(await h.post('/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'ok-root' }, { folderId: 'c101', parentFolderId: 'c100' }] }, t.headers), /folder "c101".*limited to 100 levels/);
  assert.is(await h.services.events.headPosition(), mid, 'the whole batch was refused');
});

F('a subtree move that would exceed the limit is refused; one that fits is applied', async ({ h, t }) => {
  // s1 -> s2 -> s3 at the root; c1..c100 exist from the test above.
  okData(await h.post('/v2/organizations/folders/add', { organizationId: 'o', folders: chain('s', 3) }, t.headers));
  const before = await h.services.events.headPosition();
  // Under c98, s1 would be at 99 and s3 at 101.
  refused(await h.post('/v2/organizations/folders/update', { organizationId: 'o', folders: [{ folderId: 's1', parentFolderId: 'c98' }] }, t.headers), /folder "s1".*limited to 100 levels/);
  assert.is(await h.services.events.headPosition(), before, 'nothing appended');
  // Under c97: s3 lands at exactly 100.
  const moved = okData(await h.post('/v2/organizations/folders/update', { organizationId: 'o', folders: [{ folderId: 's1', parentFolderId: 'c97' }] }, t.headers));
  assert.is(moved.s1.success, true);
  const s3 = okData(await h.post('/v2/organizations/folders/get', { organizationId: 'o', folderId: 's3', maxDepth: 0 }, t.headers));
  assert.is(s3[0].ancestors.length, 100, '"root" and the 99 folders above: s3 is at level 100');
});

F('FOLDER_MAX_DEPTH sets the limit', async () => {
  const h = await harness({ FOLDER_MAX_DEPTH: '3' });
  try {
    const t = await h.tenant();
    okData(await h.post('/v2/organizations/folders/add', { organizationId: 'o', createOrganization: true, folders: chain('a', 3) }, t.headers));
    refused(await h.post('/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'a4', parentFolderId: 'a3' }] }, t.headers), /limited to 3 levels/);
    okData(await h.post('/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'b1' }] }, t.headers));
    refused(await h.post('/v2/organizations/folders/update', { organizationId: 'o', folders: [{ folderId: 'b1', parentFolderId: 'a3' }] }, t.headers), /limited to 3 levels/);
  } finally {
    await h.close();
  }
});

// ---- permissions/get ----

const P = suite<{ h: Harness; t: Tenant }>('limits: permissions/get users and cells');
P.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  const documents = Array.from({ length: 101 }, (_, i) => ({ documentId: `d${i}` }));
  okData(await ctx.h.post('/v2/organizations/documents/add', { organizationId: 'o', createOrganization: true, documents }, ctx.t.headers));
});
P.after(async (ctx) => ctx.h.close());

const users = (n: number) => Array.from({ length: n }, (_, i) => `u${i}`);
const docs = (n: number) => Array.from({ length: n }, (_, i) => `d${i}`);

P('101 users are refused naming the limit', async ({ h, t }) => {
  refused(await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: users(101) }, t.headers), /data\.userIds must have at most 100 items/);
});

P('100 users x 101 documents (10,100 cells) are refused; 100 x 100 are answered', async ({ h, t }) => {
  refused(
    await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: users(100), documentIds: docs(101) }, t.headers),
    /10100 permission cells \(100 users x 101 folders and documents\).*at most 10000 cells/,
  );
  // Folders and documents count together.
  refused(
    await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: users(100), documentIds: docs(60), folderIds: docs(41).map((d) => `f${d}`) }, t.headers),
    /10100 permission cells/,
  );
  const data = okData(await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: users(100), documentIds: docs(100) }, t.headers));
  assert.is(Object.keys(data).length, 100);
  assert.is(Object.keys(data.u99.documents).length, 100);
  assert.equal(data.u0.documents.d0, { accessRole: 'editor', accessType: 'public' });
});

P('the bound is checked before any resolution: an unknown organization over the limit is 400, not 404', async ({ h, t }) => {
  refused(await h.post('/v2/auth/permissions/get', { organizationId: 'nope', userIds: users(100), documentIds: docs(101) }, t.headers), /permission cells/);
  assert.is((await h.post('/v2/auth/permissions/get', { organizationId: 'nope', userIds: users(100), documentIds: docs(100) }, t.headers)).status, 404);
});

// ---- agent configuration size ----

const A = suite<{ h: Harness; t: Tenant }>('limits: agent configuration size');
A.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
});
A.after(async (ctx) => ctx.h.close());

A('a configuration over 64 KiB is refused on create, nothing stored; one under it is stored', async ({ h, t }) => {
  const before = await h.services.events.headPosition();
  // 70,000 characters of instructions: under the field's own 100,000 but over 64 KiB in all.
  refused(await h.post('/v2/agents/create', { agentId: 'big', name: 'Big', rawInstructions: 'x'.repeat(70_000) }, t.headers), /limited to 65536 bytes \(64 KiB\)/);
  // Many small options add up too.
  const options = Object.fromEntries(Array.from({ length: 800 }, (_, i) => [`option${i}`, 'v'.repeat(80)]));
  refused(await h.post('/v2/agents/create', { agentId: 'big', name: 'Big', contextGathering: { strategyOptions: options } }, t.headers), /64 KiB/);
  assert.is(await h.services.events.headPosition(), before, 'nothing appended');
  assert.is((await h.post('/v2/agents/get', { agentId: 'big' }, t.headers)).status, 404);

  // rawInstructions of 60,000 characters fit.
  assert.equal(okData(await h.post('/v2/agents/create', { agentId: 'fits', name: 'Fits', rawInstructions: 'y'.repeat(60_000) }, t.headers)), { agentId: 'fits' });
  const a = okData(await h.post('/v2/agents/get', { agentId: 'fits' }, t.headers));
  assert.is(a.agent.rawInstructions.length, 60_000);
  assert.ok(60_000 < MAX_AGENT_CONFIG_BYTES);
});

A('an update whose merged configuration passes 64 KiB is refused and the stored one is kept', async ({ h, t }) => {
  okData(await h.post('/v2/agents/create', { agentId: 'grow', name: 'Grow', rawInstructions: 'z'.repeat(40_000) }, t.headers));
  const before = await h.services.events.headPosition();
  const options = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`option${i}`, 'v'.repeat(80)]));
  refused(await h.post('/v2/agents/update', { agentId: 'grow', contextGathering: { strategyOptions: options } }, t.headers), /limited to 65536 bytes/);
  assert.is(await h.services.events.headPosition(), before, 'nothing appended');
  const got = okData(await h.post('/v2/agents/get', { agentId: 'grow' }, t.headers));
  assert.is(got.agent.version, 1);
  // The same options with shorter instructions fit.
  okData(await h.post('/v2/agents/update', { agentId: 'grow', rawInstructions: 'short', instructions: 'short', contextGathering: { strategyOptions: options } }, t.headers));
  assert.is(okData(await h.post('/v2/agents/get', { agentId: 'grow' }, t.headers)).agent.version, 2);
});

A('secrets count at the size the client sent them, not their encrypted size', async ({ h, t }) => {
  // 700 options of 60 bytes: about 50 KB sent; encrypted one by one they store far more.
  const options = Object.fromEntries(Array.from({ length: 700 }, (_, i) => [`o${i}`, 's'.repeat(60)]));
  okData(await h.post('/v2/agents/create', { agentId: 'sealed-fits', name: 'S', contextGathering: { strategyOptions: options } }, t.headers));
  const a = okData(await h.post('/v2/agents/get', { agentId: 'sealed-fits' }, t.headers));
  assert.is(a.agent.contextGathering.strategyOptions.o0, '__redacted__');
  const stored = (await h.services.events.readAll()).at(-1)!;
  assert.ok(JSON.stringify(stored.data).length > MAX_AGENT_CONFIG_BYTES, 'stored sealed, larger than the limit');
  // One secret of 70,000 characters is over the limit whatever its form.
  refused(await h.post('/v2/agents/create', { agentId: 'sealed-big', name: 'S', contextGathering: { strategyOptions: { key: 'k'.repeat(70_000) } } }, t.headers), /limited to 65536 bytes/);
});

// ---- presence/get paged ----

const R = suite<{ h: Harness; t: Tenant }>('limits: presence/get is paged');
R.before(async (ctx) => {
  ctx.h = await harness({ PRESENCE_TTL_SECONDS: '3600' });
  ctx.t = await ctx.h.tenant();
  // 2500 entries: 1000 users on d1 and d2, 500 on d3.
  for (const [documentId, n] of [['d1', 1000], ['d2', 1000], ['d3', 500]] as const) {
    const users = Array.from({ length: n }, (_, i) => ({ userId: `u${i}` }));
    okData(await ctx.h.post('/v2/presence/add', { organizationId: 'o', documentId, users }, ctx.t.headers));
  }
});
R.after(async (ctx) => ctx.h.close());

async function allPages(h: Harness, t: Tenant, query: Record<string, unknown>) {
  const pages: any[][] = [];
  let pageToken: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const r = await h.post('/v2/presence/get', { ...query, ...(pageToken ? { pageToken } : {}) }, t.headers);
    pages.push(okData(r));
    pageToken = r.body.result.pageToken;
    if (!pageToken) return pages;
  }
  throw new Error('paging never ended');
}

R('2500 entries come back in pages of at most 1000 by default, none lost or repeated', async ({ h, t }) => {
  const pages = await allPages(h, t, { organizationId: 'o' });
  assert.equal(pages.map((p) => p.length), [1000, 1000, 500]);
  const seen = pages.flat().map((e) => `${e.documentId}/${e.userId}`);
  assert.is(new Set(seen).size, 2500, 'no entry repeated');
  assert.is(seen.length, 2500, 'no entry lost');
});

R('pageSize pages one document; the last page has no pageToken', async ({ h, t }) => {
  const pages = await allPages(h, t, { organizationId: 'o', documentId: 'd3', pageSize: 200 });
  assert.equal(pages.map((p) => p.length), [200, 200, 100]);
  assert.is(new Set(pages.flat().map((e) => e.userId)).size, 500);
  const one = await h.post('/v2/presence/get', { organizationId: 'o', documentId: 'd3', pageSize: 500 }, t.headers);
  assert.is(okData(one).length, 500);
  assert.is(one.body.result.pageToken, undefined, 'no token when nothing more exists');
});

R('documentId with userIds pages too', async ({ h, t }) => {
  const userIds = Array.from({ length: 250 }, (_, i) => `u${i * 2}`);
  const pages = await allPages(h, t, { organizationId: 'o', documentId: 'd1', userIds, pageSize: 100 });
  assert.equal(pages.map((p) => p.length), [100, 100, 50]);
  assert.equal(pages.flat().map((e) => e.userId).sort(), [...userIds].sort());
});

R('page tokens are validated: garbled or from another query is INVALID_ARGUMENT; pageSize over 1000 too', async ({ h, t }) => {
  const first = await h.post('/v2/presence/get', { organizationId: 'o', documentId: 'd1', pageSize: 10 }, t.headers);
  const token = first.body.result.pageToken;
  assert.type(token, 'string');
  refused(await h.post('/v2/presence/get', { organizationId: 'o', documentId: 'd2', pageSize: 10, pageToken: token }, t.headers), /data\.pageToken is not a valid page token/);
  refused(await h.post('/v2/presence/get', { organizationId: 'o', pageToken: 'garbage!' }, t.headers), /data\.pageToken/);
  refused(await h.post('/v2/presence/get', { organizationId: 'o', pageSize: 1001 }, t.headers), /data\.pageSize must be at most 1000/);
  const other = await h.tenant();
  refused(await h.post('/v2/presence/get', { organizationId: 'o', documentId: 'd1', pageSize: 10, pageToken: token }, other.headers), /data\.pageToken/);
});

R('a filter that matches little is bounded per call: the scan stops and a token goes on from there', async ({ h, t }) => {
  // 11,000 entries before the one wanted: more than one call looks at.
  for (let k = 0; k < 11; k++) {
    const users = Array.from({ length: 1000 }, (_, i) => ({ userId: `n${k}-${i}` }));
    okData(await h.post('/v2/presence/add', { organizationId: 'o2', documentId: `d${k}`, users }, t.headers));
  }
  okData(await h.post('/v2/presence/add', { organizationId: 'o2', documentId: 'late', users: [{ userId: 'wanted' }] }, t.headers));
  assert.ok(11 * 1000 > PRESENCE_SCAN_BUDGET);
  const first = await h.post('/v2/presence/get', { organizationId: 'o2', userIds: ['wanted'] }, t.headers);
  assert.equal(okData(first), [], 'the first call stopped at the budget');
  assert.type(first.body.result.pageToken, 'string');
  const pages = await allPages(h, t, { organizationId: 'o2', userIds: ['wanted'] });
  assert.equal(pages.flat().map((e) => `${e.documentId}/${e.userId}`), ['late/wanted']);
});

J.run();
D.run();
F.run();
P.run();
A.run();
R.run();
