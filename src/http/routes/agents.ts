/**
 * Agents and agent groups (spec "/v2/agents/get", semantics §6), API-key mode. Shapes and
 * messages are the hosted API's (docs/compatibility.md): writes answer `{ agentId }` or the
 * group; responses only ever carry redacted configurations.
 */
import { z } from 'zod';
import { agentDecider, agentStream } from '../../../commands/agent.js';
import { MAX_GROUP_AGENTS, agentGroupDecider, agentGroupStream, type AgentGroupState } from '../../../commands/agent-group.js';
import {
  agentGroupSummary,
  agentGroupView,
  agentGroupsOf,
  getAgent,
  getAgentGroup,
  listAgentGroups,
  listAgents,
  unknownAgentIds,
} from '../../../queries/agents.js';
import { AGENT_GROUPS } from '../../../projections/agents.js';
import { isBuiltInAgent } from '../../agents/catalogue.js';
import { agentChangesSchema, agentConfigSchema, toAgentConfig } from '../../agents/config.js';
import { ApiError, invalidArgument, notFound, resourceExhausted } from '../../errors.js';
import { newId } from '../../ids.js';
import type { Services } from '../../services.js';
import type { RequestContext } from '../context.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id } from '../validation.js';
import { legacyAgentSecrets, sealAgentSecrets } from '../../secrets/configs.js';

/** The hosted API's bound on a key's agent groups (it counts its own system groups too). */
export const MAX_AGENT_GROUPS = 50;
/** A group's `metadata`, as JSON: stored with the group and shown on every read of it. */
export const MAX_GROUP_METADATA_BYTES = 16 * 1024;

const agentIdList = () => z.array(id()).max(1000);

async function requireAgents(ctx: RequestContext, agentIds: string[]) {
  const missing = await unknownAgentIds(ctx.services.read, ctx.apiKey, agentIds);
  if (missing.length > 0) {
    const shown = missing.slice(0, 10).map((a) => JSON.stringify(a)).join(', ');
    throw notFound(`Agent(s) not found: ${shown}${missing.length > 10 ? ` and ${missing.length - 10} more` : ''}.`);
  }
}

/** The group as the write side has it after the command (answers need not wait for a read). */
function groupResult(apiKey: string, s: AgentGroupState) {
  if (s.status !== 'active') throw new Error('bug: agent group not active after a successful command');
  const { status: _active, ...group } = s;
  return agentGroupView({ _id: group.groupId, apiKey, ...group });
}

/** `name` and `description` as the hosted API takes them: trimmed; name 1..200, description up to 2000. */
const groupName = () => z.string().trim().min(1).max(200);
const groupDescription = () => z.string().trim().max(2000);

