/**
 * What a route flagged `userToken` (route.ts) checks when a user token authenticated the
 * call: the user acts as itself only. Each helper does nothing when `ctx.actingUser()` is
 * undefined (the API key's own headers: the back end acts for anyone), so a handler calls
 * them unconditionally:
 *
 *   async handler(data, ctx) {
 *     onlySelf(ctx, 'data.userIds', data.userIds);
 *     await mayOpenDocument(ctx, data.organizationId, data.documentId);
 *     ...
 *   }
 *
 * Refusals are PERMISSION_DENIED naming why. A document that does not exist (or whose
 * organization does not) is refused like one the user may not open: a token holder learns
 * nothing about what exists beyond its own access.
 */
import { ApiError, permissionDenied } from '../errors.js';
import { resolvePermissions } from '../../queries/permissions.js';
import type { RequestContext } from './context.js';

/**
 * Refuses `userIds` (the request field `field`) unless every id is the acting user's; an
 * empty list is refused too (it would mean "nobody", or on some routes "everyone").
 * Example: a token for u1 with `userIds: ["u1", "u2"]` is refused naming `data.userIds`.
 */
export function onlySelf(ctx: RequestContext, field: string, userIds: readonly string[]): void {
  const user = ctx.actingUser();
  if (user === undefined) return;
  if (userIds.length === 0 || userIds.some((u) => u !== user)) {
    throw permissionDenied(`A user token acts for its own user only: ${field} may name only ${JSON.stringify(user)}.`);
  }
}

/** Refuses a request that must name something the acting user may read but does not (`field`). */
export function requireField(ctx: RequestContext, field: string, value: unknown): void {
  if (ctx.actingUser() !== undefined && value === undefined) {
    throw permissionDenied(`A user token must name ${field}: it reads only documents its user may open.`);
  }
}

/**
 * Refuses unless the acting user may open `documentId` of `organizationId`, resolved as
 * `/v2/auth/permissions/get` resolves it (semantics §3: grants on the document, its folders,
 * the organization, groups; effective access type; disabled documents).
 */
export async function mayOpenDocument(ctx: RequestContext, organizationId: string, documentId: string): Promise<void> {
  const user = ctx.actingUser();
  if (user === undefined) return;
  const denied = () => permissionDenied(`The token's user may not open document ${JSON.stringify(documentId)} of organization ${JSON.stringify(organizationId)}.`);
  let entry;
  try {
    const rows = await resolvePermissions(ctx.services.read, ctx.apiKey, ctx.now, { organizationId, userIds: [user], documentIds: [documentId] });
    entry = rows[user]?.documents?.[documentId];
  } catch (error) {
    if (error instanceof ApiError && error.status === 'NOT_FOUND') throw denied();
    throw error;
  }
  if (!entry || !('accessRole' in entry)) throw denied();
}
