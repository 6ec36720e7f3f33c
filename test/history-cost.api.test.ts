/**
 * access/history's cost (issue 33, finding 2; queries/access-history.ts, src/http/cancel.ts):
 * - a page's store reads do not grow with the length of the history: the first page of a
 *   history four times as long reads about what the short one's does (counted by a wrapper
 *   on the read store; before, every page computed a users/get at every instant);
 * - the query deadline ends a call with RESOURCE_EXHAUSTED naming it (a test clock moves on
 *   while the request runs, so the deadline passes without waiting);
 * - a client that closes its connection stops the work: after it leaves, the call reads a
 *   small part of what the whole call reads (measured first, in the same test; a real socket,
 *   as app.inject has no connection to close);
 * - the request timeout ends the work with RESOURCE_EXHAUSTED naming it: a timeout of a
 *   quarter of what the call takes (measured first) answers the envelope, having read less.
 * Every bound is relative to a figure measured in the same test, never a fixed time.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { harness, type Harness, type Tenant } from './support/app.js';
import { buildApp } from '../src/app.js';
import type { ReadView } from '../src/ports/read-store.js';

let h: Harness;
let t: Tenant;
/** The test clock: still, moved by the seeding so that each change has an instant of its own; `stepping` makes each reading a second later. */
let nowMs = Date.now() - 3_600_000;
let stepping = false;
const clock = () => (stepping ? (nowMs += 1000) : nowMs);
const tick = () => void (nowMs += 7);

/** Store reads of the history read models (`h_*`), as the query asks them: a get 1, a getMany its keys, a find or count 1. */
let reads = 0;
function countReads(read: ReadView) {
  const r = read as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const m of ['get', 'getMany', 'find', 'count'] as const) {
    const inner = r[m]!.bind(read);
    r[m] = async (...args: unknown[]) => {
      if (String(args[0]).startsWith('h_')) reads += m === 'getMany' ? (args[1] as unknown[]).length : 1;
      return inner(...args);
    };
  }
}

const range = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));
const grant = async (userId: string, documentId: string) => {
  tick();
  await h.ok('/v2/auth/permissions/add', { userId, permissions: { resources: [{ type: 'document', id: documentId, organizationId: 'o', accessRole: 'viewer' }] } }, t.headers);
};

/** Members of the group whose grant on `heavy` is added and removed TOGGLES times: every toggle concerns them all. */
const MEMBERS = range(150, (i) => `m${String(i).padStart(3, '0')}`);
const TOGGLES = 4;

test.before(async () => {
  h = await harness({ QUERY_DEADLINE_MS: '600000' }, { clock });
  t = await h.tenant();
  tick();
  await h.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o', organizationName: 'O' }] }, t.headers);
  tick();
  await h.ok('/v2/organizations/documents/add', { organizationId: 'o', documents: ['short', 'long', 'heavy'].map((documentId) => ({ documentId, accessType: 'restricted' })) }, t.headers);
  tick();
  await h.ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'g', groupName: 'g' }] }, t.headers);
  tick();
  await h.ok('/v2/users/add', { organizationId: 'o', users: MEMBERS.map((userId) => ({ userId })) }, t.headers);
  tick();
  const added = await h.ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'g', userIds: MEMBERS }, t.headers);
  assert.ok(Object.values(added.data).every((x) => (x as { success: boolean }).success), JSON.stringify(added).slice(0, 300));
  for (let i = 0; i < TOGGLES; i++) {
    tick();
    await h.ok('/v2/auth/permissions/add', { group: { groupId: 'g' }, permissions: { resources: [{ type: 'document', id: 'heavy', organizationId: 'o', accessRole: 'viewer' }] } }, t.headers);
    tick();
    await h.ok('/v2/auth/permissions/remove', { group: { groupId: 'g' }, permissions: { resources: [{ type: 'document', id: 'heavy', organizationId: 'o' }] } }, t.headers);
  }
  countReads(h.services.read);
});
test.after(async () => h.close());

const history = (data: Record<string, unknown>) => h.post('/v2/auth/access/history', { organizationId: 'o', ...data }, t.headers);

test('a page of access/history reads about as much for a history four times as long', async () => {
  const SHORT = 25;
  for (const u of range(SHORT, (i) => `s${String(i).padStart(3, '0')}`)) await grant(u, 'short');
  for (const u of range(4 * SHORT, (i) => `l${String(i).padStart(3, '0')}`)) await grant(u, 'long');
  const firstPage = async (documentId: string) => {
    const before = reads;
    const r = await history({ documentId, pageSize: 5 });
    assert.is(r.status, 200, JSON.stringify(r.body));
    assert.is(r.body.result.data.length, 5);
    assert.ok(r.body.result.pageToken, 'more pages follow');
    return { reads: reads - before, page: r.body.result };
  };
  const short = await firstPage('short');
  const long = await firstPage('long');
  assert.ok(long.reads < 2 * short.reads, `the first page of ${4 * SHORT} instants read ${long.reads}, of ${SHORT} instants ${short.reads}`);

  // And paging through the long history gives each interval once, in (from, userId) order,
  // every page bounded alike.
  const all: Array<{ userId: string; from: number }> = [...long.page.data];
  let token: string | undefined = long.page.pageToken;
  let worst = 0;
  while (token) {
    const before = reads;
    const r = await history({ documentId: 'long', pageSize: 5, pageToken: token });
    assert.is(r.status, 200, JSON.stringify(r.body));
    worst = Math.max(worst, reads - before);
    all.push(...r.body.result.data);
    token = r.body.result.pageToken;
  }
  assert.is(all.length, 4 * SHORT);
  assert.equal(all.map((iv) => iv.userId), range(4 * SHORT, (i) => `l${String(i).padStart(3, '0')}`));
  assert.ok(worst < 2 * short.reads, `the costliest page of the long history read ${worst}, the short one's first ${short.reads}`);
});