export function agentRoutes(services: Services): AnyRoute[] {
  const get = defineRoute({
    path: '/v2/agents/get',
    mutates: false,
    auth: 'apiKey',
    schema: z.object({
      agentId: id().optional(),
      filter: z.enum(['defaultOnly', 'customOnly']).optional(),
      groupId: id().optional(),
    }),
    async handler(data, ctx) {
      if (data.agentId !== undefined) {
        const agent = await getAgent(services.read, ctx.apiKey, data.agentId);
        if (!agent) throw notFound('Agent not found.');
        return { message: 'Agent fetched successfully', data: { agent } };
      }
      const agents = await listAgents(services.read, ctx.apiKey, { filter: data.filter, groupId: data.groupId });
      if (!agents) throw notFound('Agent group not found.');
      return { message: 'Agents fetched successfully', data: { agents } };
    },
  });

  const create = defineRoute({
    path: '/v2/agents/create',
    mutates: true,
    auth: 'apiKey',
    // `agentId`: this service's extension (the hosted API always makes the id).
    schema: agentConfigSchema.extend({ agentId: id().optional() }),
    async handler({ agentId: given, ...config }, ctx) {
      const agentId = given ?? newId();
      await ctx.execute(agentDecider, agentStream(ctx.apiKey, agentId), {
        type: 'CreateAgent',
        data: { agentId, config: await sealAgentSecrets(services.secrets, ctx.apiKey, toAgentConfig(config)) },
        metadata: { now: ctx.now },
      });
      return { message: 'Agent created successfully', data: { agentId } };
    },
  });

  const update = defineRoute({
    path: '/v2/agents/update',
    mutates: true,
    auth: 'apiKey',
    schema: agentChangesSchema.extend({ agentId: id() }),
    async handler({ agentId, ...given }, ctx) {
      const changes = toAgentConfig(given);
      const stream = agentStream(ctx.apiKey, agentId);
      // Secrets are sealed here (src/secrets/configs.ts); clear ones stored before encryption
      // at rest are sealed as the update carries them into its event.
      const sealed = await sealAgentSecrets(services.secrets, ctx.apiKey, changes);
      const { state } = await services.commands.load(agentDecider, stream);
      const legacySealed = await legacyAgentSecrets(services.secrets, ctx.apiKey, state.status === 'active' ? state.config : undefined);
      await ctx.execute(agentDecider, stream, {
        type: 'UpdateAgent',
        data: { agentId, changes: sealed, ...(legacySealed ? { legacySealed } : {}) },
        metadata: { now: ctx.now },
      });
      return { message: 'Agent updated successfully', data: { agentId } };
    },
  });

  const remove = defineRoute({
    path: '/v2/agents/delete',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ agentId: id() }),
    async handler({ agentId }, ctx) {
      // As the hosted API does: the agent leaves every group first, so a failure leaves it
      // whole and the call can be repeated. At most MAX_AGENT_GROUPS groups are looked at.
      if (!isBuiltInAgent(agentId)) {
        for (const g of await agentGroupsOf(services.read, ctx.apiKey)) {
          if (!g.agentIds.includes(agentId)) continue;
          try {
            await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, g.groupId), {
              type: 'RemoveAgentsFromGroup',
              data: { groupId: g.groupId, agentIds: [agentId] },
              metadata: { now: ctx.now },
            });
          } catch (err) {
            // Deleted meanwhile: nothing to take the agent out of.
            if (!(err instanceof ApiError && err.status === 'NOT_FOUND')) throw err;
          }
        }
      }
      // Idempotent: a missing agent is deleted already (commands/agent.ts).
      await ctx.execute(agentDecider, agentStream(ctx.apiKey, agentId), {
        type: 'DeleteAgent',
        data: { agentId },
        metadata: { now: ctx.now },
      });
      return { message: 'Agent deleted successfully', data: { agentId } };
    },
  });

  const groupCreate = defineRoute({
    path: '/v2/agents/groups/create',
    mutates: true,
    auth: 'apiKey',
    // Unknown fields are refused, as the hosted API does; `groupId` is this service's
    // extension (the hosted API always makes the id).
    schema: z.strictObject({
      groupId: id().optional(),
      name: groupName(),
      description: groupDescription().optional(),
      agentIds: z.array(id()).max(MAX_GROUP_AGENTS).default([]),
      metadata: z.record(z.string().max(256), z.unknown()).optional(),
    }),
    async handler(data, ctx) {
      const { metadata: given, ...group } = data;
      const { apiKey: _theirs, ...own } = given ?? {};
      // The key is always `metadata.apiKey` (the hosted API merges it in server-side).
      const metadata = { apiKey: ctx.apiKey, ...own };
      const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
      if (bytes > MAX_GROUP_METADATA_BYTES) {
        throw invalidArgument(`data.metadata is ${bytes} bytes as JSON; a group's metadata is limited to ${MAX_GROUP_METADATA_BYTES} bytes (16 KiB).`);
      }
      // Counted on the read model: two creates at the same instant may both see one slot left.
      if ((await services.read.count(AGENT_GROUPS, { apiKey: ctx.apiKey })) >= MAX_AGENT_GROUPS) {
        throw resourceExhausted(`This API key has reached its maximum of ${MAX_AGENT_GROUPS} agent groups.`);
      }
      await requireAgents(ctx, group.agentIds);
      const groupId = group.groupId ?? newId();
      const r = await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, groupId), {
        type: 'CreateAgentGroup',
        data: { ...group, groupId, metadata },
        metadata: { now: ctx.now },
      });
      return { message: 'Agent group created successfully', data: { group: groupResult(ctx.apiKey, r.state) } };
    },
  });

  const groupUpdate = defineRoute({
    path: '/v2/agents/groups/update',
    mutates: true,
    auth: 'apiKey',
    // Only name and description; membership changes through add-agents/remove-agents, and
    // metadata is fixed at creation: both refused here, as the hosted API does.
    schema: z.strictObject({
      groupId: id(),
      name: groupName().optional(),
      description: groupDescription().optional(),
    }),
    async handler(data, ctx) {
      const r = await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, data.groupId), {
        type: 'UpdateAgentGroup',
        data,
        metadata: { now: ctx.now },
      });
      return { message: 'Agent group updated successfully', data: { group: groupResult(ctx.apiKey, r.state) } };
    },
  });

  const groupDelete = defineRoute({
    path: '/v2/agents/groups/delete',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ groupId: id() }),
    async handler({ groupId }, ctx) {
      await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, groupId), {
        type: 'DeleteAgentGroup',
        data: { groupId },
        metadata: { now: ctx.now },
      });
      return { message: 'Agent group deleted successfully', data: { groupId } };
    },
  });

  const membership = (path: string, type: 'AddAgentsToGroup' | 'RemoveAgentsFromGroup', message: string) =>
    defineRoute({
      path,
      mutates: true,
      auth: 'apiKey',
      schema: z.object({ groupId: id(), agentIds: agentIdList().min(1) }),
      async handler(data, ctx) {
        if (type === 'AddAgentsToGroup') await requireAgents(ctx, data.agentIds);
        const r = await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, data.groupId), {
          type,
          data,
          metadata: { now: ctx.now },
        });
        return { message, data: { group: groupResult(ctx.apiKey, r.state) } };
      },
    });

  const groupGet = defineRoute({
    path: '/v2/agents/groups/get',
    mutates: false,
    auth: 'apiKey',
    // Without groupId (this service's extension): every group of the key, in full.
    schema: z.object({ groupId: id().optional() }),
    async handler({ groupId }, ctx) {
      if (groupId !== undefined) {
        const g = await getAgentGroup(services.read, ctx.apiKey, groupId);
        if (!g) throw notFound('Agent group not found.');
        return { message: 'Agent group fetched successfully', data: { group: agentGroupView(g) } };
      }
      return { message: 'Agent groups fetched successfully', data: { groups: await listAgentGroups(services.read, ctx.apiKey) } };
    },
  });

  const groupList = defineRoute({
    path: '/v2/agents/groups/list',
    mutates: false,
    auth: 'apiKey',
    schema: z.object({}),
    async handler(_data, ctx) {
      return { message: 'Agent groups listed successfully', data: { groups: (await agentGroupsOf(services.read, ctx.apiKey)).map(agentGroupSummary) } };
    },
  });

  return [
    get,
    create,
    update,
    remove,
    groupCreate,
    groupUpdate,
    groupDelete,
    membership('/v2/agents/groups/add-agents', 'AddAgentsToGroup', 'Agents added to group successfully'),
    membership('/v2/agents/groups/remove-agents', 'RemoveAgentsFromGroup', 'Agents removed from group successfully'),
    groupGet,
    groupList,
  ];
}
