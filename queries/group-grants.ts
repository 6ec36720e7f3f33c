/**
 * Reading group grants (semantics §3 rule 7): a user's groups in an organization, their
 * grants, the groups granted on one resource, and the rule that picks one group grant among
 * a user's groups at one level. Permission resolution (queries/permissions.ts) and the
 * access queries build on these.
 *
 * Costs, each independent of the organization's size:
 * - `userGroupIds`: one indexed find, at most MAX_GROUPS_PER_USER rows;
 * - `groupGrantsOf`: one indexed find per group, at most MAX_GRANTS_PER_GROUP rows each;
 * - `groupGrantsAt`: one getMany of (group, resource) keys;
 * - `groupGrantsOn`: one indexed find, a page of at most `limit` rows.
 */
import type { ReadView } from '../src/ports/read-store.js';
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

/** Every grant (live or expired) of each group in `groupIds`, grouped by group in the order given. */
export async function groupGrantsOf(read: ReadView, apiKey: string, organizationId: string, groupIds: readonly string[]): Promise<GroupGrantDoc[]> {
  const pages = await Promise.all(
    groupIds.map((groupId) => read.find<GroupGrantDoc>(GROUP_GRANTS, { apiKey, organizationId, groupId }, { limit: MAX_GRANTS_PER_GROUP })),
  );
  return pages.flat();
}

/** The grants (live or expired) that the groups in `groupIds` hold on `resources`: one getMany. */
export async function groupGrantsAt(
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
