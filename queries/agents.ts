/**
 * `/v2/agents/get` (spec "Agent"): one agent in full, or identity-only list rows, built-in
 * agents (catalogue order) before custom ones (creation order), or in a group's order.
 */
import type { ReadView } from '../src/ports/read-store.js';
import { invalidArgument } from '../src/shared/errors.js';
import { DEFAULT_PAGE_SIZE, decodePageToken, encodePageToken, type Cursor } from './paging.js';
import { key } from '../src/shared/ids.js';
import { redactAgentConfig, toAgentConfig, type AgentConfig } from '../commands/agent-config.js';
import { BUILT_IN_AGENTS, BUILT_IN_MANAGED_BY, builtInAgent, type BuiltInAgent } from '../commands/agent-catalogue.js';
import {
  AGENTS,
  AGENT_BUILTIN_SETTINGS,
  AGENT_GROUPS,
  type AgentDoc,
  type AgentGroupDoc,
  type BuiltInSettingDoc,
} from '../projections/agents.js';

export const CUSTOM_MANAGED_BY = 'customer';

export type AgentFilter = 'defaultOnly' | 'customOnly';

export interface AgentRow {
  id: string;
  name: string;
  description: string;
  enabled: boolean;
  managedBy: string;
  system?: true;
  version?: number;
  executionCount: number;
  lastExecutedAt: number | null;
}

/**
 * Single fetch of a custom agent: identity, version, then the configuration as stored
 * (`config` must be redacted), every field the client sent.
 */
function customAgentView(agentId: string, c: AgentConfig, version: number) {
  const { name, description, enabled, ...rest } = c;
  return { id: agentId, name, description, enabled, version, managedBy: CUSTOM_MANAGED_BY, ...toAgentConfig(rest) };
}

/** Single fetch of a built-in agent: identity fields, and `input` only when declared. */
function builtInAgentView(agent: BuiltInAgent, enabled: boolean) {
  return {
    id: agent.id,
    name: agent.name,
    description: agent.description,
    enabled,
    managedBy: BUILT_IN_MANAGED_BY,
    system: true as const,
    essentialDefault: agent.enabledByDefault,
    ...(agent.input ? { input: agent.input } : {}),
  };
}

async function builtInEnabled(read: ReadView, apiKey: string, agent: BuiltInAgent): Promise<boolean> {
  const s = await read.get<BuiltInSettingDoc>(AGENT_BUILTIN_SETTINGS, key(apiKey, agent.id));
  return s ? s.enabled : agent.enabledByDefault;
}

/** One agent of this key, or null. */
export async function getAgent(read: ReadView, apiKey: string, agentId: string) {
  const builtIn = builtInAgent(agentId);
  if (builtIn) return builtInAgentView(builtIn, await builtInEnabled(read, apiKey, builtIn));
  const doc = await read.get<AgentDoc>(AGENTS, key(apiKey, agentId));
  // Redacted again on the way out: documents written by a version that redacted by key name
  // (before semantics §6 said "by position") may still hold a `pwd` or an `accessKey` until
  // the read models are rebuilt. Redacting twice changes nothing.
  return doc ? customAgentView(doc.agentId, redactAgentConfig(doc.config), doc.version) : null;
}

export const getAgentGroup = (read: ReadView, apiKey: string, groupId: string) =>
  read.get<AgentGroupDoc>(AGENT_GROUPS, key(apiKey, groupId));

/** The ids among `agentIds` that name no agent of this key. */
export async function unknownAgentIds(read: ReadView, apiKey: string, agentIds: string[]): Promise<string[]> {
  const custom = agentIds.filter((a) => !builtInAgent(a));
  const found = new Set((await read.getMany<AgentDoc>(AGENTS, custom.map((a) => key(apiKey, a)))).map((d) => d.agentId));
  return custom.filter((a) => !found.has(a));
}

/**
 * The hosted API leaves agents marked `metadata.internal: true` out of every list (they stay
 * fetchable by id).
 */
const listed = (doc: AgentDoc) => {
  const metadata = (doc.config as { metadata?: unknown }).metadata;
  return !(metadata !== null && typeof metadata === 'object' && (metadata as Record<string, unknown>).internal === true);
};

function customRow(doc: AgentDoc): AgentRow {
  return {
    id: doc.agentId,
    name: doc.config.name,
    description: doc.config.description,
    enabled: doc.config.enabled,
    managedBy: CUSTOM_MANAGED_BY,
    version: doc.version,
    executionCount: doc.executionCount,
    lastExecutedAt: doc.lastExecutedAt,
  };
}

async function builtInRows(read: ReadView, apiKey: string, agents: readonly BuiltInAgent[]): Promise<AgentRow[]> {
  const settings = await read.getMany<BuiltInSettingDoc>(AGENT_BUILTIN_SETTINGS, agents.map((a) => key(apiKey, a.id)));
  const enabled = new Map(settings.map((s) => [s.agentId, s.enabled]));
  return agents.map((a) => ({
    id: a.id,
    name: a.name,
    description: a.description,
    enabled: enabled.get(a.id) ?? a.enabledByDefault,
    managedBy: BUILT_IN_MANAGED_BY,
    system: true,
    // Executions are not recorded by this service yet: counters start (and stay) empty.
    executionCount: 0,
    lastExecutedAt: null,
  }));
}

