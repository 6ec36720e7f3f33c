/**
 * Permissions (spec: auth/permissions/get; companions auth/permissions/add|remove,
 * semantics §4a). Grants of one user in one organization are one command on the user's
 * grants stream, with per-resource outcomes.
 *
 * permissions/add and remove answer as the hosted API documents, `{ status, message }`
 * without `data`, when every resource went through. When one did not (a missing resource,
 * a temporary grant over a permanent one, an access-field limit), the answer is still a
 * success (semantics §0: a missing resource never makes a 500) and `data` lists every
 * resource's outcome, keyed by resource id, so the failure is never silent.
 *
 * Access context (semantics §4a): a resource may carry `context.access`, `{ field: value |
 * value[] }`; each field:value pair becomes an access field of the user's grant there.
 *
 * Group grants (semantics §3 rule 7): add and remove take `group: { groupId }` in place of
 * the user. The group is the one with that id in each resource's organization, and the
 * grants are one command on its stream (commands/group.ts); a group that does not exist there
 * fails those resources one by one, as a missing resource does. Group grants carry no access
 * fields: `context` with `group` is INVALID_ARGUMENT.
 *
 * The grants themselves are use cases (src/usecases/grants.ts), shared with generate_token;
 * the request and answer schemas shared with other routes live in ./domain.ts.
 */
import { z } from 'zod';
import { MAX_ACCESS_FIELDS_PER_GRANT, MAX_ACCESS_FIELDS_PER_USER } from '../../../commands/grant.js';
import { MAX_GRANTS_PER_GROUP } from '../../../commands/group.js';
import { MAX_PERMISSION_CELLS, MAX_PERMISSION_USERS, MAX_REPORTED_ACCESS_FIELDS, resolvePermissions } from '../../../queries/permissions.js';
import { Deadline, Pacer } from '../../../queries/cost.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { onlySelf, permissionsForActingUser } from '../acting-user.js';
import { id, ids, items } from '../validation.js';
import { asOf, outcomesById, permissionEntry, resourceSchema, type Outcome, type ResourceInput } from './domain.js';
import { accessView } from '../../usecases/access.js';
import { addGrants, addGroupGrants, removeGrants, removeGroupGrants } from '../../usecases/grants.js';

const principalSchema = {
  userId: id().optional(),
  user: z.object({ userId: id() }).optional(),
  group: z.object({ groupId: id() }).optional(),
  permissions: z.object({ resources: items(resourceSchema) }),
};
type Principal = { userId?: string; user?: { userId: string }; group?: { groupId: string }; permissions: { resources: ResourceInput[] } };
/**
 * semantics §4a: the hosted API nests userId in one call and not the other: accept both.
 * semantics §3 rule 7: or `group.groupId`, never with a user; a group's grants carry no
 * access fields, so `context` is refused with it rather than dropped.
 */
const withPrincipal = <T extends Principal>(s: z.ZodType<T>) =>
  s.superRefine((d, ctx) => {
    const user = d.userId !== undefined || d.user !== undefined;
    if (!user && d.group === undefined) {
      ctx.addIssue({ code: 'custom', path: ['userId'], message: 'is required (or data.user.userId, or data.group.groupId for a group)' });
    } else if (user && d.group !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['group'], message: 'cannot be combined with data.userId or data.user: permissions go to a user or to a group, not both' });
    } else if (d.group !== undefined) {
      d.permissions.resources.forEach((r, i) => {
        if (r.context !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['permissions', 'resources', i, 'context'], message: 'is not accepted with data.group: group grants carry no access fields' });
        }
      });
    }
  });

/** The success answer of permissions/add and remove: `data` only when a resource failed (see the top of this file). */
function answer(message: string, outcomes: Record<string, Outcome>) {
  const failed = Object.values(outcomes).some((o) => !o.success);
  return failed ? { message, data: outcomes } : { message };
}

const entries = () => z.record(z.string(), permissionEntry);

