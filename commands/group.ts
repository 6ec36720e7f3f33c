/**
 * Organization user group aggregate: a name, a membership list and the group's grants, one
 * stream per group: `streamName('usergroup', apiKey, organizationId, groupId)`.
 *
 * Group grants (semantics §3 rule 7): `/v2/auth/permissions/add|remove` with
 * `group: { groupId }` grant or revoke access on the group's own organization, its folders
 * and documents; every member has that grant as a candidate (queries/permissions.ts). They
 * live in the group's stream, not in a stream of their own, so that:
 * - "the group belongs to the resources' organization" is decided on the same state that
 *   holds the grant (a missing group refuses each resource, and no grant is ever stored for
 *   a group that does not exist);
 * - deleting the group (UserGroupDeleted) takes its grants with it in the same event, and a
 *   group re-created with the same id starts with none.
 * The replacement rule is the user form's (semantics §3 "Grants", commands/grant.ts): a
 * temporary grant never replaces a permanent one; a permanent one replaces anything; an
 * expired grant counts as absent on the read side. Group grants carry no access fields
 * (semantics §4a's `context` is refused with a group at the edge): fields describe what one
 * user holds, and a group's would have to be bounded per member anew.
 *
 * Bounds: a group holds at most MAX_GRANTS_PER_GROUP grants (expired ones count until they
 * are removed or replaced): permission resolution reads at most that many per group. A user
 * joins at most MAX_GROUPS_PER_USER groups of one organization (usergroups/users/add, counted
 * on the read model): resolution looks at that many groups per user.
 */
import { ApiError, assertNever, notFound } from '../src/shared/errors.js';
import type { Command, DomainEvent, Planned, PlanningDecider } from '../src/runtime/decider.js';
import { streamName } from '../src/shared/ids.js';
import { resourceKey, type AccessRole, type Resource } from './grant.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/shared/ids.ts). */
export const groupStream = (apiKey: string, organizationId: string, groupId: string) =>
  streamName('usergroup', apiKey, organizationId, groupId);

type GroupRef = {
  organizationId: string;
  groupId: string;
};

// ---- events ----

export type GroupEvent =
  | DomainEvent<'UserGroupAdded', GroupRef & { groupName: string; createdAt: number }>
  | DomainEvent<'UserGroupMemberAdded', GroupRef & { userId: string }>
  | DomainEvent<'UserGroupMemberRemoved', GroupRef & { userId: string }>
  | DomainEvent<'UserGroupDeleted', GroupRef & { deletedAt: number }>
  | DomainEvent<'GroupAccessGranted', GroupRef & Resource & {
      accessRole: AccessRole;
      /** Unix seconds; null: permanent. */
      expiresAt: number | null;
      grantedAt: number;
    }>
  | DomainEvent<'GroupAccessRevoked', GroupRef & Resource & { revokedAt: number }>;

// ---- state ----

type GroupGrant = Resource & { accessRole: AccessRole; expiresAt: number | null };

export type GroupState =
  | { status: 'none' }
  | {
      status: 'active';
      groupName: string;
      members: Readonly<Record<string, true>>;
      /** Keyed by `resourceKey` (commands/grant.ts). */
      grants: Readonly<Record<string, GroupGrant>>;
    };

/**
 * A group holds at most this many grants (live or expired: an expired one stays until it is
 * removed or replaced). Permission resolution reads at most this many grants per group of a
 * user, whatever the organization's size (docs/limits.md).
 */
export const MAX_GRANTS_PER_GROUP = 1000;
/**
 * A user joins at most this many groups of one organization (usergroups/users/add, counted on
 * the read model: two joins at the same instant may both take the last place). Permission
 * resolution considers at most this many groups per user, the first in groupId order.
 */
export const MAX_GROUPS_PER_USER = 100;

const initialState = (): GroupState => ({ status: 'none' });

// ---- evolve ----

function evolve(state: GroupState, event: GroupEvent): GroupState {
  switch (event.type) {
    case 'UserGroupAdded':
      return { status: 'active', groupName: event.data.groupName, members: {}, grants: {} };
    case 'UserGroupDeleted':
      return { status: 'none' };
    case 'UserGroupMemberAdded':
      return state.status === 'active' ? { ...state, members: { ...state.members, [event.data.userId]: true } } : state;
    case 'UserGroupMemberRemoved': {
      if (state.status !== 'active') return state;
      const { [event.data.userId]: _gone, ...members } = state.members;
      return { ...state, members };
    }
    case 'GroupAccessGranted': {
      if (state.status !== 'active') return state;
      const { resourceType, resourceId, accessRole, expiresAt } = event.data;
      return { ...state, grants: { ...state.grants, [resourceKey(event.data)]: { resourceType, resourceId, accessRole, expiresAt } } };
    }
    case 'GroupAccessRevoked': {
      const k = resourceKey(event.data);
      if (state.status !== 'active' || !(k in state.grants)) return state;
      const { [k]: _gone, ...grants } = state.grants;
      return { ...state, grants };
    }
    default:
      return assertNever(event, 'group event');
  }
}

