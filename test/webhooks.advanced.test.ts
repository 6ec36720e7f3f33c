/**
 * Advanced webhook delivery against a real HTTP receiver on loopback: each endpoint gets the
 * events its filter names, signed with its own secret the Standard Webhooks way; during a
 * rotation's grace both secrets sign; a disabled or filtered-out endpoint gets nothing; 410
 * disables an endpoint until the client enables it; the destination policy holds for
 * advanced endpoints too; encoded and encrypted payloads decode as the hosted docs show.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import fs from 'node:fs';
import { constants, createDecipheriv, generateKeyPairSync, privateDecrypt } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config/config.js';
import { openServices, type Services } from '../src/composition/services.js';
import { buildApp } from '../src/app.js';
import { systemResolver, type Resolver } from '../src/adapters/egress.js';
import { verifySignature } from '../src/webhooks/signature.js';
import { tempDir } from './support/app.js';
import { waiter } from './support/wait.js';

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

class Receiver {
  server!: http.Server;
  received: Received[] = [];
  answer: (r: Received) => number = () => 200;
  async start() {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const r = { path: req.url ?? '', headers: req.headers, body };
        this.received.push(r);
        res.writeHead(this.answer(r)).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }
  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  at(path: string) {
    return this.received.filter((r) => r.path === path);
  }
  async close() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

interface Node {
  services: Services;
  app: FastifyInstance;
  headers: Record<string, string>;
  ok(url: string, data: unknown): Promise<any>;
  close(): Promise<void>;
}

/** `internal.example.test` resolves to a private address: the destination policy must refuse it at send time. */
const resolve: Resolver = async (host) => (host === 'internal.example.test' ? [{ address: '10.1.2.3', family: 4 }] : systemResolver(host));

async function node(dataDir: string): Promise<Node> {
  const services = await openServices(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }), {
    webhooks: { retrySchedule: [100, 200], jitter: 0, pollMs: 50, resolve },
  });
  const app = await buildApp(services, { logger: false });
  await app.ready();
  const post = async (url: string, data: unknown, headers: Record<string, string>) => {
    const res = await app.inject({ method: 'POST', url, payload: { data }, headers });
    const body = JSON.parse(res.body);
    assert.is(res.statusCode, 200, `${url}: ${res.body}`);
    return body.result;
  };
  const ws = (await post('/v2/workspace/create', { ownerEmail: 'adv@example.com' }, {})).data;
  const [apiKey, k] = Object.entries(ws.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken };
  return {
    services,
    app,
    headers,
    ok: (url, data) => post(url, data, headers),
    async close() {
      await app.close();
      await services.close();
    },
  };
}

const until = waiter(10_000, 20);
const P = '/v2/workspace/advancedwebhook/endpoints';

const signed = (secret: string, r: Received) =>
  verifySignature(secret, { id: String(r.headers['webhook-id']), timestamp: String(r.headers['webhook-timestamp']), signature: String(r.headers['webhook-signature']) }, r.body);

