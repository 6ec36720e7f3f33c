/**
 * The webhook egress policy (src/adapters/egress.ts, docs/webhooks.md "Egress policy"):
 * issue 12's SSRF reproductions. Every spelling of a refused address is INVALID_ARGUMENT at
 * configuration time by default; at send time a name is resolved once, every address of the
 * answer is checked, and the connection goes only to those checked addresses (Host and SNI
 * kept); a blocked attempt records "blocked by the destination policy" with no timing and
 * reaches nothing. Loopback receivers are reached only through WEBHOOK_ALLOWED_CIDRS.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import tls from 'node:tls';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { openServices, type Services } from '../src/composition/services.js';
import { buildApp } from '../src/app.js';
import { harness, tempDir, type Harness, type Tenant } from './support/app.js';
import { BLOCKED, DestinationBlockedError, EgressPolicy, embeddedIPv4, parseCidr, type ResolvedAddress, type Resolver } from '../src/adapters/egress.js';
import { workspaceDecider, workspaceStream } from '../commands/workspace.js';

/** The address forms of issue 12, each refused by default (host part of an http URL). */
const REFUSED_HOSTS = [
  '2130706433',
  '127.0.0.1',
  'localhost',
  '[::1]',
  '0.0.0.0',
  '127.1',
  '0x7f000001',
  '0177.0.0.1',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '169.254.169.254',
  '10.0.0.1',
  '192.168.1.1',
  '100.64.0.1',
  '[fe80::1]',
  '[fc00::1]',
  '224.0.0.1',
  // More spellings and ranges of the same kind.
  '127.0.0.1.',
  '%31%32%37.0.0.1',
  '0x7f.1',
  '127.000.000.001',
  'LOCALHOST.',
  'hooks.localhost',
  '[0:0:0:0:0:0:0:1]',
  '[::]',
  '0',
  '172.16.0.1',
  '172.31.255.255',
  '255.255.255.255',
  '240.0.0.1',
  '[::127.0.0.1]',
  '[::ffff:0:127.0.0.1]',
  '[64:ff9b::10.0.0.1]',
  '[2002:a00:1::1]',
  '[2002:7f00:1::]',
  '[ff02::1]',
  '[fd12:3456::1]',
  '[::ffff:169.254.169.254]',
];

const P = suite('webhook egress policy: addresses');

P('the URL parser writes every IPv4 spelling as dotted decimal, and IPv6 compressed', () => {
  for (const host of ['2130706433', '127.1', '0x7f000001', '0177.0.0.1', '0x7f.1', '127.000.000.001', '127.0.0.1.', '%31%32%37.0.0.1']) {
    assert.is(new URL(`http://${host}:8080/x`).hostname, '127.0.0.1', host);
  }
  assert.is(new URL('http://[::ffff:127.0.0.1]/').hostname, '[::ffff:7f00:1]');
  assert.is(new URL('http://[0:0:0:0:0:0:0:1]/').hostname, '[::1]');
});

