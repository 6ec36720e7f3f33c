/**
 * Grants aggregate: every grant one user holds inside one organization, in one stream:
 * `streamName('grants', apiKey, organizationId, userId)`.
 *
 * One stream per (organization, user) makes "remove this user from the organization"
 * (users/delete without a scope: membership AND every grant inside, semantics §5) one
 * atomic append, and keeps the replacement rule in one place (semantics §3 "Grants"):
 * a temporary grant never replaces a live permanent one; a permanent one replaces anything;
 * an expired grant counts as absent.
 *
 * Access context (semantics §4a, spec `context.accessFields`): a grant may carry access
 * fields, `"field:value"` strings, added with the grant (permissions/add, generate_token:
 * `context.access`) and taken away with permissions/remove's `context`. They live and die
 * with their grant: an expired or revoked grant's fields are gone, and a grant replacing an
 * expired one starts with none. They grant nothing; permission resolution reports them
 * (queries/permissions.ts).
 */
import { assertNever } from '../src/shared/errors.js';
import { key, streamName } from '../src/shared/ids.js';
import type { Command, DomainEvent, Planned, PlanningDecider } from '../src/runtime/decider.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/shared/ids.ts). */
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

/**
 * semantics §1 Limits, access context. One grant carries at most 200 access fields (the
 * hosted service's limit on a user's `accessFields`); one user's live grants inside one
 * organization carry at most 2,000 in all, so reporting a user's fields in permissions/get
 * visits at most 2,000 strings per user whatever the query (docs/limits.md).
 */
export const MAX_ACCESS_FIELDS_PER_GRANT = 200;
export const MAX_ACCESS_FIELDS_PER_USER = 2000;

/** Sorted (UTF-16 code unit order, as Array.prototype.sort), each once. */
export const sortedUnique = (fields: Iterable<string>): string[] => [...new Set(fields)].sort();

// ---- events ----

export type GrantEvent =
  | DomainEvent<'GrantAdded', Resource & {
      organizationId: string;
      userId: string;
      accessRole: AccessRole;
      /** Unix seconds; null: permanent. */
      expiresAt: number | null;
      grantedAt: number;
      /**
       * Every access field the grant carries from now on (the earlier live ones and the new
       * ones), sorted; absent when none (and on events from before access context).
       */
      accessFields?: string[];
    }>
  | DomainEvent<'GrantRevoked', Resource & { organizationId: string; userId: string; revokedAt: number }>
  /** permissions/remove with `context`: these fields (each one the grant carried) are gone; the grant stays. */
  | DomainEvent<'AccessFieldsRemoved', Resource & { organizationId: string; userId: string; accessFields: string[]; removedAt: number }>;

// ---- state ----

type Grant = Resource & {
  accessRole: AccessRole;
  expiresAt: number | null;
  /** Sorted; empty when none. */
  accessFields: readonly string[];
};

export interface GrantsState {
  grants: Readonly<Record<string, Grant>>;
}

const initialState = (): GrantsState => ({ grants: {} });

export const resourceKey = (r: Resource) => key(r.resourceType, r.resourceId);

/** Live at `nowMs`: permanent, or expiring later than now (expiresAt is in seconds). */
export const isLive = (g: { expiresAt: number | null }, nowMs: number) => g.expiresAt === null || g.expiresAt * 1000 > nowMs;

// ---- evolve ----

function evolve(state: GrantsState, event: GrantEvent): GrantsState {
  switch (event.type) {
    case 'GrantAdded': {
      const { resourceType, resourceId, accessRole, expiresAt } = event.data;
      const accessFields = event.data.accessFields ?? [];
      return { grants: { ...state.grants, [resourceKey(event.data)]: { resourceType, resourceId, accessRole, expiresAt, accessFields } } };
    }
    case 'GrantRevoked': {
      const k = resourceKey(event.data);
      if (!(k in state.grants)) return state;
      const { [k]: _gone, ...rest } = state.grants;
      return { grants: rest };
    }
    case 'AccessFieldsRemoved': {
      const k = resourceKey(event.data);
      const g = state.grants[k];
      if (!g) return state;
      const gone = new Set(event.data.accessFields);
      return { grants: { ...state.grants, [k]: { ...g, accessFields: g.accessFields.filter((f) => !gone.has(f)) } } };
    }
    default:
      return assertNever(event, 'grant event');
  }
}

