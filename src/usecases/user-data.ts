/**
 * Personal data (GDPR): users/data/get, users/data/delete and its status route
 * (docs/privacy.md). Deletion runs while the request waits, user by user: the user leaves
 * every organization they are in (grants revoked, group memberships removed), their data
 * key is destroyed (crypto-shredding: every name, e-mail and initial they ever had, in the
 * log and in any copy or rebuild of it, becomes unreadable), their presence entries are
 * removed, and a `UserErased` event removes their profile row and counts the job's task.
 * A dry run (`x-dry-run: true`) decides the same revocations and erasure events and does
 * neither of the two things outside the log: no key destroyed, no presence row removed.
 *
 * Where the user is comes from the read models (grants, group members), and the revocations
 * are decided by each aggregate on its own state (RevokeAll on the user's grants stream,
 * RemoveMembers on each group's): every access ends as an event in the log, so the access
 * history closes each interval at the erasure. The read models must first hold every write
 * acknowledged before the erasure began: a write answers without them once
 * READ_YOUR_WRITES_TIMEOUT_MS passed (a loaded host, an applier behind). Example: users/add
 * puts u in o2 and answers while the grants read model is behind; users/data/delete right
 * after found u in o only, reported the job completed, and permissions/get showed u an editor
 * of o2 once the read model caught up. So the erasure waits for the read models to reach the
 * log's head as it was when it began (CATCH_UP_MS at most), and refuses (UNAVAILABLE,
 * nothing erased) when they do not: the status never reports completed with access left.
 */
import { grantsDecider, grantsStream } from '../../commands/grant.js';
import { groupDecider, groupStream } from '../../commands/group.js';
import { userDecider, userStream } from '../../commands/user.js';
import { requireOrganization } from '../../queries/organizations.js';
import { userDataJob, userGrantsPage, userGroups, userOrganizations, userProfile } from '../../queries/user-data.js';
import { eraseUserPresence, userPresence } from '../presence/store.js';
import { ApiError, notFound } from '../shared/errors.js';
import type { Config } from '../config/config.js';
import type { Services } from '../composition/services.js';
import { newId } from '../shared/ids.js';
import type { TenantReadContext } from './context.js';
import { unique } from './items.js';
import { openPersonal, openProfiles } from './personal.js';

/** users/data/get: what this service holds about a user in an organization; grants paged by 100. */
export async function getUserData(ctx: TenantReadContext, input: { organizationId: string; userId: string; pageToken?: string | undefined }) {
  const { read } = ctx.services;
  const { organizationId, userId } = input;
  await requireOrganization(read, ctx.apiKey, organizationId);
  const stored = await userProfile(read, ctx.apiKey, userId);
  const [profile] = stored ? await openProfiles(ctx, [stored]) : [];
  const grants = await userGrantsPage(read, ctx.apiKey, organizationId, userId, input.pageToken);
  const groups = await userGroups(read, ctx.apiKey, organizationId, userId);
  const entries = await userPresence(ctx.services.read, ctx.apiKey, organizationId, userId, ctx.now);
  const presence = await Promise.all(entries.map(async (p) => ({ ...p, ...(await openPersonal(ctx, userId, { name: p.name, email: p.email })) })));
  const given = (v: string | undefined) => (v ? v : undefined);
  return {
    rows: {
      userId,
      organizationId,
      profile: profile ? { name: given(profile.name), email: given(profile.email), initial: given(profile.initial) } : null,
      grants: grants.rows.map((g) => ({
        resourceType: g.resourceType,
        resourceId: g.resourceId,
        accessRole: g.accessRole,
        expiresAt: g.expiresAt,
        ...(g.accessFields ? { accessFields: g.accessFields } : {}),
      })),
      groups: groups.map((m) => m.groupId),
      presence: presence.map((p) => ({ documentId: p.documentId, name: p.name, email: p.email, status: p.status, joinedAt: p.joinedAt, updatedAt: p.updatedAt })),
      // Features of the hosted service this one does not have: nothing is held.
      comments: [],
      reactions: [],
      recordings: [],
      notifications: [],
    },
    pageToken: grants.pageToken,
  };
}

