/**
 * History and audit retention (HISTORY_RETENTION_DAYS, AUDIT_RETENTION_DAYS; src/jobs/retention.ts).
 * Two services live through the same history on one test clock: `kept` without retention
 * (the default: nothing is ever deleted) and `pruned` keeping 30 days of both. After 45 days:
 * - the pruned history holds exactly the kept one's versions that were open or closed at or
 *   after the horizon (now - 30 days), and its audit exactly the kept one's entries from then;
 * - access questions as of any instant from the horizon on answer alike, access/history
 *   alike but for intervals open at the horizon, shown from it; an instant or range before
 *   the horizon is refused naming it and the setting;
 * - without retention the job deletes nothing;
 * - the job runs by itself, and a rebuild (which replays the whole log) ends pruned too.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { NOW } from './support/time.js';
import { HISTORIZED } from '../projections/history-access.js';
import { historyCollection } from '../projections/history.js';
import { AUDIT_EVENTS, AUDIT_SUBJECTS } from '../projections/audit.js';
import { rebuildReadModels } from '../src/ops/rebuild.js';
import { allProjections } from '../projections/index.js';
import type { ReadView } from '../src/ports/read-store.js';

const DAY = 24 * 60 * 60 * 1000;
const RETENTION = { HISTORY_RETENTION_DAYS: '30', AUDIT_RETENTION_DAYS: '30' };
const T1 = NOW + DAY;
const T2 = NOW + 40 * DAY;
const END = NOW + 45 * DAY;
const HORIZON = END - 30 * DAY;

let now = NOW;
const clock = () => now;

interface Side {
  h: Harness;
  t: Tenant;
}
let kept: Side;
let pruned: Side;

const ok = (s: Side, url: string, data: unknown) => s.h.ok(url, data, s.t.headers);
const post = (s: Side, url: string, data: unknown) => s.h.post(url, data, s.t.headers);
const grant = (userId: string, documentId: string, accessRole: string) => ({ userId, permissions: { resources: [{ type: 'document', id: documentId, organizationId: 'o', accessRole }] } });

/** The history both sides live through: changes on day 0 and day 1 (before the horizon), day 40 (after). */
async function live(s: Side) {
  now = NOW;
  await ok(s, '/v2/organizations/add', { organizations: [{ organizationId: 'o', organizationName: 'O' }] });
  await ok(s, '/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'd1', accessType: 'restricted' }, { documentId: 'd2', accessType: 'restricted' }] });
  await ok(s, '/v2/auth/permissions/add', grant('u1', 'd1', 'editor'));
  await ok(s, '/v2/auth/permissions/add', grant('u2', 'd2', 'viewer'));
  now = T1;
  await ok(s, '/v2/organizations/documents/update', { organizationId: 'o', documents: [{ documentId: 'd1', documentName: 'D1 renamed' }] });
  await ok(s, '/v2/auth/permissions/add', grant('u1', 'd1', 'viewer'));
  await ok(s, '/v2/auth/permissions/remove', { userId: 'u2', permissions: { resources: [{ type: 'document', id: 'd2', organizationId: 'o' }] } });
  now = T2;
  await ok(s, '/v2/organizations/documents/update', { organizationId: 'o', documents: [{ documentId: 'd2', documentName: 'D2 renamed' }] });
  await ok(s, '/v2/auth/permissions/add', grant('u3', 'd1', 'editor'));
  await ok(s, '/v2/auth/permissions/add', grant('u1', 'd1', 'editor'));
  now = END;
}

/** Every version of every history collection, without its keys (the sides' API keys differ): collection, from, to, open. */
async function versions(read: ReadView): Promise<string[]> {
  const out: string[] = [];
  for (const c of HISTORIZED) {
    for (const v of await read.find(historyCollection(c), {})) out.push(`${c} ${v.validFrom} ${v.validTo} ${v.open}`);
  }
  return out.sort();
}

const before = (line: string) => {
  const to = line.split(' ')[2];
  return to !== 'null' && Number(to) < HORIZON;
};

/** The key's audit entries, all pages, as type@time (with a subject filter when given). */
async function audit(s: Side, filter: Record<string, string> = {}): Promise<string[]> {
  const out: string[] = [];
  let pageToken: string | undefined;
  do {
    const r = await ok(s, '/v2/audit/events/get', { ...filter, pageSize: 1000, ...(pageToken ? { pageToken } : {}) });
    for (const e of r.data) out.push(`${e.type}@${e.time}`);
    pageToken = r.pageToken;
  } while (pageToken);
  return out;
}

test.before(async () => {
  kept = { h: await harness({}, { clock }), t: undefined as unknown as Tenant };
  pruned = { h: await harness(RETENTION, { clock }), t: undefined as unknown as Tenant };
  now = NOW;
  kept.t = await kept.h.tenant();
  pruned.t = await pruned.h.tenant();
  await live(kept);
  await live(pruned);
  // Change tokens taken before the job runs: the oldest change, and the first within the horizon.
  const { changes } = (await ok(pruned, '/v2/changes/get', { pageSize: 1000 })).data;
  oldToken = changes[0].token;
  recentToken = changes.find((c: { time: number }) => c.time >= HORIZON).token;
});
let oldToken: string;
let recentToken: string;
test.after(async () => {
  await kept.h.close();
  await pruned.h.close();
});

test('versions closed before the horizon and older audit entries are deleted; the rest stays', async () => {
  const all = await versions(kept.h.services.read);
  assert.ok(all.some(before), 'the history has versions closed before the horizon');
  assert.ok(all.some((l) => !before(l) && l.endsWith('false')), 'and versions closed after it');
  const r = await pruned.h.services.retention.prune();
  assert.ok(r.history > 0 && r.audit > 0, JSON.stringify(r));
  assert.equal(await versions(pruned.h.services.read), all.filter((l) => !before(l)));
  // Open versions stay, documents' in their live rows.
  const docs = await pruned.h.services.read.find('documents', {});
  assert.equal(docs.map((d) => d.validFrom).sort(), [T1, T2]);

  const keptAudit = await audit(kept);
  const recent = keptAudit.filter((e) => Number(e.split('@')[1]) >= HORIZON);
  assert.ok(recent.length > 0 && recent.length < keptAudit.length, JSON.stringify(keptAudit));
  assert.equal(await audit(pruned), recent);
  const keptD1 = await audit(kept, { organizationId: 'o', documentId: 'd1' });
  assert.equal(await audit(pruned, { organizationId: 'o', documentId: 'd1' }), keptD1.filter((e) => Number(e.split('@')[1]) >= HORIZON));
  // No subject row outlives its entry.
  const [first] = await pruned.h.services.read.find(AUDIT_EVENTS, {}, { limit: 1 });
  const subjects = await pruned.h.services.read.find(AUDIT_SUBJECTS, {});
  assert.ok(subjects.every((s) => (s.position as string) >= first!._id), 'subject rows of deleted entries are deleted');
  // A second run finds nothing more.
  assert.equal(await pruned.h.services.retention.prune(), { history: 0, audit: 0 });
});

test('the change feed refuses to go on over deleted changes, and goes on from a place after them', async () => {
  assert.is((await post(kept, '/v2/changes/get', {})).status, 200);
  const advice = 'Start again from a recent token (a write\'s x-consistency-token, or the stream\'s since=now).';
  const fromStart = await post(pruned, '/v2/changes/get', {});
  assert.is(fromStart.status, 400, JSON.stringify(fromStart.body));
  assert.match(fromStart.body.error.message, 'The changes from the start are no longer all kept: the audit retention (AUDIT_RETENTION_DAYS) deleted those up to ');
  assert.ok(fromStart.body.error.message.endsWith(advice), fromStart.body.error.message);
  const old = await post(pruned, '/v2/changes/get', { since: oldToken });
  assert.is(old.status, 400);
  assert.match(old.body.error.message, 'The changes after data.since are no longer all kept');
  const stream = await pruned.h.app.inject({ method: 'GET', url: `/v2/changes/stream?since=${encodeURIComponent(oldToken)}`, headers: pruned.t.headers });
  assert.is(stream.statusCode, 400, stream.body);
  assert.match(JSON.parse(stream.body).error.message, 'The changes after since are no longer all kept');
  // From a change the job kept, the feed goes on, with what the kept side shows after the same change.
  const recent = (await ok(pruned, '/v2/changes/get', { since: recentToken, pageSize: 1000 })).data;
  const all = (await ok(kept, '/v2/changes/get', { pageSize: 1000 })).data.changes as Array<{ type: string; time: number }>;
  const after = all.slice(all.findIndex((c) => c.time >= HORIZON) + 1);
  assert.equal(recent.changes.map((c: { type: string; time: number }) => `${c.type}@${c.time}`), after.map((c) => `${c.type}@${c.time}`));
});

test('access questions as of the horizon or later answer as without retention', async () => {
  for (const asOf of [HORIZON, HORIZON + 1, T2 - 1, T2, END]) {
    const ask = { organizationId: 'o', userIds: ['u1', 'u2', 'u3'], documentIds: ['d1', 'd2'], asOf };
    const a = await post(kept, '/v2/auth/permissions/get', ask);
    const b = await post(pruned, '/v2/auth/permissions/get', ask);
    assert.is(a.status, 200, JSON.stringify(a.body));
    assert.equal(b.body, a.body, `permissions/get as of ${asOf}`);
    for (const documentId of ['d1', 'd2']) {
      const q = { organizationId: 'o', documentId, asOf };
      assert.equal((await post(pruned, '/v2/auth/users/get', q)).body, (await post(kept, '/v2/auth/users/get', q)).body, `users/get ${documentId} as of ${asOf}`);
    }
  }
});

test('an asOf before the horizon is refused, naming it and the setting', async () => {
  const ask = { organizationId: 'o', userIds: ['u1'], documentIds: ['d1'], asOf: T1 };
  assert.is((await post(kept, '/v2/auth/permissions/get', ask)).status, 200);
  const expected = `data.asOf is before the history retention horizon (${new Date(HORIZON).toISOString()}): HISTORY_RETENTION_DAYS keeps 30 days.`;
  for (const [url, data] of [
    ['/v2/auth/permissions/get', ask],
    ['/v2/auth/users/get', { organizationId: 'o', documentId: 'd1', asOf: HORIZON - 1 }],
    ['/v2/auth/resources/get', { organizationId: 'o', userId: 'u1', type: 'document', asOf: new Date(T1).toISOString() }],
    ['/v2/auth/permissions/explain', { organizationId: 'o', userId: 'u1', documentId: 'd1', asOf: NOW }],
  ] as const) {
    const r = await post(pruned, url, data);
    assert.is(r.status, 400, `${url}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
    assert.is(r.body.error.message, expected);
  }
});

test('a longer setting, or none, still refuses what was deleted: the horizon deleted up to is recorded', async () => {
  const config = pruned.h.services.config as { historyRetentionDays: number };
  const between = HORIZON - 5 * DAY;
  const ask = { organizationId: 'o', userIds: ['u1'], documentIds: ['d1'], asOf: between };
  try {
    for (const [days, now] of [[60, '60'], [0, 'unset']] as const) {
      config.historyRetentionDays = days;
      const r = await post(pruned, '/v2/auth/permissions/get', ask);
      assert.is(r.status, 400, JSON.stringify(r.body));
      assert.is(
        r.body.error.message,
        `data.asOf is before the history retention horizon (${new Date(HORIZON).toISOString()}): versions that ended before it were deleted under an earlier ` +
          `HISTORY_RETENTION_DAYS (now ${now}); collab projections rebuild --all restores what the setting keeps.`,
      );
      const from = await post(pruned, '/v2/auth/access/history', { organizationId: 'o', documentId: 'd1', from: between });
      assert.is(from.status, 400);
      assert.is((await post(pruned, '/v2/auth/permissions/get', { ...ask, asOf: HORIZON })).status, 200);
    }
  } finally {
    config.historyRetentionDays = 30;
  }
});

test('access/history: a range reaching before the horizon is refused; without one it starts at the horizon', async () => {
  const horizon = new Date(HORIZON).toISOString();
  const from = await post(pruned, '/v2/auth/access/history', { organizationId: 'o', documentId: 'd1', from: NOW });
  assert.is(from.status, 400);
  assert.is(from.body.error.message, `data.from is before the history retention horizon (${horizon}): HISTORY_RETENTION_DAYS keeps 30 days.`);
  const to = await post(pruned, '/v2/auth/access/history', { organizationId: 'o', documentId: 'd1', to: HORIZON });
  assert.is(to.status, 400);
  assert.match(to.body.error.message, 'data.to is before the history retention horizon');

  // The actors name each side's own API key.
  const history = async (s: Side, data: Record<string, unknown>) =>
    JSON.parse(JSON.stringify((await ok(s, '/v2/auth/access/history', { organizationId: 'o', ...data })).data).replaceAll(s.t.apiKey, 'KEY')) as Array<Record<string, any>>;
  for (const documentId of ['d1', 'd2']) {
    const all = await history(kept, { documentId });
    // What retention keeps: every interval still open at the horizon, begun there if it began before.
    const expected = all
      .filter((iv) => iv.to === null || iv.to > HORIZON)
      .map((iv) => (iv.from < HORIZON ? { ...iv, from: HORIZON, openedBy: { type: 'retentionHorizon', time: HORIZON, actor: 'retention' } } : iv));
    const got = await history(pruned, { documentId });
    assert.equal(got, expected, documentId);
    if (documentId === 'd1') assert.ok(all.some((iv) => iv.from < HORIZON && (iv.to === null || iv.to > HORIZON)), 'an interval spans the horizon');
    // A range from the horizon on answers the same.
    assert.equal(await history(pruned, { documentId, from: HORIZON }), expected);
  }
});

test('without retention nothing is deleted', async () => {
  const history = await versions(kept.h.services.read);
  const entries = await audit(kept);
  assert.equal(await kept.h.services.retention.prune(), { history: 0, audit: 0 });
  assert.equal(await versions(kept.h.services.read), history);
  assert.equal(await audit(kept), entries);
  assert.ok(history.some(before) && entries.some((e) => Number(e.split('@')[1]) < HORIZON));
});

test('a rebuild, which replays the whole log, ends pruned as the live read models are', async () => {
  const history = await versions(pruned.h.services.read);
  const entries = await audit(pruned);
  const r = await rebuildReadModels(
    { events: pruned.h.services.events, generations: pruned.h.services.generations, projections: allProjections },
    { retention: pruned.h.services.config, clock },
  );
  assert.is(r.to, r.from + 1);
  assert.equal(await versions(pruned.h.services.read), history);
  assert.equal(await audit(pruned), entries);
});

test('the job runs by itself where the projections are applied', async () => {
  now = NOW;
  const s: Side = { h: await harness(RETENTION, { clock, retentionEveryMs: 20 }), t: undefined as unknown as Tenant };
  try {
    s.t = await s.h.tenant();
    await live(s);
    const gone = async () => !(await versions(s.h.services.read)).some(before) && !(await audit(s)).some((e) => Number(e.split('@')[1]) < HORIZON);
    const deadline = Date.now() + 60_000;
    while (!(await gone())) {
      assert.ok(Date.now() < deadline, 'the job pruned within a minute');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    now = END;
    await s.h.close();
  }
});

test.run();
