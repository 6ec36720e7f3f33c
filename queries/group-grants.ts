/**
 * Reading group grants (semantics §3 rule 7): a user's groups in an organization, their
 * grants, the groups granted on one resource, and the rule that picks one group grant among
 * a user's groups at one level. Permission resolution (queries/permissions.ts) and the
 * access queries build on these.
 *
 * Costs, each independent of the organization's size:
 * - `userGroupIds`: one indexed find, at most MAX_GROUPS_PER_USER rows;
 * - `groupGrantsAt`: one getMany of (group, resource) keys;
 * - `groupGrantsOn`: one indexed find, a page of at most `limit` rows;
 * - `groupGrantCounts`: one indexed count per group;
 * - `groupGrantsOnResources`: per group holding a grant, at most the smaller of its grants
 *   and the resources asked about (`groupGrantReads`), never groups x resources blindly.
 */
import type { ReadView } from '../src/ports/read-store.js';
import { Pacer } from './cost.js';
import { isLive, type ResourceType } from '../commands/grant.js';
import { MAX_GRANTS_PER_GROUP, MAX_GROUPS_PER_USER } from '../commands/group.js';
import { GROUP_MEMBERS, type MemberDoc } from '../projections/groups.js';
import { GROUP_GRANTS, groupGrantKey, type GroupGrantDoc } from '../projections/group-grants.js';

export type { GroupGrantDoc } from '../projections/group-grants.js';

/**
 * The groups `userId` belongs to in the organization, in groupId order: at most
 * MAX_GROUPS_PER_USER (joins beyond it are refused; two joins at the same instant may pass
 * it, and then the groups after the first MAX_GROUPS_PER_USER are not considered).
 */
export async function userGroupIds(read: ReadView, apiKey: string, organizationId: string, userId: string): Promise<string[]> {
  const rows = await read.find<MemberDoc>(GROUP_MEMBERS, { apiKey, organizationId, userId }, { sort: 'groupId', limit: MAX_GROUPS_PER_USER });
  return rows.map((r) => r.groupId);
}

/** The grants (live or expired) that the groups in `groupIds` hold on `resources`: one getMany. */
async function groupGrantsAt(
  read: ReadView,
  apiKey: string,
  organizationId: string,
  groupIds: readonly string[],
  resources: ReadonlyArray<readonly [ResourceType, string]>,
): Promise<GroupGrantDoc[]> {
  const keys = groupIds.flatMap((g) => resources.map(([t, id]) => groupGrantKey(apiKey, organizationId, g, t, id)));
  return keys.length === 0 ? [] : read.getMany<GroupGrantDoc>(GROUP_GRANTS, keys);
}

/**
 * How many grants (live or expired) each group in `groupIds` holds: one indexed count per
 * group, paced (queries/cost.ts). What `groupGrantsOnResources` will read is known from these
 * before it reads anything (`groupGrantReads`).
 */
export async function groupGrantCounts(read: ReadView, apiKey: string, organizationId: string, groupIds: Iterable<string>, pacer = new Pacer()): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const groupId of groupIds) {
    out.set(groupId, await read.count(GROUP_GRANTS, { apiKey, organizationId, groupId }));
    await pacer.spend(1);
  }
  return out;
}

/**
 * The reads `groupGrantsOnResources` spends on a group holding `held` grants, asked about
 * `resources` resources: none without grants, else the cheaper of reading its grants (one
 * indexed find, `held` rows) and looking up each resource's key.
 * Example: 1,000 groups without grants, 901 resources: 0 each, where looking up every
 * (group, resource) key would read 901,000.
 */
export const groupGrantReads = (held: number, resources: number) => Math.min(held, resources);

/**
 * The grants (live or expired) the groups of `counts` (from `groupGrantCounts`) hold on
 * `resources`, group by group in the order given: a group holding none is not read again;
 * one holding no more grants than there are resources is read through its index; else its
 * keys on `resources` are looked up (see `groupGrantReads`). Paced between groups.
 */
export async function groupGrantsOnResources(
  read: ReadView,
  apiKey: string,
  organizationId: string,
  counts: ReadonlyMap<string, number>,
  resources: ReadonlyArray<readonly [ResourceType, string]>,
  pacer = new Pacer(),
): Promise<GroupGrantDoc[]> {
  const wanted = new Map<ResourceType, Set<string>>();
  for (const [t, id] of resources) {
    let ids = wanted.get(t);
    if (!ids) wanted.set(t, (ids = new Set()));
    ids.add(id);
  }
  const out: GroupGrantDoc[] = [];
  for (const [groupId, held] of counts) {
    if (held === 0) continue;
    if (held <= resources.length) {
      for (const g of await read.find<GroupGrantDoc>(GROUP_GRANTS, { apiKey, organizationId, groupId }, { limit: MAX_GRANTS_PER_GROUP })) {
        if (wanted.get(g.resourceType)?.has(g.resourceId)) out.push(g);
      }
    } else {
      out.push(...(await groupGrantsAt(read, apiKey, organizationId, [groupId], resources)));
    }
    await pacer.spend(groupGrantReads(held, resources.length));
  }
  return out;
}

/**
 * The groups granted on one resource (live or expired), a page in groupId order: pass the
 * last row's groupId as `after` for the next page. For "who can open this": each group's
 * members are in `user_group_members` (projections/groups.ts, index by group).
 */
export async function groupGrantsOn(
  read: ReadView,
  apiKey: string,
  organizationId: string,
  resourceType: ResourceType,
  resourceId: string,
  page: { after?: string; limit?: number } = {},
): Promise<GroupGrantDoc[]> {
  return read.find<GroupGrantDoc>(GROUP_GRANTS, { apiKey, organizationId, resourceType, resourceId }, {
    sort: 'groupId',
    ...(page.after !== undefined ? { after: { value: page.after, id: groupGrantKey(apiKey, organizationId, page.after, resourceType, resourceId) } } : {}),
    ...(page.limit !== undefined ? { limit: page.limit } : {}),
  });
}

const ROLE_RANK = { editor: 2, viewer: 1 } as const;

/**
 * semantics §3 rule 7, among a user's groups at one level: the higher role wins (editor over
 * viewer), then the later expiry (permanent over any temporary one), then, for a stable
 * answer, the smaller groupId. Negative when `a` wins. Example: viewer permanent vs editor
 * expiring tomorrow: the editor grant wins.
 */
export function compareGroupGrants(a: GroupGrantDoc, b: GroupGrantDoc): number {
  const role = ROLE_RANK[b.accessRole] - ROLE_RANK[a.accessRole];
  if (role !== 0) return role;
  const ea = a.expiresAt ?? Infinity;
  const eb = b.expiresAt ?? Infinity;
  if (ea !== eb) return ea > eb ? -1 : 1;
  return a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0;
}

/** The group grant that counts among `grants` (one level, the user's groups): expired ones are absent. */
export function bestGroupGrant(grants: Iterable<GroupGrantDoc>, nowMs: number): GroupGrantDoc | undefined {
  let best: GroupGrantDoc | undefined;
  for (const g of grants) {
    if (isLive(g, nowMs) && (!best || compareGroupGrants(g, best) < 0)) best = g;
  }
  return best;
}
