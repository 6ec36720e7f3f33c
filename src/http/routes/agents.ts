/**
 * Agents and agent groups (spec "/v2/agents/get", semantics §6), API-key mode: the requests
 * and answers; what each does is a use case in src/usecases/agents.ts. Shapes and messages
 * are the hosted API's (docs/compatibility.md): writes answer `{ agentId }` or the group;
 * responses only ever carry redacted configurations.
 */
import { z } from 'zod';
import { MAX_GROUP_AGENTS } from '../../../commands/agent-group.js';
import { CUSTOM_MANAGED_BY } from '../../../queries/agents.js';
import { BUILT_IN_MANAGED_BY } from '../../../commands/agent-catalogue.js';
import { agentChangesSchema, agentConfigSchema } from '../../../commands/agent-config.js';
import { DEFAULT_PAGE_SIZE } from '../../../queries/paging.js';
import type { Services } from '../../composition/services.js';
import {
  addAgentsToGroup,
  agentGroupSummaries,
  createAgent,
  createAgentGroup,
  deleteAgent,
  deleteAgentGroup,
  fetchAgent,
  fetchAgentGroup,
  fetchAgentGroups,
  fetchAgents,
  MAX_AGENT_GROUPS,
  MAX_GROUP_METADATA_BYTES,
  removeAgentsFromGroup,
  updateAgent,
  updateAgentGroup,
} from '../../usecases/agents.js';
import { defineRoute, type AnyRoute, type RouteDoc } from '../route.js';
import { id } from '../validation.js';
import { PAGE_SIZE_DOC, pageSize, pageToken } from './domain.js';

const agentIdList = () => z.array(id()).max(1000);

/** `name` and `description` as the hosted API takes them: trimmed; name 1..200, description up to 2000. */
const groupName = () => z.string().trim().min(1).max(200);
const groupDescription = () => z.string().trim().max(2000);

// ---- answers ----

const millis = () => z.number().describe('Unix milliseconds.');
const section = (what: string) => z.record(z.string(), z.unknown()).optional().describe(what);

/** `builtInAgentView` (queries/agents.ts): a built-in agent fetched by id. */
const builtInAgentAnswer = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  enabled: z.boolean().describe('Whether it is on for this API key.'),
  managedBy: z.literal(BUILT_IN_MANAGED_BY),
  system: z.literal(true),
  essentialDefault: z.boolean().describe('Part of the default suite: on for a key that never switched it.'),
  input: z
    .object({
      inputRequirements: z.object({ requires: z.array(z.string()) }),
      userContextFields: z.array(z.object({ id: z.string(), title: z.string(), type: z.string(), required: z.boolean() })),
    })
    .optional(),
});

/**
 * `customAgentView`: identity and version, then the configuration as stored, which holds
 * every field the client sent (so the object is open: named here are the documented ones).
 */
const customAgentAnswer = z
  .looseObject({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    enabled: z.boolean(),
    version: z.number().int().describe('Starts at 1; an update of anything but `name`, `description`, `enabled` makes the next.'),
    managedBy: z.literal(CUSTOM_MANAGED_BY),
    rawInstructions: z.string().optional(),
    instructions: z.string().optional(),
    phaseTimeoutMs: z.number().optional(),
    metadata: section('The client\'s own data.'),
    contextGathering: section('`strategies`, `strategyOptions` (options not documented as public are secrets), `aiConfig`.'),
    execution: section('`executionStrategy`, `responseDescriptions`, `knowledge`, `mcpServers` (their `auth` is secret)...'),
    response: section('`useAiFormatting`, `formattingPrompt`, `responseAdapter`.'),
    postProcess: section('`guardrails`, `deletePreviousSuggestions`, `annotations`, `analytics`...'),
    input: section('`variableKeys`, `inputRequirements`, `userContextFields`.'),
    scope: section('`pageScope`, `pageScopeExclude`, `contentTypes`, `crossPage`.'),
    setup: section('As sent.'),
  })
  .describe('A custom agent as stored, every field the client sent included; secrets read `"__redacted__"`.');

