/**
 * Granting access to users and groups (semantics §3, §4a): the use cases behind
 * /v2/auth/permissions/add|remove (src/http/routes/permissions.ts) and the grants
 * /v2/auth/generate_token writes (src/http/routes/tokens.ts). Resources come in as plain
 * values; the request schema that checks them (`resourceSchema`) stays with the routes in
 * src/http/routes/domain.ts.
 */
import { documentDecider, documentStream } from '../../commands/document.js';
import { getFolder } from '../../commands/folder-tree.js';
import { grantsDecider, resourceKey, sortedUnique, grantsStream, type ACCESS_ROLES, type GrantOutcome, type GrantRequest, type GrantsCommand, type Resource, type ResourceType } from '../../commands/grant.js';
import { groupDecider, groupStream, type GroupCommand, type MemberOutcome } from '../../commands/group.js';
import { stamp, type Unstamped } from '../runtime/decider.js';
import { organizationDecider, organizationStream } from '../../commands/organization.js';
import type { TenantContext } from './context.js';

/**
 * A resource to grant, as permissions/add takes it once validated: an organization, or a
 * folder or document of `organizationId`, with the role, expiry and access context
 * (`{ team: "x", widgetId: [1, "a"] }`) of the grant.
 */
export type GrantResource = {
  type: 'organization' | 'folder' | 'document';
  id: string;
  organizationId?: string | undefined;
  accessRole?: (typeof ACCESS_ROLES)[number] | undefined;
  expiresAt?: number | undefined;
  context?: { access?: Record<string, string | number | Array<string | number>> | undefined } | undefined;
};

/** One resource's outcome in an answer keyed by resource id. */
type ResourceOutcome = { success: boolean; type: GrantResource['type']; message: string };

/** `{ [id]: outcome }`, built with own data properties (an id like "__proto__" stays a plain key). */
const byId = (entries: ReadonlyArray<readonly [string, ResourceOutcome]>): Record<string, ResourceOutcome> => Object.fromEntries(entries);

const orgOf = (r: GrantResource) => (r.type === 'organization' ? r.id : r.organizationId!);

/**
 * A resource's `context.access` as access fields: `{ widgetId: [1, "a"], team: "x" }` is
 * `["team:x", "widgetId:1", "widgetId:a"]` (numbers in JavaScript's own text form, sorted,
 * each once); undefined without `context`.
 */
function accessFieldsOf(r: GrantResource): string[] | undefined {
  if (r.context === undefined) return undefined;
  const out: string[] = [];
  for (const [name, v] of Object.entries(r.context.access ?? {})) {
    for (const value of Array.isArray(v) ? v : [v]) out.push(`${name}:${String(value)}`);
  }
  return sortedUnique(out);
}
const toResource = (r: GrantResource): Resource => ({ resourceType: r.type as ResourceType, resourceId: r.id });

/** Why a resource cannot carry a grant, or null when it exists. */
async function missing(ctx: TenantContext, r: GrantResource): Promise<string | null> {
  const organizationId = orgOf(r);
  const { state } = await ctx.services.commands.load(organizationDecider, organizationStream(ctx.apiKey, organizationId));
  if (state.status !== 'active') return 'Organization does not exist.';
  if (r.type === 'folder' && !getFolder(state.tree, r.id)) return 'Folder does not exist.';
  if (r.type === 'document') {
    const doc = (await ctx.services.commands.load(documentDecider, documentStream(ctx.apiKey, organizationId, r.id))).state;
    if (doc.status !== 'active' || (doc.folderId !== null && !getFolder(state.tree, doc.folderId))) return 'Document does not exist.';
  }
  return null;
}

/** One resource's outcome as a command decides it. */
type Decided = { success: boolean; message: string; refused?: GrantOutcome['refused'] | MemberOutcome['refused'] };

/**
 * Groups resources by organization, runs one command per organization (`run`, which answers
 * each resource's outcome by `resourceKey`), keys outcomes by resource id; a missing resource
 * fails alone.
 */
async function perOrganization(
  ctx: TenantContext,
  resources: GrantResource[],
  run: (organizationId: string, rs: GrantResource[]) => Promise<Map<string, Decided>>,
) {
  const out: Array<[string, ResourceOutcome]> = [];
  const refusals: Decided['refused'][] = [];
  const byOrg = new Map<string, GrantResource[]>();
  await Promise.all(resources.map(async (r) => {
    const why = await missing(ctx, r);
    if (why) out.push([r.id, { success: false, type: r.type, message: why }]);
    else byOrg.set(orgOf(r), [...(byOrg.get(orgOf(r)) ?? []), r]);
  }));
  await Promise.all([...byOrg].map(async ([organizationId, rs]) => {
    const outcomes = await run(organizationId, rs);
    for (const r of rs) {
      const o = outcomes.get(resourceKey(toResource(r)))!;
      if (o.refused) refusals.push(o.refused);
      out.push([r.id, { success: o.success, type: r.type, message: o.message }]);
    }
  }));
  const order = new Map(resources.map((r, i) => [r.id, i]));
  return { outcomes: byId(out.sort((a, b) => order.get(a[0])! - order.get(b[0])!)), refusals };
}