const W = suite<{ receiver: Receiver; dir: string; n: Node }>('advanced webhook delivery');
W.before.each(async (ctx) => {
  ctx.receiver = new Receiver();
  await ctx.receiver.start();
  ctx.dir = tempDir('collab-adv-hooks-');
  ctx.n = await node(ctx.dir);
  await ctx.n.ok('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
});
W.after.each(async (ctx) => {
  await ctx.n.close();
  await ctx.receiver.close();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

W('each endpoint gets what its filter names, signed with its own secret; disabled ones nothing', async ({ receiver, n }) => {
  const create = async (path: string, extra: Record<string, unknown> = {}) => {
    const id = (await n.ok(`${P}/create`, { url: `${receiver.url}${path}`, ...extra })).data.id as string;
    return { id, secret: (await n.ok(`${P}/secret/get`, { endpointId: id })).data.secret as string };
  };
  const all = await create('/all');
  const created = await create('/created', { filterTypes: ['AgentCreated'] });
  const orgs = await create('/orgs', { channels: ['organization'] });
  await create('/off', { disabled: true });
  await n.ok('/v2/agents/create', { agentId: 'a1', name: 'v1', execution: { mcpServers: [{ name: 's', url: 'https://mcp.example', auth: { token: 'mcp-secret' } }] } });
  await n.ok('/v2/agents/update', { agentId: 'a1', name: 'v2' });
  await n.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'Org' }] });
  await until('every expected delivery', () => receiver.at('/all').length >= 3 && receiver.at('/created').length >= 1 && receiver.at('/orgs').length >= 1);

  const types = (path: string) => receiver.at(path).map((r) => JSON.parse(r.body).type);
  assert.equal(types('/all'), ['AgentCreated', 'AgentUpdated', 'OrganizationCreated']);
  assert.equal(types('/created'), ['AgentCreated']);
  assert.equal(types('/orgs'), ['OrganizationCreated']);
  assert.is(receiver.at('/off').length, 0, 'a disabled endpoint gets nothing');
  assert.not.ok(receiver.received.some((r) => r.body.includes('mcp-secret')), 'secrets in events are never delivered');

  const body = JSON.parse(receiver.at('/created')[0]!.body);
  assert.equal([body.event, body.source, body.actionType, body.data.type, body.data.data.agentId], ['AgentCreated', 'agent', 'created', 'AgentCreated', 'a1']);
  assert.is(body.webhookId, receiver.at('/created')[0]!.headers['webhook-id']);
  assert.ok(Number.isFinite(Date.parse(body.timestamp)));
  for (const [path, own, other] of [['/all', all, created], ['/created', created, orgs], ['/orgs', orgs, all]] as const) {
    for (const r of receiver.at(path)) {
      assert.match(String(r.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/, 'one signature');
      assert.is(r.headers.authorization, undefined, 'no Basic auth on advanced endpoints');
      assert.ok(signed(own.secret, r), `${path}: verifies with its own secret`);
      assert.not.ok(signed(other.secret, r), `${path}: not with another endpoint's`);
      assert.not.ok(signed(own.secret, { ...r, body: `${r.body} ` }), 'a changed body does not verify');
    }
  }
  // The deliveries listing names the endpoint by id.
  const listed = (await n.ok('/v2/workspace/webhooks/deliveries/get', {})).data;
  assert.ok(listed.some((d: any) => d.endpoint === created.id && d.status === 'succeeded'));
});

W('a rotation: both secrets sign during the grace; revokePrevious leaves only the new one', async ({ receiver, n }) => {
  const id = (await n.ok(`${P}/create`, { url: `${receiver.url}/r`, filterTypes: ['OrganizationCreated'] })).data.id;
  const first = (await n.ok(`${P}/secret/get`, { endpointId: id })).data.secret;
  await n.ok(`${P}/secret/rotate`, { endpointId: id });
  const second = (await n.ok(`${P}/secret/get`, { endpointId: id })).data.secret;
  await n.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'A' }] });
  await until('the first delivery', () => receiver.at('/r').length === 1);
  const during = receiver.at('/r')[0]!;
  assert.is(String(during.headers['webhook-signature']).split(' ').length, 2, 'two signatures');
  assert.ok(signed(first, during) && signed(second, during), 'either secret verifies');

  await n.ok(`${P}/secret/rotate`, { endpointId: id, revokePrevious: true });
  const third = (await n.ok(`${P}/secret/get`, { endpointId: id })).data.secret;
  await n.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o2', organizationName: 'B' }] });
  await until('the second delivery', () => receiver.at('/r').length === 2);
  const after = receiver.at('/r')[1]!;
  assert.is(String(after.headers['webhook-signature']).split(' ').length, 1);
  assert.ok(signed(third, after));
  assert.not.ok(signed(second, after) || signed(first, after), 'revoked secrets no longer sign');
});

