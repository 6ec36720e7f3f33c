/**
 * User aggregate: a user's profile, per API key (semantics §5: the same userId across the
 * key's organizations is one person): `streamName('user', apiKey, userId)`. Access lives in
 * the grants aggregate (commands/grant.ts), per organization.
 */
import { assertNever } from '../src/shared/errors.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import { streamName } from '../src/shared/ids.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/shared/ids.ts). */
export const userStream = (apiKey: string, userId: string) => streamName('user', apiKey, userId);

type Profile = {
  name: string;
  email: string;
  initial: string;
};

// ---- events ----

export type UserEvent =
  | DomainEvent<'UserAdded', Profile & { userId: string; createdAt: number }>
  | DomainEvent<'UserProfileUpdated', Partial<Profile> & { userId: string }>
  /**
   * users/data/delete: the user's personal data was erased (their key destroyed, their
   * profile row gone); one of `jobTasks` tasks of deletion job `jobId`.
   */
  | DomainEvent<'UserErased', { userId: string; jobId: string; jobTasks: number; erasedAt: number }>;

// ---- state ----

export type UserState = { status: 'none' } | ({ status: 'active' } & Profile);

const initialState = (): UserState => ({ status: 'none' });

// ---- evolve ----

function evolve(state: UserState, event: UserEvent): UserState {
  switch (event.type) {
    case 'UserAdded': {
      const { name, email, initial } = event.data;
      return { status: 'active', name, email, initial };
    }
    case 'UserProfileUpdated': {
      if (state.status !== 'active') return state;
      const { userId: _id, ...changes } = event.data;
      return { ...state, ...changes };
    }
    case 'UserErased':
      return { status: 'none' };
    default:
      return assertNever(event, 'user event');
  }
}

// ---- commands ----

/** `derivedInitial`: the initial of `name` when `initial` is not given (the caller derives it before sealing both). */
type ProfileInput = { userId: string; name?: string; email?: string; initial?: string; derivedInitial?: string };

export type UserCommand =
  /** users/add: creates the profile, or updates the fields given (semantics §5). */
  | Command<'SaveUser', ProfileInput>
  | Command<'UpdateUser', ProfileInput>
  /** users/data/delete: one user's task of a deletion job. */
  | Command<'EraseUser', { userId: string; jobId: string; jobTasks: number }>;

// ---- decide ----

/** semantics §5 / spec rule 6: the first letters of the name's words, at most two. */
export function initialOf(name: string): string {
  const words = name.trim().split(/\s+/).filter(Boolean);
  return words.slice(0, 2).map((w) => [...w][0]!.toUpperCase()).join('');
}

function changes(state: Extract<UserState, { status: 'active' }>, d: Partial<Profile> & { derivedInitial?: string }): Partial<Profile> {
  const out: Partial<Profile> = {};
  if (d.name !== undefined && d.name !== state.name) out.name = d.name;
  if (d.email !== undefined && d.email !== state.email) out.email = d.email;
  const initial = d.initial ?? (out.name !== undefined ? (d.derivedInitial ?? initialOf(out.name)) : undefined);
  if (initial !== undefined && initial !== state.initial) out.initial = initial;
  return out;
}

function decide(command: UserCommand, state: UserState): UserEvent[] {
  switch (command.type) {
    case 'SaveUser': {
      const { userId, ...profile } = command.data;
      if (state.status === 'none') {
        const name = profile.name ?? '';
        const initial = profile.initial ?? profile.derivedInitial ?? initialOf(name);
        return [{ type: 'UserAdded', data: { userId, name, email: profile.email ?? '', initial, createdAt: command.metadata.now } }];
      }
      const c = changes(state, profile);
      return Object.keys(c).length ? [{ type: 'UserProfileUpdated', data: { userId, ...c } }] : [];
    }
    case 'UpdateUser': {
      const { userId, ...profile } = command.data;
      if (state.status === 'none') return [];
      const c = changes(state, profile);
      return Object.keys(c).length ? [{ type: 'UserProfileUpdated', data: { userId, ...c } }] : [];
    }
    case 'EraseUser': {
      const { userId, jobId, jobTasks } = command.data;
      return [{ type: 'UserErased', data: { userId, jobId, jobTasks, erasedAt: command.metadata.now } }];
    }
    default:
      return assertNever(command, 'user command');
  }
}

export const userDecider: Decider<UserState, UserCommand, UserEvent> = { name: 'user', initialState, evolve, decide };