/** An `AgentRow` (queries/agents.ts): a list's identity row. */
const agentRowAnswer = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  enabled: z.boolean(),
  managedBy: z.enum([BUILT_IN_MANAGED_BY, CUSTOM_MANAGED_BY]).describe(`\`${BUILT_IN_MANAGED_BY}\` for a built-in agent, \`${CUSTOM_MANAGED_BY}\` for a custom one.`),
  system: z.literal(true).optional().describe('Present on built-in agents.'),
  version: z.number().int().optional().describe('Present on custom agents.'),
  executionCount: z.number().int().describe('Executions are not recorded by this service: always 0.'),
  lastExecutedAt: z.number().nullable().describe('Always `null` (see `executionCount`).'),
});

/** `agentGroupView` (queries/agents.ts). */
const groupAnswer = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().optional().describe('Absent when empty.'),
  agentIds: z.array(z.string()).describe('The members, in the order `/v2/agents/get` lists them.'),
  metadata: z.record(z.string(), z.unknown()).describe('The client\'s metadata, fixed at creation, with `apiKey` (the owning key) merged in.'),
  createdAt: millis(),
  updatedAt: millis(),
});
const groupOnly = z.object({ group: groupAnswer });
const agentIdAnswer = z.object({ agentId: z.string() });
const groupSummaryAnswer = groupAnswer.omit({ agentIds: true }).extend({ agentCount: z.number().int().describe('How many members.') });

const TAG = 'Agents';

const get = defineRoute({
  path: '/v2/agents/get',
  tag: TAG,
  doc: {
    summary: 'Fetch one agent, or list the API key\'s agents',
    description: [
      '- With `agentId`: `{ agent }`, in full (a custom agent\'s whole configuration, secrets `"__redacted__"`; a built-in agent\'s identity and inputs).',
      '- Without: `{ agents }`, identity rows, built-in agents first (catalogue order), then custom agents in creation order. `filter` keeps only built-in (`defaultOnly`) or custom (`customOnly`) agents; `groupId` lists a group\'s members in the group\'s order.',
      `- The list without \`groupId\` is paged (this service\'s extension; the default page holds ${DEFAULT_PAGE_SIZE} agents): ${PAGE_SIZE_DOC} and \`pageToken\`, \`result.pageToken\` while more follow. A group\'s members (at most ${MAX_GROUP_AGENTS}) come in one answer.`,
      '',
      'Agents whose `metadata.internal` is `true` are left out of lists (they stay fetchable by id).',
    ].join('\n'),
    example: { filter: 'customOnly' },
  },
  mutates: false,
  auth: 'apiKey',
  schema: z.object({
    agentId: id().optional(),
    filter: z.enum(['defaultOnly', 'customOnly']).optional(),
    groupId: id().optional(),
    pageSize: pageSize(),
    pageToken: pageToken(),
  }),
  response: z.union([
    z.object({ agent: z.union([builtInAgentAnswer, customAgentAnswer]) }),
    z.object({ agents: z.array(agentRowAnswer) }),
  ]),
  paged: 'pageToken',
  errors: ['NOT_FOUND'],
  async handler(data, ctx) {
    if (data.agentId !== undefined) return { message: 'Agent fetched successfully', data: { agent: await fetchAgent(ctx, data.agentId) } };
    const page = await fetchAgents(ctx, data);
    return { message: 'Agents fetched successfully', data: { agents: page.rows }, pageToken: page.pageToken };
  },
});

const create = defineRoute({
  path: '/v2/agents/create',
  tag: TAG,
  doc: {
    summary: 'Create a custom agent',
    description: [
      '`name` is required; `description` defaults to `""` and `enabled` to `true`. Every other field is stored as sent, and the whole configuration is at most 64 KiB as JSON.',
      '',
      '- Secrets (the values of `auth` objects but their `type` and `username`, and context-gathering strategy options not documented as public) are stored encrypted and read back as `"__redacted__"`.',
      '- `agentId` is optional (this service\'s extension): an id in use, or a built-in agent\'s, is `ALREADY_EXISTS`.',
    ].join('\n'),
    example: {
      name: 'Simple Content Checker',
      description: 'Checks for broken images and missing alt text',
      enabled: true,
      instructions: 'Check for broken images and missing alt text on the page.',
      contextGathering: { strategies: ['web-page-html'] },
      execution: {},
    },
  },
  mutates: true,
  auth: 'apiKey',
  // `agentId`: this service's extension (the hosted API always makes the id).
  schema: agentConfigSchema.extend({ agentId: id().optional() }),
  response: agentIdAnswer,
  handler: async (data, ctx) => ({ message: 'Agent created successfully', data: { agentId: await createAgent(ctx, data) } }),
});

