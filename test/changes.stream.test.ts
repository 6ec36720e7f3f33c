/**
 * `GET /v2/changes/stream` (issue 36, src/http/routes/changes-stream.ts): changes/get's
 * changes as Server-Sent Events over a real socket (fetch streaming, as a browser reads it):
 * events arriving after writes with changes/get's tokens and shapes, resumed with
 * Last-Event-ID or `since` without gap or duplicate, heartbeats, the per-key bound (429
 * before the stream, freed on close, the open count back to 0), a user token's scope, a
 * stream following writes made through another app on the same store, and the app closing
 * with streams open. Conditions are waited for, never slept on.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, postgresEnv, tempDir, type Harness, type Tenant } from './support/app.js';
import { Writable } from 'node:stream';
import { SseClient } from './support/sse.js';
import { ChangeStream } from '../src/http/routes/changes-stream.js';
import { RequestContext } from '../src/http/context.js';
import { LOG_START } from '../src/ports/event-store.js';
import { waiter } from './support/wait.js';

const STREAM = '/v2/changes/stream';
const until = waiter(15_000, 20);

let h: Harness;
let t: Tenant;
let base: string;
const ok = (url: string, data: unknown, headers = t.headers) => h.ok(url, data, headers);
const open = (query = '', headers: Record<string, string> = t.headers, at = base) => SseClient.open(`${at}${STREAM}${query}`, headers);

/** Every change of changes/get from `since` to the first empty page. */
async function feed(headers: Record<string, string>, data: { since?: string; types?: string[] } = {}, on = h): Promise<any[]> {
  const out: any[] = [];
  let since = data.since;
  for (;;) {
    const r = await on.ok('/v2/changes/get', { ...data, pageSize: 1000, ...(since ? { since } : {}) }, headers);
    since = r.data.nextToken;
    if (r.data.changes.length === 0) return out;
    out.push(...r.data.changes);
  }
}

async function listen(app: Harness): Promise<string> {
  await app.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.app.server.address() as { port: number };
  return `http://127.0.0.1:${addr.port}`;
}

/** The env of a store two harnesses share. */
async function sharedStore(): Promise<Record<string, string>> {
  return process.env.TEST_STORE === 'postgres' ? postgresEnv() : { DATA_DIR: tempDir() };
}

test.before(async () => {
  h = await harness({ CHANGES_STREAM_HEARTBEAT_MS: '100' });
  t = await h.tenant();
  base = await listen(h);
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'o', organizationName: 'O' }] });
});
test.after(async () => h.close());

test('events arrive after writes, each with its change token as id and the change as changes/get shows it', async () => {
  const s = await open();
  try {
    assert.is(s.status, 200);
    assert.match(s.headers.get('content-type') ?? '', /^text\/event-stream/);
    await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'live-1' }] });
    await ok('/v2/users/add', { organizationId: 'o', users: [{ userId: 'ann', name: 'Ann Live', email: 'ann@example.org' }] });
    const all = await feed(t.headers);
    await until('every change on the stream', () => s.changes.length >= all.length);
    assert.equal(s.changes.map((e) => e.data), all, 'the same changes, shaped alike, in log order');
    assert.equal(s.changes.map((e) => e.id), all.map((c) => c.token), 'ids are the change tokens');
    assert.ok(all.some((c) => c.type === 'DocumentAdded' && c.resourceId === 'live-1'));
    assert.ok(all.some((c) => c.type === 'UserAdded' && c.data.name === 'Ann Live'), 'a live user\'s name, as changes/get shows it');
  } finally {
    await s.close();
  }
});

test('heartbeats: a comment line every CHANGES_STREAM_HEARTBEAT_MS while nothing happens', async () => {
  const s = await open();
  try {
    await until('two heartbeats', () => s.comments.filter((c) => c === 'heartbeat').length >= 2, 5000);
  } finally {
    await s.close();
  }
});