W('410 Gone disables the endpoint (with the reason) until the client enables it; a blocked destination fails at once', async ({ receiver, n }) => {
  receiver.answer = (r) => (r.path === '/gone' ? 410 : 200);
  const gone = (await n.ok(`${P}/create`, { url: `${receiver.url}/gone` })).data.id;
  const blocked = (await n.ok(`${P}/create`, { url: 'http://internal.example.test/hook' })).data.id;
  await n.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'A' }] });
  const endpoint = async (id: string) => (await n.ok(`${P}/get`, {})).data.endpoints.find((e: any) => e.id === id);
  await until('the endpoint disabled', async () => (await endpoint(gone)).disabled === true);
  assert.match((await endpoint(gone)).disabledReason, /answered 410 Gone/);
  const deliveries = async () => (await n.ok('/v2/workspace/webhooks/deliveries/get', {})).data as any[];
  await until('the blocked delivery failed', async () => (await deliveries()).some((d) => d.endpoint === blocked && d.status === 'failed'));
  const b = (await deliveries()).find((d) => d.endpoint === blocked);
  assert.equal([b.attemptCount, b.attempts[0].error, b.attempts[0].durationMs], [1, 'blocked by the destination policy', 0]);

  await n.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o2', organizationName: 'B' }] });
  await until('o2 reached the blocked endpoint', async () => (await deliveries()).filter((d) => d.endpoint === blocked).length === 2);
  assert.is(receiver.at('/gone').length, 1, 'nothing more queued for a disabled endpoint');

  receiver.answer = () => 200;
  const enabled = (await n.ok(`${P}/update`, { endpointId: gone, disabled: false })).data;
  assert.equal([enabled.disabled, enabled.disabledReason], [false, null]);
  await n.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o3', organizationName: 'C' }] });
  await until('delivered again', () => receiver.at('/gone').length === 2);
  assert.is(JSON.parse(receiver.at('/gone')[1]!.body).data.data.organizationId, 'o3');
});

W('encodeData and encryptData: the payload as the hosted docs decode it', async ({ receiver, n }) => {
  await n.ok(`${P}/create`, { url: `${receiver.url}/p`, filterTypes: ['OrganizationCreated'] });
  await n.ok('/v2/workspace/advancedwebhookconfig/update', { encodeData: true });
  await n.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'A' }] });
  await until('the encoded delivery', () => receiver.at('/p').length === 1);
  const encoded = JSON.parse(receiver.at('/p')[0]!.body);
  assert.equal(Object.keys(encoded), ['encodedPayload']);
  assert.is(JSON.parse(Buffer.from(encoded.encodedPayload, 'base64').toString('utf8')).data.data.organizationId, 'o1');

  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  const settings = (await n.ok('/v2/workspace/advancedwebhookconfig/update', { encryptData: true, publicKey: pub })).data;
  assert.equal(settings, { isEnabled: true, encryptData: true, encodeData: true, publicKey: pub, enableDataProtection: false });
  await n.ok('/v2/organizations/add', { organizations: [{ organizationId: 'org-2', organizationName: 'B' }] });
  await until('the encrypted delivery', () => receiver.at('/p').length === 2);
  const enc = JSON.parse(receiver.at('/p')[1]!.body);
  assert.equal(Object.keys(enc).sort(), ['encryptedData', 'encryptedKey', 'iv']);
  assert.not.ok(receiver.at('/p')[1]!.body.includes('org-2'), 'nothing in clear (a "-" is never in base64)');
  // The hosted docs' sample decryption, step for step.
  const key = privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, Buffer.from(enc.encryptedKey, 'base64'));
  const decipher = createDecipheriv('aes-256-cbc', key, Buffer.from(enc.iv, 'base64'));
  const clear = decipher.update(enc.encryptedData, 'base64', 'utf8') + decipher.final('utf8');
  assert.is(JSON.parse(clear).data.data.organizationId, 'org-2');
});

W.run();
