/**
 * Organization user groups (spec: usergroups/add, usergroups/users/delete; companion
 * usergroups/users/add). Membership changes of one group are one command on its stream,
 * with per-user outcomes (commands/outcomes.ts).
 *
 * Top-level messages are the hosted API's, character for character (semantics §0;
 * rest-apis/v2/user-groups/*).
 */
import { z } from 'zod';
import { grantsDecider, isLive, resourceKey, grantsStream } from '../../../commands/grant.js';
import { groupDecider, MAX_GROUPS_PER_USER, plan, groupStream, type GroupCommand } from '../../../commands/group.js';
import { GROUP_MEMBERS } from '../../../projections/groups.js';
import { organizationDecider, organizationStream } from '../../../commands/organization.js';
import { capturing } from '../../../commands/outcomes.js';
import type { Services } from '../../composition/services.js';
import { invalidArgument } from '../../shared/errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { RequestContext } from '../context.js';
import { id, ids, items, text } from '../validation.js';
import { organizationTree } from '../../usecases/organization-tree.js';
import { eachItem, idOutcome, keyed, outcomesById, unique } from './domain.js';

async function members(ctx: RequestContext, command: GroupCommand, userIds: readonly string[] | null) {
  const run = capturing(groupDecider, plan);
  const r = await ctx.execute(run.decider, groupStream(ctx.apiKey, command.data.organizationId, command.data.groupId), command);
  const outcomes = run.outcomes();
  const groupId = command.data.groupId;
  // deleteAll reports every user it removed.
  const reported = userIds ?? r.events.map((e) => (e.data as { userId: string }).userId);
  return keyed(reported.map((u) => {
    const o = outcomes.get(u) ?? { success: false, message: 'User was not processed.' };
    return [u, { success: o.success, organizationUserGroupId: groupId, message: o.message }];
  }));
}

/** Membership changes answer per user: `{ [userId]: { success, organizationUserGroupId, message } }`. */
const memberOutcomes = outcomesById(
  z.object({
    success: z.boolean().describe('Whether this user\'s change went through; a failed user leaves the others as they are.'),
    organizationUserGroupId: z.string().describe('The group the change was made in (the one sent).'),
    message: z.string().describe('What happened to this user.'),
  }),
);

export function groupRoutes(services: Services): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/organizations/usergroups/add',
    tag: 'User groups',
    doc: {
      summary: 'Add user groups to an organization',
      description: 'Each group is its own item, keyed by groupId (each id once): a group id that exists fails its item ' +
        '("Organization user group already exists."). With `createOrganization: true` a missing organization is created first; ' +
        'otherwise an organization that does not exist is NOT_FOUND.',
      example: { organizationId: 'yourOrganizationId', organizationUserGroups: [{ groupId: 'engineering', groupName: 'Engineering' }] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      createOrganization: z.boolean().optional(),
      organizationUserGroups: items(z.object({ groupId: id(), groupName: text(256) })),
    }),
    response: outcomesById(idOutcome),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      if (data.createOrganization) {
        await ctx.execute(organizationDecider, organizationStream(ctx.apiKey, organizationId), {
          type: 'CreateOrganization', data: { organizationId, ifMissing: true }, metadata: { now: ctx.now },
        });
      }
      await organizationTree(services, ctx.apiKey, organizationId);
      const results = await eachItem(data.organizationUserGroups, (g) => g.groupId, (g) =>
        ctx.execute(groupDecider, groupStream(ctx.apiKey, organizationId, g.groupId), {
          type: 'AddGroup', data: { organizationId, groupId: g.groupId, groupName: g.groupName }, metadata: { now: ctx.now },
        }), 'Organization user group added.');
      return { message: 'Organization User Groups added successfully.', data: results };
    },
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
    async handler(data, ctx) {
      const { organizationId } = data;
      await organizationTree(services, ctx.apiKey, organizationId);
      const userIds = unique(data.userIds);
      // semantics §5: only organization members (a live organization grant) can join.
      const orgKey = resourceKey({ resourceType: 'organization', resourceId: organizationId });
      const allowed = await Promise.all(userIds.map(async (u) => {
        const { state } = await services.commands.load(grantsDecider, grantsStream(ctx.apiKey, organizationId, u));
        const g = state.grants[orgKey];
        return g && isLive(g, ctx.now) ? [u] : [];
      }));
      // commands/group.ts MAX_GROUPS_PER_USER: permission resolution looks at that many
      // groups per user, so joins beyond it are refused (the decider lets a user already in
      // this group through). Counted on the read model, as agent groups per key are.
      const full = await Promise.all(allowed.flat().map(async (u) =>
        (await services.read.count(GROUP_MEMBERS, { apiKey: ctx.apiKey, organizationId, userId: u })) >= MAX_GROUPS_PER_USER ? [u] : []));
      const results = await members(ctx, {
        type: 'AddMembers',
        data: { organizationId, groupId: data.organizationUserGroupId, userIds, members: allowed.flat(), atGroupLimit: full.flat() },
        metadata: { now: ctx.now },
      }, userIds);
      return { message: 'Added organization users to group successfully.', data: results };
    },
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
      const { organizationId } = data;
      if (!data.deleteAll && !data.userIds) throw invalidArgument('data.userIds is required unless data.deleteAll is true');
      await organizationTree(services, ctx.apiKey, organizationId);
      const userIds = data.deleteAll ? null : unique(data.userIds!);
      const results = await members(ctx, {
        type: 'RemoveMembers',
        data: { organizationId, groupId: data.organizationUserGroupId, userIds },
        metadata: { now: ctx.now },
      }, userIds);
      return { message: 'Deleted users from group successfully.', data: results };
    },
  });

  return [add, addUsers, removeUsers];
}
