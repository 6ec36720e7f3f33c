/** The agents read models: redacted configs, built-in choices, group order; replay-safe. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { project, projectionSpec, collection, type GivenEvent } from './support/projection.js';
import { agentsProjection, AGENTS, AGENT_BUILTIN_SETTINGS, AGENT_GROUPS } from '../projections/agents.js';
import { agentConfigSchema, toAgentConfig } from '../commands/agent-config.js';
import { key } from '../src/shared/ids.js';

const P = suite('agents projection');
const m = { metadata: { apiKey: 'k1' } };
const config = toAgentConfig(agentConfigSchema.parse({
  name: 'R',
  execution: { mcpServers: [{ name: 's', url: 'https://x.example', auth: { type: 'basic', password: 'hunter2' } }] },
  contextGathering: { strategies: [], strategyOptions: { clientSecret: 'shh' } },
}));
const events: GivenEvent[] = [
  { type: 'AgentCreated', data: { agentId: 'a', config, version: 1, createdAt: 10 }, ...m },
  { type: 'AgentUpdated', data: { agentId: 'a', config: { ...config, name: 'R2' }, version: 2, updatedAt: 20 }, ...m },
  { type: 'BuiltInAgentEnabledChanged', data: { agentId: 'spell-check', enabled: false, changedAt: 30 }, ...m },
  { type: 'AgentGroupCreated', data: { groupId: 'g', name: 'G', description: '', agentIds: ['a'], createdAt: 40 }, ...m },
  { type: 'AgentsAddedToGroup', data: { groupId: 'g', agentIds: ['spell-check'], at: 50 }, ...m },
  { type: 'AgentsRemovedFromGroup', data: { groupId: 'g', agentIds: ['a'], at: 60 }, ...m },
];

P('documents are keyed per API key and never hold a secret', async () => {
  const store = await project(agentsProjection, events);
  const [agent] = await collection(store, AGENTS);
  assert.is(agent!._id, key('k1', 'a'));
  assert.is(agent!.apiKey, 'k1');
  assert.is(agent!.version, 2);
  assert.is((agent!.config as any).name, 'R2');
  const text = JSON.stringify(await collection(store, AGENTS));
  assert.not.ok(text.includes('hunter2'));
  assert.not.ok(text.includes('shh'));
  assert.equal(await collection(store, AGENT_BUILTIN_SETTINGS), [{ _id: key('k1', 'spell-check'), apiKey: 'k1', agentId: 'spell-check', enabled: false }]);
  const [group] = await collection(store, AGENT_GROUPS);
  assert.equal(group!.agentIds, ['spell-check']);
  await store.close();
});

P('deletes remove the documents', async () => {
  await projectionSpec(agentsProjection).given([
    ...events,
    { type: 'AgentDeleted', data: { agentId: 'a', deletedAt: 70 }, ...m },
    { type: 'AgentGroupDeleted', data: { groupId: 'g', deletedAt: 80 }, ...m },
  ]).then({ [AGENTS]: [], [AGENT_GROUPS]: [] });
});

P('replaying every event leaves the same documents', async () => {
  await projectionSpec(agentsProjection).given(events).replayTwice([AGENTS, AGENT_BUILTIN_SETTINGS, AGENT_GROUPS]);
});

P.run();