P('the default policy refuses every non-global range, in every form, and allows public addresses', () => {
  const policy = new EgressPolicy();
  const refused: [string, RegExp][] = [
    ['127.0.0.1', /loopback/],
    ['127.255.255.254', /loopback/],
    ['::1', /loopback/],
    ['0.0.0.0', /unspecified/],
    ['::', /unspecified/],
    ['10.1.2.3', /private/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.168.1.1', /private/],
    ['100.64.0.1', /CGNAT/],
    ['100.127.255.255', /CGNAT/],
    ['169.254.169.254', /link-local/],
    ['fe80::1', /link-local/],
    ['fe80::1%eth0', /link-local/],
    ['fc00::1', /unique-local/],
    ['fd00:ec2::254', /unique-local/],
    ['224.0.0.1', /multicast/],
    ['239.255.255.250', /multicast/],
    ['ff02::1', /multicast/],
    ['240.0.0.1', /reserved or broadcast/],
    ['255.255.255.255', /reserved or broadcast/],
    ['192.0.2.1', /documentation/],
    ['2001:db8::1', /documentation/],
    ['198.18.0.1', /benchmarking/],
    ['::ffff:127.0.0.1', /IPv4-mapped form of 127\.0\.0\.1, a loopback address/],
    ['::ffff:7f00:1', /IPv4-mapped form of 127\.0\.0\.1/],
    ['::ffff:a9fe:a9fe', /IPv4-mapped form of 169\.254\.169\.254, a link-local address/],
    ['::ffff:0:10.0.0.1', /IPv4-translated form of 10\.0\.0\.1/],
    ['::127.0.0.1', /IPv4-compatible form of 127\.0\.0\.1/],
    ['64:ff9b::a00:1', /NAT64 form of 10\.0\.0\.1/],
    ['64:ff9b:1::1', /local-use NAT64/],
    ['2002:a00:1::1', /6to4 form of 10\.0\.0\.1/],
    ['2002:c0a8:101::', /6to4 form of 192\.168\.1\.1/],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
    ['not-an-ip', /not an IP address/],
  ];
  for (const [ip, why] of refused) {
    const r = policy.refusal(ip);
    assert.ok(r, `${ip} refused`);
    assert.match(r!, why, ip);
  }
  for (const ip of ['8.8.8.8', '93.184.216.34', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) {
    assert.is(policy.refusal(ip), null, `${ip} allowed`);
  }
  assert.equal(embeddedIPv4('2a00:1450::1'), null);
  assert.equal(embeddedIPv4('::ffff:1.2.3.4'), { v4: '1.2.3.4', form: 'an IPv4-mapped' });
});

P('WEBHOOK_ALLOWED_CIDRS opens exactly its ranges (and their IPv6 forms); WEBHOOK_ALLOW_PRIVATE opens everything', () => {
  const policy = new EgressPolicy({ allowedCidrs: ['127.0.0.1/32', '10.20.0.0/16', 'fd00:1::/32'] });
  for (const ip of ['127.0.0.1', '::ffff:127.0.0.1', '10.20.3.4', '64:ff9b::a14:304', 'fd00:1::5']) assert.is(policy.refusal(ip), null, ip);
  for (const ip of ['127.0.0.2', '::1', '10.21.0.1', 'fd00:2::1', '169.254.169.254']) assert.ok(policy.refusal(ip), ip);
  // localhost stands for 127.0.0.1 and ::1: both must be allowed.
  assert.match(policy.literalRefusal('http://localhost:8080/x')!, /localhost is a loopback name \(::1 is a loopback address\)/);
  assert.is(new EgressPolicy({ allowedCidrs: ['127.0.0.1', '::1'] }).literalRefusal('http://localhost:8080/x'), null);
  const open = new EgressPolicy({ allowPrivate: true });
  for (const ip of ['127.0.0.1', '::1', '169.254.169.254', '10.0.0.1', 'fe80::1']) assert.is(open.refusal(ip), null, ip);
  assert.is(open.literalRefusal('http://localhost/x'), null);

  assert.equal(parseCidr(' 10.0.0.0/8 '), { address: '10.0.0.0', prefix: 8, type: 'ipv4' });
  assert.equal(parseCidr('[::1]'), { address: '::1', prefix: 128, type: 'ipv6' });
  for (const bad of ['10.0.0.0/33', '::/129', '127.1', 'localhost', '10.0.0.0/', '/8', 'fe80::1%eth0', '10.0.0.0/8/8', '']) {
    assert.is(parseCidr(bad), null, bad);
  }
});

P('configuration: WEBHOOK_ALLOWED_CIDRS and WEBHOOK_ALLOW_PRIVATE, defaults and bad values naming the variable', () => {
  const c = loadConfig({});
  assert.equal([c.webhookAllowedCidrs, c.webhookAllowPrivate], [[], false]);
  const set = loadConfig({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32, 10.0.0.0/8,fd00::/8', WEBHOOK_ALLOW_PRIVATE: 'true' });
  assert.equal([set.webhookAllowedCidrs, set.webhookAllowPrivate], [['127.0.0.1/32', '10.0.0.0/8', 'fd00::/8'], true]);
  const failsOn = (env: Record<string, string>, variable: string, message: RegExp) => {
    try {
      loadConfig(env);
    } catch (e) {
      assert.instance(e, ConfigError);
      assert.is((e as ConfigError).variable, variable);
      assert.match((e as Error).message, message);
      return;
    }
    assert.unreachable(`${JSON.stringify(env)} was accepted`);
  };
  failsOn({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32,intranet' }, 'WEBHOOK_ALLOWED_CIDRS', /WEBHOOK_ALLOWED_CIDRS: .*"intranet"/);
  failsOn({ WEBHOOK_ALLOWED_CIDRS: '10.0.0.0/40' }, 'WEBHOOK_ALLOWED_CIDRS', /"10\.0\.0\.0\/40"/);
  failsOn({ WEBHOOK_ALLOW_PRIVATE: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE', /WEBHOOK_ALLOW_PRIVATE: must be true or false/);
});

P('a localhost name is loopback without asking DNS; every address of an answer must pass', async () => {
  const policy = new EgressPolicy({ allowedCidrs: ['127.0.0.1/32'] });
  const signal = new AbortController().signal;
  let asked = 0;
  const resolver = (answer: ResolvedAddress[]): Resolver => async () => {
    asked++;
    return answer;
  };
  for (const host of ['localhost', 'hooks.localhost', 'LOCALHOST.']) {
    await policy.destinations(host, resolver([{ address: '8.8.8.8', family: 4 }]), signal).then(
      () => assert.unreachable(`${host} allowed`),
      (e) => assert.instance(e, DestinationBlockedError),
    );
  }
  assert.is(asked, 0, 'DNS never asked about localhost names');
  const mixed = resolver([{ address: '127.0.0.1', family: 4 }, { address: '10.0.0.1', family: 4 }]);
  await policy.destinations('mixed.example.test', mixed, signal).then(
    () => assert.unreachable('a mixed answer was allowed'),
    (e) => assert.instance(e, DestinationBlockedError),
  );
  const checked = await policy.destinations('ok.example.test', resolver([{ address: '127.0.0.1', family: 4 }]), signal);
  assert.equal(checked, [{ address: '127.0.0.1', family: 4 }]);
  assert.equal(await policy.destinations('[::ffff:7f00:1]', mixed, signal), [{ address: '::ffff:7f00:1', family: 6 }], 'a literal is not resolved');
});

P.run();

// ---- configuration time, through the API ----

const C = suite<{ h: Harness; t: Tenant }>('webhook egress policy: configuration time');
C.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
});
C.after(async (ctx) => ctx.h.close());

/** webhookconfig/update refuses in the hosted API's words, the cause in details.reason (docs/compatibility.md). */
const causeOf = (body: any) => (body.error.message === 'Invalid webhook service configuration.' ? body.error.details.reason : body.error.message) as string;
const refusedAnswer = (res: { status: number; body: any }, field: string, label: string) => {
  assert.is(res.status, 400, `${label}: ${JSON.stringify(res.body)}`);
  assert.is(res.body.error.status, 'INVALID_ARGUMENT', label);
  assert.match(causeOf(res.body), new RegExp(`data\\.${field.replace(/\./g, '\\.')} is not allowed by the destination policy: `), label);
};

C('each address form of the issue is INVALID_ARGUMENT by default, flat, nested, processed, and on apikey/create', async ({ h, t }) => {
  for (const host of REFUSED_HOSTS) {
    const url = `http://${host}:8080/x?y=1`;
    refusedAnswer(await h.post('/v2/workspace/webhookconfig/update', { useWebhookService: true, rawNotificationUrl: url }, t.headers), 'rawNotificationUrl', host);
  }
  refusedAnswer(
    await h.post('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { processedNotificationUrl: 'https://[::ffff:169.254.169.254]/latest/meta-data' } }, t.headers),
    'webhookServiceConfig.processedNotificationUrl',
    'nested processed',
  );
  refusedAnswer(
    await h.post('/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing', useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: 'http://2130706433:8080/x' } }, t.workspaceHeaders),
    'webhookServiceConfig.rawNotificationUrl',
    'apikey/create',
  );
  const r = await h.post('/v2/workspace/webhookconfig/update', { rawNotificationUrl: 'http://0x7f000001:8080/x' }, t.headers);
  assert.match(causeOf(r.body), /127\.0\.0\.1 is a loopback address/, 'the message names what the address is, normalized');
  // Nothing was stored.
  const cfg = await h.post('/v2/workspace/webhookconfig/update', { useWebhookService: false }, t.headers);
  assert.equal(cfg.body.result.data.webhookServiceConfig, {});
  assert.is(cfg.body.result.data.useWebhookService, false);
});

C('public literals and host names are accepted (names are checked when resolved)', async ({ h, t }) => {
  for (const url of ['https://hooks.example.com/raw', 'http://93.184.216.34:8080/x', 'https://[2606:4700:4700::1111]/x', 'https://internal.example.test/x']) {
    const res = await h.post('/v2/workspace/webhookconfig/update', { useWebhookService: true, rawNotificationUrl: url }, t.headers);
    assert.is(res.status, 200, `${url}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.result.data.webhookServiceConfig.rawNotificationUrl, url);
  }
});

C('the allowlist and the internal-deployment switch open configuration time too', async () => {
  const allow = await harness({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
  const open = await harness({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  try {
    const a = await allow.tenant();
    assert.is((await allow.post('/v2/workspace/webhookconfig/update', { rawNotificationUrl: 'http://127.1:9/x' }, a.headers)).status, 200);
    refusedAnswer(await allow.post('/v2/workspace/webhookconfig/update', { rawNotificationUrl: 'http://127.0.0.2:9/x' }, a.headers), 'rawNotificationUrl', '127.0.0.2');
    refusedAnswer(await allow.post('/v2/workspace/webhookconfig/update', { rawNotificationUrl: 'http://localhost:9/x' }, a.headers), 'rawNotificationUrl', 'localhost needs ::1 too');
    const o = await open.tenant();
    for (const host of ['10.0.0.1', '169.254.169.254', 'localhost', '[::1]']) {
      assert.is((await open.post('/v2/workspace/webhookconfig/update', { rawNotificationUrl: `http://${host}:9/x` }, o.headers)).status, 200, host);
    }
  } finally {
    await allow.close();
    await open.close();
  }
});

C.run();

// ---- send time ----

interface Received {
  path: string;
  host: string | undefined;
  body: string;
}

interface Node {
  services: Services;
  app: FastifyInstance;
  dir: string;
  post(url: string, data: unknown, headers?: Record<string, string>): Promise<any>;
  close(): Promise<void>;
}

async function node(env: Record<string, string>, resolve?: Resolver): Promise<Node> {
  const dir = tempDir('collab-egress-');
  const services = await openServices(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dir, ...env }), {
    webhooks: { retrySchedule: [60_000], jitter: 0, pollMs: 50, ...(resolve ? { resolve } : {}) },
  });
  const app = await buildApp(services, { logger: false });
  await app.ready();
  return {
    services,
    app,
    dir,
    async post(url, data, headers = {}) {
      return JSON.parse((await app.inject({ method: 'POST', url, payload: { data }, headers })).body);
    },
    async close() {
      await app.close();
      await services.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function tenant(n: Node) {
  const ws = (await n.post('/v2/workspace/create', { ownerEmail: 'egress@example.com' })).result.data;
  const [apiKey, k] = Object.entries(ws.apiKeyList)[0] as [string, { authToken: string }];
  return { workspaceId: ws.id as string, apiKey, headers: { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken } };
}

async function configure(n: Node, headers: Record<string, string>, url: string) {
  const cfg = await n.post('/v2/workspace/webhookconfig/update', { useWebhookService: true, triggers: ['organization'], webhookServiceConfig: { rawNotificationUrl: url } }, headers);
  assert.is(cfg.result?.data?.useWebhookService, true, JSON.stringify(cfg));
}

async function deliveries(n: Node, headers: Record<string, string>, status?: string): Promise<any[]> {
  return (await n.post('/v2/workspace/webhooks/deliveries/get', status ? { status } : {}, headers)).result.data;
}

async function eventually(what: string, check: () => Promise<boolean> | boolean, ms = 8000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const S = suite<{ server: http.Server; received: Received[]; port: number }>('webhook egress policy: send time');
S.before.each(async (ctx) => {
  ctx.received = [];
  ctx.server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      ctx.received.push({ path: req.url ?? '', host: req.headers.host, body });
      if (req.url === '/redirect') res.writeHead(302, { location: '/elsewhere' }).end();
      else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => ctx.server.listen(0, '127.0.0.1', r));
  ctx.port = (ctx.server.address() as AddressInfo).port;
});
S.after.each(async (ctx) => {
  ctx.server.closeAllConnections();
  await new Promise((r) => ctx.server.close(r));
});

S('an allowlisted loopback receiver gets the delivery; a 3xx is a status, not followed', async ({ received, port }) => {
  const n = await node({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
  try {
    const t = await tenant(n);
    await configure(n, t.headers, `http://127.0.0.1:${port}/raw`);
    await n.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'one' }] }, t.headers);
    await eventually('the delivery', () => received.some((r) => r.body.includes('"o1"')));
    assert.is(received[0]!.path, '/raw');
    await eventually('success recorded', async () => (await deliveries(n, t.headers, 'succeeded')).length === 1);

    await configure(n, t.headers, `http://127.0.0.1:${port}/redirect`);
    await n.post('/v2/organizations/add', { organizations: [{ organizationId: 'o2', organizationName: 'two' }] }, t.headers);
    await eventually('the 302 recorded', async () => (await deliveries(n, t.headers, 'pending')).some((d) => d.attempts[0]?.httpStatus === 302));
    assert.not.ok(received.some((r) => r.path === '/elsewhere'), 'the redirect was not followed');
  } finally {
    await n.close();
  }
});

S('a name resolving to loopback is blocked at send time: recorded as the policy, no timing, not retried, nothing received', async ({ received, port }) => {
  let asked = 0;
  let resolvedAt = 0;
  // The resolver takes a while: none of it may show in what the tenant can read.
  const resolve: Resolver = async (host) => {
    asked++;
    assert.is(host, 'hooks.example.test');
    await new Promise((r) => setTimeout(r, 150));
    resolvedAt = Date.now();
    return [{ address: '127.0.0.1', family: 4 }];
  };
  const n = await node({}, resolve);
  try {
    const t = await tenant(n);
    await configure(n, t.headers, `http://hooks.example.test:${port}/raw`);
    await n.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'one' }] }, t.headers);
    await eventually('the blocked attempt', async () => (await deliveries(n, t.headers, 'failed')).length === 1);
    const [d] = await deliveries(n, t.headers, 'failed');
    assert.is(d.lastError, BLOCKED);
    assert.is(d.lastError, 'blocked by the destination policy');
    assert.is(d.attemptCount, 1, 'failed at once, not retried');
    assert.equal(d.attempts, [{ at: d.attempts[0].at, durationMs: 0, error: 'blocked by the destination policy' }]);
    assert.ok(d.attempts[0].at >= resolvedAt, 'the attempt is dated after the resolution, so its date tells nothing of it either');
    assert.is(asked, 1);
    // A chance for a send that must not happen (cannot fail spuriously: it checks for nothing).
    await new Promise((r) => setTimeout(r, 200));
    assert.is(received.length, 0, 'the receiver got nothing');
  } finally {
    await n.close();
  }
});

