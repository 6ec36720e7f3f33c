/**
 * Agent group aggregate, one stream per API key and group id (semantics §6): a named,
 * ordered list of agent ids, with the client's `metadata`, fixed at creation (the hosted
 * API's rule). The order of `agentIds` is the order `/v2/agents/get` lists the group's
 * agents in. Whether the ids name existing agents is checked by the route against the read
 * model before the command (agents live in other streams); deleting an agent takes it out
 * of its groups (the route, src/http/routes/agents.ts).
 *
 * Bounds (the hosted API's): at most MAX_GROUP_AGENTS members. A create with more ids, even
 * before duplicates are dropped, is INVALID_ARGUMENT; an add that would pass the bound is
 * RESOURCE_EXHAUSTED. `name` and `description` are the only fields an update changes.
 */
import { alreadyExists, assertNever, invalidArgument, notFound, resourceExhausted } from '../src/shared/errors.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import { streamName } from '../src/shared/ids.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/shared/ids.ts). */
export const agentGroupStream = (apiKey: string, groupId: string) => streamName('agentGroup', apiKey, groupId);

// ---- events ----

export type AgentGroupEvent =
  /** `metadata`: the client's, with the key's `apiKey` merged in; absent on groups created before it existed. */
  | DomainEvent<'AgentGroupCreated', { groupId: string; name: string; description: string; agentIds: string[]; metadata?: Record<string, unknown>; createdAt: number }>
  | DomainEvent<'AgentGroupUpdated', { groupId: string; name: string; description: string; agentIds: string[]; updatedAt: number }>
  | DomainEvent<'AgentGroupDeleted', { groupId: string; deletedAt: number }>
  | DomainEvent<'AgentsAddedToGroup', { groupId: string; agentIds: string[]; at: number }>
  | DomainEvent<'AgentsRemovedFromGroup', { groupId: string; agentIds: string[]; at: number }>;

// ---- state ----

export type AgentGroupState =
  | { status: 'none' }
  | {
      status: 'active';
      groupId: string;
      name: string;
      description: string;
      agentIds: string[];
      metadata?: Record<string, unknown>;
      createdAt: number;
      updatedAt: number;
    }
  | { status: 'deleted' };

const initialState = (): AgentGroupState => ({ status: 'none' });

// ---- evolve ----

function evolve(state: AgentGroupState, event: AgentGroupEvent): AgentGroupState {
  switch (event.type) {
    case 'AgentGroupCreated': {
      const { groupId, name, description, agentIds, metadata, createdAt } = event.data;
      return { status: 'active', groupId, name, description, agentIds, ...(metadata !== undefined ? { metadata } : {}), createdAt, updatedAt: createdAt };
    }
    case 'AgentGroupUpdated': {
      if (state.status !== 'active') return state;
      const { name, description, agentIds, updatedAt } = event.data;
      return { ...state, name, description, agentIds, updatedAt };
    }
    case 'AgentGroupDeleted':
      return { status: 'deleted' };
    case 'AgentsAddedToGroup':
      if (state.status !== 'active') return state;
      return { ...state, agentIds: [...state.agentIds, ...event.data.agentIds.filter((a) => !state.agentIds.includes(a))], updatedAt: event.data.at };
    case 'AgentsRemovedFromGroup':
      if (state.status !== 'active') return state;
      return { ...state, agentIds: state.agentIds.filter((a) => !event.data.agentIds.includes(a)), updatedAt: event.data.at };
    default:
      return state;
  }
}

// ---- commands ----

export type AgentGroupCommand =
  | Command<'CreateAgentGroup', { groupId: string; name: string; description?: string; agentIds: string[]; metadata: Record<string, unknown> }>
  | Command<'UpdateAgentGroup', { groupId: string; name?: string; description?: string }>
  | Command<'DeleteAgentGroup', { groupId: string }>
  | Command<'AddAgentsToGroup', { groupId: string; agentIds: string[] }>
  | Command<'RemoveAgentsFromGroup', { groupId: string; agentIds: string[] }>;

// ---- decide ----

const groupNotFound = () => notFound('Agent group not found.');
/** The hosted API's bound on a group's members. */
export const MAX_GROUP_AGENTS = 100;
/** First occurrence wins: `[a, b, a]` is `[a, b]`. */
const unique = (ids: string[]) => [...new Set(ids)];

function decide(command: AgentGroupCommand, state: AgentGroupState): AgentGroupEvent[] {
  const now = command.metadata.now;
  const { groupId } = command.data;
  if (command.type === 'CreateAgentGroup') {
    if (state.status === 'active') throw alreadyExists('Agent group already exists.');
    const { name, description = '', agentIds, metadata } = command.data;
    if (agentIds.length > MAX_GROUP_AGENTS) throw invalidArgument(`An agent group holds at most ${MAX_GROUP_AGENTS} agents; got ${agentIds.length} ids.`);
    return [{ type: 'AgentGroupCreated', data: { groupId, name, description, agentIds: unique(agentIds), metadata, createdAt: now } }];
  }
  if (state.status !== 'active') throw groupNotFound();
  switch (command.type) {
    case 'UpdateAgentGroup': {
      const { name, description } = command.data;
      if (name === undefined && description === undefined) {
        throw invalidArgument('Nothing to update: give name or description.');
      }
      return [{
        type: 'AgentGroupUpdated',
        data: {
          groupId,
          name: name ?? state.name,
          description: description ?? state.description,
          agentIds: state.agentIds,
          updatedAt: now,
        },
      }];
    }
    case 'DeleteAgentGroup':
      return [{ type: 'AgentGroupDeleted', data: { groupId, deletedAt: now } }];
    case 'AddAgentsToGroup': {
      const added = unique(command.data.agentIds).filter((a) => !state.agentIds.includes(a));
      if (state.agentIds.length + added.length > MAX_GROUP_AGENTS) {
        throw resourceExhausted(
          `An agent group holds at most ${MAX_GROUP_AGENTS} agents; it has ${state.agentIds.length} and ${added.length} more would pass that.`,
        );
      }
      return added.length ? [{ type: 'AgentsAddedToGroup', data: { groupId, agentIds: added, at: now } }] : [];
    }
    case 'RemoveAgentsFromGroup': {
      const removed = unique(command.data.agentIds).filter((a) => state.agentIds.includes(a));
      return removed.length ? [{ type: 'AgentsRemovedFromGroup', data: { groupId, agentIds: removed, at: now } }] : [];
    }
    default:
      return assertNever(command, 'agent group command');
  }
}

export const agentGroupDecider: Decider<AgentGroupState, AgentGroupCommand, AgentGroupEvent> = {
  name: 'agent-group',
  initialState,
  evolve,
  decide,
};