/**
 * List rows. Without a group: built-ins, then custom agents by creation, paged (the hosted
 * answer is not; this service pages every list: a key may hold any number of custom agents,
 * each up to 64 KiB stored). With a group: its members in the group's order (deleted agents
 * skipped), at most MAX_GROUP_AGENTS, in one answer. `filter` narrows either.
 * Returns null when the group does not exist.
 *
 * The cursor is the last row served: a built-in agent's place in the catalogue (`id: ""`),
 * or a custom agent's (createdAt, _id). Example: 3 built-ins, 4 custom agents, pageSize 5:
 * the first page is the 3 built-ins and 2 custom agents, its token the second custom's
 * cursor; the next page the other 2 and no token.
 */
export async function listAgents(
  read: ReadView,
  apiKey: string,
  options: { filter?: AgentFilter; groupId?: string; pageSize?: number; pageToken?: string },
): Promise<{ rows: AgentRow[]; pageToken?: string } | null> {
  const wantBuiltIn = options.filter !== 'customOnly';
  const wantCustom = options.filter !== 'defaultOnly';
  if (options.groupId === undefined) return agentsPage(read, apiKey, wantBuiltIn, wantCustom, options);
  // A group's list is bounded by the group and not paged: no token was ever made for it.
  decodePageToken(options.pageToken, { apiKey, what: 'agent-group-members' });
  const group = await getAgentGroup(read, apiKey, options.groupId);
  if (!group) return null;
  const builtIns = wantBuiltIn ? group.agentIds.map(builtInAgent).filter((a): a is BuiltInAgent => !!a) : [];
  const customIds = wantCustom ? group.agentIds.filter((a) => !builtInAgent(a)) : [];
  const byId = new Map<string, AgentRow>();
  for (const r of await builtInRows(read, apiKey, builtIns)) byId.set(r.id, r);
  const docs = await read.getMany<AgentDoc>(AGENTS, customIds.map((a) => key(apiKey, a)));
  for (const d of docs.filter(listed)) byId.set(d.agentId, customRow(d));
  return { rows: group.agentIds.flatMap((a) => byId.get(a) ?? []) };
}

async function agentsPage(
  read: ReadView,
  apiKey: string,
  wantBuiltIn: boolean,
  wantCustom: boolean,
  options: { filter?: AgentFilter; pageSize?: number; pageToken?: string },
): Promise<{ rows: AgentRow[]; pageToken?: string }> {
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  const query = { apiKey, what: 'agents', filter: options.filter ?? null };
  const after = decodePageToken(options.pageToken, query);
  const builtIns = wantBuiltIn ? BUILT_IN_AGENTS : [];
  let from = 0;
  let customAfter: Cursor | undefined;
  if (after && after.id === '') {
    if (!Number.isInteger(after.value) || (after.value as number) < 0 || (after.value as number) >= builtIns.length) {
      throw invalidArgument('data.pageToken is not a valid page token for this query.');
    }
    from = (after.value as number) + 1;
  } else if (after) {
    from = builtIns.length;
    customAfter = after;
  }
  const rows = await builtInRows(read, apiKey, builtIns.slice(from, from + pageSize));
  const lastBuiltIn: Cursor = { value: from + rows.length - 1, id: '' };
  if (from + rows.length < builtIns.length) return { rows, pageToken: encodePageToken(query, lastBuiltIn) };
  if (!wantCustom) return { rows };
  const room = pageSize - rows.length;
  // A page filled by built-ins goes on only when a custom agent follows (one looked up).
  const docs = await read.find<AgentDoc>(AGENTS, { apiKey }, { sort: 'createdAt', after: customAfter, limit: room + 1 });
  if (room === 0) return { rows, pageToken: docs.length > 0 ? encodePageToken(query, lastBuiltIn) : undefined };
  const page = docs.slice(0, room);
  rows.push(...page.filter(listed).map(customRow));
  const last = page[page.length - 1];
  return { rows, pageToken: docs.length > room && last ? encodePageToken(query, { value: last.createdAt, id: last._id }) : undefined };
}

/**
 * A group as the hosted API shows it: `description` only when set, `metadata` with the key
 * (groups created before metadata existed show `{ apiKey }`), epoch-millisecond times.
 */
export const agentGroupView = (g: AgentGroupDoc) => ({
  id: g.groupId,
  name: g.name,
  ...(g.description ? { description: g.description } : {}),
  agentIds: g.agentIds,
  metadata: g.metadata ?? { apiKey: g.apiKey },
  createdAt: g.createdAt,
  updatedAt: g.updatedAt,
});

/** A `groups/list` row: the member count in place of the members. */
export const agentGroupSummary = (g: AgentGroupDoc) => {
  const { agentIds, ...rest } = agentGroupView(g);
  return { id: rest.id, name: rest.name, ...(rest.description !== undefined ? { description: rest.description } : {}), agentCount: agentIds.length, metadata: rest.metadata, createdAt: rest.createdAt, updatedAt: rest.updatedAt };
};

/** The key's groups, oldest first (at most MAX_AGENT_GROUPS: src/http/routes/agents.ts). */
export const agentGroupsOf = (read: ReadView, apiKey: string) =>
  read.find<AgentGroupDoc>(AGENT_GROUPS, { apiKey }, { sort: 'createdAt' });

export async function listAgentGroups(read: ReadView, apiKey: string) {
  return (await agentGroupsOf(read, apiKey)).map(agentGroupView);
}