// ---- commands ----

export type GroupCommand =
  | Command<'AddGroup', GroupRef & { groupName: string }>
  /**
   * `members`: the users that may join (organization members); the others fail.
   * `atGroupLimit`: users already in MAX_GROUPS_PER_USER groups of the organization; they
   * fail unless they are in this group already.
   */
  | Command<'AddMembers', GroupRef & { userIds: string[]; members: string[]; atGroupLimit?: string[] }>
  /** `userIds` null: every member (deleteAll). */
  | Command<'RemoveMembers', GroupRef & { userIds: string[] | null }>
  | Command<'DeleteGroup', GroupRef>
  /** permissions/add with `group`: resources of the group's organization that exist. */
  | Command<'GrantGroupAccess', GroupRef & { grants: Array<Resource & { accessRole: AccessRole; expiresAt?: number | null }> }>
  | Command<'RevokeGroupAccess', GroupRef & { resources: Resource[] }>
  /**
   * The group's grant on `from` becomes the same grant on `to` (documents/migrate), in one
   * append, so the group's grant count stays as it was. No grant on `from`: nothing.
   */
  | Command<'MoveGroupAccess', GroupRef & { from: Resource; to: Resource }>;

// ---- decide ----

export interface MemberOutcome {
  success: boolean;
  message: string;
  /** Group grants only: why a grant was refused. */
  refused?: 'groupNotFound' | 'permanentExists' | 'grantLimit';
}

const groupNotFound = () => notFound('Organization user group does not exist.');
/** A group grant on a group that does not exist fails that resource, as a missing resource does. */
const groupMissing = (): MemberOutcome => ({ success: false, message: 'Organization user group does not exist.', refused: 'groupNotFound' });

type GroupCommandOf<T extends GroupCommand['type']> = Extract<GroupCommand, { type: T }>;
type ActiveGroup = Extract<GroupState, { status: 'active' }>;
type Plan = Planned<GroupEvent, MemberOutcome>;

export function plan(command: GroupCommand, state: GroupState): Plan {
  const { organizationId, groupId } = command.data;
  const now = command.metadata.now;
  switch (command.type) {
    case 'AddGroup':
      if (state.status === 'active') throw new ApiError('ALREADY_EXISTS', 'Organization user group already exists.');
      return { events: [{ type: 'UserGroupAdded', data: { organizationId, groupId, groupName: command.data.groupName, createdAt: now } }], outcomes: new Map() };
    case 'DeleteGroup':
      return { events: state.status === 'active' ? [{ type: 'UserGroupDeleted', data: { organizationId, groupId, deletedAt: now } }] : [], outcomes: new Map() };
    case 'AddMembers':
      if (state.status !== 'active') throw groupNotFound();
      return planAddMembers(command, state);
    case 'RemoveMembers':
      if (state.status !== 'active') throw groupNotFound();
      return planRemoveMembers(command, state);
    case 'GrantGroupAccess':
      return planGrantAccess(command, state);
    case 'RevokeGroupAccess':
      return planRevokeAccess(command, state);
    case 'MoveGroupAccess':
      return { events: movedAccess(command, state), outcomes: new Map() };
    default:
      return assertNever(command, 'group command');
  }
}

/** Members join one by one: a user who is no organization member, or already in too many groups, fails alone. */
function planAddMembers(command: GroupCommandOf<'AddMembers'>, state: ActiveGroup): Plan {
  const { organizationId, groupId } = command.data;
  const outcomes = new Map<string, MemberOutcome>();
  const events: GroupEvent[] = [];
  const allowed = new Set(command.data.members);
  const full = new Set(command.data.atGroupLimit ?? []);
  const joined = new Set(Object.keys(state.members));
  for (const userId of command.data.userIds) {
    if (!allowed.has(userId)) {
      outcomes.set(userId, { success: false, message: 'User is not a member of the organization.' });
      continue;
    }
    if (full.has(userId) && !joined.has(userId)) {
      outcomes.set(userId, {
        success: false,
        message: `User is already in ${MAX_GROUPS_PER_USER} groups of this organization; a user belongs to at most ${MAX_GROUPS_PER_USER} groups in one organization.`,
      });
      continue;
    }
    if (!joined.has(userId)) events.push({ type: 'UserGroupMemberAdded', data: { organizationId, groupId, userId } });
    joined.add(userId);
    outcomes.set(userId, { success: true, message: 'User added to organization user group.' });
  }
  return { events, outcomes };
}