/** Runs `command` on the user's grants stream in `organizationId`; the outcomes it decided. */
async function onUserGrants(ctx: TenantContext, userId: string, organizationId: string, command: Unstamped<GrantsCommand>) {
  return (await ctx.executePlan(grantsDecider, grantsStream(ctx.apiKey, organizationId, userId), command)).outcomes;
}

/** Runs a group-grant command on the stream of the group `groupId` of `organizationId`. */
async function onGroupGrants(ctx: TenantContext, groupId: string, organizationId: string, command: Unstamped<GroupCommand>) {
  return (await ctx.executePlan(groupDecider, groupStream(ctx.apiKey, organizationId, groupId), command)).outcomes;
}

/** The Grant command for `rs`, resources of one organization. */
function grantCommand(userId: string, organizationId: string, rs: GrantResource[]): Unstamped<GrantsCommand> {
  return {
    type: 'Grant',
    data: {
      organizationId,
      userId,
      grants: rs.map((r): GrantRequest => ({
        ...toResource(r),
        accessRole: r.accessRole ?? 'editor',
        expiresAt: r.expiresAt ?? null,
        ...(r.context !== undefined ? { accessFields: accessFieldsOf(r) } : {}),
      })),
    },
  };
}

/** Grants `resources` to `userId` as /v2/auth/permissions/add does; outcomes keyed by resource id. */
export function addGrants(ctx: TenantContext, userId: string, resources: GrantResource[]) {
  return perOrganization(ctx, resources, (organizationId, rs) => onUserGrants(ctx, userId, organizationId, grantCommand(userId, organizationId, rs)));
}

/** Grants `resources` to the group `groupId` (of each resource's organization), as permissions/add with `group` does. */
export function addGroupGrants(ctx: TenantContext, groupId: string, resources: GrantResource[]) {
  return perOrganization(ctx, resources, (organizationId, rs) => onGroupGrants(ctx, groupId, organizationId, {
    type: 'GrantGroupAccess',
    data: {
      organizationId,
      groupId,
      grants: rs.map((r) => ({ ...toResource(r), accessRole: r.accessRole ?? 'editor', expiresAt: r.expiresAt ?? null })),
    },
  }));
}

/**
 * Revokes `userId`'s grants on `resources` as /v2/auth/permissions/remove does: a resource
 * with `context` loses those access fields only; without, the grant goes. A missing resource
 * fails alone (semantics §4a).
 */
export function removeGrants(ctx: TenantContext, userId: string, resources: GrantResource[]) {
  return perOrganization(ctx, resources, (organizationId, rs) => onUserGrants(ctx, userId, organizationId, {
    type: 'Revoke',
    data: {
      organizationId,
      userId,
      resources: rs.map((r) => ({ ...toResource(r), ...(r.context !== undefined ? { accessFields: accessFieldsOf(r) } : {}) })),
    },
  }));
}

/** Revokes the group `groupId`'s grants on `resources` (from every member at once). */
export function removeGroupGrants(ctx: TenantContext, groupId: string, resources: GrantResource[]) {
  return perOrganization(ctx, resources, (organizationId, rs) => onGroupGrants(ctx, groupId, organizationId, {
    type: 'RevokeGroupAccess',
    data: { organizationId, groupId, resources: rs.map(toResource) },
  }));
}

/**
 * The resources `addGrants` would refuse for an access-field limit, with the reason, decided
 * on the current state without writing anything (generate_token refuses before any grant).
 */
export async function accessFieldRefusals(ctx: TenantContext, userId: string, resources: GrantResource[]): Promise<Record<string, string>> {
  const byOrg = new Map<string, GrantResource[]>();
  for (const r of resources) byOrg.set(orgOf(r), [...(byOrg.get(orgOf(r)) ?? []), r]);
  const out: Array<[string, string]> = [];
  await Promise.all([...byOrg].map(async ([organizationId, rs]) => {
    const { state } = await ctx.services.commands.load(grantsDecider, grantsStream(ctx.apiKey, organizationId, userId));
    const { outcomes } = grantsDecider.plan(stamp<GrantsCommand>(grantCommand(userId, organizationId, rs), ctx.now), state);
    for (const r of rs) {
      const o = outcomes.get(resourceKey(toResource(r)));
      if (o?.refused === 'accessFieldLimit') out.push([r.id, o.message]);
    }
  }));
  return Object.fromEntries(out);
}

/** The resources among `resources` that cannot carry a grant, with the reason for each. */
export async function missingResources(ctx: TenantContext, resources: GrantResource[]): Promise<Record<string, string>> {
  const reasons = await Promise.all(resources.map(async (r) => [r.id, await missing(ctx, r)] as const));
  return Object.fromEntries(reasons.filter((x): x is readonly [string, string] => x[1] !== null));
}
