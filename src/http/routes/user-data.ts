/**
 * Personal data (GDPR): users/data/get, users/data/delete and users/data/delete/status, as
 * the hosted pages document them (docs/privacy.md, docs/compatibility.md). What each does is
 * a use case in src/usecases/user-data.ts.
 */
import { z } from 'zod';
import { USER_DATA_PAGE } from '../../../queries/user-data.js';
import { deleteUserData, getUserData, userDataDeletionStatus } from '../../usecases/user-data.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, ids } from '../validation.js';
import { pageAnswer, pageToken } from './domain.js';

/** Users erased per users/data/delete call: each one's key destruction is a synced write (docs/limits.md). */
const MAX_USER_DATA_DELETE = 100;

const grantRow = z.object({
  resourceType: z.enum(['organization', 'folder', 'document']),
  resourceId: z.string(),
  accessRole: z.string(),
  expiresAt: z.number().nullable().describe('Unix seconds; null: permanent.'),
  accessFields: z.array(z.string()).optional(),
});

const presenceRow = z.object({
  documentId: z.string(),
  name: z.string().optional(),
  email: z.string().optional(),
  status: z.string(),
  joinedAt: z.number(),
  updatedAt: z.number(),
});

const get = defineRoute({
  path: '/v2/users/data/get',
  tag: 'Personal data',
  doc: {
    summary: 'Everything held about a user',
    description: 'The user\'s profile (null when none is held; `name`, `email` and `initial` only when given and not erased), their grants in ' +
      `the organization (${USER_DATA_PAGE} per page; the next page's token comes as \`result.pageToken\` and \`result.nextPageToken\`), ` +
      'the organization\'s user groups they belong to and their live presence entries there. `comments`, `reactions`, `recordings` and ' +
      '`notifications` (features of the hosted service this one does not have) are always empty. An organization that does not exist is NOT_FOUND.',
    example: { organizationId: 'yourOrganizationId', userId: 'yourUserId' },
  },
  mutates: false,
  auth: 'apiKey',
  schema: z.object({ organizationId: id(), userId: id(), pageToken: pageToken() }),
  response: z.object({
    userId: z.string(),
    organizationId: z.string(),
    profile: z.object({ name: z.string().optional(), email: z.string().optional(), initial: z.string().optional() }).nullable(),
    grants: z.array(grantRow),
    groups: z.array(z.string()).describe('The ids of the organization\'s user groups the user belongs to.'),
    presence: z.array(presenceRow),
    comments: z.array(z.unknown()),
    reactions: z.array(z.unknown()),
    recordings: z.array(z.unknown()),
    notifications: z.array(z.unknown()),
  }),
  paged: 'both',
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => pageAnswer('Data fetched successfully.', await getUserData(ctx, data)),
});

const remove = defineRoute({
  path: '/v2/users/data/delete',
  tag: 'Personal data',
  doc: {
    summary: 'Delete all data of users',
    description: `For each of \`userIds\` (at most ${MAX_USER_DATA_DELETE}): the user leaves every organization they are in (each grant revoked, ` +
      'each group membership removed; `organizationIds` adds organizations to look in, none is needed), their presence entries are removed ' +
      'and their personal data key is destroyed, so their name, e-mail and initial are unreadable everywhere, the event log and its copies ' +
      'included, while the log keeps their id and what happened (docs/privacy.md). Irreversible. The deletion is done when the answer ' +
      'comes; `jobId` names it for users/data/delete/status, `tasksCount` is the number of users. It first waits for the read models to hold ' +
      'every write acknowledged before it (it finds the users\' organizations through them); when they lag too long it refuses with UNAVAILABLE ' +
      'and erases nothing: send it again.',
    example: { userIds: ['yourUserId1', 'yourUserId2'], organizationIds: ['yourOrganizationId1', 'yourOrganizationId2'] },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({ userIds: ids(MAX_USER_DATA_DELETE), organizationIds: ids().optional() }),
  response: z.object({ jobId: z.string(), tasksCount: z.number() }),
  handler: async (data, ctx) => ({ message: 'Data deletion process has been initiated.', data: await deleteUserData(ctx, data) }),
});

const status = defineRoute({
  path: '/v2/users/data/delete/status',
  tag: 'Personal data',
  doc: {
    summary: 'How far a users/data/delete job went',
    description: 'A job of this API key: `tasksLeft` users not yet erased, `lastTaskCompletedTime` in milliseconds since the epoch. ' +
      'An unknown `jobId` is NOT_FOUND.',
    example: { jobId: 'yourJobId' },
  },
  mutates: false,
  auth: 'apiKey',
  schema: z.object({ jobId: id() }),
  response: z.object({ isDeleteCompleted: z.boolean(), tasksLeft: z.number(), lastTaskCompletedTime: z.number() }),
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => ({ message: 'Data fetched successfully.', data: await userDataDeletionStatus(ctx, data) }),
});

export function userDataRoutes(): AnyRoute[] {
  return [get, remove, status];
}
