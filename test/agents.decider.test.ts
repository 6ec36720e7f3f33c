/**
 * Agent and agent-group deciders: versions, built-in guards, secrets kept across updates
 * that send the placeholder back, group membership order.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spec } from './support/decider.js';
import { agentDecider, type AgentEvent } from '../commands/agent.js';
import { agentGroupDecider, type AgentGroupEvent } from '../commands/agent-group.js';
import { agentConfigSchema, REDACTED, redactAgentConfig, toAgentConfig, type AgentConfig } from '../src/agents/config.js';

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

A('every update bumps the version; a given section replaces the stored one', () => {
  const c = config();
  const { state } = spec(agentDecider).given([created(c)]);
  const events = agentDecider.decide({ type: 'UpdateAgent', data: { agentId: 'a1', changes: { name: 'Renamed' } }, metadata: meta }, state);
  assert.equal(events, [{ type: 'AgentUpdated', data: { agentId: 'a1', config: { ...c, name: 'Renamed' }, version: 2, updatedAt: now } }]);
  const s2 = events.reduce(agentDecider.evolve, state);
  const again = agentDecider.decide({ type: 'UpdateAgent', data: { agentId: 'a1', changes: { name: 'Renamed' } }, metadata: meta }, s2);
  assert.is((again[0]!.data as { version: number }).version, 3);
});

A('update: nothing to change is INVALID_ARGUMENT; unknown or deleted agent is NOT_FOUND', () => {
  spec(agentDecider).given([created()]).when({ type: 'UpdateAgent', data: { agentId: 'a1', changes: {} }, metadata: meta })
    .thenFails('INVALID_ARGUMENT', /Nothing to update/);
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
  assert.is((shown.contextGathering.strategyOptions as any).web.apiKey, REDACTED);
  assert.equal(shown.execution.mcpServers[0]!.auth, { type: 'bearer', token: REDACTED });
  const [e] = agentDecider.decide(
    { type: 'UpdateAgent', data: { agentId: 'a1', changes: { contextGathering: { ...shown.contextGathering, strategies: ['web', 'docs'] }, execution: shown.execution } }, metadata: meta },
    state,
  );
  const next = (e!.data as { config: AgentConfig }).config;
  assert.equal(next.contextGathering, { strategies: ['web', 'docs'], strategyOptions: { web: { apiKey: 'sk-live', depth: 2 } } });
  assert.equal(next.execution.mcpServers[0]!.auth, { type: 'bearer', token: 'tok-1' });
});

A('built-ins accept only enabled changes and cannot be deleted', () => {
  spec(agentDecider).given([]).when({ type: 'UpdateAgent', data: { agentId: 'spell-check', changes: { enabled: false } }, metadata: meta })
    .then([{ type: 'BuiltInAgentEnabledChanged', data: { agentId: 'spell-check', enabled: false, changedAt: now } }]);
  spec(agentDecider).given([{ type: 'BuiltInAgentEnabledChanged', data: { agentId: 'spell-check', enabled: false, changedAt: now } }])
    .when({ type: 'UpdateAgent', data: { agentId: 'spell-check', changes: { enabled: false } }, metadata: meta })
    .thenNothing();
  spec(agentDecider).given([]).when({ type: 'UpdateAgent', data: { agentId: 'spell-check', changes: { name: 'Mine', enabled: true } }, metadata: meta })
    .thenFails('INVALID_ARGUMENT', /only enabled changes \(got name\)/);
  spec(agentDecider).given([]).when({ type: 'DeleteAgent', data: { agentId: 'spell-check' }, metadata: meta })
    .thenFails('FAILED_PRECONDITION', /cannot be deleted/);
});

A('delete: an active agent is deleted; a missing one is NOT_FOUND', () => {
  spec(agentDecider).given([created()]).when({ type: 'DeleteAgent', data: { agentId: 'a1' }, metadata: meta })
    .then([{ type: 'AgentDeleted', data: { agentId: 'a1', deletedAt: now } }]);
  spec(agentDecider).given([]).when({ type: 'DeleteAgent', data: { agentId: 'a1' }, metadata: meta }).thenFails('NOT_FOUND');
});

A.run();

const G = suite('agent group decider');
const gCreated: AgentGroupEvent = { type: 'AgentGroupCreated', data: { groupId: 'g', name: 'G', description: '', agentIds: ['b', 'a'], createdAt: now } };

G('create keeps the given order and drops duplicates', () => {
  spec(agentGroupDecider).given([]).when({ type: 'CreateAgentGroup', data: { groupId: 'g', name: 'G', agentIds: ['b', 'a', 'b'] }, metadata: meta }).then([gCreated]);
  spec(agentGroupDecider).given([gCreated]).when({ type: 'CreateAgentGroup', data: { groupId: 'g', name: 'G', agentIds: [] }, metadata: meta })
    .thenFails('ALREADY_EXISTS');
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

G('update replaces given fields; missing or deleted group is NOT_FOUND', () => {
  spec(agentGroupDecider).given([gCreated]).when({ type: 'UpdateAgentGroup', data: { groupId: 'g', agentIds: ['a', 'b'] }, metadata: meta })
    .then([{ type: 'AgentGroupUpdated', data: { groupId: 'g', name: 'G', description: '', agentIds: ['a', 'b'], updatedAt: now } }]);
  spec(agentGroupDecider).given([gCreated]).when({ type: 'UpdateAgentGroup', data: { groupId: 'g' }, metadata: meta }).thenFails('INVALID_ARGUMENT');
  spec(agentGroupDecider).given([]).when({ type: 'AddAgentsToGroup', data: { groupId: 'g', agentIds: ['a'] }, metadata: meta })
    .thenFails('NOT_FOUND', 'Agent group not found.');
  spec(agentGroupDecider).given([gCreated, { type: 'AgentGroupDeleted', data: { groupId: 'g', deletedAt: now } }])
    .when({ type: 'DeleteAgentGroup', data: { groupId: 'g' }, metadata: meta }).thenFails('NOT_FOUND');
});

G.run();
