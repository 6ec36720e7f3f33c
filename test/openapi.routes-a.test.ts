/**
 * The OpenAPI document (GET /openapi.json) describes the workspace, API-key, service
 * configuration, token, webhook (advanced ones too), audit, change feed, agent and presence routes: each is listed under its
 * tag with a summary, an example request, and a success answer whose `result.data` has a
 * schema (an empty `{}` would tell a client nothing). And each example is a request the
 * route accepts.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness } from './support/app.js';
import { agentRoutes } from '../src/http/routes/agents.js';
import { auditRoutes } from '../src/http/routes/audit.js';
import { changeRoutes } from '../src/http/routes/changes.js';
import { keyLifecycleRoutes } from '../src/http/routes/key-lifecycle.js';
import { presenceRoutes } from '../src/http/routes/presence.js';
import { serviceConfigRoutes } from '../src/http/routes/service-config.js';
import { tokenRoutes } from '../src/http/routes/tokens.js';
import { webhookRoutes } from '../src/http/routes/webhooks.js';
import { advancedWebhookRoutes } from '../src/http/routes/advanced-webhooks.js';
import { workspaceRoutes } from '../src/http/routes/workspace.js';
import { allowedDomainRoutes } from '../src/http/routes/allowed-domains.js';
import { workspaceSettingsRoutes } from '../src/http/routes/workspace-settings.js';

/** Each route, its tag, and the failure statuses beyond the common ones (src/http/schema.ts) it must document. */
const ROUTES: Array<[path: string, tag: string, extra: string[]]> = [
  ['/v2/workspace/create', 'Workspace', []],
  ['/v2/workspace/workspaceauthtoken/rotate', 'Workspace', []],
  ['/v2/workspace/apikey/create', 'API keys', ['FAILED_PRECONDITION']],
  ['/v2/workspace/authtokens/get', 'API keys', ['NOT_FOUND']],
  ['/v2/workspace/authtoken/reset', 'API keys', ['NOT_FOUND']],
  ['/v2/workspace/apikey/signingkey/rotate', 'API keys', ['NOT_FOUND']],
  ['/v2/workspace/apikey/delete', 'API keys', ['NOT_FOUND']],
  ['/v2/workspace/domains/add', 'API keys', ['NOT_FOUND']],
  ['/v2/workspace/domains/delete', 'API keys', ['NOT_FOUND']],
  ['/v2/workspace/domains/get', 'API keys', ['NOT_FOUND']],
  ['/v2/workspace/emailconfig/update', 'Service configuration', []],
  ['/v2/workspace/webhookconfig/update', 'Service configuration', []],
  ['/v2/workspace/get', 'Workspace', ['NOT_FOUND']],
  ['/v2/workspace/apikeys/get', 'API keys', []],
  ['/v2/workspace/apikey/update', 'API keys', ['NOT_FOUND']],
  ['/v2/workspace/apikeyconfig/get', 'API keys', []],
  ['/v2/workspace/apikeyconfig/update', 'API keys', []],
  ['/v2/workspace/emailconfig/get', 'Service configuration', []],
  ['/v2/workspace/webhookconfig/get', 'Service configuration', []],
  ['/v2/auth/generate_token', 'Tokens', ['NOT_FOUND', 'FAILED_PRECONDITION']],
  ['/v2/workspace/webhooks/deliveries/get', 'Webhooks', []],
  ['/v2/workspace/advancedwebhookconfig/get', 'Advanced webhooks', []],
  ['/v2/workspace/advancedwebhookconfig/update', 'Advanced webhooks', ['FAILED_PRECONDITION']],
  ['/v2/workspace/advancedwebhook/endpoints/create', 'Advanced webhooks', ['FAILED_PRECONDITION', 'RESOURCE_EXHAUSTED']],
  ['/v2/workspace/advancedwebhook/endpoints/update', 'Advanced webhooks', ['FAILED_PRECONDITION', 'NOT_FOUND']],
  ['/v2/workspace/advancedwebhook/endpoints/delete', 'Advanced webhooks', ['FAILED_PRECONDITION', 'NOT_FOUND']],
  ['/v2/workspace/advancedwebhook/endpoints/get', 'Advanced webhooks', ['FAILED_PRECONDITION']],
  ['/v2/workspace/advancedwebhook/endpoints/secret/get', 'Advanced webhooks', ['FAILED_PRECONDITION', 'NOT_FOUND']],
  ['/v2/workspace/advancedwebhook/endpoints/secret/rotate', 'Advanced webhooks', ['FAILED_PRECONDITION', 'NOT_FOUND']],
  ['/v2/audit/events/get', 'Audit', []],
  ['/v2/changes/get', 'Changes', []],
  ['/v2/agents/get', 'Agents', ['NOT_FOUND']],
  ['/v2/agents/create', 'Agents', []],
  ['/v2/agents/update', 'Agents', ['NOT_FOUND']],
  ['/v2/agents/delete', 'Agents', ['FAILED_PRECONDITION']],
  ['/v2/agents/groups/create', 'Agents', ['NOT_FOUND']],
  ['/v2/agents/groups/update', 'Agents', ['NOT_FOUND']],
  ['/v2/agents/groups/delete', 'Agents', ['NOT_FOUND']],
  ['/v2/agents/groups/add-agents', 'Agents', ['NOT_FOUND']],
  ['/v2/agents/groups/remove-agents', 'Agents', ['NOT_FOUND']],
  ['/v2/agents/groups/get', 'Agents', ['NOT_FOUND']],
  ['/v2/agents/groups/list', 'Agents', []],
  ['/v2/presence/add', 'Presence', []],
  ['/v2/presence/update', 'Presence', []],
  ['/v2/presence/get', 'Presence', []],
  ['/v2/presence/delete', 'Presence', []],
];

