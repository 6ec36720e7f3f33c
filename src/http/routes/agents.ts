/**
 * Agents and agent groups (spec "/v2/agents/get", semantics §6), API-key mode.
 * Responses only ever carry redacted configurations.
 */
import { z } from 'zod';
import { agentDecider, agentStream } from '../../../commands/agent.js';
import { agentGroupDecider, agentGroupStream, type AgentGroupState } from '../../../commands/agent-group.js';
import {
  agentGroupView,
  builtInAgentView,
  customAgentView,
  getAgent,
  getAgentGroup,
  listAgentGroups,
  listAgents,
  unknownAgentIds,
} from '../../../queries/agents.js';
import { builtInAgent } from '../../agents/catalogue.js';
import { agentChangesSchema, agentConfigSchema, redactAgentConfig, toAgentConfig } from '../../agents/config.js';
import { notFound } from '../../errors.js';
import { newId } from '../../ids.js';
import type { Services } from '../../services.js';
import type { RequestContext } from '../context.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, text } from '../validation.js';
import { legacyAgentSecrets, sealAgentSecrets } from '../../secrets/configs.js';


const agentIdList = () => z.array(id()).max(1000);

async function requireAgents(ctx: RequestContext, agentIds: string[]) {
  const missing = await unknownAgentIds(ctx.services.read, ctx.apiKey, agentIds);
  if (missing.length > 0) {
    const shown = missing.slice(0, 10).map((a) => JSON.stringify(a)).join(', ');
    throw notFound(`Agent(s) not found: ${shown}${missing.length > 10 ? ` and ${missing.length - 10} more` : ''}.`);
  }
}

/** The group as the write side has it after the command (answers need not wait for a read). */
const groupResult = (s: AgentGroupState) =>
  s.status === 'active' ? { id: s.groupId, name: s.name, description: s.description, agentIds: s.agentIds } : null;

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
        return { message: 'Agent fetched successfully.', data: { agent } };
      }
      const agents = await listAgents(services.read, ctx.apiKey, { filter: data.filter, groupId: data.groupId });
      if (!agents) throw notFound('Agent group not found.');
      return { message: 'Agents fetched successfully.', data: { agents } };
    },
  });

  const create = defineRoute({
    path: '/v2/agents/create',
    mutates: true,
    auth: 'apiKey',
    schema: agentConfigSchema.extend({ agentId: id().optional() }),
    async handler({ agentId: given, ...config }, ctx) {
      const agentId = given ?? newId();
      const r = await ctx.execute(agentDecider, agentStream(ctx.apiKey, agentId), {
        type: 'CreateAgent',
        data: { agentId, config: await sealAgentSecrets(services.secrets, ctx.apiKey, toAgentConfig(config)) },
        metadata: { now: ctx.now },
      });
      if (r.state.status !== 'active') throw new Error('bug: agent not active after creation');
      return {
        message: 'Agent created successfully.',
        data: { agent: customAgentView(agentId, redactAgentConfig(r.state.config), r.state.version) },
      };
    },
  });

  const update = defineRoute({
    path: '/v2/agents/update',
    mutates: true,
    auth: 'apiKey',
    schema: agentChangesSchema.extend({ agentId: id() }),
    async handler({ agentId, ...changes }, ctx) {
      const stream = agentStream(ctx.apiKey, agentId);
      // Secrets are sealed here (src/secrets/configs.ts); clear ones stored before encryption
      // at rest are sealed as the update carries them into its event.
      const sealed = await sealAgentSecrets(services.secrets, ctx.apiKey, changes);
      const { state } = await services.commands.load(agentDecider, stream);
      const legacySealed = await legacyAgentSecrets(services.secrets, ctx.apiKey, state.status === 'active' ? state.config : undefined);
      const r = await ctx.execute(agentDecider, stream, {
        type: 'UpdateAgent',
        data: { agentId, changes: sealed, ...(legacySealed ? { legacySealed } : {}) },
        metadata: { now: ctx.now },
      });
      const builtIn = builtInAgent(agentId);
      const agent = builtIn
        ? builtInAgentView(builtIn, changes.enabled ?? builtIn.enabledByDefault)
        : r.state.status === 'active'
          ? customAgentView(agentId, redactAgentConfig(r.state.config), r.state.version)
          : null;
      return { message: 'Agent updated successfully.', data: { agent } };
    },
  });

  const remove = defineRoute({
    path: '/v2/agents/delete',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ agentId: id() }),
    async handler({ agentId }, ctx) {
      await ctx.execute(agentDecider, agentStream(ctx.apiKey, agentId), {
        type: 'DeleteAgent',
        data: { agentId },
        metadata: { now: ctx.now },
      });
      return { message: 'Agent deleted successfully.', data: { id: agentId } };
    },
  });

  const groupCreate = defineRoute({
    path: '/v2/agents/groups/create',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      groupId: id().optional(),
      name: text(256).min(1),
      description: text(4096).optional(),
      agentIds: agentIdList().default([]),
    }),
    async handler(data, ctx) {
      await requireAgents(ctx, data.agentIds);
      const groupId = data.groupId ?? newId();
      const r = await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, groupId), {
        type: 'CreateAgentGroup',
        data: { ...data, groupId },
        metadata: { now: ctx.now },
      });
      return { message: 'Agent group created successfully.', data: { group: groupResult(r.state) } };
    },
  });

  const groupUpdate = defineRoute({
    path: '/v2/agents/groups/update',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      groupId: id(),
      name: text(256).min(1).optional(),
      description: text(4096).optional(),
      agentIds: agentIdList().optional(),
    }),
    async handler(data, ctx) {
      if (data.agentIds) await requireAgents(ctx, data.agentIds);
      const r = await ctx.execute(agentGroupDecider, agentGroupStream(ctx.apiKey, data.groupId), {
        type: 'UpdateAgentGroup',
        data,
        metadata: { now: ctx.now },
      });
      return { message: 'Agent group updated successfully.', data: { group: groupResult(r.state) } };
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
      return { message: 'Agent group deleted successfully.', data: { id: groupId } };
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
        return { message, data: { group: groupResult(r.state) } };
      },
    });

  const groupGet = defineRoute({
    path: '/v2/agents/groups/get',
    mutates: false,
    auth: 'apiKey',
    schema: z.object({ groupId: id().optional() }),
    async handler({ groupId }, ctx) {
      if (groupId !== undefined) {
        const g = await getAgentGroup(services.read, ctx.apiKey, groupId);
        if (!g) throw notFound('Agent group not found.');
        return { message: 'Agent group fetched successfully.', data: { group: agentGroupView(g) } };
      }
      return { message: 'Agent groups fetched successfully.', data: { groups: await listAgentGroups(services.read, ctx.apiKey) } };
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
    membership('/v2/agents/groups/add-agents', 'AddAgentsToGroup', 'Agents added to group successfully.'),
    membership('/v2/agents/groups/remove-agents', 'RemoveAgentsFromGroup', 'Agents removed from group successfully.'),
    groupGet,
  ];
}
