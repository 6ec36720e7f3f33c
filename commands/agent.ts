/**
 * Agent aggregate, one stream per API key and agent id (semantics §6).
 *
 * - A custom agent is created, updated and deleted. Its events carry the whole
 *   configuration, secrets included (sealed by the route: commands arrive with them
 *   encrypted): the write side keeps them; projections and responses only ever see
 *   `redactAgentConfig` of it.
 * - Versions: an update of the identity fields only (`name`, `description`, `enabled`: the
 *   hosted API's agents/update) keeps the version; one that changes any other field (this
 *   service's extension: the hosted API has a separate version endpoint) makes the next.
 *   An update that changes nothing appends nothing (the hosted API's no-op).
 * - Deleting is idempotent, as the hosted API documents: a missing or deleted agent is
 *   deleted already, and nothing is appended.
 * - A built-in agent's id (commands/agent-catalogue.ts) is reserved: its stream only records
 *   the key's `enabled` choice, the one change a built-in accepts (other fields sent with
 *   it are ignored, as the hosted API does; without `enabled` the update is refused).
 * - A deleted agent's id may be used again: the new agent starts over at version 1.
 */
import { alreadyExists, assertNever, failedPrecondition, invalidArgument, notFound } from '../src/shared/errors.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import { isBuiltInAgent } from './agent-catalogue.js';
import { IDENTITY_FIELDS, MAX_AGENT_CONFIG_BYTES, agentConfigBytes, resealLegacy, restoreSecrets, type AgentChanges, type AgentConfig } from './agent-config.js';
import { streamName } from '../src/shared/ids.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/shared/ids.ts). */
export const agentStream = (apiKey: string, agentId: string) => streamName('agent', apiKey, agentId);

// ---- events ----

export type AgentEvent =
  | DomainEvent<'AgentCreated', { agentId: string; config: AgentConfig; version: number; createdAt: number }>
  | DomainEvent<'AgentUpdated', { agentId: string; config: AgentConfig; version: number; updatedAt: number }>
  | DomainEvent<'AgentDeleted', { agentId: string; deletedAt: number }>
  | DomainEvent<'BuiltInAgentEnabledChanged', { agentId: string; enabled: boolean; changedAt: number }>;

// ---- state ----

export type AgentState =
  | { status: 'none' }
  | { status: 'active'; agentId: string; config: AgentConfig; version: number }
  | { status: 'deleted'; agentId: string }
  | { status: 'builtIn'; agentId: string; enabled: boolean };

const initialState = (): AgentState => ({ status: 'none' });

// ---- evolve ----

function evolve(state: AgentState, event: AgentEvent): AgentState {
  switch (event.type) {
    case 'AgentCreated':
    case 'AgentUpdated':
      return { status: 'active', agentId: event.data.agentId, config: event.data.config, version: event.data.version };
    case 'AgentDeleted':
      return state.status === 'active' ? { status: 'deleted', agentId: state.agentId } : state;
    case 'BuiltInAgentEnabledChanged':
      return { status: 'builtIn', agentId: event.data.agentId, enabled: event.data.enabled };
    default:
      return state;
  }
}

// ---- commands ----

export type AgentCommand =
  | Command<'CreateAgent', { agentId: string; config: AgentConfig }>
  /** `legacySealed`: sealed forms of clear secrets the stored config holds from before encryption at rest (commands/agent-config.ts resealLegacy). */
  | Command<'UpdateAgent', { agentId: string; changes: AgentChanges; legacySealed?: Record<string, string> }>
  | Command<'DeleteAgent', { agentId: string }>;

// ---- decide ----

const agentNotFound = () => notFound('Agent not found.');

function decideBuiltIn(command: Extract<AgentCommand, { type: 'UpdateAgent' }>, state: AgentState, now: number): AgentEvent[] {
  const { agentId, changes } = command.data;
  if (changes.enabled === undefined) {
    throw invalidArgument('Built-in agents support only enabled: give enabled (true or false).');
  }
  const current = state.status === 'builtIn' ? state.enabled : undefined;
  if (current === changes.enabled) return [];
  return [{ type: 'BuiltInAgentEnabledChanged', data: { agentId, enabled: changes.enabled, changedAt: now } }];
}

/** semantics §1 Limits: refused before anything is stored, on create and on the merged result of an update. */
function checkSize(config: AgentConfig): void {
  const bytes = agentConfigBytes(config);
  if (bytes > MAX_AGENT_CONFIG_BYTES) {
    throw invalidArgument(
      `The agent configuration is ${bytes} bytes as JSON; an agent configuration is limited to ${MAX_AGENT_CONFIG_BYTES} bytes (64 KiB).`,
    );
  }
}

function decide(command: AgentCommand, state: AgentState): AgentEvent[] {
  const now = command.metadata.now;
  const { agentId } = command.data;
  switch (command.type) {
    case 'CreateAgent': {
      if (isBuiltInAgent(agentId)) throw alreadyExists(`Agent ${agentId} is a built-in agent.`);
      if (state.status === 'active') throw alreadyExists('Agent already exists.');
      checkSize(command.data.config);
      return [{ type: 'AgentCreated', data: { agentId, config: command.data.config, version: 1, createdAt: now } }];
    }
    case 'UpdateAgent': {
      if (isBuiltInAgent(agentId)) return decideBuiltIn(command, state, now);
      if (state.status !== 'active') throw agentNotFound();
      const changes = Object.fromEntries(Object.entries(command.data.changes).filter(([, v]) => v !== undefined));
      const config = resealLegacy(restoreSecrets({ ...state.config, ...changes } as AgentConfig, state.config), command.data.legacySealed);
      if (JSON.stringify(config) === JSON.stringify(state.config)) return [];
      checkSize(config);
      const behavioral = Object.keys(changes).some((k) => !IDENTITY_FIELDS.has(k));
      const version = behavioral ? state.version + 1 : state.version;
      return [{ type: 'AgentUpdated', data: { agentId, config, version, updatedAt: now } }];
    }
    case 'DeleteAgent': {
      if (isBuiltInAgent(agentId)) throw failedPrecondition('Built-in agents cannot be deleted; disable them instead.');
      if (state.status !== 'active') return [];
      return [{ type: 'AgentDeleted', data: { agentId, deletedAt: now } }];
    }
    default:
      return assertNever(command, 'agent command');
  }
}

export const agentDecider: Decider<AgentState, AgentCommand, AgentEvent> = {
  name: 'agent',
  initialState,
  evolve,
  decide,
};