/** Takes the user out of one organization: every grant, every group membership. */
async function leaveOrganization(ctx: TenantReadContext, organizationId: string, userId: string): Promise<void> {
  const { state } = await ctx.services.commands.load(grantsDecider, grantsStream(ctx.apiKey, organizationId, userId));
  if (Object.keys(state.grants).length > 0) {
    await ctx.execute(grantsDecider, grantsStream(ctx.apiKey, organizationId, userId), { type: 'RevokeAll', data: { organizationId, userId } });
  }
  for (const m of await userGroups(ctx.services.read, ctx.apiKey, organizationId, userId)) {
    try {
      await ctx.execute(groupDecider, groupStream(ctx.apiKey, organizationId, m.groupId), {
        type: 'RemoveMembers', data: { organizationId, groupId: m.groupId, userIds: [userId] },
      });
    } catch (error) {
      // The group was deleted since the read model listed it: nothing left to remove.
      if (!(error instanceof ApiError && error.status === 'NOT_FOUND')) throw error;
    }
  }
}

async function eraseUser(ctx: TenantReadContext, userId: string, organizationIds: readonly string[], job: { jobId: string; jobTasks: number }) {
  const orgs = await userOrganizations(ctx.services.read, ctx.apiKey, userId);
  for (const o of organizationIds) orgs.add(o);
  for (const organizationId of orgs) await leaveOrganization(ctx, organizationId, userId);
  // A dry run stops at the log: the key and the presence rows live outside it, and a
  // preview must leave both (the erasure's access changes are the revocations above).
  if (!ctx.dryRun) {
    // The key first: once it is gone, nothing anyone kept of the log opens the user's fields.
    await ctx.services.secrets.personal.shred(ctx.apiKey, userId);
    await eraseUserPresence(ctx.services.read, ctx.apiKey, userId);
  }
  await ctx.execute(userDecider, userStream(ctx.apiKey, userId), { type: 'EraseUser', data: { userId, ...job } });
}

/** How long an erasure waits for the read models to catch up: a write's own wait, and at least 5 s. */
const catchUpMs = (config: Pick<Config, 'readYourWritesTimeoutMs'>) => Math.max(config.readYourWritesTimeoutMs, 5_000);

/** An erasure also reads the log's head and waits for the read models (RequestContext gives every service). */
type ErasureContext = TenantReadContext & { readonly services: TenantReadContext['services'] & Pick<Services, 'events' | 'projections'> };

/** Every write acknowledged before now is in the read models the erasure finds the user through, or UNAVAILABLE. */
async function readModelsCaughtUp(ctx: ErasureContext): Promise<void> {
  const { events, projections, config } = ctx.services;
  const head = await events.headPosition();
  if (await projections.waitFor(head, catchUpMs(config))) return;
  throw new ApiError(
    'UNAVAILABLE',
    `The read models are behind the log (still applying writes made before this request, after ${catchUpMs(config)} ms): ` +
      'the user\'s grants and memberships cannot all be found yet. Nothing was erased; send the request again.',
  );
}

/** users/data/delete: erases each user (one task each) and answers the job's id. */
export async function deleteUserData(ctx: ErasureContext, input: { userIds: string[]; organizationIds?: string[] | undefined }) {
  await readModelsCaughtUp(ctx);
  const userIds = unique(input.userIds);
  const job = { jobId: newId(), jobTasks: userIds.length };
  await Promise.all(userIds.map((u) => eraseUser(ctx, u, unique(input.organizationIds ?? []), job)));
  return { jobId: job.jobId, tasksCount: job.jobTasks };
}

/** users/data/delete/status: how far deletion job `jobId` went. */
export async function userDataDeletionStatus(ctx: TenantReadContext, input: { jobId: string }) {
  const job = await userDataJob(ctx.services.read, ctx.apiKey, input.jobId);
  if (!job) throw notFound('Job does not exist.');
  const tasksLeft = Math.max(0, job.tasksCount - job.erased.length);
  return { isDeleteCompleted: tasksLeft === 0, tasksLeft, lastTaskCompletedTime: job.lastTaskCompletedTime };
}