// ---- commands ----

export type GrantRequest = Resource & {
  accessRole: AccessRole;
  expiresAt?: number | null;
  /** Access fields to add to the grant's live ones (`"field:value"`). */
  accessFields?: readonly string[];
};

/** A resource to revoke; with `accessFields`, only those fields go and the grant stays. */
type RevokeRequest = Resource & { accessFields?: readonly string[] };

export type GrantsCommand =
  | Command<'Grant', { organizationId: string; userId: string; grants: GrantRequest[] }>
  | Command<'Revoke', { organizationId: string; userId: string; resources: RevokeRequest[] }>
  /** Every grant of the user in the organization (users/delete without a scope). */
  | Command<'RevokeAll', { organizationId: string; userId: string }>
  /**
   * The grant on `from` becomes the same grant on `to` (documents/migrate): role, expiry and
   * access fields kept, in one append. No grant on `from`: nothing (a migration run again).
   */
  | Command<'MoveGrant', { organizationId: string; userId: string; from: Resource; to: Resource }>;

// ---- decide ----

export interface GrantOutcome {
  success: boolean;
  message: string;
  /** Why a grant was refused: a live permanent grant stays, or an access-field limit. */
  refused?: 'permanentExists' | 'accessFieldLimit';
}

type GrantsCommandOf<T extends GrantsCommand['type']> = Extract<GrantsCommand, { type: T }>;
type Plan = Planned<GrantEvent, GrantOutcome>;

export function plan(command: GrantsCommand, state: GrantsState): Plan {
  switch (command.type) {
    case 'Grant':
      return planGrant(command, state);
    case 'Revoke':
      return planRevoke(command, state);
    case 'RevokeAll': {
      const { organizationId, userId } = command.data;
      return { events: Object.values(state.grants).map((r) => revoked(organizationId, userId, r, command.metadata.now)), outcomes: new Map() };
    }
    case 'MoveGrant':
      return { events: moved(command, state), outcomes: new Map() };
    default:
      return assertNever(command, 'grants command');
  }
}

const revoked = (organizationId: string, userId: string, r: Resource, now: number): GrantEvent => ({
  type: 'GrantRevoked',
  data: { organizationId, userId, resourceType: r.resourceType, resourceId: r.resourceId, revokedAt: now },
});

/** GrantAdded on `to` as the grant on `from` is, then GrantRevoked on `from`: the user's access-field total stays as it was. */
function moved(command: GrantsCommandOf<'MoveGrant'>, state: GrantsState): GrantEvent[] {
  const { organizationId, userId, from, to } = command.data;
  const g = state.grants[resourceKey(from)];
  if (!g) return [];
  const now = command.metadata.now;
  return [
    {
      type: 'GrantAdded',
      data: {
        organizationId, userId, resourceType: to.resourceType, resourceId: to.resourceId, accessRole: g.accessRole, expiresAt: g.expiresAt, grantedAt: now,
        ...(g.accessFields.length > 0 ? { accessFields: [...g.accessFields] } : {}),
      },
    },
    revoked(organizationId, userId, from, now),
  ];
}

/**
 * The access fields a grant on `g` would hold (its live ones plus those asked), or the
 * refusal when that passes a limit: MAX_ACCESS_FIELDS_PER_GRANT on the resource, or
 * MAX_ACCESS_FIELDS_PER_USER over the `held` fields of the user's live grants.
 */
function fieldsAfter(g: GrantRequest, current: Grant | undefined, held: number, now: number): { accessFields: string[]; total: number } | GrantOutcome {
  // An expired grant's fields died with it: the new grant starts from none.
  const before = current && isLive(current, now) ? current.accessFields : [];
  const accessFields = g.accessFields?.length ? sortedUnique([...before, ...g.accessFields]) : [...before];
  if (accessFields.length > MAX_ACCESS_FIELDS_PER_GRANT) {
    return {
      success: false,
      message: `The user would hold ${accessFields.length} access fields on this resource; a resource holds at most ${MAX_ACCESS_FIELDS_PER_GRANT}.`,
      refused: 'accessFieldLimit',
    };
  }
  const total = held - before.length + accessFields.length;
  if (total > MAX_ACCESS_FIELDS_PER_USER) {
    return {
      success: false,
      message: `The user would hold ${total} access fields in this organization; a user holds at most ${MAX_ACCESS_FIELDS_PER_USER} in one organization.`,
      refused: 'accessFieldLimit',
    };
  }
  return { accessFields, total };
}

