/**
 * What the read models hold about one user (users/data/get and delete, docs/privacy.md):
 * their profile row, their grants and group memberships, and where they hold any, and the
 * progress of a deletion job.
 */
import type { ReadView } from '../src/ports/read-store.js';
import { GRANTS, type GrantDoc } from '../projections/grants.js';
import { GROUP_MEMBERS, type MemberDoc } from '../projections/groups.js';
import { USER_DATA_JOBS, USERS, userDataJobKey, userKey, type UserDataJobDoc, type UserDoc } from '../projections/users.js';
import { decodePageToken, encodePageToken } from './paging.js';

/** Grants per users/data/get page (the hosted API: "chunks of 100 items per feature data"). */
export const USER_DATA_PAGE = 100;
/** Rows read at once while collecting the organizations a user is in (users/data/delete). */
const SCAN_BATCH = 1000;

export function userProfile(read: ReadView, apiKey: string, userId: string): Promise<UserDoc | null> {
  return read.get<UserDoc>(USERS, userKey(apiKey, userId));
}

/** One page of the user's grants in an organization, in key order, and the next page's token. */
export async function userGrantsPage(read: ReadView, apiKey: string, organizationId: string, userId: string, pageToken?: string) {
  const query = { apiKey, what: 'userData', organizationId, userId };
  const after = decodePageToken(pageToken, query);
  const found = await read.find<GrantDoc>(GRANTS, { apiKey, organizationId, userId }, { after, limit: USER_DATA_PAGE + 1 });
  const rows = found.slice(0, USER_DATA_PAGE);
  const last = rows[rows.length - 1];
  return { rows, pageToken: found.length > USER_DATA_PAGE && last ? encodePageToken(query, { value: last._id, id: last._id }) : undefined };
}

/** The user's group memberships in an organization (at most MAX_GROUPS_PER_USER, commands/group.ts). */
export function userGroups(read: ReadView, apiKey: string, organizationId: string, userId: string): Promise<MemberDoc[]> {
  return read.find<MemberDoc>(GROUP_MEMBERS, { apiKey, organizationId, userId }, { sort: 'groupId' });
}

/** Every organization in which the user holds a grant or belongs to a group, read a batch at a time. */
export async function userOrganizations(read: ReadView, apiKey: string, userId: string): Promise<Set<string>> {
  const out = new Set<string>();
  for (const collection of [GRANTS, GROUP_MEMBERS]) {
    let after: { value: string; id: string } | undefined;
    for (;;) {
      const batch = await read.find<GrantDoc | MemberDoc>(collection, { apiKey, userId }, { after, limit: SCAN_BATCH });
      for (const d of batch) out.add(d.organizationId);
      const last = batch[batch.length - 1];
      if (!last || batch.length < SCAN_BATCH) break;
      after = { value: last._id, id: last._id };
    }
  }
  return out;
}

export function userDataJob(read: ReadView, apiKey: string, jobId: string): Promise<UserDataJobDoc | null> {
  return read.get<UserDataJobDoc>(USER_DATA_JOBS, userDataJobKey(apiKey, jobId));
}
