/**
 * Organization user group aggregate: a name and a membership list, one stream per group:
 * `streamName('usergroup', apiKey, organizationId, groupId)`. Groups grant no access in
 * this version (semantics §3 rule 7): they are membership lists.
 */
import { ApiError, assertNever, notFound } from '../src/errors.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import type { Planned } from './outcomes.js';
import { streamName } from '../src/ids.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/ids.ts). */
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
  | DomainEvent<'UserGroupDeleted', GroupRef & { deletedAt: number }>;

// ---- state ----

export type GroupState =
  | { status: 'none' }
  | { status: 'active'; groupName: string; members: Readonly<Record<string, true>> };

export const initialState = (): GroupState => ({ status: 'none' });

// ---- evolve ----

export function evolve(state: GroupState, event: GroupEvent): GroupState {
  switch (event.type) {
    case 'UserGroupAdded':
      return { status: 'active', groupName: event.data.groupName, members: {} };
    case 'UserGroupDeleted':
      return { status: 'none' };
    case 'UserGroupMemberAdded':
      return state.status === 'active' ? { ...state, members: { ...state.members, [event.data.userId]: true } } : state;
    case 'UserGroupMemberRemoved': {
      if (state.status !== 'active') return state;
      const { [event.data.userId]: _gone, ...members } = state.members;
      return { ...state, members };
    }
    default:
      return assertNever(event, 'group event');
  }
}

// ---- commands ----

export type GroupCommand =
  | Command<'AddGroup', GroupRef & { groupName: string }>
  /** `members`: the users that may join (organization members); the others fail. */
  | Command<'AddMembers', GroupRef & { userIds: string[]; members: string[] }>
  /** `userIds` null: every member (deleteAll). */
  | Command<'RemoveMembers', GroupRef & { userIds: string[] | null }>
  | Command<'DeleteGroup', GroupRef>;

// ---- decide ----

export interface MemberOutcome {
  success: boolean;
  message: string;
}

export const groupNotFound = () => notFound('Organization user group does not exist.');

export function plan(command: GroupCommand, state: GroupState): Planned<GroupEvent, MemberOutcome> {
  const { organizationId, groupId } = command.data;
  const outcomes = new Map<string, MemberOutcome>();
  const events: GroupEvent[] = [];
  switch (command.type) {
    case 'AddGroup':
      if (state.status === 'active') throw new ApiError('ALREADY_EXISTS', 'Organization user group already exists.');
      return { events: [{ type: 'UserGroupAdded', data: { organizationId, groupId, groupName: command.data.groupName, createdAt: command.metadata.now } }], outcomes };
    case 'DeleteGroup':
      return { events: state.status === 'active' ? [{ type: 'UserGroupDeleted', data: { organizationId, groupId, deletedAt: command.metadata.now } }] : [], outcomes };
    case 'AddMembers': {
      if (state.status !== 'active') throw groupNotFound();
      const allowed = new Set(command.data.members);
      const joined = new Set(Object.keys(state.members));
      for (const userId of command.data.userIds) {
        if (!allowed.has(userId)) {
          outcomes.set(userId, { success: false, message: 'User is not a member of the organization.' });
          continue;
        }
        if (!joined.has(userId)) events.push({ type: 'UserGroupMemberAdded', data: { organizationId, groupId, userId } });
        joined.add(userId);
        outcomes.set(userId, { success: true, message: 'User added to organization user group.' });
      }
      return { events, outcomes };
    }
    case 'RemoveMembers': {
      if (state.status !== 'active') throw groupNotFound();
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
    default:
      return assertNever(command, 'group command');
  }
}

export const decide = (command: GroupCommand, state: GroupState): GroupEvent[] => plan(command, state).events;

export const groupDecider: Decider<GroupState, GroupCommand, GroupEvent> = { name: 'usergroup', initialState, evolve, decide };