/** Grants per resource, in order: a temporary grant never replaces a live permanent one; an access-field limit fails that resource. */
function planGrant(command: GrantsCommandOf<'Grant'>, state: GrantsState): Plan {
  const now = command.metadata.now;
  const { organizationId, userId } = command.data;
  const events: GrantEvent[] = [];
  const outcomes = new Map<string, GrantOutcome>();
  const grants = { ...state.grants };
  // The user's live access fields in this organization, kept current as items go.
  let held = liveFieldCount(grants, now);
  for (const g of command.data.grants) {
    const k = resourceKey(g);
    const current = grants[k];
    const expiresAt = g.expiresAt ?? null;
    if (expiresAt !== null && current && current.expiresAt === null) {
      outcomes.set(k, { success: false, message: 'The user already has permanent access; a temporary grant does not replace it.', refused: 'permanentExists' });
      continue;
    }
    const fields = fieldsAfter(g, current, held, now);
    if ('success' in fields) {
      outcomes.set(k, fields);
      continue;
    }
    const { accessFields } = fields;
    held = fields.total;
    grants[k] = { resourceType: g.resourceType, resourceId: g.resourceId, accessRole: g.accessRole, expiresAt, accessFields };
    events.push({
      type: 'GrantAdded',
      data: {
        organizationId, userId, resourceType: g.resourceType, resourceId: g.resourceId, accessRole: g.accessRole, expiresAt, grantedAt: now,
        ...(accessFields.length > 0 ? { accessFields } : {}),
      },
    });
    outcomes.set(k, { success: true, message: 'Permission added.' });
  }
  return { events, outcomes };
}

/** Revokes per resource: with `accessFields` only those fields go and the grant stays; a grant not there succeeds. */
function planRevoke(command: GrantsCommandOf<'Revoke'>, state: GrantsState): Plan {
  const now = command.metadata.now;
  const { organizationId, userId } = command.data;
  const events: GrantEvent[] = [];
  const outcomes = new Map<string, GrantOutcome>();
  const gone = new Set<string>();
  // Fields removed so far in this command, per grant (a resource may be listed twice).
  const removed = new Map<string, Set<string>>();
  for (const r of command.data.resources) {
    const k = resourceKey(r);
    const current = state.grants[k];
    if (!current || gone.has(k)) {
      outcomes.set(k, { success: true, message: 'Permission does not exist.' });
      continue;
    }
    if (r.accessFields !== undefined) {
      const already = removed.get(k) ?? new Set<string>();
      const accessFields = sortedUnique(r.accessFields).filter((f) => current.accessFields.includes(f) && !already.has(f));
      for (const f of accessFields) already.add(f);
      removed.set(k, already);
      if (accessFields.length > 0) {
        events.push({
          type: 'AccessFieldsRemoved',
          data: { organizationId, userId, resourceType: r.resourceType, resourceId: r.resourceId, accessFields, removedAt: now },
        });
      }
      if (!outcomes.has(k)) outcomes.set(k, { success: true, message: 'Access fields removed.' });
      continue;
    }
    gone.add(k);
    events.push(revoked(organizationId, userId, r, now));
    outcomes.set(k, { success: true, message: 'Permission removed.' });
  }
  return { events, outcomes };
}

/** How many access fields the live grants among `grants` carry. */
function liveFieldCount(grants: Readonly<Record<string, Grant>>, nowMs: number): number {
  let n = 0;
  for (const g of Object.values(grants)) if (isLive(g, nowMs)) n += g.accessFields.length;
  return n;
}

const decide = (command: GrantsCommand, state: GrantsState): GrantEvent[] => plan(command, state).events;

export const grantsDecider: PlanningDecider<GrantsState, GrantsCommand, GrantEvent, GrantOutcome> = {
  name: 'grants',
  initialState,
  evolve,
  decide,
  plan,
};
