/** /v2/agents/* through app.inject: single fetch vs list, filters, groups, secrets, errors. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { BUILT_IN_AGENTS } from '../src/agents/catalogue.js';

const S = suite<{ h: Harness; t: Tenant }>('agents API');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
});
S.after(async (ctx) => ctx.h.close());

const ok = (res: { status: number; body: any }, message?: string) => {
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.is(res.body.result.status, 'success');
  if (message) assert.is(res.body.result.message, message);
  return res.body.result.data;
};
const fails = (res: { status: number; body: any }, http: number, status: string, message?: RegExp) => {
  assert.is(res.status, http, JSON.stringify(res.body));
  assert.is(res.body.error.status, status);
  if (message) assert.match(res.body.error.message, message);
};

const full = {
  agentId: 'reviewer',
  name: 'Reviewer',
  description: 'Reviews pages',
  rawInstructions: 'Check {{page}}',
  contextGathering: { strategies: ['page', 'web'], strategyOptions: { web: { apiKey: 'sk-secret-1', maxPages: 3 } } },
  execution: {
    executionStrategy: 'single',
    responseDescriptions: { summary: 'A summary' },
    knowledge: { useMemory: true, maxChunks: 8 },
    mcpServers: [{ name: 'docs', url: 'https://mcp.example.com/sse', auth: { type: 'bearer', token: 'mcp-secret-2' } }],
  },
  response: { useAiFormatting: true },
  postProcess: { guardrails: { enabled: true }, deletePreviousSuggestions: { enabled: false }, annotations: { enabled: true, strategy: 'inline' } },
  input: { inputRequirements: { requires: ['pageUrl'] }, userContextFields: [{ id: 'tone', title: 'Tone', type: 'string', required: true }] },
  scope: { pageScope: ['blog/*'], crossPage: { enabled: true, targetProperty: 'links', pageDiscovery: 'sitemap' } },
  unknownField: 'dropped',
};

S('create returns the full configuration with secrets redacted, version 1', async ({ h, t }) => {
  const a = ok(await h.post('/v2/agents/create', full, t.headers), 'Agent created successfully.').agent;
  assert.is(a.id, 'reviewer');
  assert.is(a.version, 1);
  assert.is(a.managedBy, 'customer');
  assert.is(a.enabled, true);
  assert.is(a.instructions, 'Check {{page}}');
  // By position (semantics §6): every value under strategyOptions, whatever its key.
  assert.equal(a.contextGathering.strategyOptions, { web: { apiKey: '__redacted__', maxPages: '__redacted__' } });
  assert.equal(a.execution.mcpServers[0].auth, { type: 'bearer', token: '__redacted__' });
  assert.equal(a.scope, full.scope);
  assert.is(a.unknownField, undefined);
  assert.is(a.executionCount, undefined);
});

S('single fetch: custom agent in full, built-in identity only, secrets never in any response', async ({ h, t }) => {
  const a = ok(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers), 'Agent fetched successfully.').agent;
  assert.equal(Object.keys(a).sort(), ['contextGathering', 'description', 'enabled', 'execution', 'id', 'input', 'instructions', 'managedBy', 'name', 'postProcess', 'rawInstructions', 'response', 'scope', 'version'].sort());
  const raw = JSON.stringify(a);
  assert.not.ok(raw.includes('sk-secret-1') || raw.includes('mcp-secret-2'));
  const b = ok(await h.post('/v2/agents/get', { agentId: 'spell-check' }, t.headers)).agent;
  assert.equal(b, { id: 'spell-check', name: 'Spell check', description: BUILT_IN_AGENTS[0]!.description, enabled: true, managedBy: 'service', system: true });
  const withInput = ok(await h.post('/v2/agents/get', { agentId: 'accessibility' }, t.headers)).agent;
  assert.ok(withInput.input.inputRequirements);
});

S('list rows are identity-only with counters; filter narrows; built-ins first', async ({ h, t }) => {
  const all = ok(await h.post('/v2/agents/get', {}, t.headers), 'Agents fetched successfully.').agents;
  assert.is(all.length, BUILT_IN_AGENTS.length + 1);
  assert.equal(all[0], { id: 'spell-check', name: 'Spell check', description: BUILT_IN_AGENTS[0]!.description, enabled: true, managedBy: 'service', system: true, executionCount: 0, lastExecutedAt: null });
  assert.equal(all.at(-1), { id: 'reviewer', name: 'Reviewer', description: 'Reviews pages', enabled: true, managedBy: 'customer', version: 1, executionCount: 0, lastExecutedAt: null });
  const custom = ok(await h.post('/v2/agents/get', { filter: 'customOnly' }, t.headers)).agents;
  assert.equal(custom.map((r: any) => r.id), ['reviewer']);
  const builtIn = ok(await h.post('/v2/agents/get', { filter: 'defaultOnly' }, t.headers)).agents;
  assert.equal(builtIn.map((r: any) => r.id), BUILT_IN_AGENTS.map((a) => a.id));
  // filter is ignored with agentId
  ok(await h.post('/v2/agents/get', { agentId: 'reviewer', filter: 'defaultOnly' }, t.headers), 'Agent fetched successfully.');
});

S('errors: invalid filter, unknown agent, unknown group, bad config', async ({ h, t }) => {
  fails(await h.post('/v2/agents/get', { filter: 'all' }, t.headers), 400, 'INVALID_ARGUMENT', /data\.filter must be one of/);
  fails(await h.post('/v2/agents/get', { agentId: '' }, t.headers), 400, 'INVALID_ARGUMENT', /data\.agentId must not be empty/);
  fails(await h.post('/v2/agents/get', { agentId: 'nope' }, t.headers), 404, 'NOT_FOUND', /Agent not found/);
  fails(await h.post('/v2/agents/get', { groupId: 'nope' }, t.headers), 404, 'NOT_FOUND', /Agent group not found/);
  fails(await h.post('/v2/agents/create', {}, t.headers), 400, 'INVALID_ARGUMENT', /data\.name is required/);
  fails(await h.post('/v2/agents/create', { name: 'x', execution: { knowledge: { maxChunks: 'many' } } }, t.headers), 400, 'INVALID_ARGUMENT', /data\.execution\.knowledge\.maxChunks must be a number/);
  fails(await h.post('/v2/agents/create', { name: 'x', execution: { mcpServers: [{ name: 's', url: 'ftp://x' }] } }, t.headers), 400, 'INVALID_ARGUMENT', /data\.execution\.mcpServers\[0\]\.url/);
  fails(await h.post('/v2/agents/create', { ...full }, t.headers), 409, 'ALREADY_EXISTS');
  fails(await h.post('/v2/agents/create', { agentId: 'broken-links', name: 'mine' }, t.headers), 409, 'ALREADY_EXISTS', /built-in/);
  fails(await h.post('/v2/agents/get', {}, {}), 401, 'UNAUTHENTICATED');
});

S('update bumps version, keeps secrets sent back redacted, replaces given sections', async ({ h, t }) => {
  const shown = ok(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers)).agent;
  const u = ok(await h.post('/v2/agents/update', { agentId: 'reviewer', name: 'Reviewer 2', execution: shown.execution }, t.headers), 'Agent updated successfully.').agent;
  assert.is(u.version, 2);
  assert.is(u.name, 'Reviewer 2');
  const u2 = ok(await h.post('/v2/agents/update', { agentId: 'reviewer', enabled: false }, t.headers)).agent;
  assert.is(u2.version, 3);
  assert.is(u2.enabled, false);
  // The stored secret survived the round trip: it is in the write side's latest event, sealed.
  const events = await h.services.events.readAll();
  const last = events.filter((e) => e.type === 'AgentUpdated').at(-1)!;
  const stored = (last.data as any).config;
  assert.match(stored.execution.mcpServers[0].auth.token, /^enc:v1:/);
  assert.is(await h.services.secrets.open(t.apiKey, stored.execution.mcpServers[0].auth.token), 'mcp-secret-2');
  assert.is(await h.services.secrets.open(t.apiKey, stored.contextGathering.strategyOptions.web.maxPages), 3);
  assert.is(stored.execution.mcpServers[0].auth.type, 'bearer');
  fails(await h.post('/v2/agents/update', { agentId: 'reviewer' }, t.headers), 400, 'INVALID_ARGUMENT', /Nothing to update/);
  fails(await h.post('/v2/agents/update', { agentId: 'ghost', name: 'x' }, t.headers), 404, 'NOT_FOUND');
});

S('built-ins: only enabled changes; the choice is per API key', async ({ h, t }) => {
  const b = ok(await h.post('/v2/agents/update', { agentId: 'spell-check', enabled: false }, t.headers)).agent;
  assert.is(b.enabled, false);
  assert.is(ok(await h.post('/v2/agents/get', { agentId: 'spell-check' }, t.headers)).agent.enabled, false);
  fails(await h.post('/v2/agents/update', { agentId: 'spell-check', name: 'x' }, t.headers), 400, 'INVALID_ARGUMENT', /only enabled/);
  fails(await h.post('/v2/agents/delete', { agentId: 'spell-check' }, t.headers), 400, 'FAILED_PRECONDITION');
  const other = await h.tenant();
  assert.is(ok(await h.post('/v2/agents/get', { agentId: 'spell-check' }, other.headers)).agent.enabled, true);
  assert.equal(ok(await h.post('/v2/agents/get', { filter: 'customOnly' }, other.headers)).agents, []);
  fails(await h.post('/v2/agents/get', { agentId: 'reviewer' }, other.headers), 404, 'NOT_FOUND');
});

S('groups: order of agentIds is the list order; filter combines; membership changes', async ({ h, t }) => {
  ok(await h.post('/v2/agents/create', { agentId: 'second', name: 'Second' }, t.headers));
  const g = ok(await h.post('/v2/agents/groups/create', { groupId: 'g1', name: 'Group', agentIds: ['second', 'accessibility', 'reviewer'] }, t.headers), 'Agent group created successfully.').group;
  assert.equal(g, { id: 'g1', name: 'Group', description: '', agentIds: ['second', 'accessibility', 'reviewer'] });
  const rows = ok(await h.post('/v2/agents/get', { groupId: 'g1' }, t.headers)).agents;
  assert.equal(rows.map((r: any) => r.id), ['second', 'accessibility', 'reviewer']);
  const customs = ok(await h.post('/v2/agents/get', { groupId: 'g1', filter: 'customOnly' }, t.headers)).agents;
  assert.equal(customs.map((r: any) => r.id), ['second', 'reviewer']);
  fails(await h.post('/v2/agents/groups/add-agents', { groupId: 'g1', agentIds: ['ghost'] }, t.headers), 404, 'NOT_FOUND', /"ghost"/);
  ok(await h.post('/v2/agents/groups/add-agents', { groupId: 'g1', agentIds: ['spell-check'] }, t.headers), 'Agents added to group successfully.');
  ok(await h.post('/v2/agents/groups/remove-agents', { groupId: 'g1', agentIds: ['second'] }, t.headers), 'Agents removed from group successfully.');
  assert.equal(ok(await h.post('/v2/agents/get', { groupId: 'g1' }, t.headers)).agents.map((r: any) => r.id), ['accessibility', 'reviewer', 'spell-check']);
  ok(await h.post('/v2/agents/groups/update', { groupId: 'g1', agentIds: ['spell-check', 'reviewer'] }, t.headers), 'Agent group updated successfully.');
  assert.equal(ok(await h.post('/v2/agents/get', { groupId: 'g1' }, t.headers)).agents.map((r: any) => r.id), ['spell-check', 'reviewer']);
  // A deleted agent is skipped.
  ok(await h.post('/v2/agents/delete', { agentId: 'reviewer' }, t.headers), 'Agent deleted successfully.');
  assert.equal(ok(await h.post('/v2/agents/get', { groupId: 'g1' }, t.headers)).agents.map((r: any) => r.id), ['spell-check']);
  fails(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers), 404, 'NOT_FOUND');
  ok(await h.post('/v2/agents/groups/delete', { groupId: 'g1' }, t.headers), 'Agent group deleted successfully.');
  fails(await h.post('/v2/agents/get', { groupId: 'g1' }, t.headers), 404, 'NOT_FOUND', /group/);
  fails(await h.post('/v2/agents/groups/delete', { groupId: 'g1' }, t.headers), 404, 'NOT_FOUND');
  fails(await h.post('/v2/agents/groups/create', { name: '' }, t.headers), 400, 'INVALID_ARGUMENT', /data\.name must not be empty/);
});

S('an empty group lists []; groups/get lists groups', async ({ h, t }) => {
  ok(await h.post('/v2/agents/groups/create', { groupId: 'empty', name: 'Empty' }, t.headers));
  assert.equal(ok(await h.post('/v2/agents/get', { groupId: 'empty' }, t.headers)).agents, []);
  const groups = ok(await h.post('/v2/agents/groups/get', {}, t.headers)).groups;
  assert.ok(groups.some((g: any) => g.id === 'empty'));
});

S.run();
