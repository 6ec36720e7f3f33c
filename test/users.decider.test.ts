import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spec } from './support/decider.js';
import { grantsDecider, plan as grantPlan, type GrantEvent, type GrantsCommand, type Resource } from '../commands/grant.js';
import { userDecider, initialOf, type UserEvent } from '../commands/user.js';
import { groupDecider, plan as groupPlan, type GroupEvent, type GroupCommand } from '../commands/group.js';

const now = 1_700_000_000_000;
const meta = { now };
const u = { organizationId: 'o', userId: 'u' };
const orgRes: Resource = { resourceType: 'organization', resourceId: 'o' };
const docRes: Resource = { resourceType: 'document', resourceId: 'd' };
const granted = (r: Resource = orgRes, accessRole: 'editor' | 'viewer' = 'editor', expiresAt: number | null = null): GrantEvent => ({
  type: 'GrantAdded', data: { ...u, ...r, accessRole, expiresAt, grantedAt: now },
});
const revoked = (r: Resource = orgRes): GrantEvent => ({ type: 'GrantRevoked', data: { ...u, ...r, revokedAt: now } });
const grantOutcomes = (events: GrantEvent[], c: GrantsCommand) =>
  [...grantPlan(c, events.reduce(grantsDecider.evolve, grantsDecider.initialState())).outcomes.values()];

test('Grant: adds, replaces role, permanent replaces temporary', () => {
  spec(grantsDecider).given([]).when({ type: 'Grant', data: { ...u, grants: [{ ...orgRes, accessRole: 'editor' }] }, metadata: meta }).then([granted()]);
  spec(grantsDecider).given([granted()]).when({ type: 'Grant', data: { ...u, grants: [{ ...orgRes, accessRole: 'viewer' }] }, metadata: meta }).then([granted(orgRes, 'viewer')]);
  spec(grantsDecider).given([granted(orgRes, 'viewer', 1)]).when({ type: 'Grant', data: { ...u, grants: [{ ...orgRes, accessRole: 'editor' }] }, metadata: meta }).then([granted()]);
});

test('Grant: a temporary grant never replaces a permanent one (refused for that resource)', () => {
  const c: GrantsCommand = { type: 'Grant', data: { ...u, grants: [{ ...orgRes, accessRole: 'viewer', expiresAt: 2_000_000_000 }, { ...docRes, accessRole: 'viewer', expiresAt: 2_000_000_000 }] }, metadata: meta };
  spec(grantsDecider).given([granted()]).when(c).then([granted(docRes, 'viewer', 2_000_000_000)]);
  assert.equal(grantOutcomes([granted()], c)[0]!.success, false);
  assert.match(grantOutcomes([granted()], c)[0]!.message, /permanent/);
});

test('Revoke: removes; missing is reported, not an error', () => {
  spec(grantsDecider).given([granted()]).when({ type: 'Revoke', data: { ...u, resources: [orgRes] }, metadata: meta }).then([revoked()]);
  spec(grantsDecider).given([]).when({ type: 'Revoke', data: { ...u, resources: [orgRes] }, metadata: meta }).thenNothing();
  assert.equal(grantOutcomes([], { type: 'Revoke', data: { ...u, resources: [orgRes] }, metadata: meta }), [{ success: true, message: 'Permission does not exist.' }]);
});

test('RevokeAll: every grant of the user in the organization', () => {
  spec(grantsDecider).given([granted(), granted(docRes)]).when({ type: 'RevokeAll', data: u, metadata: meta }).then([revoked(), revoked(docRes)]);
  spec(grantsDecider).given([granted(), revoked()]).when({ type: 'RevokeAll', data: u, metadata: meta }).thenNothing();
});

test('SaveUser: creates with a derived initial, then updates only what changed', () => {
  spec(userDecider).given([]).when({ type: 'SaveUser', data: { userId: 'u', name: 'ada lovelace', email: 'a@x.io' }, metadata: meta }).then([
    { type: 'UserAdded', data: { userId: 'u', name: 'ada lovelace', email: 'a@x.io', initial: 'AL', createdAt: now } },
  ]);
  const added: UserEvent = { type: 'UserAdded', data: { userId: 'u', name: 'Ada', email: 'a@x.io', initial: 'A', createdAt: now } };
  spec(userDecider).given([added]).when({ type: 'SaveUser', data: { userId: 'u', name: 'Bob Ross' }, metadata: meta }).then([
    { type: 'UserProfileUpdated', data: { userId: 'u', name: 'Bob Ross', initial: 'BR' } },
  ]);
  spec(userDecider).given([added]).when({ type: 'SaveUser', data: { userId: 'u', name: 'Ada' }, metadata: meta }).thenNothing();
  spec(userDecider).given([]).when({ type: 'UpdateUser', data: { userId: 'u', name: 'x' }, metadata: meta }).thenNothing();
  assert.is(initialOf('  émile   zola  '), 'ÉZ');
  assert.is(initialOf(''), '');
});