S('a URL stored before the policy (literal loopback, a localhost name) is blocked at send time, never asking DNS', async ({ received, port }) => {
  let asked = 0;
  const n = await node({}, async () => {
    asked++;
    return [{ address: '8.8.8.8', family: 4 }];
  });
  try {
    const t = await tenant(n);
    for (const [i, url] of [`http://127.0.0.1:${port}/raw`, `http://something.localhost:${port}/raw`].entries()) {
      // Straight to the aggregate, as an older version's configuration would be in the log.
      await n.services.commands.handle(
        workspaceDecider,
        workspaceStream(t.workspaceId),
        { type: 'UpdateServiceConfig', data: { apiKey: t.apiKey, service: 'webhook', enabled: true, config: { rawNotificationUrl: url }, triggers: ['organization'], defaultTriggers: ['organization'] }, metadata: { now: Date.now() } },
        { requestId: `legacy-${i}`, actor: 'test', time: Date.now(), workspaceId: t.workspaceId, apiKey: t.apiKey },
      );
      await n.post('/v2/organizations/add', { organizations: [{ organizationId: `o${i}`, organizationName: `org ${i}` }] }, t.headers);
      await eventually(`blocked ${url}`, async () => (await deliveries(n, t.headers, 'failed')).length === i + 1);
    }
    const failed = await deliveries(n, t.headers, 'failed');
    assert.equal(failed.map((d) => [d.url, d.lastError, d.attempts[0].durationMs]), [
      [`http://127.0.0.1:${port}/raw`, BLOCKED, 0],
      [`http://something.localhost:${port}/raw`, BLOCKED, 0],
    ]);
    assert.is(asked, 0);
    assert.is(received.length, 0);
  } finally {
    await n.close();
  }
});

