/**
 * Secrets at rest, written once and run against every pair of stores: a run that configures
 * every kind of secret through the API (`configureEverySecret`), then every stored event and
 * every stored read-store document, read back through the ports, is searched for each
 * secret's clear value. Embedded stores: test/secrets.at-rest.test.ts (which also reads the
 * raw files); EventStoreDB and MongoDB: their contract suites, whenever EVENTSTORE_URL or
 * MONGODB_URL is set.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { workspaceDecider, workspaceStream } from '../../commands/workspace.js';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import type { EventStore } from '../../src/ports/event-store.js';
import type { ReadStore } from '../../src/ports/read-store.js';
import { assemble, type Services } from '../../src/composition/services.js';

type Post = (url: string, data: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: any }>;

export interface SecretsRun {
  /** Name -> clear value that must never be stored. */
  secrets: Record<string, string>;
  /** Name -> a value that is stored in clear (not a secret): the search must find these. */
  controls: Record<string, string>;
  apiKey: string;
}

const ok = async (p: Promise<{ status: number; body: any }>, what: string) => {
  const r = await p;
  assert.is(r.status, 200, `${what}: ${JSON.stringify(r.body)}`);
  return r.body.result.data;
};

/**
 * Configures each kind of secret through the API: workspace and API-key auth tokens (created,
 * reset, rotated), the webhook authToken and the email apiKey (on key creation and on update),
 * agent MCP auth (object and string) and strategyOptions values under names a key-name rule
 * missed, user-token signing keys (first and rotated), advanced webhook endpoint secrets (first
 * and rotated), and a user token.
 */
