/**
 * Webhook delivery against a real HTTP receiver on loopback: per-stream order, retry after a
 * 500 with the same id, Standard Webhooks signatures and Basic auth, 410 disabling the
 * endpoint, the deliveries listing, no duplicate ids across a restart, follow:false sends
 * nothing.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import fs from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config/config.js';
import { openServices, type OpenOptions, type Services } from '../src/composition/services.js';
import { buildApp } from '../src/app.js';
import { tempDir } from './support/app.js';
import { verifySignature } from '../src/webhooks/signature.js';
import { agentDecider, agentStream } from '../commands/agent.js';
import { DELIVERIES, ENDPOINT_STATE, endpointStateId, type EndpointStateDoc } from '../src/webhooks/outbox.js';
import { workspaceStream } from '../commands/workspace.js';
import { API_KEYS, type ApiKeyDoc } from '../projections/workspaces.js';
import { waiter } from './support/wait.js';


interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  answered: number;
}

class Receiver {
  server!: http.Server;
  received: Received[] = [];
  /** Decides the status of each request; default 200. */
  answer: (r: Omit<Received, 'answered'>) => number = () => 200;
  /** How long each answer takes. */
  delayMs = 0;
  /** Requests being answered now, and the most ever at once, per path. */
  open = new Map<string, number>();
  peak = new Map<string, number>();
  async start() {
    this.server = http.createServer((req, res) => {
      const path = req.url ?? '';
      this.open.set(path, (this.open.get(path) ?? 0) + 1);
      this.peak.set(path, Math.max(this.peak.get(path) ?? 0, this.open.get(path)!));
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        setTimeout(() => {
          const r = { path, headers: req.headers, body };
          const answered = this.answer(r);
          this.received.push({ ...r, answered });
          this.open.set(path, this.open.get(path)! - 1);
          res.writeHead(answered, { 'content-type': 'text/plain' }).end('ok');
        }, this.delayMs);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }
  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  ok(path: string) {
    return this.received.filter((r) => r.path === path && r.answered >= 200 && r.answered < 300);
  }
  async close() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

interface Node {
  services: Services;
  app: FastifyInstance;
  post(url: string, data: unknown, headers?: Record<string, string>): Promise<any>;
  close(): Promise<void>;
}

const fast = { retrySchedule: [100, 200, 300], jitter: 0, pollMs: 50 };

async function node(dataDir: string, options: OpenOptions = { webhooks: fast }): Promise<Node> {
  const services = await openServices(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }), options);
  const app = await buildApp(services, { logger: false });
  await app.ready();
  return {
    services,
    app,
    async post(url, data, headers = {}) {
      const res = await app.inject({ method: 'POST', url, payload: { data }, headers });
      return JSON.parse(res.body);
    },
    async close() {
      await app.close();
      await services.close();
    },
  };
}

const until = waiter(8000, 20);

const eventually = waiter(15_000, 25);

const AUTH_TOKEN = 'whsec_' + Buffer.from('a shared webhook secret of 32 b').toString('base64');

async function tenantWithWebhooks(n: Node, receiver: Receiver) {
  const ws = (await n.post('/v2/workspace/create', { ownerEmail: 'hooks@example.com' })).result.data;
  const [apiKey, k] = Object.entries(ws.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken };
  const cfg = await n.post('/v2/workspace/webhookconfig/update', {
    useWebhookService: true,
    webhookServiceConfig: { authToken: AUTH_TOKEN, rawNotificationUrl: `${receiver.url}/raw`, processedNotificationUrl: `${receiver.url}/processed` },
  }, headers);
  assert.is(cfg.result.data.useWebhookService, true, JSON.stringify(cfg));
  return { apiKey, headers };
}

