/**
 * Secrets (issue 7.6). The real service runs as a child process with LOG_LEVEL=trace; a
 * session creates a workspace, API keys, a token reset, webhook and email configs with
 * secrets, agents with auth secrets, a user token; it retries a creation with an
 * Idempotency-Key, sends wrong credentials and malformed bodies carrying secrets, and a
 * webhook receiver on loopback gets the deliveries. Then no secret appears:
 * - in the process's logs (every line, trace level);
 * - in any read-model collection (every rm_* table, ephemeral ones included);
 * - in any response but the one that created it (agent secrets: in none at all);
 * - in any webhook body;
 * - auth tokens (workspace, API key) nowhere in clear, the event log included (hashes only);
 *   since issue 12 no other secret either (sealed: src/secrets/).
 * And the comparisons of presented secrets are constant-time (a static guard over the
 * modules that compare them).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { tempDir } from './support/app.js';
import { ROOT, startService, waitHealthy, type Service } from './support/process.js';
import { loadConfig } from '../src/config/config.js';
import { openServices } from '../src/composition/services.js';

interface Answer {
  route: string;
  status: number;
  text: string;
  body: any;
}

test('no secret in logs, read models, later responses or webhook bodies; auth tokens only hashed', async () => {
  const dir = tempDir('collab-secrets-');
  const bodies: string[] = [];
  const receiver = http.createServer((req, res) => {
    let b = '';
    req.on('data', (c) => (b += c));
    req.on('end', () => {
      bodies.push(b);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  let s: Service | undefined;
  try {
    s = await startService({ DATA_DIR: dir, LOG_LEVEL: 'trace', WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
    await waitHealthy(s);
    const answers: Answer[] = [];
    const call = async (route: string, data: unknown, headers: Record<string, string> = {}, raw?: string): Promise<Answer> => {
      const r = await fetch(`${s!.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw ?? JSON.stringify({ data }) });
      const text = await r.text();
      const a = { route, status: r.status, text, body: JSON.parse(text) };
      answers.push(a);
      return a;
    };
    // Secrets the client chooses.
    const chosen = {
      webhook1: 'whsec-FIRST-webhook-token-0123456789',
      webhook2: 'whsec-SECOND-webhook-token-0123456789',
      email1: 'email-FIRST-provider-key-0123456789',
      email2: 'email-SECOND-provider-key-0123456789',
      agentOption: 'agent-STRATEGY-secret-0123456789',
      agentMcp: 'agent-MCP-bearer-secret-0123456789',
      agentMcp2: 'agent-MCP-bearer-secret-UPDATED-0123',
    };

    const ws = await call('/v2/workspace/create', { ownerEmail: 'secrets@example.com' });
    const w = ws.body.result.data;
    const [apiKey1, k1] = Object.entries(w.apiKeyList)[0] as [string, { authToken: string }];
    const wsHeaders = { 'x-service-workspace-id': w.id, 'x-service-workspace-auth-token': w.authToken };
    const created = await call('/v2/workspace/apikey/create', {
      ownerEmail: 'o@example.com',
      type: 'testing',
      createAuthToken: true,
      useEmailService: true,
      emailServiceConfig: { type: 'sendgrid', apiKey: chosen.email1, fromEmail: 'x@example.com' },
      useWebhookService: true,
      webhookServiceConfig: { authToken: chosen.webhook1, rawNotificationUrl: `${hook}/raw`, processedNotificationUrl: `${hook}/processed` },
    }, { ...wsHeaders, 'idempotency-key': 'create-key-1' });
    assert.is(created.status, 200, created.text);
    const apiKey2 = created.body.result.data.apiKey as string;
    const token2 = created.body.result.data.authToken as string;
    // A retry of the same creation replays it, the token redacted.
    const replay = await call('/v2/workspace/apikey/create', {
      ownerEmail: 'o@example.com',
      type: 'testing',
      createAuthToken: true,
      useEmailService: true,
      emailServiceConfig: { type: 'sendgrid', apiKey: chosen.email1, fromEmail: 'x@example.com' },
      useWebhookService: true,
      webhookServiceConfig: { authToken: chosen.webhook1, rawNotificationUrl: `${hook}/raw`, processedNotificationUrl: `${hook}/processed` },
    }, { ...wsHeaders, 'idempotency-key': 'create-key-1' });
    assert.is(replay.body.result.data.authToken, '__redacted__');
    const reset = await call('/v2/workspace/authtoken/reset', { apiKey: apiKey1 }, wsHeaders);
    assert.is(reset.status, 200, reset.text);
    const token3 = reset.body.result.data.newAuthToken.token as string;
    const h2 = { 'x-service-api-key': apiKey2, 'x-service-auth-token': token2 };
    const h1 = { 'x-service-api-key': apiKey1, 'x-service-auth-token': token3 };

    await call('/v2/workspace/authtokens/get', { apiKey: apiKey2 }, wsHeaders);
    await call('/v2/workspace/webhookconfig/update', { webhookServiceConfig: { authToken: chosen.webhook2 } }, h2);
    await call('/v2/workspace/webhookconfig/update', { webhookServiceConfig: { authToken: '__redacted__' } }, h2);
    await call('/v2/workspace/emailconfig/update', { emailServiceConfig: { apiKey: chosen.email2 } }, h2);
    const agent = await call('/v2/agents/create', {
      agentId: 'a1',
      name: 'Agent',
      contextGathering: { strategies: ['web'], strategyOptions: { web: { apiKey: chosen.agentOption } } },
      execution: { mcpServers: [{ name: 's', url: 'https://mcp.example.com', auth: { type: 'bearer', token: chosen.agentMcp } }] },
    }, h2);
    assert.is(agent.status, 200, agent.text);
    await call('/v2/agents/update', { agentId: 'a1', execution: { mcpServers: [{ name: 's', url: 'https://mcp.example.com', auth: { type: 'bearer', token: chosen.agentMcp2 } }] } }, h2);
    await call('/v2/agents/get', { agentId: 'a1' }, h2);
    await call('/v2/agents/get', {}, h2);
    await call('/v2/organizations/documents/add', { organizationId: 'o', createOrganization: true, documents: [{ documentId: 'd' }] }, h2);
    const jwt = await call('/v2/auth/generate_token', { userId: 'u', userProperties: { name: 'U', email: 'u@example.com' }, permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'o' }] } }, h2);
    assert.is(jwt.status, 200, jwt.text);
    const userToken = jwt.body.result.data.token as string;
    await call('/v2/auth/generate_token', { userId: 'u', userProperties: { name: 'U', email: 'u@example.com' }, permissions: { resources: [{ type: 'organization', id: 'o1' }] } }, h1);
    // Wrong credentials, and malformed bodies that carry secrets.
    await call('/v2/agents/get', {}, { 'x-service-api-key': apiKey2, 'x-service-auth-token': token2.slice(0, -1) + (token2.endsWith('x') ? 'y' : 'x') });
    await call('/v2/agents/get', {}, { 'x-service-api-key': apiKey2, 'x-service-auth-token': `${token2}${token2}` });
    await call('/v2/workspace/authtokens/get', { apiKey: apiKey2 }, { ...wsHeaders, 'x-service-workspace-auth-token': `${w.authToken}0` });
    await call('/v2/workspace/webhookconfig/update', { webhookServiceConfig: { authToken: chosen.webhook2, rawNotificationUrl: 'not a url' } }, h2);
    await call('/v2/agents/create', { name: 5, execution: { mcpServers: [{ name: 's', url: 'ftp://x', auth: { token: chosen.agentMcp } }] } }, h2);
    await call('/v2/workspace/webhookconfig/update', null, h2, `{"data":{"webhookServiceConfig":{"authToken":"${chosen.webhook2}"`);
    // Deliveries happen in the background: wait for some, and list them.
    const deadline = Date.now() + 20_000;
    while (bodies.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(bodies.length >= 4, `webhooks delivered: ${bodies.length}`);
    await call('/v2/workspace/webhooks/deliveries/get', {}, h2);
    s.child.kill('SIGTERM');
    assert.is((await s.exited).code, 0);
    const logs = s.output();
    assert.ok(logs.split('\n').filter(Boolean).length > 20, 'trace logs were written');

    // The signing secret of user tokens lives in the write side only, sealed (issue 12):
    // opened here with the service's own key store to search for its clear value.
    const eventsDb = new Database(path.join(dir, 'events.db'), { readonly: true });
    const events = eventsDb.prepare('SELECT type, data FROM events').all() as Array<{ type: string; data: string }>;
    eventsDb.close();
    const sealedSigning = events.filter((e) => e.type === 'ApiKeyTokenSigningSecretCreated').map((e) => JSON.parse(e.data) as { apiKey: string; secret: string });
    assert.ok(sealedSigning.length >= 1 && sealedSigning.every((d) => /^enc:v1:/.test(d.secret)), `signing secrets stored sealed: ${JSON.stringify(sealedSigning)}`);
    const opened = await openServices(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }), { follow: false, webhooks: false });
    const signing: string[] = [];
    try {
      for (const d of sealedSigning) signing.push((await opened.secrets.open(d.apiKey, d.secret)) as string);
    } finally {
      await opened.close();
    }
    assert.ok(signing.every((x) => typeof x === 'string' && x.length >= 16), 'signing secrets opened');

    const readModels = new Database(path.join(dir, 'readmodels.db'), { readonly: true });
    const tables = readModels.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>;
    const dump = tables.map(({ name }) => `${name}: ${(readModels.prepare(`SELECT * FROM ${name}`).all() as unknown[]).map((r) => JSON.stringify(r)).join('\n')}`).join('\n');
    readModels.close();
    const eventLog = events.map((e) => e.data).join('\n');

    // Which response created (and so may show) each secret.
    const authTokens: Record<string, [string, Answer | null]> = {
      'workspace auth token': [w.authToken, ws],
      'first key token': [k1.authToken, ws],
      'created key token': [token2, created],
      'reset key token': [token3, reset],
    };
    const others: Record<string, [string, Answer | null]> = {
      ...Object.fromEntries(Object.entries(chosen).map(([k, v]) => [k, [v, null]])),
      'user token': [userToken, jwt],
      ...Object.fromEntries(signing.map((x, i) => [`token signing secret ${i}`, [x, null]])),
    };
    let checks = 0;
    for (const [name, [secret, creator]] of Object.entries({ ...authTokens, ...others })) {
      assert.not.ok(logs.includes(secret), `${name} appears in the logs: ${logs.split('\n').find((l) => l.includes(secret))?.slice(0, 500)}`);
      assert.not.ok(dump.includes(secret), `${name} appears in a read model: ${dump.split('\n').find((l) => l.includes(secret))?.slice(0, 500)}`);
      for (const a of answers) {
        if (a === creator) continue;
        // A request carrying the secret may be answered with its own (client-sent) text
        // only when it was malformed JSON: the parser's message quotes the body.
        if (a.status === 400 && /not valid JSON/.test(a.body?.error?.message ?? '')) continue;
        assert.not.ok(a.text.includes(secret), `${name} appears in the answer of ${a.route}: ${a.text.slice(0, 500)}`);
      }
      for (const b of bodies) assert.not.ok(b.includes(secret), `${name} appears in a webhook body: ${b.slice(0, 500)}`);
      checks++;
    }
    // Nothing in clear in the event log either: auth tokens are hashed, every other secret sealed.
    for (const [name, [secret]] of Object.entries({ ...authTokens, ...others })) assert.not.ok(eventLog.includes(secret), `${name} is stored in clear in the event log`);
    console.log(`  secrets: ${checks} secrets checked against ${logs.split('\n').length} log lines, ${answers.length} answers, ${bodies.length} webhook bodies, ${tables.length} read-model tables`);
  } finally {
    if (s && s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('presented secrets are compared in constant time (static guard)', () => {
  // Every module that compares a presented secret with a stored one, and how it must do it.
  const sites: Record<string, RegExp> = {
    'src/shared/ids.ts': /timingSafeEqual\(/,
    'queries/credentials.ts': /secretMatches\(/,
    'src/http/auth.ts': /timingSafeEqual\(/,
    // jose verifies the HMAC (constant time, WebCrypto); no signature is compared here.
    'src/tokens/jwt.ts': /jwtVerify\(/,
    'src/webhooks/signature.ts': /timingSafeEqual\(/,
  };
  for (const [file, must] of Object.entries(sites)) {
    const src = fs.readFileSync(path.join(ROOT, file), 'utf8');
    assert.match(src, must, file);
    // No ordinary equality on anything named like a secret, hash or signature.
    const plain = src.split('\n').filter((l) => /(token|secret|hash|signature)\w*\s*[!=]==|[!=]==\s*\w*(token|secret|hash|signature)/i.test(l) && !/length|typeof|undefined|null|'/.test(l));
    assert.equal(plain, [], `${file} compares a secret with ===`);
  }
  // Workspace and API-key credentials: a missing workspace still costs one hash comparison.
  assert.match(fs.readFileSync(path.join(ROOT, 'queries/credentials.ts'), 'utf8'), /DUMMY_HASH/);
});

test.run();