export async function configureEverySecret(services: Services, post: Post): Promise<SecretsRun> {
  const v = (label: string) => `${label}-${randomUUID()}`;
  const chosen = {
    webhookOnCreate: v('whsec-create'),
    webhookOnUpdate: v('whsec-update'),
    emailOnCreate: v('email-create'),
    emailOnUpdate: v('email-update'),
    optionAccessKey: v('opt-accessKey'),
    optionPwd: v('opt-pwd'),
    optionPassphrase: v('opt-passphrase'),
    optionInList: v('opt-list'),
    mcpBearer: v('mcp-bearer'),
    mcpString: v('mcp-string'),
    mcpUpdated: v('mcp-updated'),
    restApiBearer: v('rest-api-bearer'),
    restApiHeader: v('rest-api-header'),
    aiModelKey: v('sk-ai-model'),
  };
  const controls = {
    webhookUrl: `https://hooks.example.com/${randomUUID()}`,
    agentName: `Agent ${randomUUID()}`,
    fromEmail: `from-${randomUUID().slice(0, 8)}@example.com`,
  };
  const ws = await ok(post('/v2/workspace/create', { ownerEmail: 'secrets@example.com' }), 'workspace/create');
  const [, first] = Object.entries(ws.apiKeyList)[0] as [string, { authToken: string }];
  const wsHeaders = { 'x-service-workspace-id': ws.id, 'x-service-workspace-auth-token': ws.authToken };
  const created = await ok(
    post(
      '/v2/workspace/apikey/create',
      {
        ownerEmail: 'o@example.com',
        type: 'testing',
        createAuthToken: true,
        useEmailService: true,
        emailServiceConfig: { type: 'sendgrid', apiKey: chosen.emailOnCreate, fromEmail: controls.fromEmail },
        useWebhookService: true,
        webhookServiceConfig: { authToken: chosen.webhookOnCreate, rawNotificationUrl: controls.webhookUrl },
      },
      wsHeaders,
    ),
    'apikey/create',
  );
  const apiKey = created.apiKey as string;
  const reset = await ok(post('/v2/workspace/authtoken/reset', { apiKey }, wsHeaders), 'authtoken/reset');
  const h = { 'x-service-api-key': apiKey, 'x-service-auth-token': reset.newAuthToken.token };
  await ok(post('/v2/workspace/webhookconfig/update', { webhookServiceConfig: { authToken: chosen.webhookOnUpdate } }, h), 'webhookconfig/update');
  await ok(post('/v2/workspace/emailconfig/update', { emailServiceConfig: { apiKey: chosen.emailOnUpdate } }, h), 'emailconfig/update');
  await ok(post('/v2/workspace/apikeyconfig/update', { aiModelApiKey: [{ provider: 'openai', customerApiKey: chosen.aiModelKey }] }, h), 'apikeyconfig/update');
  await ok(
    post(
      '/v2/agents/create',
      {
        agentId: 'a1',
        name: controls.agentName,
        contextGathering: {
          strategies: ['web'],
          strategyOptions: {
            web: { accessKey: chosen.optionAccessKey, pwd: chosen.optionPwd, deep: { passphrase: chosen.optionPassphrase } },
            list: [chosen.optionInList],
            // The hosted API's rest-api strategy: its endpoints' auth values are secret.
            'rest-api': {
              endpoints: [
                { description: 'd', url: 'https://api.example.com/a', auth: { type: 'bearer', token: chosen.restApiBearer } },
                { description: 'd', url: 'https://api.example.com/b', auth: { type: 'header', headers: { 'X-Api-Key': chosen.restApiHeader } } },
              ],
            },
          },
        },
        execution: {
          mcpServers: [
            { name: 's1', url: 'https://mcp.example.com/1', auth: { type: 'bearer', token: chosen.mcpBearer } },
            { name: 's2', url: 'https://mcp.example.com/2', auth: chosen.mcpString },
          ],
        },
      },
      h,
    ),
    'agents/create',
  );
  const shown = (await ok(post('/v2/agents/get', { agentId: 'a1' }, h), 'agents/get')).agent;
  assert.equal(shown.contextGathering.strategyOptions, {
    web: { accessKey: '__redacted__', pwd: '__redacted__', deep: { passphrase: '__redacted__' } },
    list: ['__redacted__'],
    'rest-api': {
      endpoints: [
        { description: 'd', url: 'https://api.example.com/a', auth: { type: 'bearer', token: '__redacted__' } },
        { description: 'd', url: 'https://api.example.com/b', auth: { type: 'header', headers: { 'X-Api-Key': '__redacted__' } } },
      ],
    },
  });
  assert.equal(shown.execution.mcpServers.map((s: { auth: unknown }) => s.auth), [{ type: 'bearer', token: '__redacted__' }, '__redacted__']);
  await ok(
    post('/v2/agents/update', { agentId: 'a1', execution: { mcpServers: [{ name: 's1', url: 'https://mcp.example.com/1', auth: { type: 'bearer', token: chosen.mcpUpdated } }, shown.execution.mcpServers[1]] } }, h),
    'agents/update',
  );
  await ok(post('/v2/organizations/add', { organizations: [{ organizationId: 'o1' }] }, h), 'organizations/add');
  const userToken = (await ok(post('/v2/auth/generate_token', { userId: 'u1', userProperties: { name: 'U', email: 'u@example.com' } }, h), 'generate_token')).token as string;
  await ok(post('/v2/workspace/apikey/signingkey/rotate', { apiKey }, wsHeaders), 'signingkey/rotate');
  // Advanced webhook signing secrets are generated by the service: learnt through secret/get, first and rotated.
  await ok(post('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true }, h), 'advancedwebhookconfig/update');
  const endpointId = (await ok(post('/v2/workspace/advancedwebhook/endpoints/create', { url: controls.webhookUrl }, h), 'advancedwebhook/endpoints/create')).id;
  const advancedSecret = async () => (await ok(post('/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId }, h), 'secret/get')).secret as string;
  const advancedFirst = await advancedSecret();
  await ok(post('/v2/workspace/advancedwebhook/endpoints/secret/rotate', { endpointId }, h), 'secret/rotate');
  const advancedRotated = await advancedSecret();
  const rotated = await ok(post('/v2/workspace/workspaceauthtoken/rotate', {}, wsHeaders), 'workspaceauthtoken/rotate');
  // The signing keys' clear values, from the write side (they are never returned).
  const { state } = await services.commands.load(workspaceDecider, workspaceStream(ws.id));
  const signing = state.status === 'active' ? state.keys[apiKey]!.signingKeys : [];
  assert.is(signing.length, 2, 'first and rotated signing keys');
  const signingSecrets: Record<string, string> = {};
  for (const [i, k] of signing.entries()) {
    assert.match(k.secret, /^enc:v1:/, 'the signing key is stored sealed');
    signingSecrets[`signing key ${i}`] = (await services.secrets.open(apiKey, k.secret)) as string;
  }
  // The AI model key is kept (sealed) on the write side, and opens to what was sent.
  const aiKey = state.status === 'active' ? state.keys[apiKey]!.config.aiModelKeys.openai : undefined;
  assert.match(aiKey?.secret ?? '', /^enc:v1:/, 'the AI model key is stored sealed');
  assert.is(await services.secrets.open(apiKey, aiKey!.secret), chosen.aiModelKey, 'the sealed AI model key opens to the key sent');
  return {
    apiKey,
    controls,
    secrets: {
      ...chosen,
      ...signingSecrets,
      workspaceToken: ws.authToken,
      rotatedWorkspaceToken: rotated.authToken,
      firstKeyToken: first.authToken,
      createdKeyToken: created.authToken,
      resetKeyToken: reset.newAuthToken.token,
      userToken,
      // The whsec_ prefix is public; what follows is the key.
      advancedWebhookSecret: advancedFirst.slice('whsec_'.length),
      rotatedAdvancedWebhookSecret: advancedRotated.slice('whsec_'.length),
    },
  };
}

export interface Stores {
  events: EventStore;
  read: ReadStore;
  /** Drops what the run stored (a throwaway database, a temp dir); the services close the stores themselves. */
  cleanup(): Promise<void>;
}

/** Every document of every collection, as the adapter stores it (not through the service's generation view). */
async function dumpReadStore(read: ReadStore): Promise<string> {
  const out: string[] = [];
  for (const c of await read.listCollections()) out.push(...(await read.find(c, {})).map((d) => JSON.stringify(d)));
  return out.join('\n');
}

export function secretsAtRestContract(name: string, open: () => Promise<Stores>) {
  const s = suite(`secrets at rest: ${name}`);
  s('no stored event or document holds a secret in clear', async () => {
    const stores = await open();
    const config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: randomBytes(32).toString('base64'), BACKGROUND_THREAD: 'false' });
    const services = await assemble(config, stores.events, stores.read, { webhooks: false });
    const app = await buildApp(services, { logger: false });
    try {
      const run = await configureEverySecret(services, async (url, data, headers = {}) => {
        const res = await app.inject({ method: 'POST', url, payload: { data }, headers });
        return { status: res.statusCode, body: JSON.parse(res.body) };
      });
      await services.projections.catchUp();
      const events = (await stores.events.readAll()).map((e) => JSON.stringify(e)).join('\n');
      const docs = await dumpReadStore(stores.read);
      for (const [what, value] of Object.entries(run.controls)) assert.ok(events.includes(value) || docs.includes(value), `control ${what} not found in what was stored`);
      for (const [what, value] of Object.entries(run.secrets)) {
        assert.not.ok(events.includes(value), `${what} is stored in clear in an event`);
        assert.not.ok(docs.includes(value), `${what} is stored in clear in a read-store document`);
      }
    } finally {
      await app.close();
      await services.close();
      await stores.cleanup();
    }
  });
  return s;
}
