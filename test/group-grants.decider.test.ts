/**
 * Group grants on the write side (semantics §3 rule 7, commands/group.ts), given/when/then:
 * the replacement rule, the per-group bound, a missing group, deletion, and the bound on
 * groups per user at join time.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spec } from './support/decider.js';
import { groupDecider, plan, MAX_GRANTS_PER_GROUP, MAX_GROUPS_PER_USER, type GroupCommand, type GroupEvent } from '../commands/group.js';
import type { AccessRole, Resource } from '../commands/grant.js';

const now = 1_700_000_000_000;
const meta = { now };
const g = { organizationId: 'o', groupId: 'g' };
const org: Resource = { resourceType: 'organization', resourceId: 'o' };
const folder: Resource = { resourceType: 'folder', resourceId: 'f' };
const doc: Resource = { resourceType: 'document', resourceId: 'd' };
const LATER = 2_000_000_000;

const added: GroupEvent = { type: 'UserGroupAdded', data: { ...g, groupName: 'G', createdAt: now } };
const deleted: GroupEvent = { type: 'UserGroupDeleted', data: { ...g, deletedAt: now } };
const granted = (r: Resource, accessRole: AccessRole = 'editor', expiresAt: number | null = null): GroupEvent => ({
  type: 'GroupAccessGranted', data: { ...g, ...r, accessRole, expiresAt, grantedAt: now },
});
const revoked = (r: Resource): GroupEvent => ({ type: 'GroupAccessRevoked', data: { ...g, ...r, revokedAt: now } });
const grant = (...grants: Array<Resource & { accessRole: AccessRole; expiresAt?: number | null }>): GroupCommand =>
  ({ type: 'GrantGroupAccess', data: { ...g, grants }, metadata: meta });
const revoke = (...resources: Resource[]): GroupCommand => ({ type: 'RevokeGroupAccess', data: { ...g, resources }, metadata: meta });
const outcomes = (events: GroupEvent[], c: GroupCommand) =>
  Object.fromEntries(plan(c, events.reduce(groupDecider.evolve, groupDecider.initialState())).outcomes);

test('GrantGroupAccess: adds a grant per resource, default permanent', () => {
  spec(groupDecider).given([added]).when(grant({ ...org, accessRole: 'viewer' }, { ...folder, accessRole: 'editor' }, { ...doc, accessRole: 'viewer', expiresAt: LATER }))
    .then([granted(org, 'viewer'), granted(folder), granted(doc, 'viewer', LATER)]);
  assert.equal(outcomes([added], grant({ ...doc, accessRole: 'editor' })), { '["document","d"]': { success: true, message: 'Permission added.' } });
});

test('GrantGroupAccess: a new role replaces the old one; permanent replaces temporary', () => {
  spec(groupDecider).given([added, granted(doc)]).when(grant({ ...doc, accessRole: 'viewer' })).then([granted(doc, 'viewer')]);
  spec(groupDecider).given([added, granted(doc, 'viewer', LATER)]).when(grant({ ...doc, accessRole: 'editor' })).then([granted(doc)]);
  spec(groupDecider).given([added, granted(doc, 'viewer', LATER)]).when(grant({ ...doc, accessRole: 'editor', expiresAt: LATER + 1 })).then([granted(doc, 'editor', LATER + 1)]);
});

test('GrantGroupAccess: a temporary grant never replaces a permanent one (that resource is refused)', () => {
  const c = grant({ ...doc, accessRole: 'viewer', expiresAt: LATER }, { ...folder, accessRole: 'viewer', expiresAt: LATER });
  spec(groupDecider).given([added, granted(doc)]).when(c).then([granted(folder, 'viewer', LATER)]);
  const o = outcomes([added, granted(doc)], c)['["document","d"]'];
  assert.equal(o, { success: false, message: 'The group already has permanent access; a temporary grant does not replace it.', refused: 'permanentExists' });
});

test('GrantGroupAccess on a group that does not exist: every resource refused, nothing appended', () => {
  spec(groupDecider).given([]).when(grant({ ...doc, accessRole: 'editor' })).thenNothing();
  spec(groupDecider).given([added, deleted]).when(grant({ ...doc, accessRole: 'editor' })).thenNothing();
  assert.equal(outcomes([], grant({ ...doc, accessRole: 'editor' }, { ...org, accessRole: 'viewer' })), {
    '["document","d"]': { success: false, message: 'Organization user group does not exist.', refused: 'groupNotFound' },
    '["organization","o"]': { success: false, message: 'Organization user group does not exist.', refused: 'groupNotFound' },
  });
});

test(`GrantGroupAccess: a group holds at most ${MAX_GRANTS_PER_GROUP} grants; replacing one still passes`, () => {
  const full: GroupEvent[] = [added];
  for (let i = 0; i < MAX_GRANTS_PER_GROUP; i++) full.push(granted({ resourceType: 'document', resourceId: `d${i}` }));
  const extra: Resource = { resourceType: 'document', resourceId: 'one-more' };
  spec(groupDecider).given(full).when(grant({ ...extra, accessRole: 'editor' })).thenNothing();
  const o = outcomes(full, grant({ ...extra, accessRole: 'editor' }))['["document","one-more"]'];
  assert.is(o.success, false);
  assert.is(o.refused, 'grantLimit');
  assert.match(o.message, `at most ${MAX_GRANTS_PER_GROUP}`);
  // A grant on a resource the group holds already is a replacement, not one more.
  spec(groupDecider).given(full).when(grant({ resourceType: 'document', resourceId: 'd7', accessRole: 'viewer' })).then([granted({ resourceType: 'document', resourceId: 'd7' }, 'viewer')]);
  // One removed makes room for one.
  spec(groupDecider).given([...full, revoked({ resourceType: 'document', resourceId: 'd0' })]).when(grant({ ...extra, accessRole: 'editor' })).then([granted(extra)]);
});

test('GrantGroupAccess: the bound counts the grants of the same command', () => {
  const almost: GroupEvent[] = [added];
  for (let i = 0; i < MAX_GRANTS_PER_GROUP - 1; i++) almost.push(granted({ resourceType: 'document', resourceId: `d${i}` }));
  const a: Resource = { resourceType: 'folder', resourceId: 'a' };
  const b: Resource = { resourceType: 'folder', resourceId: 'b' };
  spec(groupDecider).given(almost).when(grant({ ...a, accessRole: 'editor' }, { ...b, accessRole: 'editor' })).then([granted(a)]);
  assert.is(outcomes(almost, grant({ ...a, accessRole: 'editor' }, { ...b, accessRole: 'editor' }))['["folder","b"]'].refused, 'grantLimit');
});

test('RevokeGroupAccess: removes; a grant that is not there is reported, not an error', () => {
  spec(groupDecider).given([added, granted(doc), granted(org)]).when(revoke(doc)).then([revoked(doc)]);
  spec(groupDecider).given([added]).when(revoke(doc)).thenNothing();
  spec(groupDecider).given([added, granted(doc)]).when(revoke(doc, doc)).then([revoked(doc)]);
  assert.equal(outcomes([added], revoke(doc)), { '["document","d"]': { success: true, message: 'Permission does not exist.' } });
  assert.equal(outcomes([added, granted(doc)], revoke(doc)), { '["document","d"]': { success: true, message: 'Permission removed.' } });
});

test('RevokeGroupAccess on a group that does not exist: refused per resource, nothing appended (the cascade relies on it)', () => {
  spec(groupDecider).given([added, granted(doc), deleted]).when(revoke(doc)).thenNothing();
  assert.equal(outcomes([], revoke(doc))['["document","d"]'], { success: false, message: 'Organization user group does not exist.', refused: 'groupNotFound' });
});

test('DeleteGroup takes the grants along: a group re-created with the same id starts with none', () => {
  const again = [added, granted(doc), deleted, added];
  spec(groupDecider).given(again).when(revoke(doc)).thenNothing();
  // No permanent grant is left to refuse a temporary one.
  spec(groupDecider).given(again).when(grant({ ...doc, accessRole: 'viewer', expiresAt: LATER })).then([granted(doc, 'viewer', LATER)]);
  const state = spec(groupDecider).given(again).state;
  assert.equal(state.status === 'active' && state.grants, {});
});

test('grants and membership are independent: members come and go, grants stay', () => {
  const events: GroupEvent[] = [
    added, granted(folder, 'viewer'),
    { type: 'UserGroupMemberAdded', data: { ...g, userId: 'a' } },
    { type: 'UserGroupMemberRemoved', data: { ...g, userId: 'a' } },
  ];
  spec(groupDecider).given(events).when(revoke(folder)).then([revoked(folder)]);
  spec(groupDecider).given(events).when({ type: 'RemoveMembers', data: { ...g, userIds: null }, metadata: meta }).thenNothing();
});

test(`AddMembers: a user in ${MAX_GROUPS_PER_USER} groups of the organization cannot join one more; already in this one passes`, () => {
  const c: GroupCommand = { type: 'AddMembers', data: { ...g, userIds: ['full', 'ok'], members: ['full', 'ok'], atGroupLimit: ['full'] }, metadata: meta };
  spec(groupDecider).given([added]).when(c).then([{ type: 'UserGroupMemberAdded', data: { ...g, userId: 'ok' } }]);
  const o = outcomes([added], c).full;
  assert.is(o.success, false);
  assert.match(o.message, `at most ${MAX_GROUPS_PER_USER} groups`);
  const inside: GroupEvent[] = [added, { type: 'UserGroupMemberAdded', data: { ...g, userId: 'full' } }];
  spec(groupDecider).given(inside).when(c).then([{ type: 'UserGroupMemberAdded', data: { ...g, userId: 'ok' } }]);
  assert.equal(outcomes(inside, c).full, { success: true, message: 'User added to organization user group.' });
  // A non-member of the organization is refused for that first.
  assert.is(outcomes([added], { ...c, data: { ...c.data, members: ['ok'] } }).full.message, 'User is not a member of the organization.');
});

test('evolve never throws: grant events on a missing group change nothing', () => {
  const state = [granted(doc), revoked(doc)].reduce(groupDecider.evolve, groupDecider.initialState());
  assert.equal(state, { status: 'none' });
});

test.run();
