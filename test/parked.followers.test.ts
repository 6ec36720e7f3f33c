/**
 * Parking in the log's other followers (issue 11, "a projection (or any log follower:
 * webhooks, cascade) never stalls the log for everyone"):
 * - the webhook follower: an event whose deliveries cannot be queued is parked, and the
 *   deliveries of the events after it are queued and sent;
 * - the cascade worker: a work item no command can carry out is parked after a few
 *   attempts, the items beside it are done, and retry queues it again;
 * - a rebuild parks the projections' again and carries the others over.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config/config.js';
import { openServices } from '../src/composition/services.js';
import { buildApp } from '../src/app.js';
import { decorateEventStore } from '../src/ports/event-store.js';
import { listParked, retryParked } from '../src/ops/parked.js';
import { CASCADE_WORK, type WorkItem } from '../projections/cascade-work.js';
import { allProjections } from '../projections/index.js';
import { harness, tempDir } from './support/app.js';
import { parkPoison } from './support/poison.js';
import { PARKED } from '../src/runtime/parked.js';
import { rebuildReadModels } from '../src/ops/rebuild.js';

const F = suite('parked events: webhook follower and cascade');

F('an event whose webhooks cannot be queued is parked; later events are delivered', async () => {
  const received: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push(body);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/raw`;
  const dir = tempDir('collab-parked-hooks-');
  // The log as the webhook follower reads it: the event naming organization "poison" carries
  // a value no payload can be serialized from (JSON.stringify throws on a BigInt).
  const services = await openServices(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dir, WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }), {
    webhooks: { retrySchedule: [100], jitter: 0, pollMs: 50 },
    decorateEvents: (events) =>
      decorateEventStore(events, {
        readAll: async (options) =>
          (await events.readAll(options)).map((e) =>
            e.type === 'OrganizationCreated' && (e.data as { organizationName?: string }).organizationName === 'poison'
              ? { ...e, data: { ...e.data, organizationName: 10n as unknown as string } }
              : e,
          ),
      }),
  });
  const app = await buildApp(services, { logger: false });
  const post = async (route: string, data: unknown, headers: Record<string, string> = {}) =>
    JSON.parse((await app.inject({ method: 'POST', url: route, payload: { data }, headers })).body);
  try {
    const ws = (await post('/v2/workspace/create', { ownerEmail: 'hooks@example.com' })).result.data;
    const [apiKey, k] = Object.entries(ws.apiKeyList)[0] as [string, { authToken: string }];
    const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken };
    const cfg = await post('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: url } }, headers);
    assert.is(cfg.result?.data?.useWebhookService, true, JSON.stringify(cfg));
    await post('/v2/organizations/add', { organizations: [{ organizationId: 'p', organizationName: 'poison' }] }, headers);
    await post('/v2/organizations/add', { organizations: [{ organizationId: 'f', organizationName: 'fine' }] }, headers);
    const end = Date.now() + 8000;
    while (!received.some((b) => b.includes('"fine"')) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    assert.ok(received.some((b) => b.includes('"fine"')), 'the event after the parked one was delivered');
    assert.not.ok(received.some((b) => b.includes('poison')));
    const parked = await listParked(services.read);
    const hook = parked.find((p) => p.follower === 'webhooks');
    assert.ok(hook, JSON.stringify(parked.map((p) => p.follower)));
    assert.is(hook!.eventType, 'OrganizationCreated');
    assert.is(hook!.apiKey, apiKey);
    assert.match(hook!.error, /BigInt/);
  } finally {
    await app.close();
    await services.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

F('a cascade item no command can carry out is parked; the others are done; retry queues it again', async () => {
  const h = await harness();
  try {
    const t = await h.tenant();
    const bad: WorkItem = {
      // A resourceGrants item without its resource: the worker's command cannot be built.
      _id: 'bad-item',
      kind: 'resourceGrants',
      apiKey: t.apiKey,
      organizationId: 'o',
      targetId: 'u1',
      reason: 'folderDeleted',
      causationId: 'cause-1',
      requestId: 'r',
      seq: '0',
    };
    await h.services.read.transaction((tx) => tx.upsert(CASCADE_WORK, bad));
    // A real cascade beside it: deleting a folder queues its document's deletion.
    await h.post('/v2/organizations/folders/add', { organizationId: 'o', createOrganization: true, folders: [{ folderId: 'f' }] }, t.headers);
    await h.post('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'd' }] }, t.headers);
    await h.post('/v2/organizations/folders/delete', { organizationId: 'o', folderId: 'f' }, t.headers);
    await h.services.cascade.settle();
    assert.is(await h.services.read.count(CASCADE_WORK, {}), 0, 'the queue is empty: nothing holds it up');
    const parked = await listParked(h.services.read);
    assert.is(parked.length, 1);
    assert.is(parked[0]!.follower, 'cascade');
    assert.is(parked[0]!.eventId, 'cause-1');
    assert.equal(parked[0]!.item, bad);
    const stream = (await h.services.events.readAll()).filter((e) => e.type === 'DocumentDeleted');
    assert.is(stream.length, 1, 'the real item was carried out');

    await retryParked({ events: h.services.events, read: h.services.read, projections: allProjections }, parked[0]!._id);
    assert.is((await h.services.read.get(CASCADE_WORK, 'bad-item'))?._id, 'bad-item', 'queued again');
    assert.is((await listParked(h.services.read)).length, 0);
  } finally {
    await h.close();
  }
});

F.run();

const G = suite('parked events: rebuild');

G('a rebuild parks again what projections cannot apply and carries the cascade and webhook records over', async () => {
  const h = await harness();
  try {
    const t = await h.tenant();
    const cascadeDoc = {
      _id: 'cascade:x', follower: 'cascade', position: '1', eventId: 'e1', eventType: 'cascade:document', stream: 'o',
      apiKey: t.apiKey, error: 'TypeError: x', attempts: 3, parkedAt: 1, status: 'parked' as const, item: { _id: 'i' },
    };
    await h.services.read.transaction((tx) => tx.upsert(PARKED, cascadeDoc));
    // An event the agents projection cannot write on this store (test/support/poison.ts).
    await parkPoison(h, t.apiKey);
    const before = (await listParked(h.services.read)).map((p) => p._id).sort();
    assert.ok(before.some((id) => id.startsWith('agents:')), JSON.stringify(before));
    const r = await rebuildReadModels({ events: h.services.events, generations: h.services.generations, projections: allProjections });
    assert.is(r.to, 1);
    const after = (await listParked(h.services.read)).map((p) => p._id).sort();
    assert.equal(after, before, 'the same records, in the new generation');
  } finally {
    await h.close();
  }
});

G.run();