/** permissions/get: `{ [userId]: { organization, folders?, documents?, context? } }`. */
const userPermissions = outcomesById(
  z.object({
    organization: entries().describe('One entry, keyed by the organizationId: the user\'s membership.'),
    folders: entries().optional().describe('One entry per folderId asked for; absent when none was.'),
    documents: entries().optional().describe('One entry per documentId asked for; absent when none was.'),
    context: z
      .object({ accessFields: z.array(z.string()).describe(`Sorted, unique \`"field:value"\` strings, at most ${MAX_REPORTED_ACCESS_FIELDS}.`) })
      .optional()
      .describe('The access fields the user holds on the organization (as a member) and on the resources asked for that they may open; absent when none.'),
  }),
);

/**
 * permissions/add and remove: every resource's outcome, keyed by resource id, present only
 * when one failed (see the top of this file).
 */
const resourceOutcomes = outcomesById(
  z.object({
    success: z.boolean().describe('Whether this resource\'s change went through; a failed one leaves the others as they are.'),
    type: z.enum(['organization', 'folder', 'document']),
    message: z.string().describe('What happened to this resource.'),
  }),
)
  .optional()
  .describe('Only when a resource failed: every resource\'s outcome, keyed by resource id. Absent when all went through.');

const RESOURCES = 'Each resource is `{ type: organization | folder | document, id, organizationId (folder and document) }`; the user may be ' +
  'given as `userId` or `user.userId`. A resource that does not exist fails alone (never a grant on nothing). When every resource went ' +
  'through the answer has no `data`; when one failed, `data` holds every resource\'s outcome keyed by resource id.';
/** The group form, shared by add and remove (semantics §3 rule 7). */
const GROUPS = 'In place of the user, `group: { groupId }` (never both: INVALID_ARGUMENT) grants to or revokes from a user group: the ' +
  'group with that id in each resource\'s organization; where it does not exist, those resources fail ("Organization user group does not ' +
  'exist."). Every member of the group has the group\'s grant, at the same level, for as long as they are in the group; their own grant ' +
  'on the same resource decides over it, and among their groups the higher role, then the later expiry wins. Group grants carry no ' +
  '`context` (INVALID_ARGUMENT). Example: `{ "group": { "groupId": "design" }, "permissions": { "resources": [{ "type": "folder", ' +
  '"id": "specs", "organizationId": "acme", "accessRole": "viewer" }] } }`.';

const get = defineRoute({
  path: '/v2/auth/permissions/get',
  tag: 'Permissions',
  doc: {
    summary: 'Resolve what users may open',
    description: `For each of \`userIds\` (at most ${MAX_PERMISSION_USERS}): their organization membership, and an entry per folder and document asked for, ` +
      'resolved through inheritance: grants on the resource, on each folder above it (nearest first), then on the organization, ' +
      'decided by the resource\'s effective access type (`public`: everyone; `organizationPrivate`: any grant, membership included; ' +
      '`restricted`: a grant on the resource or a folder above it). A disabled document, or any document of a disabled organization, ' +
      `is denied. At most ${MAX_PERMISSION_CELLS} cells (users x folders and documents): INVALID_ARGUMENT beyond. ` +
      'A folder or document that does not exist fails the whole query with NOT_FOUND, the entries in `error.details` ' +
      '(missing ones with `errorCode: does_not_exist`); so does an organization that does not exist. ' +
      'With a user token, `userIds` must be exactly the token\'s user (PERMISSION_DENIED otherwise), and the answer is never NOT_FOUND: ' +
      'a folder, document or organization the user may not open, missing ones included, is `{ error: "User does not have access to <kind>", ' +
      'errorCode: "permission_denied" }` without its access type.',
    example: { organizationId: 'org1', userIds: ['samarth'], documentIds: ['freestyle-comments1'] },
  },
  mutates: false,
  auth: 'apiKey',
  // A front end holding a user token asks what its own user may open.
  userToken: true,
  // semantics §1 Limits: 100 userIds and 10,000 cells (queries/permissions.ts), refused
  // before any resolution work.
  schema: z.object({ organizationId: id(), userIds: ids(MAX_PERMISSION_USERS), folderIds: ids().optional(), documentIds: ids().optional(), asOf: asOf() }),
  response: userPermissions,
  errors: ['NOT_FOUND'],
  async handler(data, ctx) {
    onlySelf(ctx, 'data.userIds', data.userIds);
    // Past the deadline, measured from the request's start, the query ends RESOURCE_EXHAUSTED.
    const pacer = new Pacer(new Deadline(ctx.services.config.queryDeadlineMs, ctx.services.clock, ctx.now, ctx.signal), 'permissions/get');
    // A user token: what the user may not open answers as what does not exist (acting-user.ts).
    // asOf (issue 25): the same resolution over the history read models, grants judged then.
    const { asOf: at, ...q } = data;
    const view = await accessView(ctx.services.read, ctx.now, at, ctx.services.config.historyRetentionDays);
    const result = await permissionsForActingUser(ctx, q, () => resolvePermissions(view.read, ctx.apiKey, view.atMs, q, { pacer }));
    return { message: 'User permissions retrieved successfully.', data: result };
  },
});