test('the query deadline ends an access/history call with RESOURCE_EXHAUSTED naming it', async () => {
  const h2 = await buildApp({ ...h.services, config: { ...h.services.config, queryDeadlineMs: 500 } }, { logger: false });
  try {
    stepping = true;
    const r = await h2.inject({ method: 'POST', url: '/v2/auth/access/history', payload: { data: { organizationId: 'o', documentId: 'heavy', pageSize: 1000 } }, headers: t.headers });
    stepping = false;
    const body = JSON.parse(r.body);
    assert.is(r.statusCode, 429, r.body.slice(0, 300));
    assert.is(body.error.status, 'RESOURCE_EXHAUSTED');
    assert.match(body.error.message, 'access/history ran past its deadline of 500 ms');
  } finally {
    stepping = false;
    await h2.close();
  }
});

/**
 * The reads and wall time of one whole call on `heavy` (a first page; within its read budget it
 * may end before all the intervals, with a token): the best of two, as a loaded machine only
 * slows one down.
 */
async function heavyBaseline() {
  let best = { reads: Infinity, ms: Infinity, intervals: 0 };
  for (let i = 0; i < 2; i++) {
    const before = reads;
    const t0 = performance.now();
    const r = await history({ documentId: 'heavy', pageSize: 1000 });
    const ms = performance.now() - t0;
    assert.is(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    assert.ok(r.body.result.data.length > 0, 'intervals');
    if (ms < best.ms) best = { reads: reads - before, ms, intervals: r.body.result.data.length };
  }
  return best;
}

/** Resolves once no history read happened for 50 turns of the event loop in a row: the work has ended. */
async function settled() {
  let last = reads;
  for (let still = 0; still < 50;) {
    await new Promise((r) => setImmediate(r));
    if (reads === last) still++;
    else [still, last] = [0, reads];
  }
}

test('a client that leaves stops access/history at once', async () => {
  const base = await heavyBaseline();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { port } = h.app.server.address() as AddressInfo;
    const before = reads;
    const body = JSON.stringify({ data: { organizationId: 'o', documentId: 'heavy', pageSize: 1000 } });
    const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/v2/auth/access/history', headers: { ...t.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    const failed = new Promise<void>((resolve) => {
      req.on('error', () => resolve());
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
    });
    req.end(body);
    // The client leaves once the call has done a tenth of its work.
    while (reads - before < base.reads / 10) await new Promise((r) => setImmediate(r));
    req.destroy();
    await failed;
    const atLeave = reads;
    await settled();
    const after = reads - atLeave;
    // The socket's close is seen at the query's next turn given to the event loop (between two
    // chunks of users, or every few thousand reads): a bounded remainder, not the rest of the call.
    assert.ok(after < base.reads / 4, `${after} reads after the client left; the whole call reads ${base.reads}`);
  } finally {
    await h.app.server.close();
  }
});

test('the request timeout ends access/history with RESOURCE_EXHAUSTED naming it', async () => {
  const base = await heavyBaseline();
  const timeoutMs = Math.max(1, Math.floor(base.ms / 4));
  const config = { ...h.services.config, requestTimeoutMs: timeoutMs, headersTimeoutMs: timeoutMs };
  const h2 = await buildApp({ ...h.services, config }, { logger: false });
  try {
    const before = reads;
    const r = await h2.inject({ method: 'POST', url: '/v2/auth/access/history', payload: { data: { organizationId: 'o', documentId: 'heavy', pageSize: 1000 } }, headers: t.headers });
    const body = JSON.parse(r.body);
    assert.is(r.statusCode, 429, `${r.body.slice(0, 300)} (the whole call takes ${base.ms.toFixed(0)} ms, the timeout is ${timeoutMs} ms)`);
    assert.is(body.error.status, 'RESOURCE_EXHAUSTED');
    assert.match(body.error.message, `the request timeout (REQUEST_TIMEOUT_MS) of ${timeoutMs} ms`);
    await settled();
    assert.ok(reads - before < base.reads, `${reads - before} reads; the whole call reads ${base.reads}`);
  } finally {
    await h2.close();
  }
});

test.run();
