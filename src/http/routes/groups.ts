/**
 * Organization user groups (spec: usergroups/add, usergroups/users/delete; companion
 * usergroups/users/add). Membership changes of one group are one command on its stream,
 * with per-user outcomes (src/usecases/groups.ts does what each route does).
 *
 * Top-level messages are the hosted API's, character for character (semantics §0;
 * rest-apis/v2/user-groups/*). usergroups/get is this service's (docs/compatibility.md,
 * Users and groups): the hosted API has no route that lists groups.
 */
import { z } from 'zod';
import { MAX_GROUPS_PER_USER } from '../../../commands/group.js';
import { GROUPS_MAX_PAGE_SIZE } from '../../../queries/groups.js';
import { invalidArgument } from '../../shared/errors.js';
import { addGroupMembers, addGroups, listGroups, removeGroupMembers } from '../../usecases/groups.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, ids, items, text } from '../validation.js';
import { idOutcome, outcomesById, pageAnswer, pageToken } from './domain.js';

/** Membership changes answer per user: `{ [userId]: { success, organizationUserGroupId, message } }`. */
const memberOutcomes = outcomesById(
  z.object({
    success: z.boolean().describe('Whether this user\'s change went through; a failed user leaves the others as they are.'),
    organizationUserGroupId: z.string().describe('The group the change was made in (the one sent).'),
    message: z.string().describe('What happened to this user.'),
  }),
);

/** usergroups/get: this service's (the hosted API lists no groups). */
const listRoute = defineRoute({
  path: '/v2/organizations/usergroups/get',
  tag: 'User groups',
  doc: {
    summary: 'List an organization\'s user groups (this service\'s; the hosted API has none)',
    description: 'The organization\'s groups in creation order, each with `memberCount` (its members, whether or not they still hold a grant on the organization). ' +
      `Paged: \`pageSize\` 1 to ${GROUPS_MAX_PAGE_SIZE} (default ${GROUPS_MAX_PAGE_SIZE}); while more follow, the answer carries \`result.pageToken\` and \`result.nextPageToken\`. ` +
      'A token is bound to the query that made it: with another query it is INVALID_ARGUMENT. An organization that does not exist is NOT_FOUND.',
    example: { organizationId: 'yourOrganizationId', pageSize: 50 },
  },
  mutates: false,
  auth: 'apiKey',
  schema: z.object({ organizationId: id(), pageSize: z.number().int().min(1).max(GROUPS_MAX_PAGE_SIZE).optional(), pageToken: pageToken() }),
  response: z.array(z.object({
    groupId: z.string(),
    groupName: z.string().describe('The groupId when the group was added without a name.'),
    memberCount: z.number().int().describe('How many users are in the group.'),
  })),
  paged: 'both',
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => pageAnswer('Organization user groups retrieved successfully.', await listGroups(ctx, data)),
});

export function groupRoutes(): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/organizations/usergroups/add',
    tag: 'User groups',
    doc: {
      summary: 'Add user groups to an organization',
      description: 'Each group is its own item, keyed by groupId (each id once): a group id that exists fails its item ' +
        '("Organization user group already exists."). Without `groupName` a group is named after its groupId. With `createOrganization: true` a missing organization is created first; ' +
        'otherwise an organization that does not exist is NOT_FOUND.',
      example: { organizationId: 'yourOrganizationId', organizationUserGroups: [{ groupId: 'engineering', groupName: 'Engineering' }] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      createOrganization: z.boolean().optional(),
      organizationUserGroups: items(z.object({ groupId: id(), groupName: text(256).optional() })),
    }),
    response: outcomesById(idOutcome),
    errors: ['NOT_FOUND'],
    handler: async (data, ctx) => ({ message: 'Organization User Groups added successfully.', data: await addGroups(ctx, data) }),
  });

  const addUsers = defineRoute({
    path: '/v2/organizations/usergroups/users/add',
    tag: 'User groups',
    doc: {
      summary: 'Add users to a user group',
      description: 'Only members of the organization (a live grant on the organization) can join: any other user fails its item ' +
        '("User is not a member of the organization."). A user already in the group succeeds. `data` is keyed by userId (each id once). ' +
        `A user belongs to at most ${MAX_GROUPS_PER_USER} groups of one organization: beyond, that user fails. ` +
        'An organization or group that does not exist is NOT_FOUND.',
      example: { organizationId: 'yourOrganizationId', organizationUserGroupId: 'yourGroupId', userIds: ['yourUserId1'] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), organizationUserGroupId: id(), userIds: ids() }),
    response: memberOutcomes,
    errors: ['NOT_FOUND'],
    handler: async (data, ctx) => ({
      message: 'Added organization users to group successfully.',
      data: await addGroupMembers(ctx, data.organizationId, data.organizationUserGroupId, data.userIds),
    }),
  });

  const removeUsers = defineRoute({
    path: '/v2/organizations/usergroups/users/delete',
    tag: 'User groups',
    doc: {
      summary: 'Remove users from a user group',
      description: '`userIds`, or `deleteAll: true` to empty the group (one of them is required: INVALID_ARGUMENT otherwise). ' +
        'A user not in the group fails its item ("User is not in the organization user group."). `data` is keyed by userId ' +
        '(each id once); with `deleteAll` it lists every user removed. An organization or group that does not exist is NOT_FOUND.',
      example: { organizationId: 'yourOrganizationId', organizationUserGroupId: 'yourGroupId', userIds: ['yourUserId1'] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), organizationUserGroupId: id(), userIds: ids().optional(), deleteAll: z.boolean().optional() }),
    response: memberOutcomes,
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      if (!data.deleteAll && !data.userIds) throw invalidArgument('data.userIds is required unless data.deleteAll is true');
      const results = await removeGroupMembers(ctx, data.organizationId, data.organizationUserGroupId, data.deleteAll ? null : data.userIds!);
      return { message: 'Deleted users from group successfully.', data: results };
    },
  });

  return [add, listRoute, addUsers, removeUsers];
}