const add = defineRoute({
  path: '/v2/auth/permissions/add',
  tag: 'Permissions',
  doc: {
    summary: 'Grant a user or a user group access to resources',
    description: `${RESOURCES} \`accessRole\` defaults to \`editor\`; \`expiresAt\` (Unix seconds) makes the grant temporary, and a ` +
      'temporary grant never replaces a live permanent one (that resource fails). `context.access` (`{ field: value | value[] }`) adds ' +
      `access fields to the grant: at most ${MAX_ACCESS_FIELDS_PER_GRANT} per resource and ${MAX_ACCESS_FIELDS_PER_USER} ` +
      `per user in one organization, beyond which that resource fails. ${GROUPS} A group holds at most ${MAX_GRANTS_PER_GROUP} grants; ` +
      'beyond, a new resource fails.',
    example: {
      user: { userId: 'some-user-id' },
      permissions: { resources: [{ type: 'folder', id: 'YOUR_FOLDER_ID', organizationId: 'YOUR_ORGANIZATION_ID', accessRole: 'editor' }] },
    },
  },
  mutates: true,
  auth: 'apiKey',
  schema: withPrincipal(z.object(principalSchema)),
  response: resourceOutcomes,
  async handler(data, ctx) {
    const { outcomes } = data.group
      ? await addGroupGrants(ctx, data.group.groupId, data.permissions.resources)
      : await addGrants(ctx, (data.userId ?? data.user?.userId)!, data.permissions.resources);
    return answer('Permissions added successfully.', outcomes);
  },
});

const remove = defineRoute({
  path: '/v2/auth/permissions/remove',
  tag: 'Permissions',
  doc: {
    summary: 'Revoke a user\'s or a user group\'s access to resources',
    description: `${RESOURCES} A resource with \`context.access\` loses only those access fields, the grant stays; without, the grant goes ` +
      `(a grant that was not there succeeds with "Permission does not exist."). ${GROUPS} Removing a group's grant takes it from every member at once.`,
    example: {
      userId: 'USER_ID',
      permissions: { resources: [{ type: 'organization', id: 'ORGANIZATION_ID' }, { type: 'document', id: 'DOCUMENT_ID', organizationId: 'ORGANIZATION_ID' }] },
    },
  },
  mutates: true,
  auth: 'apiKey',
  schema: withPrincipal(z.object(principalSchema)),
  response: resourceOutcomes,
  async handler(data, ctx) {
    // semantics §4a: missing resources are per-resource failures in both add and remove.
    const { outcomes } = data.group
      ? await removeGroupGrants(ctx, data.group.groupId, data.permissions.resources)
      : await removeGrants(ctx, (data.userId ?? data.user?.userId)!, data.permissions.resources);
    return answer('Permissions removed successfully.', outcomes);
  },
});

export function permissionRoutes(): AnyRoute[] {
  return [get, add, remove];
}
