/**
 * Webhook signatures (Standard Webhooks test vector), triggers, payload redaction; the
 * sender's per-endpoint scheduling, its turns across workspaces and keys, and the retention
 * sweep on an in-memory store; the webhook configuration variables.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { signPayload, verifySignature } from '../src/webhooks/signature.js';
import { triggerOf } from '../src/webhooks/triggers.js';
import { processedPayload, rawPayload } from '../src/webhooks/payloads.js';
import { streamName, key } from '../src/shared/ids.js';
import type { RecordedEvent } from '../src/ports/event-store.js';
import type { ReadStore } from '../src/ports/read-store.js';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { CommandHandler } from '../src/runtime/command-handler.js';
import { WebhookDeliverer, type WebhookOptions } from '../src/webhooks/deliverer.js';
import { DELIVERIES, ENDPOINT_STATE, KEY_STATE, METRIC_WORKSPACES, WORKSPACE_STATE, endpointStateId, webhookHealth, type DeliveryDoc, type EndpointStateDoc, type KeyStateDoc, type WorkspaceStateDoc } from '../src/webhooks/outbox.js';
import { ConfigError, loadConfig } from '../src/config/config.js';
import type { Lease } from '../src/runtime/lease.js';

const U = suite('webhooks: signatures, triggers, payloads');

U('the Standard Webhooks reference vector signs and verifies', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const sig = signPayload(secret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
  assert.is(sig, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  const h = { id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: '1614265330', signature: `v1,bogus ${sig}` };
  assert.ok(verifySignature(secret, h, '{"test": 2432232314}', 1614265330));
  assert.not.ok(verifySignature(secret, h, '{"test": 2432232314}', 1614265330 + 3600), 'stale timestamp');
  assert.not.ok(verifySignature('whsec_other', h, '{"test": 2432232314}', 1614265330), 'other secret');
  // A plain token is used as UTF-8 bytes.
  assert.match(signPayload('plain-token', 'id', 1, 'b'), /^v1,[A-Za-z0-9+/]+=*$/);
});

U('triggers: areas from stream categories; workspace events are never delivered', () => {
  assert.is(triggerOf(streamName('workspace', 'w')), null);
  assert.is(triggerOf(streamName('advancedWebhooks', 'k')), null, 'a key\'s own webhook settings are never delivered');
  assert.is(triggerOf(streamName('agent', 'k', 'a')), 'agent');
  assert.is(triggerOf(streamName('agentGroup', 'k', 'g')), 'agent');
  assert.is(triggerOf(streamName('organization', 'k', 'o')), 'organization');
  assert.is(triggerOf(streamName('document', 'k', 'o', 'd')), 'document');
  assert.is(triggerOf(streamName('grants', 'k', 'o', 'u')), 'user');
  assert.is(triggerOf(streamName('userGroup', 'k', 'o', 'g')), 'group');
  assert.is(triggerOf(streamName('somethingNew', 'k')), 'other');
});

U('payloads redact secrets; processed reads like a sentence', () => {
  const e: RecordedEvent = {
    id: 'e1', stream: streamName('document', 'k', 'org', 'd1'), revision: 3, position: '9', type: 'DocumentAdded',
    data: { organizationId: 'org', documentId: 'd1', documentName: 'Plan', nested: { authToken: 'shh' } },
    metadata: { requestId: 'r', actor: 'apikey:k', time: 5, apiKey: 'k' },
  };
  const raw = rawPayload(e);
  assert.equal(raw.stream, { category: 'document', ids: ['org', 'd1'] });
  assert.equal((raw.data as any).nested, { authToken: '__redacted__' });
  const p = processedPayload(e);
  assert.is(p.message, 'Document added: "Plan" (d1) in organization org.');
  assert.equal(p.resource, { organizationId: 'org', documentId: 'd1' });
});

U.run();

const DAY = 24 * 60 * 60 * 1000;

/** An outbox document as the follow loop writes it (`head` left out: as queued by the previous version). */
function delivery(apiKey: string, n: number, stream: string, set: Partial<DeliveryDoc> = {}): DeliveryDoc {
  const webhookId = `e${n}_raw`;
  return {
    _id: key(apiKey, webhookId),
    apiKey,
    workspaceId: `ws-${apiKey}`,
    webhookId,
    endpoint: 'raw',
    eventId: `e${n}`,
    eventType: 'AgentCreated',
    stream,
    position: String(n).padStart(12, '0'),
    url: 'http://127.0.0.1:9/raw',
    body: '{}',
    status: 'pending',
    attempts: [],
    nextAttemptAt: 0,
    leaseUntil: 0,
    createdAt: 0,
    completedAt: null,
    lastError: null,
    ...set,
  } as Omit<DeliveryDoc, 'head'> as DeliveryDoc;
}

