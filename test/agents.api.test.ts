/** /v2/agents/* through app.inject: single fetch vs list, filters, groups, secrets, errors, configurations kept as sent. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { BUILT_IN_AGENTS } from '../commands/agent-catalogue.js';

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
    knowledge: { useMemory: true, maxChunks: 8, maxPatterns: 5 },
    mcpServers: [{ id: 'docs-1', name: 'docs', url: 'https://mcp.example.com/sse', auth: { type: 'bearer', token: 'mcp-secret-2' }, allowedTools: ['search'] }],
  },
  response: { useAiFormatting: true },
  postProcess: { guardrails: { enabled: true }, deletePreviousSuggestions: { enabled: false }, annotations: { enabled: true, strategy: 'inline' } },
  input: {
    inputRequirements: { requires: ['pageUrl'] },
    userContextFields: [{ id: 'tone', title: 'Tone', type: 'string', required: true }],
    variableKeys: ['planId'],
    supportedVariables: ['{{computed}}'],
  },
  scope: { pageScope: ['blog/*'], crossPage: { enabled: true, targetProperty: 'links', pageDiscovery: 'sitemap' } },
  metadata: { team: 'growth' },
  unknownField: 'kept',
  version: 99,
  managedBy: 'someone',
};

S('create answers the agent id; the configuration reads back as sent, secrets redacted, version 1', async ({ h, t }) => {
  assert.equal(ok(await h.post('/v2/agents/create', full, t.headers), 'Agent created successfully'), { agentId: 'reviewer' });
  const a = ok(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers)).agent;
  assert.is(a.id, 'reviewer');
  assert.is(a.version, 1, 'a version sent by the client is not stored');
  assert.is(a.managedBy, 'customer');
  assert.is(a.enabled, true);
  assert.is(a.instructions, undefined, 'nothing is filled in');
  // By position (semantics §6): every value under an unknown strategy's options, whatever its key.
  assert.equal(a.contextGathering.strategyOptions, { web: { apiKey: '__redacted__', maxPages: '__redacted__' } });
  assert.equal(a.execution.mcpServers[0], { id: 'docs-1', name: 'docs', url: 'https://mcp.example.com/sse', auth: { type: 'bearer', token: '__redacted__' }, allowedTools: ['search'] });
  assert.equal(a.execution.knowledge, { useMemory: true, maxChunks: 8, maxPatterns: 5 });
  assert.equal(a.input, { inputRequirements: { requires: ['pageUrl'] }, userContextFields: [{ id: 'tone', title: 'Tone', type: 'string', required: true }], variableKeys: ['planId'] }, 'supportedVariables is computed by the hosted API: not stored');
  assert.equal(a.scope, full.scope);
  assert.equal(a.metadata, { team: 'growth' });
  assert.is(a.unknownField, 'kept');
  assert.is(a.executionCount, undefined);
});

S('a minimal agent reads back with only what was sent', async ({ h, t }) => {
  ok(await h.post('/v2/agents/create', { agentId: 'tiny', name: 'Tiny', execution: {} }, t.headers));
  const a = ok(await h.post('/v2/agents/get', { agentId: 'tiny' }, t.headers)).agent;
  assert.equal(a, { id: 'tiny', name: 'Tiny', description: '', enabled: true, version: 1, managedBy: 'customer', execution: {} });
  ok(await h.post('/v2/agents/delete', { agentId: 'tiny' }, t.headers));
});

S('single fetch: custom agent in full, built-in identity only, secrets never in any response', async ({ h, t }) => {
  const a = ok(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers), 'Agent fetched successfully').agent;
  assert.equal(Object.keys(a).sort(), ['contextGathering', 'description', 'enabled', 'execution', 'id', 'input', 'managedBy', 'metadata', 'name', 'postProcess', 'rawInstructions', 'response', 'scope', 'unknownField', 'version'].sort());
  const raw = JSON.stringify(a);
  assert.not.ok(raw.includes('sk-secret-1') || raw.includes('mcp-secret-2'));
  const b = ok(await h.post('/v2/agents/get', { agentId: 'spell-check' }, t.headers)).agent;
  assert.equal(b, { id: 'spell-check', name: 'Spell Check', description: BUILT_IN_AGENTS[0]!.description, enabled: true, managedBy: 'service', system: true, essentialDefault: true });
  const withInput = ok(await h.post('/v2/agents/get', { agentId: 'accessibility' }, t.headers)).agent;
  assert.ok(withInput.input.inputRequirements);
});

S('list rows are identity-only with counters; filter narrows; built-ins first', async ({ h, t }) => {
  const all = ok(await h.post('/v2/agents/get', {}, t.headers), 'Agents fetched successfully').agents;
  assert.is(all.length, BUILT_IN_AGENTS.length + 1);
  assert.equal(all[0], { id: 'spell-check', name: 'Spell Check', description: BUILT_IN_AGENTS[0]!.description, enabled: true, managedBy: 'service', system: true, executionCount: 0, lastExecutedAt: null });
  assert.equal(all.at(-1), { id: 'reviewer', name: 'Reviewer', description: 'Reviews pages', enabled: true, managedBy: 'customer', version: 1, executionCount: 0, lastExecutedAt: null });
  const custom = ok(await h.post('/v2/agents/get', { filter: 'customOnly' }, t.headers)).agents;
  assert.equal(custom.map((r: any) => r.id), ['reviewer']);
  const builtIn = ok(await h.post('/v2/agents/get', { filter: 'defaultOnly' }, t.headers)).agents;
  assert.equal(builtIn.map((r: any) => r.id), BUILT_IN_AGENTS.map((a) => a.id));
  // filter is ignored with agentId
  ok(await h.post('/v2/agents/get', { agentId: 'reviewer', filter: 'defaultOnly' }, t.headers), 'Agent fetched successfully');
});

S('an agent marked metadata.internal is left out of lists and still fetched by id', async ({ h, t }) => {
  ok(await h.post('/v2/agents/create', { agentId: 'hidden', name: 'Hidden', metadata: { internal: true } }, t.headers));
  const custom = ok(await h.post('/v2/agents/get', { filter: 'customOnly' }, t.headers)).agents;
  assert.not.ok(custom.some((r: any) => r.id === 'hidden'));
  assert.is(ok(await h.post('/v2/agents/get', { agentId: 'hidden' }, t.headers)).agent.id, 'hidden');
  ok(await h.post('/v2/agents/delete', { agentId: 'hidden' }, t.headers));
});

S('errors: invalid filter, unknown agent, unknown group, bad config', async ({ h, t }) => {
  fails(await h.post('/v2/agents/get', { filter: 'all' }, t.headers), 400, 'INVALID_ARGUMENT', /data\.filter must be one of/);
  fails(await h.post('/v2/agents/get', { agentId: '' }, t.headers), 400, 'INVALID_ARGUMENT', /data\.agentId must not be empty/);
  fails(await h.post('/v2/agents/get', { agentId: 'nope' }, t.headers), 404, 'NOT_FOUND', /Agent not found/);
  fails(await h.post('/v2/agents/get', { groupId: 'nope' }, t.headers), 404, 'NOT_FOUND', /Agent group not found/);
  fails(await h.post('/v2/agents/create', {}, t.headers), 400, 'INVALID_ARGUMENT', /data\.name is required/);
  fails(await h.post('/v2/agents/create', { name: 'x', execution: { knowledge: { maxChunks: 'many' } } }, t.headers), 400, 'INVALID_ARGUMENT', /data\.execution\.knowledge\.maxChunks must be a number/);
  fails(await h.post('/v2/agents/create', { name: 'x', execution: { knowledge: { maxPatterns: 21 } } }, t.headers), 400, 'INVALID_ARGUMENT', /data\.execution\.knowledge\.maxPatterns must be at most 20/);
  fails(await h.post('/v2/agents/create', { name: 'x', execution: { mcpServers: [{ name: 's', url: 'ftp://x' }] } }, t.headers), 400, 'INVALID_ARGUMENT', /data\.execution\.mcpServers\[0\]\.url/);
  fails(await h.post('/v2/agents/create', { name: 'x', input: { variableKeys: 'planId' } }, t.headers), 400, 'INVALID_ARGUMENT', /data\.input\.variableKeys must be an array/);
  fails(await h.post('/v2/agents/create', { ...full }, t.headers), 409, 'ALREADY_EXISTS');
  fails(await h.post('/v2/agents/create', { agentId: 'broken-links', name: 'mine' }, t.headers), 409, 'ALREADY_EXISTS', /built-in/);
  fails(await h.post('/v2/agents/get', {}, {}), 401, 'UNAUTHENTICATED');
  // An MCP URL may be a template the hosted engine resolves.
  ok(await h.post('/v2/agents/create', { agentId: 'tpl', name: 'T', execution: { mcpServers: [{ id: 'm', url: '{{variables.mcpUrl}}' }] } }, t.headers));
  ok(await h.post('/v2/agents/delete', { agentId: 'tpl' }, t.headers));
});

S('update: identity keeps the version, other fields make the next; secrets sent back redacted are kept', async ({ h, t }) => {
  const shown = ok(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers)).agent;
  assert.equal(ok(await h.post('/v2/agents/update', { agentId: 'reviewer', name: 'Reviewer 2' }, t.headers), 'Agent updated successfully'), { agentId: 'reviewer' });
  let u = ok(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers)).agent;
  assert.is(u.version, 1);
  assert.is(u.name, 'Reviewer 2');
  ok(await h.post('/v2/agents/update', { agentId: 'reviewer', execution: { ...shown.execution, executionStrategy: 'double' } }, t.headers));
  u = ok(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers)).agent;
  assert.is(u.version, 2);
  ok(await h.post('/v2/agents/update', { agentId: 'reviewer', enabled: false }, t.headers));
  u = ok(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers)).agent;
  assert.is(u.version, 2);
  assert.is(u.enabled, false);
  // The stored secret survived the round trip: it is in the write side's latest event, sealed.
  const events = await h.services.events.readAll();
  const last = events.filter((e) => e.type === 'AgentUpdated').at(-1)!;
  const stored = (last.data as any).config;
  assert.match(stored.execution.mcpServers[0].auth.token, /^enc:v1:/);
  assert.is(await h.services.secrets.open(t.apiKey, stored.execution.mcpServers[0].auth.token), 'mcp-secret-2');
  assert.is(await h.services.secrets.open(t.apiKey, stored.contextGathering.strategyOptions.web.maxPages), 3);
  assert.is(stored.execution.mcpServers[0].auth.type, 'bearer');
  // Nothing to change: a no-op, as the hosted API documents.
  const before = events.length;
  assert.equal(ok(await h.post('/v2/agents/update', { agentId: 'reviewer' }, t.headers)), { agentId: 'reviewer' });
  assert.is((await h.services.events.readAll()).length, before, 'nothing appended');
  fails(await h.post('/v2/agents/update', { agentId: 'ghost', name: 'x' }, t.headers), 404, 'NOT_FOUND');
});

S('built-ins: only enabled (name ignored, enabled required); the choice is per API key', async ({ h, t }) => {
  assert.equal(ok(await h.post('/v2/agents/update', { agentId: 'spell-check', enabled: false, name: 'Mine' }, t.headers)), { agentId: 'spell-check' });
  const b = ok(await h.post('/v2/agents/get', { agentId: 'spell-check' }, t.headers)).agent;
  assert.is(b.enabled, false);
  assert.is(b.name, 'Spell Check', 'a name sent with enabled is ignored');
  fails(await h.post('/v2/agents/update', { agentId: 'spell-check', name: 'x' }, t.headers), 400, 'INVALID_ARGUMENT', /support only enabled/);
  fails(await h.post('/v2/agents/delete', { agentId: 'spell-check' }, t.headers), 400, 'FAILED_PRECONDITION');
  const other = await h.tenant();
  assert.is(ok(await h.post('/v2/agents/get', { agentId: 'spell-check' }, other.headers)).agent.enabled, true);
  assert.equal(ok(await h.post('/v2/agents/get', { filter: 'customOnly' }, other.headers)).agents, []);
  fails(await h.post('/v2/agents/get', { agentId: 'reviewer' }, other.headers), 404, 'NOT_FOUND');
});

S('groups: order of agentIds is the list order; filter combines; membership changes; delete takes the agent out', async ({ h, t }) => {
  ok(await h.post('/v2/agents/create', { agentId: 'second', name: 'Second' }, t.headers));
  const g = ok(await h.post('/v2/agents/groups/create', { groupId: 'g1', name: ' Group ', agentIds: ['second', 'accessibility', 'reviewer'], metadata: { team: 'qa', apiKey: 'not-mine' } }, t.headers), 'Agent group created successfully').group;
  assert.type(g.createdAt, 'number');
  assert.equal(g, { id: 'g1', name: 'Group', agentIds: ['second', 'accessibility', 'reviewer'], metadata: { apiKey: t.apiKey, team: 'qa' }, createdAt: g.createdAt, updatedAt: g.createdAt });
  const rows = ok(await h.post('/v2/agents/get', { groupId: 'g1' }, t.headers)).agents;
  assert.equal(rows.map((r: any) => r.id), ['second', 'accessibility', 'reviewer']);
  const customs = ok(await h.post('/v2/agents/get', { groupId: 'g1', filter: 'customOnly' }, t.headers)).agents;
  assert.equal(customs.map((r: any) => r.id), ['second', 'reviewer']);
  fails(await h.post('/v2/agents/groups/add-agents', { groupId: 'g1', agentIds: ['ghost'] }, t.headers), 404, 'NOT_FOUND', /"ghost"/);
  const added = ok(await h.post('/v2/agents/groups/add-agents', { groupId: 'g1', agentIds: ['spell-check', 'second'] }, t.headers), 'Agents added to group successfully').group;
  assert.equal(added.agentIds, ['second', 'accessibility', 'reviewer', 'spell-check'], 'idempotent for members already in');
  ok(await h.post('/v2/agents/groups/remove-agents', { groupId: 'g1', agentIds: ['second', 'never-in'] }, t.headers), 'Agents removed from group successfully');
  assert.equal(ok(await h.post('/v2/agents/get', { groupId: 'g1' }, t.headers)).agents.map((r: any) => r.id), ['accessibility', 'reviewer', 'spell-check']);
  const renamed = ok(await h.post('/v2/agents/groups/update', { groupId: 'g1', description: 'Checks' }, t.headers), 'Agent group updated successfully').group;
  assert.equal([renamed.name, renamed.description, renamed.metadata], ['Group', 'Checks', { apiKey: t.apiKey, team: 'qa' }]);
  // Membership and metadata do not change through update (refused, as the hosted API does).
  fails(await h.post('/v2/agents/groups/update', { groupId: 'g1', agentIds: ['spell-check'] }, t.headers), 400, 'INVALID_ARGUMENT', /data\.agentIds is not accepted here/);
  fails(await h.post('/v2/agents/groups/update', { groupId: 'g1' }, t.headers), 400, 'INVALID_ARGUMENT', /Nothing to update/);
  // Deleting an agent takes it out of its groups; deleting again is still a success.
  assert.equal(ok(await h.post('/v2/agents/delete', { agentId: 'reviewer' }, t.headers), 'Agent deleted successfully'), { agentId: 'reviewer' });
  assert.equal(ok(await h.post('/v2/agents/groups/get', { groupId: 'g1' }, t.headers), 'Agent group fetched successfully').group.agentIds, ['accessibility', 'spell-check']);
  assert.equal(ok(await h.post('/v2/agents/delete', { agentId: 'reviewer' }, t.headers)), { agentId: 'reviewer' });
  fails(await h.post('/v2/agents/get', { agentId: 'reviewer' }, t.headers), 404, 'NOT_FOUND');
  assert.equal(ok(await h.post('/v2/agents/groups/delete', { groupId: 'g1' }, t.headers), 'Agent group deleted successfully'), { groupId: 'g1' });
  fails(await h.post('/v2/agents/get', { groupId: 'g1' }, t.headers), 404, 'NOT_FOUND', /group/);
  fails(await h.post('/v2/agents/groups/delete', { groupId: 'g1' }, t.headers), 404, 'NOT_FOUND');
  fails(await h.post('/v2/agents/groups/create', { name: '' }, t.headers), 400, 'INVALID_ARGUMENT', /data\.name must not be empty/);
  fails(await h.post('/v2/agents/groups/create', { name: 'x', color: 'red' }, t.headers), 400, 'INVALID_ARGUMENT', /data\.color is not accepted here/);
  fails(await h.post('/v2/agents/groups/create', { name: 'x', agentIds: Array.from({ length: 101 }, () => 'spell-check') }, t.headers), 400, 'INVALID_ARGUMENT', /data\.agentIds must have at most 100 items/);
  const before = (await h.services.events.readAll()).length;
  fails(await h.post('/v2/agents/groups/create', { name: 'x', metadata: { note: 'n'.repeat(17_000) } }, t.headers), 400, 'INVALID_ARGUMENT', /a group's metadata is limited to 16384 bytes/);
  assert.is((await h.services.events.readAll()).length, before, 'nothing stored');
});

S('an empty group lists []; groups/get lists groups; groups/list counts members', async ({ h, t }) => {
  ok(await h.post('/v2/agents/groups/create', { groupId: 'empty', name: 'Empty' }, t.headers));
  assert.equal(ok(await h.post('/v2/agents/get', { groupId: 'empty' }, t.headers)).agents, []);
  const groups = ok(await h.post('/v2/agents/groups/get', {}, t.headers), 'Agent groups fetched successfully').groups;
  assert.ok(groups.some((g: any) => g.id === 'empty'));
  const rows = ok(await h.post('/v2/agents/groups/list', {}, t.headers), 'Agent groups listed successfully').groups;
  const row = rows.find((g: any) => g.id === 'empty');
  assert.equal(row, { id: 'empty', name: 'Empty', agentCount: 0, metadata: { apiKey: t.apiKey }, createdAt: row.createdAt, updatedAt: row.updatedAt });
});

S('at most 50 groups per API key: the 51st is RESOURCE_EXHAUSTED', async ({ h }) => {
  const t = await h.tenant();
  for (let i = 0; i < 50; i++) ok(await h.post('/v2/agents/groups/create', { groupId: `g${i}`, name: `G${i}` }, t.headers));
  fails(await h.post('/v2/agents/groups/create', { name: 'one too many' }, t.headers), 429, 'RESOURCE_EXHAUSTED', /50 agent groups/);
  ok(await h.post('/v2/agents/groups/delete', { groupId: 'g0' }, t.headers));
  ok(await h.post('/v2/agents/groups/create', { name: 'fits again' }, t.headers));
});

S.run();