test('cut at any point and resumed with Last-Event-ID: nothing lost, nothing repeated; `since` and `types` as in changes/get', async () => {
  for (let i = 0; i < 30; i++) await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: `r-${i}` }] });
  const all = await feed(t.headers);
  const got: any[] = [];
  let last: string | undefined;
  // Cut after a few events each time, writing between the cuts.
  for (let round = 0; round < 4; round++) {
    const s = await open('', last ? { ...t.headers, 'last-event-id': last } : t.headers);
    const want = got.length + 7;
    await until(`round ${round}'s events`, () => got.length + s.changes.length >= Math.min(want, all.length));
    await s.close();
    got.push(...s.changes.map((e) => e.data));
    last = s.changes.at(-1)?.id ?? last;
    await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: `cut-${round}` }] });
  }
  const s = await open('', { ...t.headers, 'last-event-id': last! });
  const everything = await feed(t.headers);
  try {
    await until('the rest', () => got.length + s.changes.length >= everything.length);
  } finally {
    await s.close();
  }
  got.push(...s.changes.map((e) => e.data));
  assert.equal(got.map((c) => c.token), everything.map((c) => c.token), 'each change exactly once, in log order');

  // `since` in the query: strictly after that token; `types` keeps those families only.
  const mid = everything[10].token;
  const after = await open(`?since=${encodeURIComponent(mid)}&types=document,grant`);
  const expected = await feed(t.headers, { since: mid, types: ['document', 'grant'] });
  try {
    await until('the filtered rest', () => after.changes.length >= expected.length);
  } finally {
    await after.close();
  }
  assert.equal(after.changes.map((e) => e.data), expected);
  assert.ok(expected.every((c) => c.family === 'document' || c.family === 'grant'));
});

test('since=now: only what is applied after it opens; its first id alone marks the place, and resumes there without a gap', async () => {
  const s = await open('?since=now');
  let place: string;
  try {
    await until('the place', () => s.ids.length === 1);
    place = s.ids[0]!;
    await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'after-now' }] });
    await until('the new change', () => s.changes.length >= 1);
    assert.equal(s.changes.map((e) => e.data.resourceId), ['after-now'], 'nothing from before');
  } finally {
    await s.close();
  }
  // A reconnection with that place, and a write meanwhile: the write, then the one after.
  await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'while-away' }] });
  const again = await open('', { ...t.headers, 'last-event-id': place });
  try {
    await until('both', () => again.changes.length >= 2);
    assert.equal(again.changes.map((e) => e.data.resourceId), ['after-now', 'while-away']);
  } finally {
    await again.close();
  }
});

test('refusals before the stream starts, in the failure envelope: a foreign or changed token, an unknown family, no credentials', async () => {
  const other = await h.tenant();
  await h.ok('/v2/organizations/add', { organizations: [{ organizationId: 'x' }] }, other.headers);
  const [foreign] = await feed(other.headers);
  const cases: Array<[string, Record<string, string>, number, string, RegExp]> = [
    ['another key\'s token', { ...t.headers, 'last-event-id': foreign.token }, 400, 'INVALID_ARGUMENT', /Last-Event-ID header is not a consistency or change token of this caller/],
    ['a made-up since', t.headers, 400, 'INVALID_ARGUMENT', /since is not a consistency or change token/],
    ['an unknown family', t.headers, 400, 'INVALID_ARGUMENT', /types must list families of change/],
    ['no credentials', {}, 401, 'UNAUTHENTICATED', /Missing authentication header/],
  ];
  const queries = ['', '?since=nope', '?types=grant,nope', ''];
  for (const [i, [what, headers, http, status, message]] of cases.entries()) {
    const r = await h.app.inject({ method: 'GET', url: `${STREAM}${queries[i]}`, headers });
    assert.is(r.statusCode, http, what);
    const body = JSON.parse(r.body);
    assert.is(body.error.status, status, what);
    assert.match(body.error.message, message, what);
  }
  assert.is(h.app.changeStreams.open, 0, 'no refused request holds a place');
});

