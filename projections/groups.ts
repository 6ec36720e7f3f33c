/**
 * Read models of organization user groups: `user_groups` (one per group) and
 * `user_group_members` (one per membership, so "the groups of a user" and "the members of a
 * group" are both indexed lookups). Group grants are their own read model
 * (projections/group-grants.ts).
 */
import type { Doc } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { defineProjection } from '../src/runtime/projection.js';
import type { GroupEvent } from '../commands/group.js';
import type { OrganizationEvent } from '../commands/organization.js';
import { apiKeyOf } from './organizations.js';
import { queueCascade } from './cascade-work.js';

export const USER_GROUPS = 'user_groups';
export const GROUP_MEMBERS = 'user_group_members';

export interface GroupDoc extends Doc {
  apiKey: string;
  organizationId: string;
  groupId: string;
  groupName: string;
  seq: string;
}

export interface MemberDoc extends Doc {
  apiKey: string;
  organizationId: string;
  groupId: string;
  userId: string;
}

const groupKey = (apiKey: string, organizationId: string, groupId: string) => key(apiKey, organizationId, groupId);
export const memberKey = (apiKey: string, organizationId: string, groupId: string, userId: string) =>
  key(apiKey, organizationId, groupId, userId);

type Ev = GroupEvent | OrganizationEvent;

export const groupsProjection = defineProjection<Ev>({
  name: 'groups',
  indexes: [
    { collection: USER_GROUPS, fields: ['apiKey', 'organizationId', 'seq'] },
    { collection: GROUP_MEMBERS, fields: ['apiKey', 'organizationId', 'groupId', 'userId'] },
    { collection: GROUP_MEMBERS, fields: ['apiKey', 'organizationId', 'userId'] },
    // A user's groups in groupId order (permission resolution, queries/group-grants.ts).
    { collection: GROUP_MEMBERS, fields: ['apiKey', 'organizationId', 'userId', 'groupId'] },
    // A user's groups in every organization (users/data/get and delete).
    { collection: GROUP_MEMBERS, fields: ['apiKey', 'userId'] },
  ],
  handlers: {
    async UserGroupAdded(e, tx) {
      const d = e.data;
      const doc: GroupDoc = {
        _id: groupKey(apiKeyOf(e), d.organizationId, d.groupId),
        apiKey: apiKeyOf(e),
        organizationId: d.organizationId,
        groupId: d.groupId,
        groupName: d.groupName,
        seq: e.position,
      };
      await tx.upsert(USER_GROUPS, doc);
    },
    async UserGroupMemberAdded(e, tx) {
      const d = e.data;
      const doc: MemberDoc = {
        _id: memberKey(apiKeyOf(e), d.organizationId, d.groupId, d.userId),
        apiKey: apiKeyOf(e),
        organizationId: d.organizationId,
        groupId: d.groupId,
        userId: d.userId,
      };
      await tx.upsert(GROUP_MEMBERS, doc);
    },
    async UserGroupMemberRemoved(e, tx) {
      const d = e.data;
      await tx.delete(GROUP_MEMBERS, memberKey(apiKeyOf(e), d.organizationId, d.groupId, d.userId));
    },
    async UserGroupDeleted(e, tx) {
      const d = e.data;
      await tx.delete(USER_GROUPS, groupKey(apiKeyOf(e), d.organizationId, d.groupId));
      await tx.deleteMany(GROUP_MEMBERS, { apiKey: apiKeyOf(e), organizationId: d.organizationId, groupId: d.groupId });
    },
    async OrganizationDeleted(e, tx) {
      const organizationId = e.data.organizationId;
      const filter = { apiKey: apiKeyOf(e), organizationId };
      await queueCascade(tx, e, { collection: USER_GROUPS, filter, sort: 'seq', field: 'groupId' }, 'group', organizationId, 'organizationDeleted');
      await tx.deleteMany(USER_GROUPS, { apiKey: apiKeyOf(e), organizationId });
      await tx.deleteMany(GROUP_MEMBERS, { apiKey: apiKeyOf(e), organizationId });
    },
  },
});
