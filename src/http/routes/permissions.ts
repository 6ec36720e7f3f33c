/**
 * Permissions (spec: auth/permissions/get; companions auth/permissions/add|remove,
 * semantics §4a). Grants of one user in one organization are one command on the user's
 * grants stream, with per-resource outcomes.
 */
import { z } from 'zod';
import { documentDecider } from '../../../commands/document.js';
import { getFolder } from '../../../commands/folder-tree.js';
import { ACCESS_ROLES, grantsDecider, plan, resourceKey, type GrantRequest, type Resource, type ResourceType } from '../../../commands/grant.js';
import { organizationDecider } from '../../../commands/organization.js';
import { capturing } from '../../../commands/outcomes.js';
import { MAX_PERMISSION_USERS, resolvePermissions } from '../../../queries/permissions.js';
import type { Services } from '../../services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { RequestContext } from '../context.js';
import { id, ids, items } from '../validation.js';
import { keyed, type Outcome } from './domain.js';
import { documentStream } from '../../../commands/document.js';
import { grantsStream } from '../../../commands/grant.js';
import { organizationStream } from '../../../commands/organization.js';

export const resourceSchema = z
  .object({
    type: z.enum(['organization', 'folder', 'document']),
    id: id(),
    organizationId: id().optional(),
    accessRole: z.enum(ACCESS_ROLES).optional(),
    expiresAt: z.number().int().positive().optional(),
  })
  .refine((r) => r.type === 'organization' || r.organizationId !== undefined, {
    message: 'organizationId is required for folder and document resources',
    path: ['organizationId'],
  });
export type ResourceInput = z.output<typeof resourceSchema>;

const userSchema = {
  userId: id().optional(),
  user: z.object({ userId: id() }).optional(),
  permissions: z.object({ resources: items(resourceSchema) }),
};
/** semantics §4a: the hosted API nests userId in one call and not the other: accept both. */
const withUser = <T extends { userId?: string; user?: { userId: string } }>(s: z.ZodType<T>) =>
  s.refine((d) => d.userId !== undefined || d.user !== undefined, { message: 'is required (or data.user.userId)', path: ['userId'] });

const orgOf = (r: ResourceInput) => (r.type === 'organization' ? r.id : r.organizationId!);
const toResource = (r: ResourceInput): Resource => ({ resourceType: r.type as ResourceType, resourceId: r.id });

/** Why a resource cannot carry a grant, or null when it exists. */
async function missing(ctx: RequestContext, r: ResourceInput): Promise<string | null> {
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

/** Groups resources by organization, runs one grants command per organization, keys outcomes by resource id; a missing resource fails alone. */
async function perOrganization(
  ctx: RequestContext,
  userId: string,
  resources: ResourceInput[],
  command: (organizationId: string, rs: ResourceInput[]) => Parameters<typeof plan>[0],
) {
  const out: Array<[string, Outcome]> = [];
  const byOrg = new Map<string, ResourceInput[]>();
  await Promise.all(resources.map(async (r) => {
    const why = await missing(ctx, r);
    if (why) out.push([r.id, { success: false, type: r.type, message: why }]);
    else byOrg.set(orgOf(r), [...(byOrg.get(orgOf(r)) ?? []), r]);
  }));
  await Promise.all([...byOrg].map(async ([organizationId, rs]) => {
    const run = capturing(grantsDecider, plan);
    await ctx.execute(run.decider, grantsStream(ctx.apiKey, organizationId, userId), command(organizationId, rs));
    for (const r of rs) {
      const o = run.outcomes().get(resourceKey(toResource(r)))!;
      out.push([r.id, { success: o.success, type: r.type, message: o.message }]);
    }
  }));
  const order = new Map(resources.map((r, i) => [r.id, i]));
  return keyed(out.sort((a, b) => order.get(a[0])! - order.get(b[0])!));
}

/** Grants `resources` to `userId` as /v2/auth/permissions/add does; outcomes keyed by resource id. */
export function addGrants(ctx: RequestContext, userId: string, resources: ResourceInput[]) {
  return perOrganization(ctx, userId, resources, (organizationId, rs) => ({
    type: 'Grant',
    data: {
      organizationId,
      userId,
      grants: rs.map((r): GrantRequest => ({ ...toResource(r), accessRole: r.accessRole ?? 'editor', expiresAt: r.expiresAt ?? null })),
    },
    metadata: { now: ctx.now },
  }));
}

/** The resources among `resources` that cannot carry a grant, with the reason for each. */
export async function missingResources(ctx: RequestContext, resources: ResourceInput[]): Promise<Record<string, string>> {
  const reasons = await Promise.all(resources.map(async (r) => [r.id, await missing(ctx, r)] as const));
  return Object.fromEntries(reasons.filter((x): x is readonly [string, string] => x[1] !== null));
}

export function permissionRoutes(services: Services): AnyRoute[] {
  const get = defineRoute({
    path: '/v2/auth/permissions/get',
    mutates: false,
    auth: 'apiKey',
    // semantics §1 Limits: 100 userIds and 10,000 cells (queries/permissions.ts), refused
    // before any resolution work.
    schema: z.object({ organizationId: id(), userIds: ids(MAX_PERMISSION_USERS), folderIds: ids().optional(), documentIds: ids().optional() }),
    async handler(data, ctx) {
      const result = await resolvePermissions(services.read, ctx.apiKey, ctx.now, data);
      return { message: 'User permissions retrieved successfully.', data: result };
    },
  });

  const add = defineRoute({
    path: '/v2/auth/permissions/add',
    mutates: true,
    auth: 'apiKey',
    schema: withUser(z.object(userSchema)),
    async handler(data, ctx) {
      const userId = (data.userId ?? data.user?.userId)!;
      const results = await addGrants(ctx, userId, data.permissions.resources);
      return { message: 'Permissions added successfully.', data: results };
    },
  });

  const remove = defineRoute({
    path: '/v2/auth/permissions/remove',
    mutates: true,
    auth: 'apiKey',
    schema: withUser(z.object(userSchema)),
    async handler(data, ctx) {
      const userId = (data.userId ?? data.user?.userId)!;
      // semantics §4a: missing resources are per-resource failures in both add and remove.
      const results = await perOrganization(ctx, userId, data.permissions.resources, (organizationId, rs) => ({
        type: 'Revoke',
        data: { organizationId, userId, resources: rs.map(toResource) },
        metadata: { now: ctx.now },
      }));
      return { message: 'Permissions removed successfully.', data: results };
    },
  });

  return [get, add, remove];
}