const W = suite<{ receiver: Receiver; dir: string }>('webhook delivery');
W.before.each(async (ctx) => {
  ctx.receiver = new Receiver();
  await ctx.receiver.start();
  ctx.dir = tempDir('collab-hooks-');
});
W.after.each(async (ctx) => {
  await ctx.receiver.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

W('every event reaches both endpoints, in stream order, signed; a 500 is retried with the same id and holds back the stream', async ({ receiver, dir }) => {
  const n = await node(dir);
  try {
    const { apiKey, headers } = await tenantWithWebhooks(n, receiver);
    let failedOnce = false;
    receiver.answer = (r) => {
      if (r.path === '/raw' && !failedOnce) {
        failedOnce = true;
        return 500;
      }
      return 200;
    };
    await n.post('/v2/agents/create', { agentId: 'a1', name: 'v1', execution: { mcpServers: [{ name: 's', url: 'https://mcp.example', auth: { token: 'mcp-secret' } }] } }, headers);
    for (const name of ['v2', 'v3', 'v4']) await n.post('/v2/agents/update', { agentId: 'a1', name, instructions: name }, headers);
    await until('4 raw and 4 processed deliveries', () => receiver.ok('/raw').length === 4 && receiver.ok('/processed').length === 4);

    const raw = receiver.ok('/raw').map((r) => JSON.parse(r.body));
    assert.equal(raw.map((b) => [b.type, b.data.version]), [['AgentCreated', 1], ['AgentUpdated', 2], ['AgentUpdated', 3], ['AgentUpdated', 4]]);
    assert.is(raw[0].apiKey, apiKey);
    assert.equal(raw[0].stream, { category: 'agent', ids: ['a1'] });
    assert.not.ok(receiver.received.some((r) => r.body.includes('mcp-secret')), 'agent secrets never delivered');

    // The 500 came first and was retried with the same id, before anything later in the stream.
    const rawAll = receiver.received.filter((r) => r.path === '/raw');
    assert.is(rawAll[0]!.answered, 500);
    assert.is(rawAll[1]!.headers['webhook-id'], rawAll[0]!.headers['webhook-id']);
    assert.is(rawAll[1]!.body, rawAll[0]!.body, 'every attempt sends the same bytes');

    for (const r of receiver.received) {
      assert.is(r.headers.authorization, `Basic ${AUTH_TOKEN}`);
      assert.is(r.headers['content-type'], 'application/json');
      const ok = verifySignature(AUTH_TOKEN, { id: String(r.headers['webhook-id']), timestamp: String(r.headers['webhook-timestamp']), signature: String(r.headers['webhook-signature']) }, r.body);
      assert.ok(ok, 'signature verifies');
      assert.not.ok(verifySignature(AUTH_TOKEN, { id: String(r.headers['webhook-id']), timestamp: String(r.headers['webhook-timestamp']), signature: String(r.headers['webhook-signature']) }, r.body + ' '), 'a changed body does not');
    }
    const processed = receiver.ok('/processed').map((r) => JSON.parse(r.body));
    assert.equal(processed[0].resource, { agentId: 'a1' });
    assert.is(processed[0].message, 'Agent created: "v1" (a1).');
    assert.is(processed[0].area, 'agent');

    // The listing shows the attempts.
    const list = await n.post('/v2/workspace/webhooks/deliveries/get', { status: 'succeeded', pageSize: 5 }, headers);
    assert.is(list.result.data.length, 5);
    assert.ok(list.result.pageToken);
    const first = list.result.data.find((d: any) => d.endpoint === 'raw');
    assert.is(first.attemptCount, 2);
    assert.is(first.attempts[0].httpStatus, 500);
    assert.is(first.attempts[1].httpStatus, 200);
    const next = await n.post('/v2/workspace/webhooks/deliveries/get', { status: 'succeeded', pageSize: 5, pageToken: list.result.pageToken }, headers);
    assert.is(next.result.data.length, 3);
    assert.is(next.result.pageToken, undefined);
    const bad = await n.post('/v2/workspace/webhooks/deliveries/get', { pageToken: list.result.pageToken }, headers);
    assert.is(bad.error.status, 'INVALID_ARGUMENT', 'a token of another query');
    const badSize = await n.post('/v2/workspace/webhooks/deliveries/get', { pageSize: 0 }, headers);
    assert.is(badSize.error.status, 'INVALID_ARGUMENT');
  } finally {
    await n.close();
  }
});

W('a restart loses nothing and sends nothing twice', async ({ receiver, dir }) => {
  let n = await node(dir);
  const { headers } = await tenantWithWebhooks(n, receiver);
  await n.post('/v2/agents/create', { agentId: 'r1', name: 'one' }, headers);
  await until('first deliveries', () => receiver.ok('/raw').length === 1 && receiver.ok('/processed').length === 1);
  // and recorded: the receiver counts a request before its answer reaches the sender, and a
  // close in between cuts the attempt short, unrecorded, so it is sent again (same id) after
  // the restart. On a loaded machine that gap is long enough to fall into.
  await until('first deliveries recorded as succeeded', async () => (await n.post('/v2/workspace/webhooks/deliveries/get', { status: 'succeeded' }, headers)).result.data.length === 2);
  // Events appended while the deliverer is off are delivered after the restart.
  await n.close();
  n = await node(dir, { webhooks: false });
  await n.post('/v2/agents/update', { agentId: 'r1', name: 'two', instructions: 'two' }, headers);
  await n.post('/v2/agents/create', { agentId: 'r2', name: 'other' }, headers);
  // A chance for a send that should not happen (cannot fail spuriously: it checks for nothing).
  await new Promise((r) => setTimeout(r, 200));
  assert.is(receiver.received.length, 2, 'nothing sent while webhooks are off');
  await n.close();
  n = await node(dir);
  try {
    await n.post('/v2/agents/update', { agentId: 'r1', name: 'three', instructions: 'three' }, headers);
    await until('all deliveries', () => receiver.ok('/raw').length === 4 && receiver.ok('/processed').length === 4);
    // A chance for a duplicate send to arrive (cannot fail spuriously: the 8 were awaited above).
    await new Promise((r) => setTimeout(r, 300));
    const ids = receiver.received.map((r) => r.headers['webhook-id']);
    assert.is(new Set(ids).size, ids.length, `no duplicate ids: ${ids.join(', ')}`);
    assert.is(ids.length, 8);
    const r1 = receiver.ok('/raw').map((r) => JSON.parse(r.body)).filter((b) => b.data.agentId === 'r1').map((b) => b.data.version);
    assert.equal(r1, [1, 2, 3]);
  } finally {
    await n.close();
  }
});

W('410 Gone disables the endpoint until its URL is set again; follow:false never sends', async ({ receiver, dir }) => {
  const n = await node(dir);
  let apiKey = '';
  try {
    const t = await tenantWithWebhooks(n, receiver);
    apiKey = t.apiKey;
    const headers = t.headers;
    receiver.answer = (r) => (r.path === '/processed' ? 410 : 200);
    await n.post('/v2/agents/create', { agentId: 'g1', name: 'one' }, headers);
    await until('the 410', () => receiver.received.some((r) => r.answered === 410) && receiver.ok('/raw').length === 1);
    // Disabling follows the 410's answer (the sender records it, then appends the event): a
    // deadline, not 50 tries, which a loaded machine can run through in the first second.
    let cfg: any;
    await eventually('the endpoint disabled after the 410', async () => {
      cfg = await n.post('/v2/workspace/webhookconfig/update', { useWebhookService: true }, headers);
      return cfg.result.data.disabledEndpoints.includes('processed');
    });
    assert.equal(cfg.result.data.disabledEndpoints, ['processed']);
    const failed = await n.post('/v2/workspace/webhooks/deliveries/get', { status: 'failed' }, headers);
    assert.is(failed.result.data.length, 1);
    assert.match(failed.result.data[0].lastError, /410/);
    await n.post('/v2/agents/update', { agentId: 'g1', name: 'two' }, headers);
    await until('raw 2', () => receiver.ok('/raw').length === 2);
    // A chance for a send to the disabled endpoint (cannot fail spuriously: it checks for none).
    await new Promise((r) => setTimeout(r, 200));
    assert.is(receiver.received.filter((r) => r.path === '/processed').length, 1, 'no more sends to a disabled endpoint');
    // Setting the URL again enables it.
    receiver.answer = () => 200;
    const again = await n.post('/v2/workspace/webhookconfig/update', { processedNotificationUrl: `${receiver.url}/processed` }, headers);
    assert.equal(again.result.data.disabledEndpoints, []);
    await n.post('/v2/agents/update', { agentId: 'g1', name: 'three' }, headers);
    await until('processed again', () => receiver.ok('/processed').length === 1);
  } finally {
    await n.close();
  }
  // Services built with follow:false (one-shot CLI commands) never send, even with work queued.
  const quiet = await node(dir, { follow: false });
  try {
    const before = receiver.received.length;
    const stream = agentStream(apiKey, 'g1');
    const r = await quiet.services.commands.handle(agentDecider, stream, { type: 'UpdateAgent', data: { agentId: 'g1', changes: { name: 'four' } }, metadata: { now: Date.now() } }, { requestId: 'cli', actor: 'cli', time: Date.now(), apiKey });
    assert.ok(r.position, 'an event was appended');
    // A chance for a send that must not happen (cannot fail spuriously: it checks for nothing).
    await new Promise((r) => setTimeout(r, 300));
    assert.is(receiver.received.length, before);
  } finally {
    await quiet.close();
  }
});

W('a receiver that does not answer in time is retried', async ({ receiver, dir }) => {
  const n = await node(dir, { webhooks: { ...fast, timeoutMs: 150 } });
  try {
    const { headers } = await tenantWithWebhooks(n, receiver);
    let slow = true;
    const original = receiver.server.listeners('request')[0] as (req: http.IncomingMessage, res: http.ServerResponse) => void;
    receiver.server.removeAllListeners('request');
    receiver.server.on('request', (req, res) => {
      if (req.url === '/raw' && slow) {
        slow = false;
        return; // never answers
      }
      original(req, res);
    });
    await n.post('/v2/agents/create', { agentId: 't1', name: 'one' }, headers);
    await until('raw after a timeout', () => receiver.ok('/raw').length === 1);
    const list = await n.post('/v2/workspace/webhooks/deliveries/get', {}, headers);
    const raw = list.result.data.find((d: any) => d.endpoint === 'raw');
    assert.match(raw.attempts[0].error, /timed out/);
    assert.is(raw.status, 'succeeded');
  } finally {
    await n.close();
  }
});

W('one endpoint has at most maxInFlightPerEndpoint attempts in flight', async ({ receiver, dir }) => {
  const n = await node(dir, { webhooks: { ...fast, maxInFlightPerEndpoint: 2 } });
  try {
    const { headers } = await tenantWithWebhooks(n, receiver);
    receiver.delayMs = 150;
    // Ten agents: ten streams, so ten deliveries per endpoint could go at once.
    for (let i = 0; i < 10; i++) await n.post('/v2/agents/create', { agentId: `c${i}`, name: `c${i}` }, headers);
    await until('all delivered', () => receiver.ok('/raw').length === 10 && receiver.ok('/processed').length === 10);
    assert.is(receiver.peak.get('/raw'), 2, 'raw: two at once, never more');
    assert.is(receiver.peak.get('/processed'), 2, 'processed: two at once, never more');
  } finally {
    await n.close();
  }
});

W('a delivery waiting for its retry holds no slot: the endpoint\'s other streams go on', async ({ receiver, dir }) => {
  const n = await node(dir, { webhooks: { retrySchedule: [1500], jitter: 0, pollMs: 50, maxInFlightPerEndpoint: 1 } });
  try {
    const { headers } = await tenantWithWebhooks(n, receiver);
    let failedOnce = false;
    receiver.answer = (r) => {
      if (r.path === '/raw' && JSON.parse(r.body).data.agentId === 'x' && !failedOnce) {
        failedOnce = true;
        return 500;
      }
      return 200;
    };
    await n.post('/v2/agents/create', { agentId: 'x', name: 'x' }, headers);
    await until('x failed once', () => failedOnce);
    await n.post('/v2/agents/create', { agentId: 'y', name: 'y' }, headers);
    await until('x retried', () => receiver.ok('/raw').length === 2);
    const raw = receiver.received.filter((r) => r.path === '/raw').map((r) => `${JSON.parse(r.body).data.agentId} ${r.answered}`);
    assert.equal(raw, ['x 500', 'y 200', 'x 200'], 'y went while x waited for its retry, with one slot');
  } finally {
    await n.close();
  }
});

W('an endpoint with no success for 5 days since its failing streak began is disabled with the reason, and its pending deliveries failed', async ({ receiver, dir }) => {
  const DAY = 24 * 60 * 60 * 1000;
  const T0 = Date.now();
  let now = T0;
  // Retries 1 s (of the test clock) apart; the test moves the clock by days.
  const n = await node(dir, { clock: () => now, webhooks: { retrySchedule: Array(10).fill(1000), jitter: 0, pollMs: 20 } });
  try {
    const { apiKey, headers } = await tenantWithWebhooks(n, receiver);
    const state = async () => (await n.services.read.get<EndpointStateDoc>(ENDPOINT_STATE, endpointStateId(apiKey, 'raw')))!;
    const rawFor = (agentId: string) => receiver.received.filter((r) => r.path === '/raw' && JSON.parse(r.body).data.agentId === agentId);
    // Raw fails, except a1 from day 4 on; processed always succeeds.
    receiver.answer = (r) => (r.path === '/raw' && !(JSON.parse(r.body).data.agentId === 'a1' && now >= T0 + 4 * DAY) ? 500 : 200);
    const disabled = async () => (await n.post('/v2/workspace/webhookconfig/update', { useWebhookService: true }, headers)).result.data.disabledEndpoints as string[];

    await n.post('/v2/agents/create', { agentId: 'a1', name: 'one' }, headers);
    await until('a1 failed', () => rawFor('a1').length === 1);
    await eventually('the streak recorded', async () => (await state()).failingSince === T0);

    // Day 4: a1's retry succeeds, which ends the streak; a2 then fails and starts a new one.
    now = T0 + 4 * DAY;
    await until('a1 delivered', () => rawFor('a1').some((r) => r.answered === 200));
    await eventually('the streak ended', async () => (await state()).failingSince === null);
    assert.is((await state()).lastSuccessAt, T0 + 4 * DAY);
    await n.post('/v2/agents/create', { agentId: 'a2', name: 'two' }, headers);
    await until('a2 failed', () => rawFor('a2').length === 1);
    await eventually('a new streak', async () => (await state()).failingSince === T0 + 4 * DAY);

    // Day 6: 6 days since the first failure ever, but 2 since the last success: still enabled.
    now = T0 + 6 * DAY;
    for (const name of ['two b', 'two c']) await n.post('/v2/agents/update', { agentId: 'a2', name }, headers);
    await until('a2 failed twice', () => rawFor('a2').length === 2);
    // The sender's follower queues the updates' deliveries apart from the requests (and their
    // processed ones go at once): waited for, not assumed done after a moment.
    const pending = async () => (await n.post('/v2/workspace/webhooks/deliveries/get', { status: 'pending' }, headers)).result.data.length as number;
    await eventually('a2 and its two updates pending', async () => (await pending()) === 3);
    // A chance for a wrong disabling (cannot fail spuriously: it checks that none happened).
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await disabled(), []);
    assert.is(await pending(), 3, 'a2 and its two updates wait');

    // Day 9 and a second: 5 days without a success.
    now = T0 + 9 * DAY + 1000;
    await until('a2 failed a third time', () => rawFor('a2').length === 3);
    // Disabling follows the third failure's answer: a deadline, not 100 tries.
    let off: string[] = [];
    await eventually('the endpoint disabled after 5 days without a success', async () => (off = await disabled()).includes('raw'));
    assert.equal(off, ['raw']);
    const keyDoc = (await n.services.read.get<ApiKeyDoc>(API_KEYS, apiKey))!;
    const events = await n.services.events.readStream(workspaceStream(keyDoc.workspaceId));
    const event = events.find((e) => e.type === 'WebhookEndpointDisabled')!;
    assert.ok(event, 'WebhookEndpointDisabled recorded');
    const reason = (event.data as { reason: string; endpoint: string }).reason;
    assert.is((event.data as { endpoint: string }).endpoint, 'raw');
    assert.match(reason, `failed every attempt since ${new Date(T0 + 4 * DAY).toISOString()} (5 days or more without a success); last error: HTTP 500`);
    await eventually('the pending deliveries failed', async () => (await n.post('/v2/workspace/webhooks/deliveries/get', { status: 'pending' }, headers)).result.data.length === 0);
    const failed = (await n.post('/v2/workspace/webhooks/deliveries/get', { status: 'failed' }, headers)).result.data;
    assert.is(failed.length, 3);
    for (const f of failed) {
      assert.is(f.endpoint, 'raw');
      assert.ok(f.lastError.includes(reason), f.lastError);
    }
    const s = await state();
    assert.is(s.disabledReason, reason);
    assert.is(s.failingSince, null);
    assert.is(s.scheduled, false);

    // Nothing more is queued for it; processed goes on.
    const before = receiver.received.length;
    await n.post('/v2/agents/create', { agentId: 'a3', name: 'three' }, headers);
    await until('a3 processed', () => receiver.ok('/processed').some((r) => JSON.parse(r.body).resource.agentId === 'a3'));
    // A chance for a raw send that must not happen (cannot fail spuriously: it checks for none).
    await new Promise((r) => setTimeout(r, 100));
    assert.is(rawFor('a3').length, 0);
    assert.is(receiver.received.length, before + 1);

    // A new URL enables it again; its next failure starts a new streak rather than disabling at once.
    const again = await n.post('/v2/workspace/webhookconfig/update', { rawNotificationUrl: `${receiver.url}/raw` }, headers);
    assert.equal(again.result.data.disabledEndpoints, []);
    await n.post('/v2/agents/create', { agentId: 'a4', name: 'four' }, headers);
    await until('a4 failed', () => rawFor('a4').length === 1);
    await eventually('a new streak after re-enabling', async () => (await state()).failingSince === now);
    assert.equal(await disabled(), []);
    assert.is((await state()).disabledAt, null);
  } finally {
    await n.close();
  }
});

// ---- fairness (issue 11, finding 2) ----

/** A loopback port with nothing listening: connections are refused. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** A receiver that accepts every request and never answers (until closed). */
async function hangingReceiver() {
  const held: Array<{ path: string; res: http.ServerResponse }> = [];
  const server = http.createServer((req, res) => void held.push({ path: req.url ?? '', res }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: (path?: string) => held.filter((h) => path === undefined || h.path === path).length,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function tenantAt(n: Node, email: string, rawUrl: string, processedUrl: string) {
  const ws = (await n.post('/v2/workspace/create', { ownerEmail: email })).result.data;
  const [apiKey, k] = Object.entries(ws.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken };
  const cfg = await n.post('/v2/workspace/webhookconfig/update', {
    useWebhookService: true,
    webhookServiceConfig: { rawNotificationUrl: rawUrl, processedNotificationUrl: processedUrl },
  }, headers);
  assert.is(cfg.result.data.useWebhookService, true, JSON.stringify(cfg));
  return { apiKey, headers };
}

/**
 * How soon B's delivery must arrive. Held up behind A, it would wait for A's attempts to end:
 * the attempt timeout (set to HOLD_UP_MS below) for an endpoint that never answers, A's backlog
 * for one that refuses. Served fairly it arrives in a poll or two (50 ms each; well under a
 * second on a quiet machine); 8 s leaves a loaded one room and stays far below HOLD_UP_MS.
 */
const B_WITHIN_MS = 8000;
const HOLD_UP_MS = 60_000;

for (const kind of ['refuses connections', 'never answers'] as const) {
  W(`a tenant whose endpoint ${kind}, with thousands of deliveries pending, does not hold up another tenant: its delivery arrives within ${B_WITHIN_MS / 1000} s`, async ({ receiver, dir }) => {
    // The default retry schedule: the failing tenant's deliveries stay pending (5 s, 5 min... backoff).
    const n = await node(dir, { webhooks: { pollMs: 50, timeoutMs: HOLD_UP_MS } });
    const hanging = kind === 'never answers' ? await hangingReceiver() : null;
    try {
      const bad = hanging ? hanging.url : `http://127.0.0.1:${await closedPort()}`;
      const a = await tenantAt(n, 'a@example.com', `${bad}/raw`, `${bad}/processed`);
      const b = await tenantAt(n, 'b@example.com', `${receiver.url}/raw`, `${receiver.url}/processed`);
      // Two 1000-folder folders/add: 4002 deliveries for A (raw and processed), all queued before B's.
      for (const part of [0, 1]) {
        const folders = Array.from({ length: 1000 }, (_, i) => ({ folderId: `f${part}-${i}`, folderName: `F ${i}` }));
        const r = await n.post('/v2/organizations/folders/add', { organizationId: 'org-a', createOrganization: true, folders }, a.headers);
        assert.ok(r.result, JSON.stringify(r).slice(0, 300));
      }
      const read = n.services.read;
      await eventually('A\'s 4002 deliveries queued (the organization and 2000 folders)', async () => (await read.count(DELIVERIES, { apiKey: a.apiKey })) === 4002);
      assert.ok((await read.count(DELIVERIES, { apiKey: a.apiKey, status: 'pending' })) >= 3990, 'thousands pending for A');

      const sent = Date.now();
      await n.post('/v2/agents/create', { agentId: 'b1', name: 'B' }, b.headers);
      await until('B\'s deliveries', () => receiver.ok('/raw').length === 1 && receiver.ok('/processed').length === 1, B_WITHIN_MS);
      assert.ok(Date.now() - sent < B_WITHIN_MS, `B's deliveries arrived ${Date.now() - sent} ms after its write`);
      assert.is(JSON.parse(receiver.ok('/raw')[0]!.body).data.agentId, 'b1');

      // A's endpoint was being tried all along (it is failing, not idle).
      const tried = await n.post('/v2/workspace/webhooks/deliveries/get', { pageSize: 1 }, a.headers);
      if (hanging) {
        assert.ok(hanging.received() >= 1, 'A\'s receiver got requests');
        // None is answered, so all are in flight: at most 4 (the default) per endpoint.
        assert.ok(hanging.received('/raw') <= 4 && hanging.received('/processed') <= 4, `${hanging.received()} in flight`);
      }
      else assert.match(tried.result.data[0].attempts[0]?.error ?? '', /ECONNREFUSED/);
      assert.ok((await read.count(DELIVERIES, { apiKey: a.apiKey, status: 'pending' })) >= 3990, 'A\'s backlog is still there');
    } finally {
      await n.close();
      await hanging?.close();
    }
  });
}

W.run();