S('an answer with one allowed and one refused address is refused whole, even with a receiver on the allowed one', async ({ received, port }) => {
  const n = await node({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }, async () => [
    { address: '127.0.0.1', family: 4 },
    { address: '10.0.0.1', family: 4 },
  ]);
  try {
    const t = await tenant(n);
    await configure(n, t.headers, `http://mixed.example.test:${port}/raw`);
    await n.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'one' }] }, t.headers);
    await eventually('the blocked attempt', async () => (await deliveries(n, t.headers, 'failed')).length === 1);
    assert.is((await deliveries(n, t.headers, 'failed'))[0].lastError, BLOCKED);
    assert.is(received.length, 0);
  } finally {
    await n.close();
  }
});

S('the connection goes to the checked address, resolved once per attempt, with the Host header of the URL', async ({ received, port }) => {
  // `.test` names never resolve in DNS: the delivery arrives only because the connection
  // used the address this resolver gave (and the policy checked), not a second lookup.
  let asked = 0;
  const n = await node({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }, async () => {
    asked++;
    return [{ address: '127.0.0.1', family: 4 }];
  });
  try {
    const t = await tenant(n);
    await configure(n, t.headers, `http://hooks.example.test:${port}/raw?q=1`);
    await n.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'one' }] }, t.headers);
    await eventually('the delivery', () => received.length === 1);
    assert.is(received[0]!.host, `hooks.example.test:${port}`);
    assert.is(received[0]!.path, '/raw?q=1');
    await eventually('success recorded', async () => (await deliveries(n, t.headers, 'succeeded')).length === 1);
    assert.is(asked, 1);
  } finally {
    await n.close();
  }
});

