/**
 * Agent group aggregate, one stream per API key and group id (semantics §6): a named,
 * ordered list of agent ids. The order of `agentIds` is the order `/v2/agents/get` lists
 * the group's agents in. Whether the ids name existing agents is checked by the route
 * against the read model before the command (agents live in other streams); an agent
 * deleted later is skipped when the group is listed.
 */
import { alreadyExists, assertNever, invalidArgument, notFound } from '../src/errors.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import { streamName } from '../src/ids.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/ids.ts). */
export const agentGroupStream = (apiKey: string, groupId: string) => streamName('agentGroup', apiKey, groupId);

// ---- events ----

export type AgentGroupEvent =
  | DomainEvent<'AgentGroupCreated', { groupId: string; name: string; description: string; agentIds: string[]; createdAt: number }>
  | DomainEvent<'AgentGroupUpdated', { groupId: string; name: string; description: string; agentIds: string[]; updatedAt: number }>
  | DomainEvent<'AgentGroupDeleted', { groupId: string; deletedAt: number }>
  | DomainEvent<'AgentsAddedToGroup', { groupId: string; agentIds: string[]; at: number }>
  | DomainEvent<'AgentsRemovedFromGroup', { groupId: string; agentIds: string[]; at: number }>;

// ---- state ----

export type AgentGroupState =
  | { status: 'none' }
  | { status: 'active'; groupId: string; name: string; description: string; agentIds: string[] }
  | { status: 'deleted' };

export const initialState = (): AgentGroupState => ({ status: 'none' });

// ---- evolve ----

export function evolve(state: AgentGroupState, event: AgentGroupEvent): AgentGroupState {
  switch (event.type) {
    case 'AgentGroupCreated':
    case 'AgentGroupUpdated': {
      const { groupId, name, description, agentIds } = event.data;
      return { status: 'active', groupId, name, description, agentIds };
    }
    case 'AgentGroupDeleted':
      return { status: 'deleted' };
    case 'AgentsAddedToGroup':
      if (state.status !== 'active') return state;
      return { ...state, agentIds: [...state.agentIds, ...event.data.agentIds.filter((a) => !state.agentIds.includes(a))] };
    case 'AgentsRemovedFromGroup':
      if (state.status !== 'active') return state;
      return { ...state, agentIds: state.agentIds.filter((a) => !event.data.agentIds.includes(a)) };
    default:
      return state;
  }
}

// ---- commands ----

export type AgentGroupCommand =
  | Command<'CreateAgentGroup', { groupId: string; name: string; description?: string; agentIds: string[] }>
  | Command<'UpdateAgentGroup', { groupId: string; name?: string; description?: string; agentIds?: string[] }>
  | Command<'DeleteAgentGroup', { groupId: string }>
  | Command<'AddAgentsToGroup', { groupId: string; agentIds: string[] }>
  | Command<'RemoveAgentsFromGroup', { groupId: string; agentIds: string[] }>;

// ---- decide ----

export const groupNotFound = () => notFound('Agent group not found.');
/** First occurrence wins: `[a, b, a]` is `[a, b]`. */
const unique = (ids: string[]) => [...new Set(ids)];

export function decide(command: AgentGroupCommand, state: AgentGroupState): AgentGroupEvent[] {
  const now = command.metadata.now;
  const { groupId } = command.data;
  if (command.type === 'CreateAgentGroup') {
    if (state.status === 'active') throw alreadyExists('Agent group already exists.');
    const { name, description = '', agentIds } = command.data;
    return [{ type: 'AgentGroupCreated', data: { groupId, name, description, agentIds: unique(agentIds), createdAt: now } }];
  }
  if (state.status !== 'active') throw groupNotFound();
  switch (command.type) {
    case 'UpdateAgentGroup': {
      const { name, description, agentIds } = command.data;
      if (name === undefined && description === undefined && agentIds === undefined) {
        throw invalidArgument('Nothing to update: give name, description or agentIds.');
      }
      return [{
        type: 'AgentGroupUpdated',
        data: {
          groupId,
          name: name ?? state.name,
          description: description ?? state.description,
          agentIds: agentIds ? unique(agentIds) : state.agentIds,
          updatedAt: now,
        },
      }];
    }
    case 'DeleteAgentGroup':
      return [{ type: 'AgentGroupDeleted', data: { groupId, deletedAt: now } }];
    case 'AddAgentsToGroup': {
      const added = unique(command.data.agentIds).filter((a) => !state.agentIds.includes(a));
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