test('SaveUser with sealed fields: the initial comes with the command, an unchanged sealed value writes nothing', () => {
  // Sealed values are opaque to the decider: what it must not do is derive an initial from one.
  const data = { userId: 'u', name: 'enc:v1:k:NAME', email: 'enc:v1:k:MAIL', derivedInitial: 'enc:v1:k:INIT' };
  const added: UserEvent = { type: 'UserAdded', data: { userId: 'u', name: 'enc:v1:k:NAME', email: 'enc:v1:k:MAIL', initial: 'enc:v1:k:INIT', createdAt: now } };
  spec(userDecider).given([]).when({ type: 'SaveUser', data, metadata: meta }).then([added]);
  spec(userDecider).given([added]).when({ type: 'SaveUser', data, metadata: meta }).thenNothing();
  spec(userDecider).given([added]).when({ type: 'SaveUser', data: { ...data, name: 'enc:v1:k:NEW', derivedInitial: 'enc:v1:k:NI' }, metadata: meta }).then([
    { type: 'UserProfileUpdated', data: { userId: 'u', name: 'enc:v1:k:NEW', initial: 'enc:v1:k:NI' } },
  ]);
});

test('EraseUser: always recorded (the job counts it); the user is unknown again after it', () => {
  const added: UserEvent = { type: 'UserAdded', data: { userId: 'u', name: 'x', email: '', initial: 'X', createdAt: now } };
  const erased: UserEvent = { type: 'UserErased', data: { userId: 'u', jobId: 'j', jobTasks: 2, erasedAt: now } };
  spec(userDecider).given([added]).when({ type: 'EraseUser', data: { userId: 'u', jobId: 'j', jobTasks: 2 }, metadata: meta }).then([erased]);
  spec(userDecider).given([]).when({ type: 'EraseUser', data: { userId: 'u', jobId: 'j', jobTasks: 2 }, metadata: meta }).then([erased]);
  spec(userDecider).given([added, erased]).when({ type: 'UpdateUser', data: { userId: 'u', name: 'y' }, metadata: meta }).thenNothing();
  spec(userDecider).given([added, erased]).when({ type: 'SaveUser', data: { userId: 'u', name: 'y' }, metadata: meta }).then([
    { type: 'UserAdded', data: { userId: 'u', name: 'y', email: '', initial: 'Y', createdAt: now } },
  ]);
});

const g = { organizationId: 'o', groupId: 'g' };
const groupAdded: GroupEvent = { type: 'UserGroupAdded', data: { ...g, groupName: 'G', createdAt: now } };
const groupOutcomes = (events: GroupEvent[], c: GroupCommand) =>
  Object.fromEntries(groupPlan(c, events.reduce(groupDecider.evolve, groupDecider.initialState())).outcomes);

test('AddGroup: adds; twice is ALREADY_EXISTS', () => {
  spec(groupDecider).given([]).when({ type: 'AddGroup', data: { ...g, groupName: 'G' }, metadata: meta }).then([groupAdded]);
  spec(groupDecider).given([groupAdded]).when({ type: 'AddGroup', data: { ...g, groupName: 'G' }, metadata: meta }).thenFails('ALREADY_EXISTS');
});

test('AddMembers: only organization members; missing group is NOT_FOUND', () => {
  const c: GroupCommand = { type: 'AddMembers', data: { ...g, userIds: ['a', 'b'], members: ['a'] }, metadata: meta };
  spec(groupDecider).given([groupAdded]).when(c).then([{ type: 'UserGroupMemberAdded', data: { ...g, userId: 'a' } }]);
  assert.equal(groupOutcomes([groupAdded], c).b, { success: false, message: 'User is not a member of the organization.' });
  spec(groupDecider).given([]).when(c).thenFails('NOT_FOUND', 'Organization user group does not exist.');
});

test('RemoveMembers: listed users or all; a non-member is reported', () => {
  const joined: GroupEvent[] = [groupAdded, { type: 'UserGroupMemberAdded', data: { ...g, userId: 'a' } }, { type: 'UserGroupMemberAdded', data: { ...g, userId: 'b' } }];
  spec(groupDecider).given(joined).when({ type: 'RemoveMembers', data: { ...g, userIds: null }, metadata: meta }).then([
    { type: 'UserGroupMemberRemoved', data: { ...g, userId: 'a' } },
    { type: 'UserGroupMemberRemoved', data: { ...g, userId: 'b' } },
  ]);
  const c: GroupCommand = { type: 'RemoveMembers', data: { ...g, userIds: ['a', 'z'] }, metadata: meta };
  spec(groupDecider).given(joined).when(c).then([{ type: 'UserGroupMemberRemoved', data: { ...g, userId: 'a' } }]);
  assert.equal(groupOutcomes(joined, c).z, { success: false, message: 'User is not in the organization user group.' });
  spec(groupDecider).given([]).when(c).thenFails('NOT_FOUND');
  spec(groupDecider).given([groupAdded]).when({ type: 'DeleteGroup', data: g, metadata: meta }).then([{ type: 'UserGroupDeleted', data: { ...g, deletedAt: now } }]);
});

test.run();
