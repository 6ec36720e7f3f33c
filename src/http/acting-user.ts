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
 * Refusals are PERMISSION_DENIED naming why.
 *
 * Missing answers exactly as forbidden (issue 22): under a user token, a folder, document or
 * organization the user may not open and one that does not exist get the same answer, byte
 * for byte apart from the ids named, so a token holder learns nothing about what exists
 * beyond its own access:
 * - presence, permissions/explain, resources/get with `folderId`: PERMISSION_DENIED "The
 *   token's user may not open document|folder ..." (`mayOpenDocument`, `mayOpenResource`);
 * - permissions/get: 200, every entry the user may not open (missing, disabled or denied)
 *   `{ error: "User does not have access to <kind>", errorCode: "permission_denied" }`
 *   without the access type, and an organization that does not exist is one the user is no
 *   member of (`permissionsForActingUser`);
 * - resources/get without `folderId`: an organization that does not exist lists nothing, as
 *   one where the user opens nothing (the route).
 * With the API key's own headers every answer stays as it was (NOT_FOUND, access types,
 * explanations of anyone's access): the back end may know everything.
 */
import { ApiError, permissionDenied } from '../shared/errors.js';
import { resolvePermissions, type PermissionsQuery } from '../../queries/permissions.js';
import type { RequestContext } from './context.js';
import type { ReadView } from '../ports/read-store.js';

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

/** A folder or a document of an organization. */
export type ResourceRef = { documentId: string } | { folderId: string };

const isNotFound = (error: unknown): error is ApiError => error instanceof ApiError && error.status === 'NOT_FOUND';

/**
 * Refuses unless the acting user may open `ref` of `organizationId`, resolved as
 * `/v2/auth/permissions/get` resolves it (semantics §3: grants on the resource, its folders,
 * the organization, groups; effective access type; disabled documents). A resource or an
 * organization that does not exist is refused with the same words.
 */
export async function mayOpenResource(ctx: RequestContext, organizationId: string, ref: ResourceRef, at?: { read: ReadView; atMs: number }): Promise<void> {
  const user = ctx.actingUser();
  if (user === undefined) return;
  const [kind, resourceId] = 'documentId' in ref ? ['document', ref.documentId] as const : ['folder', ref.folderId] as const;
  const denied = () => permissionDenied(`The token's user may not open ${kind} ${JSON.stringify(resourceId)} of organization ${JSON.stringify(organizationId)}.`);
  let entry;
  try {
    // `at`: an asOf question (src/usecases/access.ts) asks whether the user could open it then.
    const rows = await resolvePermissions(at?.read ?? ctx.services.read, ctx.apiKey, at?.atMs ?? ctx.now, { organizationId, userIds: [user], ...(kind === 'document' ? { documentIds: [resourceId] } : { folderIds: [resourceId] }) });
    entry = kind === 'document' ? rows[user]?.documents?.[resourceId] : rows[user]?.folders?.[resourceId];
  } catch (error) {
    if (isNotFound(error)) throw denied();
    throw error;
  }
  if (!entry || !('accessRole' in entry)) throw denied();
}

/** `mayOpenResource` for a document. */
export const mayOpenDocument = (ctx: RequestContext, organizationId: string, documentId: string) => mayOpenResource(ctx, organizationId, { documentId });

type Resolved = Awaited<ReturnType<typeof resolvePermissions>>;
type UserEntries = Resolved[string];
type Entry = UserEntries['organization'][string];

/**
 * permissions/get as the acting user sees it (see the top): `resolve` is the query as the
 * API key would run it. Without a user token its answer or refusal passes as it is.
 * Example: u1 asks for documents d1 (denied, accessType restricted) and d2 (missing): with a
 * user token both are `{ error: "User does not have access to document", errorCode:
 * "permission_denied" }` in a 200; with the key's headers the query is NOT_FOUND.
 */
export async function permissionsForActingUser(ctx: RequestContext, q: PermissionsQuery, resolve: () => Promise<Resolved>): Promise<Resolved> {
  const user = ctx.actingUser();
  if (user === undefined) return resolve();
  let seen: UserEntries | undefined;
  try {
    seen = (await resolve())[user];
  } catch (error) {
    if (!isNotFound(error)) throw error;
    // A missing resource: the entries as resolved, in the refusal; a missing organization: none.
    seen = (error.details as Resolved | undefined)?.[user];
  }
  const closed = (kind: 'organization' | 'folder' | 'document'): Entry => ({ error: `User does not have access to ${kind}`, errorCode: 'permission_denied' });
  const open = (kind: 'organization' | 'folder' | 'document', e: Entry | undefined): Entry => (e && 'accessRole' in e ? e : closed(kind));
  const each = (kind: 'folder' | 'document', ids: readonly string[], got: Record<string, Entry> | undefined) =>
    Object.fromEntries([...new Set(ids)].map((id) => [id, open(kind, got && Object.hasOwn(got, id) ? got[id] : undefined)]));
  // In the order resolvePermissions builds its entries, so the two answers serialize alike.
  const out: UserEntries = { organization: { [q.organizationId]: open('organization', seen?.organization[q.organizationId]) } };
  if (q.folderIds?.length) out.folders = each('folder', q.folderIds, seen?.folders);
  if (q.documentIds?.length) out.documents = each('document', q.documentIds, seen?.documents);
  if (seen?.context) out.context = seen.context;
  return { [user]: out };
}
