/**
 * The upgrade path of secrets at rest (issue 12, docs/security.md): a log written before
 * encryption at rest holds its secrets in clear (the webhook authToken, the email apiKey, a
 * signing secret without `kid`, agent auth and strategyOptions), and a read model written by
 * a version that redacted by key name still shows a `pwd`. With this version on that data:
 * deliveries are signed with the clear token, tokens signed before the upgrade (no kid, no
 * aud) verify until they expire, new tokens are issued with the old key, reads redact by
 * position, and the next update of a configuration writes its old clear secrets sealed.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { harness, tempDir } from './support/app.js';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { hashSecret, newEventId, newSecret, key } from '../src/shared/ids.js';
import { workspaceStream, workspaceDecider } from '../commands/workspace.js';
import { agentStream } from '../commands/agent.js';
import { agentConfigSchema, toAgentConfig } from '../commands/agent-config.js';
import { verifySignature } from '../src/webhooks/signature.js';
import { verifyUserToken } from '../src/usecases/user-tokens.js';
import { AGENTS, type AgentDoc } from '../projections/agents.js';
import type { EventMetadata } from '../src/ports/event-store.js';

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

test('a log with clear secrets from before keeps working, and clear values are sealed as updates carry them on', async () => {
  const dir = tempDir('collab-upgrade-');
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/raw`;

  // ---- the log as an older version wrote it ----
  const now = Date.now();
  const [wsId, apiKey, wsToken, keyToken] = ['legacyWorkspace', 'legacyApiKey', newSecret(), newSecret()];
  const clear = {
    webhook: 'whsec-LEGACY-clear-token-0123456789',
    email: 'email-LEGACY-clear-key-0123456789',
    signing: 'signing-LEGACY-clear-secret-0123456789abcdefghij',
    pwd: 'opt-LEGACY-pwd-0123456789',
    mcp: 'mcp-LEGACY-bearer-0123456789',
  };
  const meta = (over: Partial<EventMetadata> = {}): EventMetadata => ({ requestId: 'legacy', actor: 'legacy', time: now, workspaceId: wsId, ...over });
  const log = new SqliteEventStore(path.join(dir, 'events.db'));
  await log.append(workspaceStream(wsId), [
    { id: newEventId(), type: 'WorkspaceCreated', data: { workspaceId: wsId, name: 'W', ownerEmail: 'o@example.com', ownerName: 'o', authTokenHash: hashSecret(wsToken), createdAt: now }, metadata: meta() },
    {
      id: newEventId(),
      type: 'ApiKeyCreated',
      data: {
        workspaceId: wsId, apiKey, apiKeyName: 'k', type: 'testing', ownerEmail: 'o@example.com', persistenceDBRegion: null, realtimeDBRegion: null, createdAt: now,
        settings: {
          allowedDomains: [], useEmailService: true, useWebhookService: true, useNotificationService: false, setDefaultNotificationTriggers: false,
          setDefaultEmailTriggers: false, requireAutoOrgUser: false, enablePrivateComments: false,
          emailServiceConfig: { type: 'sendgrid', apiKey: clear.email, fromEmail: 'x@example.com' },
          webhookServiceConfig: { authToken: clear.webhook, rawNotificationUrl: hook },
        },
      },
      metadata: meta(),
    },
    { id: newEventId(), type: 'ApiKeyAuthTokenCreated', data: { apiKey, tokenId: 't1', tokenHash: hashSecret(keyToken), createdAt: now }, metadata: meta() },
    // Before key ids: no kid, the secret in clear.
    { id: newEventId(), type: 'ApiKeyTokenSigningSecretCreated', data: { workspaceId: wsId, apiKey, secret: clear.signing, createdAt: now }, metadata: meta({ apiKey }) },
  ], 'no_stream');
  const agentConfig = toAgentConfig(agentConfigSchema.parse({
    name: 'Legacy',
    contextGathering: { strategies: ['web'], strategyOptions: { web: { pwd: clear.pwd, depth: 2 } } },
    execution: { mcpServers: [{ name: 's', url: 'https://mcp.example.com', auth: { type: 'bearer', token: clear.mcp } }] },
  }));
  await log.append(agentStream(apiKey, 'a1'), [
    { id: newEventId(), type: 'AgentCreated', data: { agentId: 'a1', config: agentConfig, version: 1, createdAt: now }, metadata: meta({ apiKey }) },
  ], 'no_stream');
  await log.close();
  // A token an older version issued: no kid, no aud, HS256 over the clear secret.
  const iat = Math.floor(now / 1000);
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ iss: 'collab-backend', sub: 'u0', apiKey, user: { name: 'U', email: 'u@example.com', isAdmin: false }, resources: [], iat, exp: iat + 48 * 3600, jti: 'j0' })}`;
  const oldToken = `${body}.${createHmac('sha256', clear.signing).update(body).digest('base64url')}`;

  // ---- this version on it ----
  // WEBHOOK_ALLOWED_CIDRS: the loopback receiver, for when the egress policy (issue 12) refuses loopback by default.
  const h = await harness({ DATA_DIR: dir, WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' });
  try {
    const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': keyToken };
    const wsHeaders = { 'x-service-workspace-id': wsId, 'x-service-workspace-auth-token': wsToken };
    // The old token verifies (with the legacy key, by its apiKey claim). A new one is ES256,
    // with a key made for it (the HS256 k0 is retired, verifying its tokens until they expire).
    assert.is((await verifyUserToken(h.services, oldToken, { apiKey })).sub, 'u0');
    const issued = await h.post('/v2/auth/generate_token', { userId: 'u1', userProperties: { name: 'U', email: 'u@example.com' } }, headers);
    assert.is(issued.status, 200, JSON.stringify(issued.body));
    const newToken = issued.body.result.data.token as string;
    const newHeader = JSON.parse(Buffer.from(newToken.split('.')[0]!, 'base64url').toString());
    assert.is(newHeader.alg, 'ES256');
    assert.is.not(newHeader.kid, 'k0', 'the pre-upgrade key k0 signs nothing new');
    assert.is((await verifyUserToken(h.services, newToken, { apiKey })).aud, apiKey);
    assert.is((await verifyUserToken(h.services, oldToken, { apiKey })).sub, 'u0', 'the pre-upgrade token still verifies');

    // A new event is delivered, signed and authorized with the clear token from the old log.
    const org = await h.post('/v2/organizations/add', { organizations: [{ organizationId: 'o1' }] }, headers);
    assert.is(org.status, 200, JSON.stringify(org.body));
    const deadline = Date.now() + 10_000;
    while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    assert.ok(received.length > 0, 'delivered');
    const d = received[0]!;
    assert.is(d.headers.authorization, `Basic ${clear.webhook}`);
    const sig = { id: String(d.headers['webhook-id']), timestamp: String(d.headers['webhook-timestamp']), signature: String(d.headers['webhook-signature']) };
    assert.ok(verifySignature(clear.webhook, sig, d.body, Number(sig.timestamp)), 'signed with the clear token');

    // Reads redact by position, also over a read-model document an older version wrote.
    const stale: AgentDoc = {
      ...(await h.services.read.get<AgentDoc>(AGENTS, key(apiKey, 'a1')))!,
      config: { ...agentConfig, contextGathering: { strategies: ['web'], strategyOptions: { web: { pwd: clear.pwd, depth: 2 } } } },
    };
    await h.services.read.transaction((tx) => tx.upsert(AGENTS, stale));
    const shown = await h.post('/v2/agents/get', { agentId: 'a1' }, headers);
    assert.is(shown.status, 200);
    assert.not.ok(JSON.stringify(shown.body).includes(clear.pwd));
    assert.equal(shown.body.result.data.agent.contextGathering.strategyOptions, { web: { pwd: '__redacted__', depth: '__redacted__' } });

    // The next updates carry the old secrets into new events sealed, and they still open to the same values.
    assert.is((await h.post('/v2/agents/update', { agentId: 'a1', name: 'Renamed', execution: shown.body.result.data.agent.execution }, headers)).status, 200);
    assert.is((await h.post('/v2/workspace/webhookconfig/update', { processedNotificationUrl: 'https://hooks.example.com/p' }, headers)).status, 200);
    assert.is((await h.post('/v2/workspace/emailconfig/update', { fromCompany: 'ACME' }, headers)).status, 200);
    const events = await h.services.events.readAll();
    const newer = events.filter((e) => ['AgentUpdated', 'ApiKeyServiceConfigUpdated'].includes(e.type));
    assert.is(newer.length, 3);
    for (const e of newer) for (const v of Object.values(clear)) assert.not.ok(JSON.stringify(e.data).includes(v), `${e.type} copies a clear secret`);
    const { state } = await h.services.commands.load(workspaceDecider, workspaceStream(wsId));
    const services = state.status === 'active' ? state.keys[apiKey]!.services : null;
    assert.is(await h.services.secrets.open(apiKey, services!.webhook.config.authToken), clear.webhook);
    assert.is(await h.services.secrets.open(apiKey, services!.email.config.apiKey), clear.email);
    const updated = newer.find((e) => e.type === 'AgentUpdated')!.data as { config: Required<typeof agentConfig> };
    assert.is(await h.services.secrets.open(apiKey, updated.config.execution.mcpServers![0]!.auth && (updated.config.execution.mcpServers![0]!.auth as Record<string, unknown>).token), clear.mcp);
    assert.is(await h.services.secrets.open(apiKey, (updated.config.contextGathering.strategyOptions as any).web.pwd), clear.pwd);
    assert.is(await h.services.secrets.open(apiKey, (updated.config.contextGathering.strategyOptions as any).web.depth), 2);

    // Rotating the signing key leaves the pre-upgrade key for its tokens, now sealed-only for new ones.
    const rotated = await h.post('/v2/workspace/apikey/signingkey/rotate', { apiKey }, wsHeaders);
    assert.is(rotated.status, 200, JSON.stringify(rotated.body));
    assert.ok(await verifyUserToken(h.services, oldToken, { apiKey }), 'the old token stays valid until it expires');
  } finally {
    await h.close();
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