const update = defineRoute({
  path: '/v2/agents/update',
  tag: TAG,
  doc: {
    summary: 'Update an agent',
    description: [
      'Any subset of the fields. Changing only `name`, `description` or `enabled` keeps the version; any other field replaces the stored one whole and makes a new version. An update that changes nothing changes nothing.',
      '',
      '- `"__redacted__"` sent back where a secret was read keeps the stored secret.',
      '- A built-in agent accepts only `enabled` (other fields are ignored; without `enabled`: `INVALID_ARGUMENT`).',
    ].join('\n'),
    example: { agentId: 'abc123def456', name: 'Updated Brand Checker', description: 'Now also checks footer typography' },
  },
  mutates: true,
  auth: 'apiKey',
  schema: agentChangesSchema.extend({ agentId: id() }),
  response: agentIdAnswer,
  errors: ['NOT_FOUND'],
  async handler(data, ctx) {
    await updateAgent(ctx, data);
    return { message: 'Agent updated successfully', data: { agentId: data.agentId } };
  },
});

const remove = defineRoute({
  path: '/v2/agents/delete',
  tag: TAG,
  doc: {
    summary: 'Delete a custom agent',
    description:
      'The agent leaves every group first. Repeating the call, or naming an agent that does not exist, answers success. A built-in agent cannot be deleted (`FAILED_PRECONDITION`): switch it off with `/v2/agents/update` and `enabled: false`.',
    example: { agentId: 'abc123def456' },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({ agentId: id() }),
  response: agentIdAnswer,
  errors: ['FAILED_PRECONDITION'],
  async handler({ agentId }, ctx) {
    await deleteAgent(ctx, agentId);
    return { message: 'Agent deleted successfully', data: { agentId } };
  },
});

const groupCreate = defineRoute({
  path: '/v2/agents/groups/create',
  tag: TAG,
  doc: {
    summary: 'Create an agent group',
    description: [
      '- `name`: 1 to 200 characters, `description` up to 2000 (both trimmed).',
      `- \`agentIds\`: at most ${MAX_GROUP_AGENTS} as sent (duplicates counted, then dropped), each an agent of this key (else \`NOT_FOUND\` naming the unknown ones).`,
      `- \`metadata\`: the client's, at most ${MAX_GROUP_METADATA_BYTES / 1024} KiB as JSON, fixed at creation; \`metadata.apiKey\` is always the calling key.`,
      `- At most ${MAX_AGENT_GROUPS} groups per API key (\`RESOURCE_EXHAUSTED\`).`,
      '- Unknown fields are refused. `groupId` is optional (this service\'s extension).',
    ].join('\n'),
    example: {
      name: 'Brand QA',
      description: 'All brand-quality agents',
      agentIds: ['abc123def456', 'spell-check'],
      metadata: { organizationId: 'org_001', documentId: 'doc_001', team: 'growth' },
    },
  },
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
  response: groupOnly,
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => ({ message: 'Agent group created successfully', data: { group: await createAgentGroup(ctx, data) } }),
});

const groupUpdate = defineRoute({
  path: '/v2/agents/groups/update',
  tag: TAG,
  doc: {
    summary: 'Rename or re-describe an agent group',
    description:
      'Only `name` and `description`, at least one of them. Members change through `/v2/agents/groups/add-agents` and `/remove-agents`; `metadata` is fixed at creation. Other fields are refused.',
    example: { groupId: 'K3mR7pQxN2vB9wLdT4sY', name: 'Brand QA (v2)', description: 'Updated brand-quality agent set' },
  },
  mutates: true,
  auth: 'apiKey',
  // Only name and description; membership changes through add-agents/remove-agents, and
  // metadata is fixed at creation: both refused here, as the hosted API does.
  schema: z.strictObject({
    groupId: id(),
    name: groupName().optional(),
    description: groupDescription().optional(),
  }),
  response: groupOnly,
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => ({ message: 'Agent group updated successfully', data: { group: await updateAgentGroup(ctx, data) } }),
});

const groupDelete = defineRoute({
  path: '/v2/agents/groups/delete',
  tag: TAG,
  doc: {
    summary: 'Delete an agent group',
    description: 'Its agents are not deleted. A group that does not exist (or no longer does) is `NOT_FOUND`.',
    example: { groupId: 'K3mR7pQxN2vB9wLdT4sY' },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({ groupId: id() }),
  response: z.object({ groupId: z.string() }),
  errors: ['NOT_FOUND'],
  async handler({ groupId }, ctx) {
    await deleteAgentGroup(ctx, groupId);
    return { message: 'Agent group deleted successfully', data: { groupId } };
  },
});


const groupGet = defineRoute({
  path: '/v2/agents/groups/get',
  tag: TAG,
  doc: {
    summary: 'Fetch an agent group, or every group in full',
    description: 'With `groupId`: `{ group }`. Without (this service\'s extension): `{ groups }`, every group of the API key with its members, oldest first.',
    example: { groupId: 'K3mR7pQxN2vB9wLdT4sY' },
  },
  mutates: false,
  auth: 'apiKey',
  // Without groupId (this service's extension): every group of the key, in full.
  schema: z.object({ groupId: id().optional() }),
  response: z.union([groupOnly, z.object({ groups: z.array(groupAnswer) })]),
  errors: ['NOT_FOUND'],
  async handler({ groupId }, ctx) {
    if (groupId !== undefined) return { message: 'Agent group fetched successfully', data: { group: await fetchAgentGroup(ctx, groupId) } };
    return { message: 'Agent groups fetched successfully', data: { groups: await fetchAgentGroups(ctx) } };
  },
});

const groupList = defineRoute({
  path: '/v2/agents/groups/list',
  tag: TAG,
  doc: {
    summary: 'List the API key\'s agent groups',
    description: `Every group, oldest first (at most ${MAX_AGENT_GROUPS}), with \`agentCount\` in place of the members.`,
    example: {},
  },
  mutates: false,
  auth: 'apiKey',
  schema: z.object({}),
  response: z.object({ groups: z.array(groupSummaryAnswer) }),
  handler: async (_data, ctx) => ({ message: 'Agent groups listed successfully', data: { groups: await agentGroupSummaries(ctx) } }),
});

/** add-agents and remove-agents: the same request and answer, a different change. */
const membership = (path: string, change: typeof addAgentsToGroup, message: string, doc: RouteDoc) =>
  defineRoute({
    path,
    tag: TAG,
    doc,
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ groupId: id(), agentIds: agentIdList().min(1) }),
    response: groupOnly,
    errors: ['NOT_FOUND'],
    handler: async (data, ctx) => ({ message, data: { group: await change(ctx, data) } }),
  });

/** Every route takes the services; these need none beyond the request's context. */
export function agentRoutes(_services: Services): AnyRoute[] {
  return [
    get,
    create,
    update,
    remove,
    groupCreate,
    groupUpdate,
    groupDelete,
    membership('/v2/agents/groups/add-agents', addAgentsToGroup, 'Agents added to group successfully', {
      summary: 'Add agents to a group',
      description: `Appended in the order given; members already in are skipped. Each id must name an agent of this key (else \`NOT_FOUND\` naming the unknown ones, and nothing is added). A group holds at most ${MAX_GROUP_AGENTS} agents (\`RESOURCE_EXHAUSTED\`).`,
      example: { groupId: 'K3mR7pQxN2vB9wLdT4sY', agentIds: ['xyz789ghi012', 'grammar-check'] },
    }),
    membership('/v2/agents/groups/remove-agents', removeAgentsFromGroup, 'Agents removed from group successfully', {
      summary: 'Remove agents from a group',
      description: 'Ids that are not members are ignored. The agents themselves are not deleted.',
      example: { groupId: 'K3mR7pQxN2vB9wLdT4sY', agentIds: ['spell-check'] },
    }),
    groupGet,
    groupList,
  ];
}
