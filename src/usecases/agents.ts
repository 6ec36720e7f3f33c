/**
 * Agents and agent groups (semantics §6), the use cases behind src/http/routes/agents.ts.
 * Secrets in a custom agent's configuration are sealed before they reach an event
 * (src/secrets/configs.ts); what these return carries redacted configurations only.
 */
import { agentDecider, agentStream } from '../../commands/agent.js';
import { agentGroupDecider, agentGroupStream, type AgentGroupState } from '../../commands/agent-group.js';
import { isBuiltInAgent } from '../../commands/agent-catalogue.js';
import { toAgentConfig, type AgentChanges, type AgentConfig } from '../../commands/agent-config.js';
import { AGENT_GROUPS } from '../../projections/agents.js';
import {
  agentGroupSummary,
  agentGroupView,
  agentGroupsOf,
  getAgent,
  getAgentGroup,
  listAgentGroups,
  listAgents,
  unknownAgentIds,
  type AgentFilter,
} from '../../queries/agents.js';
import { ApiError, BugError, invalidArgument, notFound, resourceExhausted } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { legacyAgentSecrets, sealAgentSecrets } from '../secrets/configs.js';
import type { TenantReadContext } from './context.js';

/** The hosted API's bound on a key's agent groups (it counts its own system groups too). */
export const MAX_AGENT_GROUPS = 50;
/** A group's `metadata`, as JSON: stored with the group and shown on every read of it. */
export const MAX_GROUP_METADATA_BYTES = 16 * 1024;

/** Refuses unless every id names an agent of the key, naming (the first ten of) those that do not. */
async function requireAgents(ctx: TenantReadContext, agentIds: string[]) {
  const missing = await unknownAgentIds(ctx.services.read, ctx.apiKey, agentIds);
  if (missing.length > 0) {
    const shown = missing.slice(0, 10).map((a) => JSON.stringify(a)).join(', ');
    throw notFound(`Agent(s) not found: ${shown}${missing.length > 10 ? ` and ${missing.length - 10} more` : ''}.`);
  }
}

/** The group as the write side has it after the command (answers need not wait for a read). */
function groupResult(apiKey: string, s: AgentGroupState) {
  if (s.status !== 'active') throw new BugError('agent group not active after a successful command');
  const { status: _active, ...group } = s;
  return agentGroupView({ _id: group.groupId, apiKey, ...group });
}

// ---- agents ----

/** One agent, in full (a custom agent's configuration redacted); NOT_FOUND when there is none. */
export async function fetchAgent(ctx: TenantReadContext, agentId: string) {
  const agent = await getAgent(ctx.services.read, ctx.apiKey, agentId);
  if (!agent) throw notFound('Agent not found.');
  return agent;
}

/** A page of the key's agents (built-in first), or a group's members; NOT_FOUND for a group that does not exist. */
export async function fetchAgents(
  ctx: TenantReadContext,
  query: { filter?: AgentFilter | undefined; groupId?: string | undefined; pageSize?: number | undefined; pageToken?: string | undefined },
) {
  const page = await listAgents(ctx.services.read, ctx.apiKey, query);
  if (!page) throw notFound('Agent group not found.');
  return page;
}

/** Creates a custom agent (its id `agentId`, or a new one), its secrets sealed; returns the id. */
export async function createAgent(ctx: TenantReadContext, { agentId: given, ...config }: AgentConfig & { agentId?: string | undefined }): Promise<string> {
  const agentId = given ?? newId();
  await ctx.execute(agentDecider, agentStream(ctx.apiKey, agentId), {
    type: 'CreateAgent',
    data: { agentId, config: await sealAgentSecrets(ctx.services.secrets, ctx.apiKey, toAgentConfig(config)) },
  });
  return agentId;
}

/** Applies `changes` to an agent (a built-in one takes only `enabled`, commands/agent.ts). */
export async function updateAgent(ctx: TenantReadContext, { agentId, ...given }: AgentChanges & { agentId: string }): Promise<void> {
  const changes = toAgentConfig(given);
  const stream = agentStream(ctx.apiKey, agentId);
  // Secrets are sealed here (src/secrets/configs.ts); clear ones stored before encryption
  // at rest are sealed as the update carries them into its event.
  const sealed = await sealAgentSecrets(ctx.services.secrets, ctx.apiKey, changes);
  const { state } = await ctx.services.commands.load(agentDecider, stream);
  const legacySealed = await legacyAgentSecrets(ctx.services.secrets, ctx.apiKey, state.status === 'active' ? state.config : undefined);
  await ctx.execute(agentDecider, stream, {
    type: 'UpdateAgent',
    data: { agentId, changes: sealed, ...(legacySealed ? { legacySealed } : {}) },
  });
}

