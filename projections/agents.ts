/**
 * Read models of agents (semantics §6), per API key:
 * - `agents`: one document per custom agent, its configuration redacted (secrets never
 *   reach a read model), with the execution counters list rows show;
 * - `agent_builtin_settings`: a key's `enabled` choice for a built-in agent, once made;
 * - `agent_groups`: one document per agent group with its ordered `agentIds`.
 * A deleted API key (`ApiKeyDeleted`, workspace stream) takes all three with it: its agent
 * configurations, even redacted, are its data.
 */
import type { RecordedEvent } from '../src/ports/event-store.js';
import type { Doc } from '../src/ports/read-store.js';
import { defineProjection } from '../src/runtime/projection.js';
import { key } from '../src/shared/ids.js';
import { redactAgentConfig, type AgentConfig } from '../commands/agent-config.js';
import type { AgentEvent } from '../commands/agent.js';
import type { AgentGroupEvent } from '../commands/agent-group.js';
import type { WorkspaceEvent } from '../commands/workspace.js';

export const AGENTS = 'agents';
export const AGENT_BUILTIN_SETTINGS = 'agent_builtin_settings';
export const AGENT_GROUPS = 'agent_groups';

export interface AgentDoc extends Doc {
  apiKey: string;
  agentId: string;
  /** Redacted. */
  config: AgentConfig;
  version: number;
  createdAt: number;
  updatedAt: number;
  executionCount: number;
  lastExecutedAt: number | null;
}

export interface BuiltInSettingDoc extends Doc {
  apiKey: string;
  agentId: string;
  enabled: boolean;
}

export interface AgentGroupDoc extends Doc {
  apiKey: string;
  groupId: string;
  name: string;
  description: string;
  agentIds: string[];
  /** The client's metadata with `apiKey` merged in; absent on groups created before it existed. */
  metadata?: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
}

type Ev = AgentEvent | AgentGroupEvent | Extract<WorkspaceEvent, { type: 'ApiKeyDeleted' }>;
const apiKeyOf = (e: RecordedEvent) => e.metadata.apiKey ?? '';

export const agentsProjection = defineProjection<Ev>({
  name: 'agents',
  indexes: [
    { collection: AGENTS, fields: ['apiKey', 'createdAt'] },
    { collection: AGENT_GROUPS, fields: ['apiKey', 'createdAt'] },
    { collection: AGENT_BUILTIN_SETTINGS, fields: ['apiKey'] },
  ],
  handlers: {
    async ApiKeyDeleted(e, tx) {
      const { apiKey } = e.data;
      for (const c of [AGENTS, AGENT_BUILTIN_SETTINGS, AGENT_GROUPS]) await tx.deleteMany(c, { apiKey });
    },
    async AgentCreated(e, tx) {
      const d = e.data;
      const apiKey = apiKeyOf(e);
      const doc: AgentDoc = {
        _id: key(apiKey, d.agentId),
        apiKey,
        agentId: d.agentId,
        config: redactAgentConfig(d.config),
        version: d.version,
        createdAt: d.createdAt,
        updatedAt: d.createdAt,
        executionCount: 0,
        lastExecutedAt: null,
      };
      await tx.upsert(AGENTS, doc);
    },
    async AgentUpdated(e, tx) {
      const d = e.data;
      await tx.patch(AGENTS, key(apiKeyOf(e), d.agentId), {
        config: redactAgentConfig(d.config),
        version: d.version,
        updatedAt: d.updatedAt,
      });
    },
    async AgentDeleted(e, tx) {
      await tx.delete(AGENTS, key(apiKeyOf(e), e.data.agentId));
    },
    async BuiltInAgentEnabledChanged(e, tx) {
      const d = e.data;
      const apiKey = apiKeyOf(e);
      const doc: BuiltInSettingDoc = { _id: key(apiKey, d.agentId), apiKey, agentId: d.agentId, enabled: d.enabled };
      await tx.upsert(AGENT_BUILTIN_SETTINGS, doc);
    },
    async AgentGroupCreated(e, tx) {
      const d = e.data;
      const apiKey = apiKeyOf(e);
      const doc: AgentGroupDoc = {
        _id: key(apiKey, d.groupId),
        apiKey,
        groupId: d.groupId,
        name: d.name,
        description: d.description,
        agentIds: d.agentIds,
        ...(d.metadata !== undefined ? { metadata: d.metadata } : {}),
        createdAt: d.createdAt,
        updatedAt: d.createdAt,
      };
      await tx.upsert(AGENT_GROUPS, doc);
    },
    async AgentGroupUpdated(e, tx) {
      const d = e.data;
      await tx.patch(AGENT_GROUPS, key(apiKeyOf(e), d.groupId), {
        name: d.name,
        description: d.description,
        agentIds: d.agentIds,
        updatedAt: d.updatedAt,
      });
    },
    async AgentGroupDeleted(e, tx) {
      await tx.delete(AGENT_GROUPS, key(apiKeyOf(e), e.data.groupId));
    },
    async AgentsAddedToGroup(e, tx) {
      const d = e.data;
      const id = key(apiKeyOf(e), d.groupId);
      const group = await tx.get<AgentGroupDoc>(AGENT_GROUPS, id);
      if (!group) return;
      // Replay-safe: an id already listed is not added twice.
      const agentIds = [...group.agentIds, ...d.agentIds.filter((a) => !group.agentIds.includes(a))];
      await tx.patch(AGENT_GROUPS, id, { agentIds, updatedAt: d.at });
    },
    async AgentsRemovedFromGroup(e, tx) {
      const d = e.data;
      const id = key(apiKeyOf(e), d.groupId);
      const group = await tx.get<AgentGroupDoc>(AGENT_GROUPS, id);
      if (!group) return;
      await tx.patch(AGENT_GROUPS, id, { agentIds: group.agentIds.filter((a) => !d.agentIds.includes(a)), updatedAt: d.at });
    },
  },
});