S('https keeps the URL hostname as TLS SNI while connecting to the checked address', async () => {
  const names: string[] = [];
  // No certificate: the handshake fails after the client hello, which carries the SNI.
  const server = tls.createServer({ SNICallback: (name, cb) => (names.push(name), cb(new Error('no certificate'))) });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const n = await node({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }, async () => [{ address: '127.0.0.1', family: 4 }]);
  try {
    const t = await tenant(n);
    await configure(n, t.headers, `https://secure.example.test:${port}/raw`);
    await n.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'one' }] }, t.headers);
    await eventually('the attempt', async () => (await deliveries(n, t.headers, 'pending')).some((d) => d.attemptCount === 1));
    assert.equal(names, ['secure.example.test']);
    const [d] = await deliveries(n, t.headers, 'pending');
    assert.is.not(d.lastError, BLOCKED, 'an allowed destination fails as a connection error');
  } finally {
    await n.close();
    await new Promise((r) => server.close(r));
  }
});

S('connection and resolution errors of allowed destinations are recorded as before, and retried', async ({ port }) => {
  const closed = await new Promise<number>((r) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => r(p));
    });
  });
  const n = await node({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }, async (host) => {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  });
  try {
    const a = await tenant(n);
    await configure(n, a.headers, `http://127.0.0.1:${closed}/raw`);
    const b = await tenant(n);
    await configure(n, b.headers, `http://nowhere.example.test:${port}/raw`);
    await n.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'one' }] }, a.headers);
    await n.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1', organizationName: 'one' }] }, b.headers);
    for (const [t, code] of [[a, 'ECONNREFUSED'], [b, 'ENOTFOUND']] as const) {
      await eventually(code, async () => (await deliveries(n, t.headers, 'pending')).some((d) => d.attemptCount === 1));
      const [d] = await deliveries(n, t.headers, 'pending');
      assert.is(d.lastError, code);
      assert.is(d.attempts[0].error, code);
      assert.ok(d.nextAttemptAt > d.attempts[0].at, 'due again later');
    }
  } finally {
    await n.close();
  }
});

S.run();