/** Members leave one by one (every member when `userIds` is null); one not in the group fails alone. */
function planRemoveMembers(command: GroupCommandOf<'RemoveMembers'>, state: ActiveGroup): Plan {
  const { organizationId, groupId } = command.data;
  const outcomes = new Map<string, MemberOutcome>();
  const events: GroupEvent[] = [];
  const left = new Set(Object.keys(state.members));
  for (const userId of command.data.userIds ?? Object.keys(state.members)) {
    if (!left.has(userId)) {
      outcomes.set(userId, { success: false, message: 'User is not in the organization user group.' });
      continue;
    }
    left.delete(userId);
    events.push({ type: 'UserGroupMemberRemoved', data: { organizationId, groupId, userId } });
    outcomes.set(userId, { success: true, message: 'User deleted from organization user group.' });
  }
  return { events, outcomes };
}

/**
 * Grants per resource: a temporary grant never replaces a live permanent one, and a new
 * resource beyond MAX_GRANTS_PER_GROUP fails; on a group that does not exist every resource fails.
 */
function planGrantAccess(command: GroupCommandOf<'GrantGroupAccess'>, state: GroupState): Plan {
  const { organizationId, groupId, grants: requested } = command.data;
  const outcomes = new Map<string, MemberOutcome>();
  const events: GroupEvent[] = [];
  if (state.status !== 'active') {
    for (const g of requested) outcomes.set(resourceKey(g), groupMissing());
    return { events, outcomes };
  }
  const grants: Record<string, GroupGrant> = { ...state.grants };
  let held = Object.keys(grants).length;
  for (const g of requested) {
    const k = resourceKey(g);
    const current = grants[k];
    const expiresAt = g.expiresAt ?? null;
    if (expiresAt !== null && current && current.expiresAt === null) {
      outcomes.set(k, { success: false, message: 'The group already has permanent access; a temporary grant does not replace it.', refused: 'permanentExists' });
      continue;
    }
    if (!current && held >= MAX_GRANTS_PER_GROUP) {
      outcomes.set(k, {
        success: false,
        message: `The group already holds ${held} grants; a group holds at most ${MAX_GRANTS_PER_GROUP} (remove one first).`,
        refused: 'grantLimit',
      });
      continue;
    }
    if (!current) held++;
    grants[k] = { resourceType: g.resourceType, resourceId: g.resourceId, accessRole: g.accessRole, expiresAt };
    events.push({
      type: 'GroupAccessGranted',
      data: { organizationId, groupId, resourceType: g.resourceType, resourceId: g.resourceId, accessRole: g.accessRole, expiresAt, grantedAt: command.metadata.now },
    });
    outcomes.set(k, { success: true, message: 'Permission added.' });
  }
  return { events, outcomes };
}

function movedAccess(command: GroupCommandOf<'MoveGroupAccess'>, state: GroupState): GroupEvent[] {
  const { organizationId, groupId, from, to } = command.data;
  const g = state.status === 'active' ? state.grants[resourceKey(from)] : undefined;
  if (!g) return [];
  const now = command.metadata.now;
  return [
    { type: 'GroupAccessGranted', data: { organizationId, groupId, resourceType: to.resourceType, resourceId: to.resourceId, accessRole: g.accessRole, expiresAt: g.expiresAt, grantedAt: now } },
    { type: 'GroupAccessRevoked', data: { organizationId, groupId, resourceType: from.resourceType, resourceId: from.resourceId, revokedAt: now } },
  ];
}

/** Revokes per resource; a grant that is not there succeeds ("Permission does not exist."). */
function planRevokeAccess(command: GroupCommandOf<'RevokeGroupAccess'>, state: GroupState): Plan {
  const { organizationId, groupId } = command.data;
  const outcomes = new Map<string, MemberOutcome>();
  const events: GroupEvent[] = [];
  const gone = new Set<string>();
  for (const r of command.data.resources) {
    const k = resourceKey(r);
    if (state.status !== 'active') {
      outcomes.set(k, groupMissing());
      continue;
    }
    if (!state.grants[k] || gone.has(k)) {
      outcomes.set(k, { success: true, message: 'Permission does not exist.' });
      continue;
    }
    gone.add(k);
    events.push({ type: 'GroupAccessRevoked', data: { organizationId, groupId, resourceType: r.resourceType, resourceId: r.resourceId, revokedAt: command.metadata.now } });
    outcomes.set(k, { success: true, message: 'Permission removed.' });
  }
  return { events, outcomes };
}

const decide = (command: GroupCommand, state: GroupState): GroupEvent[] => plan(command, state).events;

export const groupDecider: PlanningDecider<GroupState, GroupCommand, GroupEvent, MemberOutcome> = { name: 'usergroup', initialState, evolve, decide, plan };
