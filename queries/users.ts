/**
 * users/get: the users of a scope (organization, folder or document: the holders of a live
 * grant on it), optionally narrowed to `userIds` (<= 30) or to members of groups, in userId
 * order, paged with opaque tokens.
 */
import type { ReadView } from '../src/ports/read-store.js';
import { isLive, type ResourceType } from '../commands/grant.js';
import { GRANTS, grantKey, type GrantDoc } from '../projections/grants.js';
import { GROUP_MEMBERS, memberKey, type MemberDoc } from '../projections/groups.js';
import { USERS, userKey, type UserDoc } from '../projections/users.js';
import { decodePageToken, encodePageToken } from './paging.js';
import { liveDocuments } from './documents.js';

/** A users/get row: the user's profile and the role (and expiry) of the grant that counts. */
function userRow(userId: string, g: Pick<GrantDoc, 'accessRole' | 'expiresAt'>, p: UserDoc | undefined) {
  return {
    userId,
    name: p?.name ?? '',
    email: p?.email ?? '',
    initial: p?.initial ?? '',
    accessRole: g.accessRole,
    ...(g.expiresAt !== null ? { expiresAt: g.expiresAt } : {}),
  };
}

export interface UsersQuery {
  organizationId: string;
  resourceType: ResourceType;
  resourceId: string;
  userIds?: string[];
  groupIds?: string[];
  pageSize: number;
  pageToken?: string;
}

export async function usersPage(read: ReadView, apiKey: string, nowMs: number, q: UsersQuery) {
  const { organizationId, resourceType, resourceId, pageSize } = q;
  const query = { apiKey, what: 'users', organizationId, resourceType, resourceId, userIds: q.userIds ?? null, groupIds: q.groupIds ?? null };
  const after = decodePageToken(q.pageToken, query);
  const cursor = after ? String(after.value) : null;
  const limit = pageSize + 1;
  // Candidates in userId order, at most pageSize + 1 of them, from the most selective filter.
  let candidates: string[];
  if (q.userIds) {
    candidates = [...new Set(q.userIds)].sort().filter((u) => cursor === null || u > cursor).slice(0, limit);
  } else if (q.groupIds) {
    const merged = new Set<string>();
    for (const groupId of new Set(q.groupIds)) {
      const members = await read.find<MemberDoc>(GROUP_MEMBERS, { apiKey, organizationId, groupId }, {
        sort: 'userId',
        after: cursor === null ? undefined : { value: cursor, id: '\uffff' },
        limit,
      });
      for (const m of members) merged.add(m.userId);
    }
    candidates = [...merged].sort().slice(0, limit);
  } else {
    const grants = await read.find<GrantDoc>(GRANTS, { apiKey, organizationId, resourceType, resourceId }, {
      sort: 'userId',
      after: cursor === null ? undefined : { value: cursor, id: '\uffff' },
      limit,
    });
    candidates = grants.map((g) => g.userId);
  }
  const more = candidates.length > pageSize;
  const page = candidates.slice(0, pageSize);
  const grants = new Map(
    (await read.getMany<GrantDoc>(GRANTS, page.map((u) => grantKey(apiKey, organizationId, u, resourceType, resourceId)))).map((g) => [g.userId, g]),
  );
  let members: Set<string> | null = null;
  if (q.userIds && q.groupIds) {
    members = new Set();
    for (const groupId of new Set(q.groupIds)) {
      const found = await read.getMany<MemberDoc>(GROUP_MEMBERS, page.map((u) => memberKey(apiKey, organizationId, groupId, u)));
      for (const m of found) members.add(m.userId);
    }
  }
  const profiles = new Map((await read.getMany<UserDoc>(USERS, page.map((u) => userKey(apiKey, u)))).map((u) => [u.userId, u]));
  const rows = page.flatMap((userId) => {
    const g = grants.get(userId);
    if (!g || !isLive(g, nowMs) || (members && !members.has(userId))) return [];
    return [userRow(userId, g, profiles.get(userId))];
  });
  const last = page[page.length - 1];
  return { rows, pageToken: more && last ? encodePageToken(query, { value: last, id: last }) : undefined };
}

export interface DocumentUsersQuery {
  organizationId: string;
  groupByDocumentId: boolean;
  pageSize: number;
  pageToken?: string;
}

/**
 * users/get with `allDocuments: true` (hosted API): the users of every document of the
 * organization, that is the holders of a live grant on a live document (organization-level
 * users are not listed: "This will not fetch organization-level users"). A page holds at
 * most `pageSize` (document, user) pairs, in document id order then user: flat, one row per
 * pair with its `documentId`; with `groupByDocumentId`, `{ [documentId]: rows }`, where a
 * document's users may continue on the next page (same key again).
 */
export async function documentUsersPage(read: ReadView, apiKey: string, nowMs: number, q: DocumentUsersQuery) {
  const { organizationId, pageSize } = q;
  const query = { apiKey, what: 'documentUsers', organizationId, grouped: q.groupByDocumentId };
  const after = decodePageToken(q.pageToken, query);
  const found = await read.find<GrantDoc>(GRANTS, { apiKey, organizationId, resourceType: 'document' }, {
    sort: 'resourceId',
    after,
    limit: pageSize + 1,
  });
  const page = found.slice(0, pageSize);
  const { docs } = await liveDocuments(read, apiKey, organizationId, [...new Set(page.map((g) => g.resourceId))]);
  const held = page.filter((g) => isLive(g, nowMs) && docs.has(g.resourceId));
  const profiles = new Map((await read.getMany<UserDoc>(USERS, [...new Set(held.map((g) => g.userId))].map((u) => userKey(apiKey, u)))).map((u) => [u.userId, u]));
  const rowOf = (g: GrantDoc) => userRow(g.userId, g, profiles.get(g.userId));
  const last = page[page.length - 1];
  const pageToken = found.length > pageSize && last ? encodePageToken(query, { value: last.resourceId, id: last._id }) : undefined;
  if (!q.groupByDocumentId) return { rows: held.map((g) => ({ ...rowOf(g), documentId: g.resourceId })), pageToken };
  const grouped = new Map<string, ReturnType<typeof rowOf>[]>();
  for (const g of held) {
    const list = grouped.get(g.resourceId);
    if (list) list.push(rowOf(g));
    else grouped.set(g.resourceId, [rowOf(g)]);
  }
  // fromEntries: a document id such as "__proto__" stays an own key.
  return { rows: Object.fromEntries(grouped), pageToken };
}
