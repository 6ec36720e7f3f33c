/**
 * Grants aggregate: every grant one user holds inside one organization, in one stream:
 * `streamName('grants', apiKey, organizationId, userId)`.
 *
 * One stream per (organization, user) makes "remove this user from the organization"
 * (users/delete without a scope: membership AND every grant inside, semantics §5) one
 * atomic append, and keeps the replacement rule in one place (semantics §3 "Grants"):
 * a temporary grant never replaces a live permanent one; a permanent one replaces anything;
 * an expired grant counts as absent.
 */
import { assertNever } from '../src/errors.js';
import { key } from '../src/ids.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import type { Planned } from './outcomes.js';
import { streamName } from '../src/ids.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/ids.ts). */
export const grantsStream = (apiKey: string, organizationId: string, userId: string) =>
  streamName('grants', apiKey, organizationId, userId);

export type AccessRole = 'editor' | 'viewer';
export const ACCESS_ROLES = ['editor', 'viewer'] as const;
export type ResourceType = 'organization' | 'folder' | 'document';

export type Resource = {
  resourceType: ResourceType;
  /** The organization id for an organization grant. */
  resourceId: string;
};

// ---- events ----

export type GrantEvent =
  | DomainEvent<'GrantAdded', Resource & {
      organizationId: string;
      userId: string;
      accessRole: AccessRole;
      /** Unix seconds; null: permanent. */
      expiresAt: number | null;
      grantedAt: number;
    }>
  | DomainEvent<'GrantRevoked', Resource & { organizationId: string; userId: string; revokedAt: number }>;

// ---- state ----

export type Grant = Resource & {
  accessRole: AccessRole;
  expiresAt: number | null;
};

export interface GrantsState {
  grants: Readonly<Record<string, Grant>>;
}

export const initialState = (): GrantsState => ({ grants: {} });

export const resourceKey = (r: Resource) => key(r.resourceType, r.resourceId);

/** Live at `nowMs`: permanent, or expiring later than now (expiresAt is in seconds). */
export const isLive = (g: { expiresAt: number | null }, nowMs: number) => g.expiresAt === null || g.expiresAt * 1000 > nowMs;

// ---- evolve ----

export function evolve(state: GrantsState, event: GrantEvent): GrantsState {
  switch (event.type) {
    case 'GrantAdded': {
      const { resourceType, resourceId, accessRole, expiresAt } = event.data;
      return { grants: { ...state.grants, [resourceKey(event.data)]: { resourceType, resourceId, accessRole, expiresAt } } };
    }
    case 'GrantRevoked': {
      const k = resourceKey(event.data);
      if (!(k in state.grants)) return state;
      const { [k]: _gone, ...rest } = state.grants;
      return { grants: rest };
    }
    default:
      return assertNever(event, 'grant event');
  }
}

// ---- commands ----

export type GrantRequest = Resource & {
  accessRole: AccessRole;
  expiresAt?: number | null;
};

export type GrantsCommand =
  | Command<'Grant', { organizationId: string; userId: string; grants: GrantRequest[] }>
  | Command<'Revoke', { organizationId: string; userId: string; resources: Resource[] }>
  /** Every grant of the user in the organization (users/delete without a scope). */
  | Command<'RevokeAll', { organizationId: string; userId: string }>;

// ---- decide ----

export interface GrantOutcome {
  success: boolean;
  message: string;
}

export function plan(command: GrantsCommand, state: GrantsState): Planned<GrantEvent, GrantOutcome> {
  const now = command.metadata.now;
  const { organizationId, userId } = command.data;
  const events: GrantEvent[] = [];
  const outcomes = new Map<string, GrantOutcome>();
  const revoke = (r: Resource): GrantEvent => ({
    type: 'GrantRevoked',
    data: { organizationId, userId, resourceType: r.resourceType, resourceId: r.resourceId, revokedAt: now },
  });
  switch (command.type) {
    case 'Grant': {
      const grants = { ...state.grants };
      for (const g of command.data.grants) {
        const k = resourceKey(g);
        const current = grants[k];
        const expiresAt = g.expiresAt ?? null;
        if (expiresAt !== null && current && current.expiresAt === null) {
          outcomes.set(k, { success: false, message: 'The user already has permanent access; a temporary grant does not replace it.' });
          continue;
        }
        grants[k] = { resourceType: g.resourceType, resourceId: g.resourceId, accessRole: g.accessRole, expiresAt };
        events.push({
          type: 'GrantAdded',
          data: { organizationId, userId, resourceType: g.resourceType, resourceId: g.resourceId, accessRole: g.accessRole, expiresAt, grantedAt: now },
        });
        outcomes.set(k, { success: true, message: 'Permission added.' });
      }
      return { events, outcomes };
    }
    case 'Revoke': {
      const gone = new Set<string>();
      for (const r of command.data.resources) {
        const k = resourceKey(r);
        if (!state.grants[k] || gone.has(k)) {
          outcomes.set(k, { success: true, message: 'Permission does not exist.' });
          continue;
        }
        gone.add(k);
        events.push(revoke(r));
        outcomes.set(k, { success: true, message: 'Permission removed.' });
      }
      return { events, outcomes };
    }
    case 'RevokeAll':
      return { events: Object.values(state.grants).map(revoke), outcomes };
    default:
      return assertNever(command, 'grants command');
  }
}

export const decide = (command: GrantsCommand, state: GrantsState): GrantEvent[] => plan(command, state).events;

export const grantsDecider: Decider<GrantsState, GrantsCommand, GrantEvent> = {
  name: 'grants',
  initialState,
  evolve,
  decide,
};