/**
 * Deletes a custom agent. As the hosted API does: the agent leaves every group first, so a
 * failure leaves it whole and the call can be repeated. At most MAX_AGENT_GROUPS groups are
 * looked at. A missing agent is deleted already (commands/agent.ts): no error.
 */
export async function deleteAgent(ctx: TenantReadContext, agentId: string): Promise<void> {
  if (!isBuiltInAgent(agentId)) {
    for (const g of await agentGroupsOf(ctx.services.read, ctx.apiKey)) {
      if (!g.agentIds.includes(agentId)) continue;
      try {
        await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, g.groupId), {
          type: 'RemoveAgentsFromGroup',
          data: { groupId: g.groupId, agentIds: [agentId] },
        });
      } catch (err) {
        // Deleted meanwhile: nothing to take the agent out of.
        if (!(err instanceof ApiError && err.status === 'NOT_FOUND')) throw err;
      }
    }
  }
  await ctx.execute(agentDecider, agentStream(ctx.apiKey, agentId), {
    type: 'DeleteAgent',
    data: { agentId },
  });
}

// ---- agent groups ----

/** What /v2/agents/groups/create takes, validated (name and description trimmed). */
interface NewAgentGroup {
  groupId?: string | undefined;
  name: string;
  description?: string | undefined;
  agentIds: string[];
  metadata?: Record<string, unknown> | undefined;
}

/**
 * Creates a group of the key's agents. `metadata.apiKey` is always the calling key (the
 * hosted API merges it in server-side), and the metadata is at most 16 KiB as JSON.
 */
export async function createAgentGroup(ctx: TenantReadContext, input: NewAgentGroup) {
  const { metadata: given, ...group } = input;
  const { apiKey: _theirs, ...own } = given ?? {};
  const metadata = { apiKey: ctx.apiKey, ...own };
  const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (bytes > MAX_GROUP_METADATA_BYTES) {
    throw invalidArgument(`data.metadata is ${bytes} bytes as JSON; a group's metadata is limited to ${MAX_GROUP_METADATA_BYTES} bytes (16 KiB).`);
  }
  // Counted on the read model: two creates at the same instant may both see one slot left.
  if ((await ctx.services.read.count(AGENT_GROUPS, { apiKey: ctx.apiKey })) >= MAX_AGENT_GROUPS) {
    throw resourceExhausted(`This API key has reached its maximum of ${MAX_AGENT_GROUPS} agent groups.`);
  }
  await requireAgents(ctx, group.agentIds);
  const groupId = group.groupId ?? newId();
  const r = await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, groupId), {
    type: 'CreateAgentGroup',
    data: { ...group, groupId, metadata },
  });
  return groupResult(ctx.apiKey, r.state);
}

/** Renames or re-describes a group; returns it. */
export async function updateAgentGroup(ctx: TenantReadContext, data: { groupId: string; name?: string | undefined; description?: string | undefined }) {
  const r = await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, data.groupId), {
    type: 'UpdateAgentGroup',
    data,
  });
  return groupResult(ctx.apiKey, r.state);
}

/** Deletes a group (its agents stay); NOT_FOUND when it does not exist. */
export async function deleteAgentGroup(ctx: TenantReadContext, groupId: string): Promise<void> {
  await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, groupId), {
    type: 'DeleteAgentGroup',
    data: { groupId },
  });
}

/** Appends agents of the key to a group (members already in are skipped); returns the group. */
export async function addAgentsToGroup(ctx: TenantReadContext, data: { groupId: string; agentIds: string[] }) {
  await requireAgents(ctx, data.agentIds);
  const r = await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, data.groupId), { type: 'AddAgentsToGroup', data });
  return groupResult(ctx.apiKey, r.state);
}

/** Takes agents out of a group (ids that are not members are ignored); returns the group. */
export async function removeAgentsFromGroup(ctx: TenantReadContext, data: { groupId: string; agentIds: string[] }) {
  const r = await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, data.groupId), { type: 'RemoveAgentsFromGroup', data });
  return groupResult(ctx.apiKey, r.state);
}

/** One group in full; NOT_FOUND when it does not exist. */
export async function fetchAgentGroup(ctx: TenantReadContext, groupId: string) {
  const g = await getAgentGroup(ctx.services.read, ctx.apiKey, groupId);
  if (!g) throw notFound('Agent group not found.');
  return agentGroupView(g);
}

/** Every group of the key in full, oldest first. */
export const fetchAgentGroups = (ctx: TenantReadContext) => listAgentGroups(ctx.services.read, ctx.apiKey);

/** Every group of the key with its member count in place of the members, oldest first. */
export async function agentGroupSummaries(ctx: TenantReadContext) {
  return (await agentGroupsOf(ctx.services.read, ctx.apiKey)).map(agentGroupSummary);
}