interface Bench {
  read: ReadStore;
  /** Documents returned by `find` on the deliverer's read store so far. */
  rows: () => number;
  deliverer: WebhookDeliverer;
  clock: { now: number };
  close(): Promise<void>;
}

async function bench(docs: DeliveryDoc[], options: WebhookOptions = {}): Promise<Bench> {
  const read = new SqliteReadStore(':memory:');
  const events = new SqliteEventStore(':memory:');
  await read.transaction(async (tx) => {
    for (const d of docs) await tx.upsert(DELIVERIES, d);
  });
  let rows = 0;
  const counted = new Proxy(read, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (prop === 'find') {
        return async (...args: Parameters<ReadStore['find']>) => {
          const out = await target.find(...args);
          rows += out.length;
          return out;
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const clock = { now: 10 * DAY };
  const deliverer = new WebhookDeliverer(events, counted, new CommandHandler(events), () => clock.now, { pollMs: 20, ...options });
  await deliverer.init();
  return {
    read,
    rows: () => rows,
    deliverer,
    clock,
    async close() {
      await deliverer.stop();
      await events.close();
      await read.close();
    },
  };
}

async function eventually(what: string, check: () => Promise<boolean>, ms = 5000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const Q = suite('webhooks: per-endpoint scheduling and retention');

Q('one send step serves every endpoint with work, reading no more because another endpoint has a backlog of 3000', async () => {
  // A: 3000 deliveries, each of its own stream, so all 3000 are due heads. B: two of one stream,
  // queued after all of A's. Queued by the previous version (no heads): init marks them.
  const docs = Array.from({ length: 3000 }, (_, i) => delivery('A', i, `agent:A:${i}`));
  docs.push(delivery('B', 5000, 'agent:B:b'), delivery('B', 5001, 'agent:B:b'));
  // Running, but its own loops idle (a lease never held): the test takes the one step itself.
  const idle = { held: false, start() {}, async stop() {} } as unknown as Lease;
  const b = await bench(docs, { concurrency: 16, maxInFlightPerEndpoint: 4, lease: idle });
  b.deliverer.start();
  try {
    assert.is(await b.read.count(DELIVERIES, { apiKey: 'A', head: true }), 3000);
    const [b0, b1] = await b.read.getMany<DeliveryDoc>(DELIVERIES, [docs[3000]!._id, docs[3001]!._id]);
    assert.equal([b0!.head, b1!.head], [true, false], 'per-stream order: only the oldest of B\'s stream is its head');
    const a = (await b.read.get<EndpointStateDoc>(ENDPOINT_STATE, endpointStateId('A', 'raw')))!;
    assert.equal([a.scheduled, a.dueAt], [true, 0]);

    const before = b.rows();
    await b.deliverer.sendStep();
    const read = b.rows() - before;
    // At most 2 x concurrency endpoints and 2 x maxInFlightPerEndpoint heads per endpoint served.
    assert.ok(read <= 2 * 16 + 2 * 2 * 4, `one step read ${read} documents`);
    // Those attempts find no key config ("Not sent"): each settles at once. B's head was attempted
    // in this very step, A had 4 (its bound); B's second delivery became the head of its stream.
    await eventually('the attempts settled', async () => (await b.read.count(DELIVERIES, { status: 'failed' })) === 5);
    const [b0after, b1after] = await b.read.getMany<DeliveryDoc>(DELIVERIES, [docs[3000]!._id, docs[3001]!._id]);
    assert.is(b0after!.status, 'failed');
    assert.match(b0after!.lastError!, /Not sent/);
    assert.equal([b0after!.head, b1after!.head, b1after!.status], [false, true, 'pending']);
    assert.is(await b.read.count(DELIVERIES, { apiKey: 'A', status: 'failed' }), 4);
  } finally {
    await b.close();
  }
});

Q('workspaces take turns, then their keys: a workspace with 3000 due heads over 40 endpoints of two keys gets its cap, the others are served in the same step', async () => {
  // Big: keys K1 and K2, 20 endpoints each, 3000 deliveries each of its own stream. Three
  // small workspaces, one delivery each, queued after all of Big's. Queued by the previous
  // version (no heads, no schedule documents): init builds them.
  const docs = Array.from({ length: 3000 }, (_, i) =>
    delivery(i % 2 ? 'K2' : 'K1', i, `agent:big:${i}`, { workspaceId: 'ws-big', endpoint: `ep_${i % 40}`, webhookId: `e${i}_ep_${i % 40}`, _id: key(i % 2 ? 'K2' : 'K1', `e${i}_ep_${i % 40}`) }),
  );
  for (const s of ['S1', 'S2', 'S3']) docs.push(delivery(s, 5000 + docs.length, `agent:${s}:x`));
  const idle = { held: false, start() {}, async stop() {} } as unknown as Lease;
  const b = await bench(docs, { concurrency: 8, maxInFlightPerWorkspace: 2, maxInFlightPerEndpoint: 4, lease: idle });
  b.deliverer.start();
  try {
    const big = (await b.read.get<WorkspaceStateDoc>(WORKSPACE_STATE, 'ws-big'))!;
    assert.equal([big.scheduled, big.pending], [true, 3000], 'the upgrade counted the queue');
    assert.is((await b.read.find<KeyStateDoc>(KEY_STATE, { workspaceId: 'ws-big', scheduled: true })).length, 2);

    const before = b.rows();
    await b.deliverer.sendStep();
    const read = b.rows() - before;
    // 4 workspaces; per workspace served at most 2 x 2 keys, per key 2 x 2 endpoints, per endpoint 2 x 2 heads.
    assert.ok(read <= 4 + 4 * (4 + 4 * (4 + 4 * 4)), `one step read ${read} documents`);
    // No key config: each attempt settles at once ("Not sent"). Big had its cap of 2, one per
    // key; each small workspace its one, in the same step.
    await eventually('the attempts settled', async () => (await b.read.count(DELIVERIES, { status: 'failed' })) === 5);
    const failed = await b.read.find<DeliveryDoc>(DELIVERIES, { status: 'failed' });
    assert.equal(failed.map((d) => d.apiKey).sort(), ['K1', 'K2', 'S1', 'S2', 'S3']);
    assert.is((await b.read.get<WorkspaceStateDoc>(WORKSPACE_STATE, 'ws-big'))!.pending, 2998, 'completed deliveries leave the count');
    assert.equal(
      await Promise.all(['ws-S1', 'ws-S2', 'ws-S3'].map(async (w) => (await b.read.get<WorkspaceStateDoc>(WORKSPACE_STATE, w))!.scheduled)),
      [false, false, false],
    );
  } finally {
    await b.close();
  }
});

Q('/metrics names at most METRIC_WORKSPACES workspaces by queue depth, deepest first, with exact counts, plus those with an open breaker', async () => {
  // Workspace w<i> has i + 1 pending deliveries (w0: 1 ... w14: 15), queued by the previous version.
  const docs: DeliveryDoc[] = [];
  for (let w = 0; w < 15; w++) {
    for (let i = 0; i <= w; i++) docs.push(delivery(`k${w}`, 100 * w + i, `agent:k${w}:${i}`, { workspaceId: `w${w}` }));
  }
  const idle = { held: false, start() {}, async stop() {} } as unknown as Lease;
  const b = await bench(docs, { lease: idle });
  try {
    // An open breaker in a shallow workspace: listed too.
    await b.read.transaction((tx) => tx.patch(ENDPOINT_STATE, endpointStateId('k0', 'raw'), { breakerOpen: true, breakerUntil: b.clock.now + 1000 }));
    const health = await webhookHealth(b.read);
    assert.is(health.breakersOpen, 1);
    const expected = Array.from({ length: METRIC_WORKSPACES }, (_, i) => ({ workspaceId: `w${14 - i}`, pending: 15 - i, breakersOpen: 0 }));
    assert.equal(health.workspaces, [...expected, { workspaceId: 'w0', pending: 1, breakersOpen: 1 }]);
  } finally {
    await b.close();
  }
});

Q('the retention sweep deletes succeeded and failed deliveries older than the retention, and keeps pending and newer ones', async () => {
  const now = 10 * DAY;
  const docs = [
    delivery('K', 1, 's1', { status: 'succeeded', completedAt: now - 8 * DAY }),
    delivery('K', 2, 's2', { status: 'failed', completedAt: now - 7 * DAY - 1 }),
    delivery('K', 3, 's3', { status: 'succeeded', completedAt: now - 6 * DAY }),
    delivery('K', 4, 's4', { status: 'failed', completedAt: now - 1000 }),
    // Pending for 30 days, behind a head that is not due: never swept, never sent.
    delivery('K', 5, 's5', { createdAt: now - 30 * DAY, nextAttemptAt: now + 30 * DAY }),
  ];
  const b = await bench(docs, { retentionMs: 7 * DAY, pruneEveryMs: 60_000 });
  const left = async () => (await b.read.find<DeliveryDoc>(DELIVERIES, {}, { sort: 'position' })).map((d) => d.eventId);
  try {
    // The sweep runs when the sender starts, then every pruneEveryMs of the deliverer's clock.
    b.deliverer.start();
    await eventually('the first sweep', async () => (await left()).length === 3);
    assert.equal(await left(), ['e3', 'e4', 'e5']);
    b.clock.now += 1.5 * DAY;
    await eventually('the next sweep', async () => (await left()).length === 2);
    assert.equal(await left(), ['e4', 'e5']);
    assert.is((await b.read.get<DeliveryDoc>(DELIVERIES, docs[4]!._id))!.status, 'pending');
  } finally {
    await b.close();
  }
});

Q('configuration: WEBHOOK_* variables, defaults and bad values', () => {
  const c = loadConfig({});
  assert.equal(
    [c.webhookConcurrency, c.webhookMaxInFlightPerEndpoint, c.webhookDisableAfterDays, c.webhookRetentionDays],
    [16, 4, 5, 7],
  );
  const set = loadConfig({ WEBHOOK_CONCURRENCY: '4', WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: '1', WEBHOOK_DISABLE_AFTER_DAYS: '0', WEBHOOK_RETENTION_DAYS: '30' });
  assert.equal([set.webhookConcurrency, set.webhookMaxInFlightPerEndpoint, set.webhookDisableAfterDays, set.webhookRetentionDays], [4, 1, 0, 30]);
  const failsOn = (env: Record<string, string>, variable: string) => {
    try {
      loadConfig(env);
    } catch (e) {
      assert.instance(e, ConfigError);
      assert.is((e as ConfigError).variable, variable);
      return;
    }
    assert.unreachable(`${JSON.stringify(env)} was accepted`);
  };
  failsOn({ WEBHOOK_CONCURRENCY: '0' }, 'WEBHOOK_CONCURRENCY');
  failsOn({ WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: 'two' }, 'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT');
  failsOn({ WEBHOOK_CONCURRENCY: '2', WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: '4' }, 'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT');
  failsOn({ WEBHOOK_DISABLE_AFTER_DAYS: '-1' }, 'WEBHOOK_DISABLE_AFTER_DAYS');
  failsOn({ WEBHOOK_RETENTION_DAYS: '0' }, 'WEBHOOK_RETENTION_DAYS');
});

Q('configuration: the fairness and breaker variables, defaults and bad values', () => {
  const c = loadConfig({});
  assert.equal(
    [c.webhookMaxInFlightPerWorkspace, c.webhookBreakerAfter, c.webhookBreakerTimeoutMs, c.webhookBreakerBackoffSeconds, c.webhookBreakerMaxBackoffSeconds],
    [4, 5, 2000, 30, 3600],
  );
  // A pool smaller than the default share lowers the share with it.
  assert.is(loadConfig({ WEBHOOK_CONCURRENCY: '2', WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: '1' }).webhookMaxInFlightPerWorkspace, 2);
  const set = loadConfig({
    WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE: '8',
    WEBHOOK_BREAKER_AFTER: '0',
    WEBHOOK_BREAKER_TIMEOUT_MS: '500',
    WEBHOOK_BREAKER_BACKOFF_SECONDS: '7200',
  });
  assert.equal(
    [set.webhookMaxInFlightPerWorkspace, set.webhookBreakerAfter, set.webhookBreakerTimeoutMs, set.webhookBreakerBackoffSeconds, set.webhookBreakerMaxBackoffSeconds],
    [8, 0, 500, 7200, 7200],
    'a first park longer than the default longest raises the longest with it',
  );
  const failsOn = (env: Record<string, string>, variable: string) => {
    assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && e.variable === variable, JSON.stringify(env));
  };
  failsOn({ WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE: '0' }, 'WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE');
  failsOn({ WEBHOOK_CONCURRENCY: '8', WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE: '9' }, 'WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE');
  failsOn({ WEBHOOK_BREAKER_AFTER: 'five' }, 'WEBHOOK_BREAKER_AFTER');
  failsOn({ WEBHOOK_BREAKER_TIMEOUT_MS: '50' }, 'WEBHOOK_BREAKER_TIMEOUT_MS');
  failsOn({ WEBHOOK_BREAKER_BACKOFF_SECONDS: '0' }, 'WEBHOOK_BREAKER_BACKOFF_SECONDS');
  failsOn({ WEBHOOK_BREAKER_BACKOFF_SECONDS: '60', WEBHOOK_BREAKER_MAX_BACKOFF_SECONDS: '30' }, 'WEBHOOK_BREAKER_MAX_BACKOFF_SECONDS');
});

Q.run();

