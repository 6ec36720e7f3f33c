/**
 * Users (spec: users/add, users/delete; companions users/update, users/get): the requests
 * and answers. What each does is a use case in src/usecases/users.ts.
 */
import { z } from 'zod';
import { ACCESS_ROLES } from '../../../commands/grant.js';
import type { Services } from '../../composition/services.js';
import { addUsers, listUsers, removeUsers, updateUsers } from '../../usecases/users.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { email, id, ids, items, text } from '../validation.js';
import { bareOutcome, idOutcome, outcomesById, pageAnswer, PAGE_SIZE_DOC, pageSize, pageToken, userRowSchema } from './domain.js';

const role = () => z.enum(ACCESS_ROLES);
const userSchema = z.object({
  userId: id(),
  name: text(256).optional(),
  email: email().optional(),
  // As long as a name (docs/limits.md): the hosted API sets no bound of its own.
  initial: text(256).optional(),
  accessRole: role().optional(),
});
const scope = { organizationId: id(), documentId: id().optional(), folderId: id().optional() };

/** allDocuments without groupByDocumentId: one row per (document, user). */
const documentUserRow = userRowSchema.extend({ documentId: z.string().describe('The document the user holds the grant on.') });

/** What `scope` means, for every users route. */
const SCOPE = 'The scope is the document when `documentId` is sent, else the folder when `folderId` is sent, else the organization.';

const add = defineRoute({
  path: '/v2/users/add',
  tag: 'Users',
  doc: {
    summary: 'Add users to an organization, folder or document',
    description: `${SCOPE} Each user's profile (name, email, initial: from the name's first letters when omitted) is saved and the user ` +
      'gets a grant on the scope with `accessRole` (default `editor`); an existing user is updated. A missing organization is created; ' +
      '`createFolder: true` creates a missing folder (at the root), `createDocument: true` a missing document (in `folderId` when sent). ' +
      'A folder or document that does not exist otherwise is NOT_FOUND. Each user is its own item, keyed by userId (each id once).',
    example: {
      organizationId: 'yourOrganizationId',
      documentId: 'yourDocumentId',
      users: [{ userId: 'yourUserId1', name: 'User Name', email: 'user@email.com', accessRole: 'editor' }],
    },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({
    ...scope,
    createOrganization: z.boolean().optional(),
    createDocument: z.boolean().optional(),
    createFolder: z.boolean().optional(),
    users: items(userSchema),
  }),
  response: outcomesById(idOutcome),
  errors: ['NOT_FOUND'],
  // The hosted API's message for users/add and users/update alike.
  handler: async (data, ctx) => ({ message: 'User(s) processed successfully.', data: await addUsers(ctx, data) }),
});

const update = defineRoute({
  path: '/v2/users/update',
  tag: 'Users',
  doc: {
    summary: 'Update users of an organization, folder or document',
    description: `${SCOPE} Updates each user's profile fields sent and, with \`accessRole\`, the role of their grant on the scope ` +
      '(its expiry kept). A user without a live grant on the scope fails its item ("User does not exist."). Each user is its own item, ' +
      'keyed by userId (each id once). An organization, folder or document that does not exist is NOT_FOUND.',
    example: {
      organizationId: 'yourOrganizationId',
      users: [{ userId: 'yourUserId1', name: 'User Name', email: 'user@email.com', accessRole: 'editor' }],
    },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({ ...scope, users: items(userSchema) }),
  response: outcomesById(idOutcome),
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => ({ message: 'User(s) processed successfully.', data: await updateUsers(ctx, data) }),
});

const remove = defineRoute({
  path: '/v2/users/delete',
  tag: 'Users',
  doc: {
    summary: 'Remove users from an organization, folder or document',
    description: `${SCOPE} With a folder or document, the user's grant there goes. With the organization alone, the user leaves it: ` +
      'every grant they hold inside it and their membership of its user groups go. A user with nothing to remove fails its item ' +
      '("User does not exist."). Each user is its own item, keyed by userId (each id once). ' +
      'An organization, folder or document that does not exist is NOT_FOUND.',
    example: { organizationId: 'yourOrganizationId', documentId: 'yourDocumentId', userIds: ['yourUserId1'] },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({ ...scope, userIds: ids() }),
  response: outcomesById(bareOutcome),
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => ({ message: 'User(s) deleted successfully.', data: await removeUsers(ctx, data) }),
});

const get = defineRoute({
  path: '/v2/users/get',
  tag: 'Users',
  doc: {
    summary: 'List the users of an organization, folder or document',
    description: `${SCOPE} Rows are the users holding a live grant on the scope itself, in userId order, narrowed to \`userIds\` ` +
      '(at most 30) and/or to members of `organizationUserGroupIds` (at most 30). With `allDocuments: true` (alone: no scope or ' +
      'user filter beside it, INVALID_ARGUMENT otherwise): the users of every document of the organization, one row per ' +
      '(document, user) with its `documentId`, or with `groupByDocumentId: true` an object keyed by documentId whose rows may ' +
      `continue on the next page under the same key. Paged: ${PAGE_SIZE_DOC}; the next token comes as ` +
      '`result.pageToken` and `result.nextPageToken` while more follow. An organization, folder or document that does not exist is NOT_FOUND.',
    example: { organizationId: 'yourOrganizationId', documentId: 'yourDocumentId', userIds: ['yourUserId1', 'yourUserId2'] },
  },
  mutates: false,
  auth: 'apiKey',
  schema: z.object({
    ...scope,
    userIds: ids(30).optional(),
    organizationUserGroupIds: ids(30).optional(),
    allDocuments: z.boolean().optional(),
    groupByDocumentId: z.boolean().optional(),
    pageSize: pageSize(),
    pageToken: pageToken(),
  }),
  response: z.union([
    z.array(documentUserRow),
    z.array(userRowSchema),
    z.record(z.string(), z.array(userRowSchema)).describe('allDocuments with groupByDocumentId: the rows of each document, keyed by documentId.'),
  ]),
  paged: 'both',
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => pageAnswer('User(s) retrieved successfully.', await listUsers(ctx, data)),
});

/** Every route takes the services; these need none beyond the request's context. */
export function userRoutes(_services: Services): AnyRoute[] {
  return [add, update, remove, get];
}