/** Lists that carry `result.pageToken`. */
const PAGED = new Set(['/v2/workspace/apikeys/get', '/v2/workspace/webhooks/deliveries/get', '/v2/audit/events/get', '/v2/presence/get', '/v2/agents/get']);

const S = suite<{ h: Harness; doc: any }>('OpenAPI: workspace, keys, agents, presence and the rest');
S.before(async (ctx) => {
  ctx.h = await harness();
  const res = await ctx.h.app.inject({ method: 'GET', url: '/openapi.json' });
  assert.is(res.statusCode, 200);
  ctx.doc = JSON.parse(res.body);
});
S.after(async (ctx) => ctx.h.close());

for (const [path, tag, extra] of ROUTES) {
  S(`${path}: summary, tag, example, a success schema with data`, ({ doc }) => {
    const op = doc.paths[path]?.post;
    assert.ok(op, `${path} is in the document`);
    assert.type(op.summary, 'string');
    assert.ok(op.summary.length > 0 && op.summary !== path, 'a summary of its own, not the path');
    assert.equal(op.tags, [tag]);
    assert.ok(op.requestBody.content['application/json'].example?.data, 'an example request');
    const result = op.responses['200'].content['application/json'].schema.properties.result;
    const data = result.properties.data;
    assert.ok(data && Object.keys(data).length > 0, `result.data of ${path} has a schema: ${JSON.stringify(data)}`);
    assert.is('pageToken' in result.properties, PAGED.has(path), 'pageToken declared exactly on the lists');
    // Each failure answer's description names the API statuses it stands for.
    const documented = Object.values(op.responses as Record<string, { description: string }>).flatMap((r) => r.description.split(' or '));
    for (const status of extra) assert.ok(documented.includes(status), `${path} documents ${status}`);
  });
}

S('every route of these tags is one of the routes above (none left untested)', ({ doc }) => {
  const tags = new Set(ROUTES.map(([, tag]) => tag));
  const tagged = Object.entries(doc.paths as Record<string, any>)
    .filter(([, item]) => (item.post?.tags ?? []).some((t: string) => tags.has(t)))
    .map(([path]) => path)
    .sort();
  assert.equal(tagged, ROUTES.map(([path]) => path).sort());
});

S('each example passes its route\'s request schema', ({ h }) => {
  const s = h.services;
  const routes = [
    ...workspaceRoutes(s), ...allowedDomainRoutes(), ...keyLifecycleRoutes(), ...serviceConfigRoutes(s), ...tokenRoutes(s),
    ...webhookRoutes(s), ...auditRoutes(s), ...changeRoutes(), ...agentRoutes(s), ...presenceRoutes(s), ...workspaceSettingsRoutes(), ...advancedWebhookRoutes(s),
  ];
  assert.equal(routes.map((r) => r.path).sort(), ROUTES.map(([path]) => path).sort());
  for (const r of routes) {
    const parsed = r.schema.safeParse(r.doc?.example);
    assert.ok(parsed.success, `${r.path}: ${JSON.stringify(parsed.error?.issues)}`);
  }
});

S.run();
