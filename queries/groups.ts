/**
 * usergroups/get (this service's extension: the hosted API lists no groups): an
 * organization's user groups in creation order, each with its member count, paged with
 * opaque tokens. Reads the `user_groups` and `user_group_members` read models only.
 */
import type { ReadView } from '../src/ports/read-store.js';
import { GROUP_MEMBERS, USER_GROUPS, type GroupDoc } from '../projections/groups.js';
import { decodePageToken, encodePageToken } from './paging.js';

/**
 * Groups per page. Each row's member count is one indexed count of its members, so a page
 * costs at most this many counts besides the page read (docs/limits.md, Lists).
 */
export const GROUPS_MAX_PAGE_SIZE = 100;

export async function groupsPage(read: ReadView, apiKey: string, q: { organizationId: string; pageSize: number; pageToken?: string | undefined }) {
  const { organizationId, pageSize } = q;
  const query = { apiKey, what: 'usergroups', organizationId };
  const after = decodePageToken(q.pageToken, query);
  const docs = await read.find<GroupDoc>(USER_GROUPS, { apiKey, organizationId }, { sort: 'seq', after, limit: pageSize + 1 });
  const page = docs.slice(0, pageSize);
  const rows = [];
  for (const g of page) {
    const memberCount = await read.count(GROUP_MEMBERS, { apiKey, organizationId, groupId: g.groupId });
    rows.push({ groupId: g.groupId, groupName: g.groupName, memberCount });
  }
  const last = page[page.length - 1];
  return { rows, pageToken: docs.length > pageSize && last ? encodePageToken(query, { value: last.seq, id: last._id }) : undefined };
}
