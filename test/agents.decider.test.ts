/**
 * Agent and agent-group deciders: versions (identity updates keep it), idempotent delete,
 * built-in guards, secrets kept across updates that send the placeholder back, group
 * membership order and bounds.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spec } from './support/decider.js';
import { MAX_GROUP_AGENTS, agentGroupDecider, type AgentGroupEvent } from '../commands/agent-group.js';
import { agentDecider, type AgentEvent } from '../commands/agent.js';
import { agentConfigSchema, REDACTED, redactAgentConfig, toAgentConfig, type AgentConfig } from '../commands/agent-config.js';

const now = 1_700_000_000_000;
const meta = { now };
const config = (over: Record<string, unknown> = {}): AgentConfig =>
  toAgentConfig(agentConfigSchema.parse({ name: 'Reviewer', ...over }));
const created = (c = config()): AgentEvent => ({ type: 'AgentCreated', data: { agentId: 'a1', config: c, version: 1, createdAt: now } });

const A = suite('agent decider');

A('create: version 1 with the given configuration', () => {
  spec(agentDecider).given([]).when({ type: 'CreateAgent', data: { agentId: 'a1', config: config() }, metadata: meta }).then([created()]);
});

A('create: an existing agent or a built-in id is ALREADY_EXISTS', () => {
  spec(agentDecider).given([created()]).when({ type: 'CreateAgent', data: { agentId: 'a1', config: config() }, metadata: meta })
    .thenFails('ALREADY_EXISTS', 'Agent already exists.');
  spec(agentDecider).given([]).when({ type: 'CreateAgent', data: { agentId: 'spell-check', config: config() }, metadata: meta })
    .thenFails('ALREADY_EXISTS', /built-in/);
});

A('create after delete starts over at version 1', () => {
  const deleted: AgentEvent = { type: 'AgentDeleted', data: { agentId: 'a1', deletedAt: now } };
  spec(agentDecider).given([created(), deleted]).when({ type: 'CreateAgent', data: { agentId: 'a1', config: config() }, metadata: meta }).then([created()]);
});

A('an identity update (name, description, enabled) keeps the version; any other field makes the next', () => {
  const c = config();
  const { state } = spec(agentDecider).given([created(c)]);
  const events = agentDecider.decide({ type: 'UpdateAgent', data: { agentId: 'a1', changes: { name: 'Renamed' } }, metadata: meta }, state);
  assert.equal(events, [{ type: 'AgentUpdated', data: { agentId: 'a1', config: { ...c, name: 'Renamed' }, version: 1, updatedAt: now } }]);
  const s2 = events.reduce(agentDecider.evolve, state);
  const again = agentDecider.decide({ type: 'UpdateAgent', data: { agentId: 'a1', changes: { instructions: 'Now this' } }, metadata: meta }, s2);
  assert.is((again[0]!.data as { version: number }).version, 2);
  const s3 = again.reduce(agentDecider.evolve, s2);
  const mixed = agentDecider.decide({ type: 'UpdateAgent', data: { agentId: 'a1', changes: { enabled: false, scope: { pageScope: ['/x'] } } }, metadata: meta }, s3);
  assert.is((mixed[0]!.data as { version: number }).version, 3);
});

A('update: nothing to change appends nothing; unknown or deleted agent is NOT_FOUND', () => {
  spec(agentDecider).given([created()]).when({ type: 'UpdateAgent', data: { agentId: 'a1', changes: {} }, metadata: meta }).thenNothing();
  spec(agentDecider).given([created()]).when({ type: 'UpdateAgent', data: { agentId: 'a1', changes: { name: 'Reviewer' } }, metadata: meta }).thenNothing();
  spec(agentDecider).given([]).when({ type: 'UpdateAgent', data: { agentId: 'a1', changes: { name: 'x' } }, metadata: meta })
    .thenFails('NOT_FOUND', 'Agent not found.');
  spec(agentDecider).given([created(), { type: 'AgentDeleted', data: { agentId: 'a1', deletedAt: now } }])
    .when({ type: 'UpdateAgent', data: { agentId: 'a1', changes: { name: 'x' } }, metadata: meta })
    .thenFails('NOT_FOUND');
});

A('update that sends "__redacted__" back keeps the stored secrets', () => {
  const c = config({
    contextGathering: { strategies: ['web'], strategyOptions: { web: { apiKey: 'sk-live', depth: 2 } } },
    execution: { mcpServers: [{ name: 'docs', url: 'https://mcp.example.com', auth: { type: 'bearer', token: 'tok-1' } }] },
  });
  const { state } = spec(agentDecider).given([created(c)]);
  const shown = redactAgentConfig(c);
  assert.is((shown.contextGathering!.strategyOptions as any).web.apiKey, REDACTED);
  assert.equal(shown.execution!.mcpServers![0]!.auth, { type: 'bearer', token: REDACTED });
  const [e] = agentDecider.decide(
    { type: 'UpdateAgent', data: { agentId: 'a1', changes: { contextGathering: { ...shown.contextGathering, strategies: ['web', 'docs'] }, execution: shown.execution } }, metadata: meta },
    state,
  );
  const next = (e!.data as { config: AgentConfig }).config;
  assert.equal(next.contextGathering, { strategies: ['web', 'docs'], strategyOptions: { web: { apiKey: 'sk-live', depth: 2 } } });
  assert.equal(next.execution!.mcpServers![0]!.auth, { type: 'bearer', token: 'tok-1' });
});

A('a server sent back redacted keeps its stored auth: matched by id, else by name, else by place', () => {
  const c = config({
    execution: { mcpServers: [
      { id: 'a', url: 'https://a.example.com', auth: { type: 'bearer', token: 'tok-a' } },
      { name: 'b', url: 'https://b.example.com', auth: { type: 'bearer', token: 'tok-b' } },
    ] },
  });
  const { state } = spec(agentDecider).given([created(c)]);
  const changes = { execution: { mcpServers: [
    // Reordered: the id and the name find their own server, not the one at their place.
    { id: 'x', name: 'b', url: 'https://b.example.com', auth: { type: 'bearer', token: REDACTED } },
    { id: 'a', url: 'https://a2.example.com', auth: { type: 'bearer', token: REDACTED } },
  ] } };
  const [e] = agentDecider.decide({ type: 'UpdateAgent', data: { agentId: 'a1', changes }, metadata: meta }, state);
  const servers = (e!.data as { config: AgentConfig }).config.execution!.mcpServers!;
  assert.equal(servers.map((s) => s.auth), [{ type: 'bearer', token: 'tok-b' }, { type: 'bearer', token: 'tok-a' }]);
});

A('secret positions: auth values but type and username, unknown options; documented options shown as sent', () => {
  const c = config({
    contextGathering: {
      strategies: ['web-page-screenshot', 'rest-api', 'mine'],
      strategyOptions: {
        'web-page-screenshot': { scrollBeforeCapture: true, secretThing: 'x' },
        'rest-api': {
          maxResponseBytes: 1000,
          endpoints: [{ name: 'n', url: 'https://api.example.com', headers: { Accept: 'json' }, auth: { type: 'basic', username: 'u', password: 'p' } }],
        },
        mine: { key: 'k', nested: [1, { deep: 'd' }] },
      },
    },
    execution: { mcpServers: [{ id: 's1', url: 'https://m.example.com', auth: { type: 'header', headers: { 'X-Api-Key': 'hk' } } }] },
  });
  const shown = redactAgentConfig(c);
  assert.equal(shown.contextGathering!.strategyOptions, {
    'web-page-screenshot': { scrollBeforeCapture: true, secretThing: REDACTED },
    'rest-api': {
      maxResponseBytes: 1000,
      endpoints: [{ name: 'n', url: 'https://api.example.com', headers: { Accept: 'json' }, auth: { type: 'basic', username: 'u', password: REDACTED } }],
    },
    mine: { key: REDACTED, nested: [REDACTED, { deep: REDACTED }] },
  });
  assert.equal(shown.execution!.mcpServers![0]!.auth, { type: 'header', headers: { 'X-Api-Key': REDACTED } });
  // A value an earlier version sealed at a position no longer secret still never shows.
  const old = { ...c, contextGathering: { strategyOptions: { 'web-page-text': { deviceType: 'enc:v1:AAAA' } } } } as AgentConfig;
  assert.equal(redactAgentConfig(old).contextGathering!.strategyOptions, { 'web-page-text': { deviceType: REDACTED } });
});

A('built-ins take only enabled (other fields ignored), need it, and cannot be deleted', () => {
  spec(agentDecider).given([]).when({ type: 'UpdateAgent', data: { agentId: 'spell-check', changes: { enabled: false } }, metadata: meta })
    .then([{ type: 'BuiltInAgentEnabledChanged', data: { agentId: 'spell-check', enabled: false, changedAt: now } }]);
  spec(agentDecider).given([{ type: 'BuiltInAgentEnabledChanged', data: { agentId: 'spell-check', enabled: false, changedAt: now } }])
    .when({ type: 'UpdateAgent', data: { agentId: 'spell-check', changes: { enabled: false } }, metadata: meta })
    .thenNothing();
  spec(agentDecider).given([]).when({ type: 'UpdateAgent', data: { agentId: 'spell-check', changes: { name: 'Mine', enabled: false } }, metadata: meta })
    .then([{ type: 'BuiltInAgentEnabledChanged', data: { agentId: 'spell-check', enabled: false, changedAt: now } }]);
  spec(agentDecider).given([]).when({ type: 'UpdateAgent', data: { agentId: 'spell-check', changes: { name: 'Mine' } }, metadata: meta })
    .thenFails('INVALID_ARGUMENT', /support only enabled/);
  spec(agentDecider).given([]).when({ type: 'DeleteAgent', data: { agentId: 'spell-check' }, metadata: meta })
    .thenFails('FAILED_PRECONDITION', /cannot be deleted/);
});

A('delete: an active agent is deleted; a missing or deleted one is deleted already (nothing appended)', () => {
  const deleted: AgentEvent = { type: 'AgentDeleted', data: { agentId: 'a1', deletedAt: now } };
  spec(agentDecider).given([created()]).when({ type: 'DeleteAgent', data: { agentId: 'a1' }, metadata: meta }).then([deleted]);
  spec(agentDecider).given([]).when({ type: 'DeleteAgent', data: { agentId: 'a1' }, metadata: meta }).thenNothing();
  spec(agentDecider).given([created(), deleted]).when({ type: 'DeleteAgent', data: { agentId: 'a1' }, metadata: meta }).thenNothing();
});

A.run();

const G = suite('agent group decider');
const md = { apiKey: 'k1', team: 'growth' };
const gCreated: AgentGroupEvent = { type: 'AgentGroupCreated', data: { groupId: 'g', name: 'G', description: '', agentIds: ['b', 'a'], metadata: md, createdAt: now } };

G('create keeps the given order and drops duplicates; metadata and times are in the state', () => {
  spec(agentGroupDecider).given([]).when({ type: 'CreateAgentGroup', data: { groupId: 'g', name: 'G', agentIds: ['b', 'a', 'b'], metadata: md }, metadata: meta }).then([gCreated]);
  spec(agentGroupDecider).given([gCreated]).when({ type: 'CreateAgentGroup', data: { groupId: 'g', name: 'G', agentIds: [], metadata: md }, metadata: meta })
    .thenFails('ALREADY_EXISTS');
  const s = spec(agentGroupDecider).given([gCreated, { type: 'AgentsAddedToGroup', data: { groupId: 'g', agentIds: ['c'], at: now + 5 } }]).state;
  assert.equal(s, { status: 'active', groupId: 'g', name: 'G', description: '', agentIds: ['b', 'a', 'c'], metadata: md, createdAt: now, updatedAt: now + 5 });
});

G('bounds: more than MAX_GROUP_AGENTS ids on create is INVALID_ARGUMENT (counted as sent); an add past it RESOURCE_EXHAUSTED', () => {
  const ids = (n: number, p = 'a') => Array.from({ length: n }, (_, i) => `${p}${i}`);
  spec(agentGroupDecider).given([]).when({ type: 'CreateAgentGroup', data: { groupId: 'g', name: 'G', agentIds: [...ids(90), ...ids(30)], metadata: md }, metadata: meta })
    .thenFails('INVALID_ARGUMENT', /at most 100 agents/);
  const full: AgentGroupEvent = { type: 'AgentGroupCreated', data: { groupId: 'g', name: 'G', description: '', agentIds: ids(MAX_GROUP_AGENTS - 1), createdAt: now } };
  spec(agentGroupDecider).given([full]).when({ type: 'AddAgentsToGroup', data: { groupId: 'g', agentIds: ['new1', 'a0'] }, metadata: meta })
    .then([{ type: 'AgentsAddedToGroup', data: { groupId: 'g', agentIds: ['new1'], at: now } }]);
  spec(agentGroupDecider).given([full]).when({ type: 'AddAgentsToGroup', data: { groupId: 'g', agentIds: ['new1', 'new2'] }, metadata: meta })
    .thenFails('RESOURCE_EXHAUSTED', /at most 100 agents/);
});

G('add appends only new ids; remove only present ones; no-ops append nothing', () => {
  spec(agentGroupDecider).given([gCreated]).when({ type: 'AddAgentsToGroup', data: { groupId: 'g', agentIds: ['a', 'c', 'c'] }, metadata: meta })
    .then([{ type: 'AgentsAddedToGroup', data: { groupId: 'g', agentIds: ['c'], at: now } }]);
  spec(agentGroupDecider).given([gCreated]).when({ type: 'AddAgentsToGroup', data: { groupId: 'g', agentIds: ['a'] }, metadata: meta }).thenNothing();
  spec(agentGroupDecider).given([gCreated]).when({ type: 'RemoveAgentsFromGroup', data: { groupId: 'g', agentIds: ['a', 'z'] }, metadata: meta })
    .then([{ type: 'AgentsRemovedFromGroup', data: { groupId: 'g', agentIds: ['a'], at: now } }]);
  const s = spec(agentGroupDecider).given([gCreated, { type: 'AgentsAddedToGroup', data: { groupId: 'g', agentIds: ['c'], at: now } }]).state;
  assert.equal(s.status === 'active' && s.agentIds, ['b', 'a', 'c']);
});

G('update replaces name and description, keeps the members; missing or deleted group is NOT_FOUND', () => {
  spec(agentGroupDecider).given([gCreated]).when({ type: 'UpdateAgentGroup', data: { groupId: 'g', description: 'D' }, metadata: meta })
    .then([{ type: 'AgentGroupUpdated', data: { groupId: 'g', name: 'G', description: 'D', agentIds: ['b', 'a'], updatedAt: now } }]);
  spec(agentGroupDecider).given([gCreated]).when({ type: 'UpdateAgentGroup', data: { groupId: 'g' }, metadata: meta }).thenFails('INVALID_ARGUMENT');
  spec(agentGroupDecider).given([]).when({ type: 'AddAgentsToGroup', data: { groupId: 'g', agentIds: ['a'] }, metadata: meta })
    .thenFails('NOT_FOUND', 'Agent group not found.');
  spec(agentGroupDecider).given([gCreated, { type: 'AgentGroupDeleted', data: { groupId: 'g', deletedAt: now } }])
    .when({ type: 'DeleteAgentGroup', data: { groupId: 'g' }, metadata: meta }).thenFails('NOT_FOUND');
});

G.run();