test('another key\'s changes never appear', async () => {
  const other = await h.tenant();
  const s = await open();
  try {
    await h.ok('/v2/organizations/add', { organizations: [{ organizationId: 'elsewhere' }] }, other.headers);
    await ok('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'mine-after-other' }] });
    await until('this key\'s change', () => s.changes.some((e) => e.data.resourceId === 'mine-after-other'));
    assert.not.ok(s.changes.some((e) => e.data.organizationId === 'elsewhere'));
  } finally {
    await s.close();
  }
});

test('at most CHANGES_STREAM_MAX_PER_TENANT streams per key: 429 RESOURCE_EXHAUSTED before the stream; closing one frees its place; the count returns to 0', async () => {
  const bounded = await harness({ CHANGES_STREAM_MAX_PER_TENANT: '2' });
  try {
    const url = await listen(bounded);
    const a = await bounded.tenant();
    const b = await bounded.tenant();
    const one = await open('', a.headers, url);
    const two = await open('', a.headers, url);
    assert.is(bounded.app.changeStreams.openFor(a.apiKey), 2);
    const third = await open('', a.headers, url);
    assert.is(third.status, 429);
    assert.is(third.body.error.status, 'RESOURCE_EXHAUSTED');
    assert.match(third.body.error.message, /CHANGES_STREAM_MAX_PER_TENANT = 2/);
    // Another key has places of its own.
    const others = await open('', b.headers, url);
    assert.is(others.status, 200);
    await one.close();
    await until('the closed stream\'s place freed', () => bounded.app.changeStreams.openFor(a.apiKey) === 1);
    const again = await open('', a.headers, url);
    assert.is(again.status, 200, 'a place again');
    await Promise.all([two.close(), others.close(), again.close()]);
    await until('every stream closed on the server', () => bounded.app.changeStreams.open === 0);
    const metrics = (await bounded.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, /^collab_change_streams_open 0$/m);
    assert.match(metrics, /^collab_change_streams_ended_total\{reason="client"\} 4$/m, 'four streams ended by their readers');
    // fetch (undici) opens a spare connection when a streaming one is aborted, and a connection
    // that never sent a request is not idle to Node's closeIdleConnections: fastify's close
    // would wait CONNECTION_TIMEOUT_MS for it. Not a stream's doing (none is open, checked above).
    bounded.app.server.closeAllConnections();
  } finally {
    await bounded.close();
  }
});

test('the rate limit applies to opening a stream, before the stream\'s own bound', async () => {
  const limited = await harness({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1' });
  try {
    const url = await listen(limited);
    const a = await limited.tenant();
    const first = await open('', a.headers, url);
    assert.is(first.status, 200);
    const second = await open('', a.headers, url);
    assert.is(second.status, 429);
    assert.is(second.body.error.status, 'RESOURCE_EXHAUSTED');
    assert.not.match(second.body.error.message, /CHANGES_STREAM_MAX_PER_TENANT/, 'the rate limit refused it');
    assert.ok(second.headers.get('retry-after'));
    assert.is(limited.app.changeStreams.openFor(a.apiKey), 1, 'the refused one took no place');
    await first.close();
    await until('closed', () => limited.app.changeStreams.open === 0);
    limited.app.server.closeAllConnections();
  } finally {
    await limited.close();
  }
});

test('a user token sees its own grant and revocation, a group grant reaching it, changes to documents it can open; not others\' grants nor documents it cannot open', async () => {
  await ok('/v2/organizations/documents/add', {
    organizationId: 'o',
    documents: [{ documentId: 'open-doc', accessType: 'restricted' }, { documentId: 'closed-doc', accessType: 'restricted' }, { documentId: 'group-doc', accessType: 'restricted' }],
  });
  await ok('/v2/users/add', { organizationId: 'o', users: [{ userId: 'reader' }, { userId: 'stranger' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'team', groupName: 'Team' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'team', userIds: ['reader'] });
  const token = (await ok('/v2/auth/generate_token', { userId: 'reader', userProperties: { name: 'Reader', email: 'reader@example.org' } })).data.token;
  const bearer = { authorization: `Bearer ${token}` };
  const doc = (id: string) => ({ type: 'document', id, organizationId: 'o' });
  const s = await open('', bearer);
  try {
    assert.is(s.status, 200);
    await ok('/v2/auth/permissions/add', { userId: 'reader', permissions: { resources: [{ ...doc('open-doc'), accessRole: 'editor' }] } });
    await ok('/v2/auth/permissions/add', { userId: 'stranger', permissions: { resources: [{ ...doc('closed-doc'), accessRole: 'editor' }] } });
    await ok('/v2/organizations/documents/update', { organizationId: 'o', documents: [{ documentId: 'closed-doc', documentName: 'Secret plans' }] });
    await ok('/v2/organizations/documents/update', { organizationId: 'o', documents: [{ documentId: 'open-doc', documentName: 'Shared notes' }] });
    await ok('/v2/auth/permissions/add', { group: { groupId: 'team' }, permissions: { resources: [{ ...doc('group-doc'), accessRole: 'viewer' }] } });
    await ok('/v2/auth/permissions/remove', { userId: 'reader', permissions: { resources: [doc('open-doc')] } });
    const started = Date.now();
    const seen = (pred: (c: any) => boolean) => s.changes.some((e) => pred(e.data));
    await until('the user\'s own revocation', () => seen((c) => c.type === 'GrantRevoked' && c.data.userId === 'reader'));
    const within = Date.now() - started;
    const shown = s.changes.map((e) => e.data);
    assert.ok(shown.some((c) => c.type === 'GrantAdded' && c.data.userId === 'reader' && c.resourceId === 'open-doc'), 'its own grant');
    assert.ok(shown.some((c) => c.type === 'GroupAccessGranted' && c.resourceId === 'group-doc'), 'a grant to its group');
    assert.ok(shown.some((c) => c.type === 'DocumentRenamed' && c.resourceId === 'open-doc'), 'a change to a document it can open');
    assert.ok(shown.some((c) => c.type === 'UserGroupMemberAdded' && c.data.userId === 'reader'), 'its group membership (an earlier change, from the start)');
    assert.ok(shown.some((c) => c.type === 'GrantAdded' && c.resourceType === 'organization' && c.data.userId === 'reader'), 'its organization membership');
    assert.not.ok(shown.some((c) => c.data.userId === 'stranger'), 'another user\'s grant or membership');
    assert.not.ok(shown.some((c) => c.resourceId === 'closed-doc'), 'a document it cannot open');
    assert.not.ok(shown.some((c) => c.family === 'apiKey' || c.family === 'agent' || c.family === 'webhook'), 'the key\'s own settings');
    // Everything shown is in the key's feed, with the same token, in log order.
    const all = await feed(t.headers);
    const index = new Map(all.map((c, i) => [c.token, i]));
    const at = shown.map((c) => index.get(c.token));
    assert.ok(at.every((i) => i !== undefined), 'every event is a change of the key\'s feed');
    assert.equal(at, [...at].sort((x, y) => x! - y!), 'in log order');
    assert.ok(within < 10_000, `revocation seen ${within} ms after it was answered`);
  } finally {
    await s.close();
  }
  // Deleting a document the user could open shows (judged just before the change).
  const again = await open('', bearer);
  try {
    await ok('/v2/auth/permissions/add', { userId: 'reader', permissions: { resources: [{ ...doc('open-doc'), accessRole: 'viewer' }] } });
    await ok('/v2/organizations/documents/delete', { organizationId: 'o', documentIds: ['open-doc'] });
    await until('the deletion of a document it could open', () => again.changes.some((e) => e.data.type === 'DocumentDeleted' && e.data.resourceId === 'open-doc'));
  } finally {
    await again.close();
  }
  await until('the streams closed on the server', () => h.app.changeStreams.open === 0);
});

test('a user token: its organization deleted shows, with its own membership revoked by the cascade; never another member\'s', async () => {
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'doomed' }] });
  await ok('/v2/users/add', { organizationId: 'doomed', users: [{ userId: 'member' }, { userId: 'other-member' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'doomed', organizationUserGroups: [{ groupId: 'crew', groupName: 'Crew' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'doomed', organizationUserGroupId: 'crew', userIds: ['member', 'other-member'] });
  const token = (await ok('/v2/auth/generate_token', { userId: 'member', userProperties: { name: 'Member', email: 'member@example.org' } })).data.token;
  const s = await open('?since=now', { authorization: `Bearer ${token}` });
  try {
    await until('the place', () => s.ids.length === 1);
    await ok('/v2/organizations/delete', { organizationIds: ['doomed'] });
    await until('the organization deleted and the user\'s membership revoked', () => s.changes.some((e) => e.data.type === 'GrantRevoked' && e.data.data.userId === 'member'));
    assert.ok(s.changes.some((e) => e.data.type === 'OrganizationDeleted' && e.data.organizationId === 'doomed'));
    assert.not.ok(s.changes.some((e) => e.data.data.userId === 'other-member'), 'not another member\'s leaving');
  } finally {
    await s.close();
  }
});

test('follows writes made through another app on the same store', async () => {
  const store = await sharedStore();
  // The writer never applies the projections and answers at once: only the reader's app applies.
  const writer = await harness({ ...store, READ_YOUR_WRITES_TIMEOUT_MS: '0' }, { follow: false });
  const reader = await harness(store);
  try {
    const url = await listen(reader);
    const tw = await writer.tenant();
    // The new key's credentials are read from the read models the reader applies.
    await until('the key applied', async () => (await reader.post('/v2/organizations/get', {}, tw.headers)).status === 200);
    const s = await open('', tw.headers, url);
    try {
      for (let i = 0; i < 5; i++) await writer.ok('/v2/organizations/add', { organizations: [{ organizationId: `via-writer-${i}` }] }, tw.headers);
      await until('the writer\'s changes on the reader\'s stream', () => s.changes.filter((e) => /^via-writer-/.test(e.data.resourceId ?? '')).length === 5);
      assert.equal(s.changes.map((e) => e.data.resourceId).filter((id) => /^via-writer-/.test(id ?? '')), [0, 1, 2, 3, 4].map((i) => `via-writer-${i}`), 'in the order written');
    } finally {
      await s.close();
    }
  } finally {
    await reader.close();
    await writer.close();
  }
});

/**
 * A socket whose reader stops after `budget` bytes: writes past it stay in the Writable's
 * buffer (highWaterMark 4 KiB), as they do in a socket's when the peer does not read, until
 * `resume()`.
 */
function slowSocket(budget: number) {
  let taken = 0;
  let held: Array<() => void> = [];
  let text = '';
  const socket = new Writable({
    highWaterMark: 4096,
    write(chunk: Buffer, _enc, callback) {
      text += chunk.toString();
      taken += chunk.length;
      if (taken <= budget) callback();
      else held.push(callback);
    },
  });
  return {
    socket,
    received: () => text,
    resume() {
      taken = -Infinity;
      const h = held;
      held = [];
      for (const c of h) c();
    },
  };
}

const eventsIn = (text: string) =>
  text.split('\n\n').filter((b) => b.includes('data: ')).map((b) => ({
    id: /^id: (.*)$/m.exec(b)?.[1],
    event: /^event: (.*)$/m.exec(b)![1],
    data: JSON.parse(/^data: (.*)$/m.exec(b)![1]!),
  }));

test('a slow reader: reads stop while its socket is full (what it holds stays bounded), it goes on once it drains, and one stalled past CHANGES_STREAM_STALL_MS is ended saying where to resume', async () => {
  const slow = await harness({ CHANGES_STREAM_STALL_MS: '300' });
  try {
    const ts = await slow.tenant();
    await slow.ok('/v2/organizations/add', { organizations: [{ organizationId: 's' }] }, ts.headers);
    for (let i = 0; i < 6; i++) {
      await slow.ok('/v2/organizations/documents/add', { organizationId: 's', documents: Array.from({ length: 50 }, (_, j) => ({ documentId: `doc-${i}-${j}`, documentName: 'x'.repeat(200) })) }, ts.headers);
    }
    const all = await feed(ts.headers, {}, slow);
    assert.ok(all.length > 300);
    const start = (socket: Writable) => {
      const ctx = new RequestContext(slow.services, 'slow', slow.services.clock(), { info() {}, warn() {}, error() {} }, `apikey:${ts.apiKey}`, { apiKey: ts.apiKey, workspaceId: ts.workspaceId, type: 'testing' });
      const stream = new ChangeStream({ services: slow.services, ctx, res: socket as any, apiKey: ts.apiKey, userId: undefined, families: undefined, cursor: LOG_START, lastId: undefined, log: slow.app.log });
      return { stream, ran: stream.run() };
    };

    // Drains in time: every change arrives.
    const patient = slowSocket(8192);
    const p = start(patient.socket);
    await until('the socket full', () => patient.socket.writableNeedDrain);
    const before = eventsIn(patient.received()).length;
    assert.ok(before < all.length, 'it stopped before the end');
    patient.resume();
    await until('every change once it drains', () => eventsIn(patient.received()).length === all.length);
    assert.equal(eventsIn(patient.received()).map((e) => e.id), all.map((c) => c.token));
    await p.stream.end('shutdown');
    await p.ran;

    // Never drains: ended after the stall, with where to resume; nothing lost from there.
    const stuck = slowSocket(8192);
    const q = start(stuck.socket);
    await until('the socket full', () => stuck.socket.writableNeedDrain);
    // While full it reads nothing more: what is queued stays within one event past the buffer.
    const queued = stuck.socket.writableLength;
    assert.ok(queued < 4096 + 2048, `queued ${queued} bytes`);
    const closed = new Promise((r) => stuck.socket.once('close', r));
    await q.ran;
    // The reader reads again within the grace the final event has.
    stuck.resume();
    await closed;
    const got = eventsIn(stuck.received());
    const end = got.at(-1)!;
    assert.is(end.event, 'end');
    assert.is(end.data.reason, 'slow-reader');
    assert.match(end.data.message, /CHANGES_STREAM_STALL_MS/);
    const changes = got.filter((e) => e.event === 'change');
    assert.is(end.data.lastEventId, changes.at(-1)!.id, 'the last change written');
    const rest = await feed(ts.headers, { since: end.data.lastEventId }, slow);
    assert.equal([...changes.map((e) => e.id), ...rest.map((c) => c.token)], all.map((c) => c.token), 'resumed from there: no gap, no duplicate');
  } finally {
    await slow.close();
  }
});

test('after users/data/delete, a stream from the start never shows the erased name (the change stays, by id)', async () => {
  await ok('/v2/users/add', { organizationId: 'o', users: [{ userId: 'erased', name: 'Quirinus Vanish', email: 'quirinus@example.org' }] });
  const before = await open();
  try {
    await until('the user\'s change with its name', () => before.changes.some((e) => e.data.type === 'UserAdded' && e.data.data.name === 'Quirinus Vanish'));
  } finally {
    await before.close();
  }
  await ok('/v2/users/data/delete', { userIds: ['erased'] });
  const after = await open();
  try {
    await until('the erasure on the stream', () => after.changes.some((e) => e.data.type === 'UserErased' && e.data.data.userId === 'erased'));
  } finally {
    await after.close();
  }
  const text = JSON.stringify(after.events);
  for (const s of ['Quirinus', 'Vanish', 'quirinus@example.org']) assert.not.ok(text.includes(s), `${s} is gone from the stream`);
  assert.ok(after.changes.some((e) => e.data.type === 'UserAdded' && e.data.data.userId === 'erased'), 'the change itself stays');
});

test('credentials that stop authenticating end the stream (checked with every heartbeat), saying where to resume', async () => {
  const tr = await h.tenant();
  await h.ok('/v2/organizations/add', { organizations: [{ organizationId: 'r' }] }, tr.headers);
  const s = await open('', tr.headers);
  try {
    await until('the first change', () => s.changes.length > 0);
    await h.ok('/v2/workspace/authtoken/reset', { apiKey: tr.apiKey }, tr.workspaceHeaders);
    await s.ended;
    const end = s.events.at(-1)!;
    assert.is(end.event, 'end');
    assert.is(end.data.reason, 'unauthenticated');
    assert.is(end.data.lastEventId, s.changes.at(-1)!.id);
  } finally {
    await s.close();
  }
  await until('its place freed', () => h.app.changeStreams.openFor(tr.apiKey) === 0);
});

test('the OpenAPI document describes the stream: GET, text/event-stream, since, types and Last-Event-ID, both credentials, 429', async () => {
  const doc = JSON.parse((await h.app.inject({ method: 'GET', url: '/openapi.json' })).body);
  const op = doc.paths[STREAM].get;
  assert.ok(op, 'documented as GET');
  assert.equal(Object.keys(doc.paths[STREAM]), ['get'], 'no HEAD, no POST');
  assert.ok(op.responses['200'].content['text/event-stream']);
  assert.equal(op.parameters.map((p: any) => `${p.in}:${p.name}`).sort(), ['header:last-event-id', 'query:since', 'query:types']);
  assert.equal(op.security, [{ apiKey: [], authToken: [] }, { userToken: [] }]);
  assert.match(op.responses['429'].description, /CHANGES_STREAM_MAX_PER_TENANT/);
  const head = await h.app.inject({ method: 'HEAD', url: STREAM, headers: t.headers });
  assert.is(head.statusCode, 404, 'HEAD is no stream');
});

test('the app closes with streams open: each gets a final event saying why, and close does not wait on them', async () => {
  const closing = await harness();
  const url = await listen(closing);
  const tc = await closing.tenant();
  await closing.ok('/v2/organizations/add', { organizations: [{ organizationId: 'c' }] }, tc.headers);
  const streams = await Promise.all([open('', tc.headers, url), open('', tc.headers, url)]);
  await until('both streams caught up', () => streams.every((s) => s.changes.length > 0));
  const started = Date.now();
  await closing.close();
  assert.ok(Date.now() - started < 5000, `close took ${Date.now() - started} ms`);
  for (const s of streams) {
    await s.ended;
    const end = s.events.at(-1)!;
    assert.is(end.event, 'end');
    assert.is(end.data.reason, 'shutdown');
    assert.is(end.data.lastEventId, s.changes.at(-1)!.id, 'where to resume');
    assert.match(end.data.message, /Last-Event-ID/);
  }
  assert.is(closing.app.changeStreams.open, 0);
});

test.run();
