/**
 * Access queries (semantics §3 "Access queries"; queries/access.ts): which resources a user
 * can open, who can open a resource, and why. Same rules as permissions/get, other questions;
 * every entry they show is the one permissions/get would answer.
 */
import { z } from 'zod';
import { ACCESS_ROLES } from '../../../commands/grant.js';
import { ACCESS_DEFAULT_PAGE_SIZE, ACCESS_READ_BUDGET, type ResourceRef } from '../../../queries/access.js';
import { MAX_PAGE_SIZE } from '../../../queries/paging.js';
import { ApiError } from '../../shared/errors.js';
import type { Services } from '../../composition/services.js';
import { accessHistoryOf, accessView, explain as explainUseCase, listResources, listUsers } from '../../usecases/access.js';
import { HISTORY_DEFAULT_PAGE_SIZE, HISTORY_READ_BUDGET, MAX_HISTORY_CHANGES, MAX_HISTORY_ROWS } from '../../../queries/access-history.js';
import { mayOpenResource, onlySelf } from '../acting-user.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id } from '../validation.js';
import { accessRole, accessType, asOf, pageSize, pageToken, permissionEntry } from './domain.js';

const minAccessRole = () =>
  z.enum(ACCESS_ROLES).optional().describe('`viewer` (the default) admits both roles; `editor` only users or resources with the editor role.');

/** `documentId` or `folderId`, exactly one: the resource R asked about. */
const oneResource = <T extends { documentId?: string; folderId?: string }>(s: z.ZodType<T>) =>
  s.superRefine((d, ctx) => {
    if (d.documentId === undefined && d.folderId === undefined) {
      ctx.addIssue({ code: 'custom', path: ['documentId'], message: 'is required (or data.folderId): exactly one of the two' });
    } else if (d.documentId !== undefined && d.folderId !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['folderId'], message: 'cannot be given with data.documentId: exactly one of the two' });
    }
  });
const refOf = (d: { documentId?: string; folderId?: string }): ResourceRef =>
  d.documentId !== undefined ? { documentId: d.documentId } : { folderId: d.folderId! };

const level = () => z.enum(['resource', 'folder', 'organization']);
const expiresAt = () => z.number().optional().describe('Unix seconds, when the grant that decides is temporary.');

const resourceRow = z.object({
  id: z.string().describe('The documentId or folderId.'),
  accessRole: accessRole(),
  accessType: accessType().describe('The resource\'s effective access type.'),
  expiresAt: expiresAt(),
});

const userRow = z.object({
  userId: z.string(),
  accessRole: accessRole(),
  expiresAt: expiresAt(),
  via: z
    .object({
      type: z.enum(['user', 'group']).describe('The user\'s own grant, or a grant of a group the user is in.'),
      level: level().describe('Where the grant sits: on the resource, on a folder above it, or on the organization.'),
      id: z.string().describe('The id of the resource the grant is on (the organizationId at the organization level).'),
      groupId: z.string().optional().describe('The group, when `type` is `group`.'),
    })
    .describe('The grant the role comes from.'),
});

const candidate = z.object({
  level: level(),
  id: z.string().describe('The id of the resource the grant is on.'),
  via: z.enum(['user', 'group']),
  groupId: z.string().optional().describe('The group, when `via` is `group`.'),
  accessRole: accessRole(),
  expiresAt: z.number().optional().describe('Unix seconds; absent on a permanent grant.'),
  live: z.boolean().describe('False when the grant has expired: it counts as absent.'),
});

const explanation = z.object({
  entry: permissionEntry.describe('Exactly the permissions/get entry for this user and resource.'),
  accessType: z.object({
    value: accessType().describe('The resource\'s effective access type.'),
    from: z.object({ level: level(), id: z.string() }).describe('Where it is set: on the resource, on the nearest folder above with its own type, or the organization default.'),
  }),
  blocked: z.enum(['document disabled', 'organization disabled']).optional().describe('Present when a disabled document or organization denies everyone (semantics §3 rule 2).'),
  candidates: z.array(candidate).describe('The user\'s grants that may decide, most specific first: on the resource, on each folder above it (nearest first), on the organization; expired ones included, marked `live: false`.'),
  decidedBy: z.object({
    rule: z.enum(['3.2 disabled', '3.4 public', '3.4 organizationPrivate', '3.4 restricted']).describe('The rule of semantics §3 that decides.'),
    candidate: z.number().int().optional().describe('The index in `candidates` of the grant the role comes from; absent when access is denied, or public without a grant (editor).'),
  }),
});

const BUDGET = `A page reads at most ${ACCESS_READ_BUDGET.toLocaleString('en-US')} store documents (plus the few reads that size one batch) and runs at most ` +
  'the server\'s query deadline (`QUERY_DEADLINE_MS`); when either runs out first, ' +
  'the page ends early, possibly empty, with a `result.pageToken` that goes on from there. So keep reading while a token comes back.';
const PAGING = `\`pageSize\` 1 to ${MAX_PAGE_SIZE} (default ${ACCESS_DEFAULT_PAGE_SIZE}); \`result.pageToken\` while more may follow. ` +
  'A token is bound to the query that made it: with another query, or garbled, it is INVALID_ARGUMENT.';

export function accessQueryRoutes(services: Services): AnyRoute[] {
  return [resourcesRoute(services), usersRoute(services), explainRoute(services), historyRoute()];
}

function resourcesRoute(services: Services) {
  return defineRoute({
    path: '/v2/auth/resources/get',
    tag: 'Permissions',
    doc: {
      summary: 'List the folders or documents a user can open',
      description: 'The resources of `type` (`document` or `folder`) of the organization that `userId` may open with at least `minAccessRole`, ' +
        'each row exactly the user\'s permissions/get entry for it (`accessRole`, `accessType`, `expiresAt` when the deciding grant is temporary) ' +
        'with its `id`. A resource is listed if and only if permissions/get lets the user in. In creation order; with `folderId`, only that folder\'s ' +
        'subtree (the folder itself included for `folder`): its folders in creation order and, for `document`, each one\'s documents in creation order. ' +
        `${PAGING} ${BUDGET} An organization or folder that does not exist is NOT_FOUND. ` +
        'With a user token, `userId` must be the token\'s user (PERMISSION_DENIED otherwise); a `folderId` the user may not open, or that does not ' +
        'exist, is PERMISSION_DENIED alike, and an organization that does not exist lists nothing.',
      example: { organizationId: 'org1', userId: 'samarth', type: 'document', minAccessRole: 'editor', pageSize: 50 },
    },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      userId: id(),
      type: z.enum(['document', 'folder']),
      minAccessRole: minAccessRole(),
      folderId: id().optional(),
      pageSize: pageSize(),
      pageToken: pageToken(),
      asOf: asOf(),
    }),
    response: z.array(resourceRow),
    paged: 'pageToken',
    errors: ['NOT_FOUND'],
    // A front end holding a user token lists what its own user may open (a home screen).
    userToken: true,
    async handler(data, ctx) {
      onlySelf(ctx, 'data.userId', [data.userId]);
      const { asOf: at, ...q } = data;
      const view = await accessView(services.read, ctx.now, at, services.config.historyRetentionDays);
      // A user token: a folder it may not open is refused as a missing one; an organization
      // that does not exist lists nothing, as one where the user opens nothing (acting-user.ts).
      if (q.folderId !== undefined) await mayOpenResource(ctx, q.organizationId, { folderId: q.folderId }, view);
      const page = await listResources(ctx, view, q).catch((error: unknown) => {
        if (ctx.actingUser() !== undefined && error instanceof ApiError && error.status === 'NOT_FOUND') return { rows: [], pageToken: undefined };
        throw error;
      });
      return { message: 'Resources retrieved successfully.', data: page.rows, pageToken: page.pageToken };
    },
  });
}

function usersRoute(services: Services) {
  return defineRoute({
    path: '/v2/auth/users/get',
    tag: 'Permissions',
    doc: {
      summary: 'List who can open a folder or document',
      description: 'For `documentId` or `folderId` (exactly one): its effective `accessType`; `everyone`, true when anyone gets in (public and not ' +
        'disabled: a user without a grant opens it as `editor`); and `users`, every user whose access comes from a grant (on the resource, a folder ' +
        'above it, or the organization), each with exactly the `accessRole` and `expiresAt` permissions/get answers for them and `via`, the grant it ' +
        'comes from (`type` `group` with `groupId` when a user group\'s grant decides). Users with at least `minAccessRole`: first those holding a ' +
        'grant of their own on the resource, a folder above it or the organization, in userId order; then those let in only through a group, by ' +
        'the level of that group\'s grant (the resource first), groupId and userId; each user once. A user whose grants all expired, or whom the access type keeps out (an ' +
        `organization member on a restricted resource), is not listed. ${PAGING} ${BUDGET} An organization, folder or document that does not exist is NOT_FOUND.`,
      example: { organizationId: 'org1', documentId: 'freestyle-comments1', minAccessRole: 'viewer' },
    },
    mutates: false,
    auth: 'apiKey',
    schema: oneResource(z.object({
      organizationId: id(),
      documentId: id().optional(),
      folderId: id().optional(),
      minAccessRole: minAccessRole(),
      pageSize: pageSize(),
      pageToken: pageToken(),
      asOf: asOf(),
    })),
    response: z.object({
      accessType: accessType().describe('The resource\'s effective access type.'),
      everyone: z.boolean().describe('True when anyone gets in: the resource is public and not disabled.'),
      users: z.array(userRow).describe('The users whose access comes from a grant: own grant holders in userId order, then those let in through groups; paged.'),
    }),
    paged: 'pageToken',
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId, minAccessRole, pageSize: size, pageToken: token } = data;
      const view = await accessView(services.read, ctx.now, data.asOf, services.config.historyRetentionDays);
      const page = await listUsers(ctx, view, { organizationId, minAccessRole, pageSize: size, pageToken: token, ...refOf(data) });
      return { message: 'Users retrieved successfully.', data: page.data, pageToken: page.pageToken };
    },
  });
}

function explainRoute(services: Services) {
  return defineRoute({
    path: '/v2/auth/permissions/explain',
    tag: 'Permissions',
    doc: {
      summary: 'Explain why a user can or cannot open a resource',
      description: 'For `userId` and `documentId` or `folderId` (exactly one): `entry`, exactly the permissions/get entry; where the effective ' +
        'access type comes from; `blocked` when a disabled document or organization denies everyone; the user\'s candidate grants, most specific ' +
        'first, expired ones marked; and the rule (and grant) that decides. It reads what permissions/get reads for one user and one resource ' +
        'twice over, plus the folders above it: bounded by the folder depth. An organization, folder or document that does not exist is NOT_FOUND. ' +
        'With a user token, `userId` must be the token\'s user, and the resource one the user may open (PERMISSION_DENIED otherwise, missing ' +
        'ones alike): the deciding details only for what the user may open.',
      example: { organizationId: 'org1', userId: 'samarth', documentId: 'freestyle-comments1' },
    },
    mutates: false,
    auth: 'apiKey',
    schema: oneResource(z.object({ organizationId: id(), userId: id(), documentId: id().optional(), folderId: id().optional(), asOf: asOf() })),
    response: explanation,
    errors: ['NOT_FOUND'],
    // Its own user only: an explanation lists the user's grants, which are theirs to see.
    userToken: true,
    async handler(data, ctx) {
      onlySelf(ctx, 'data.userId', [data.userId]);
      // A user token: explained only where its user may open it, else refused as a missing one.
      const view = await accessView(services.read, ctx.now, data.asOf, services.config.historyRetentionDays);
      await mayOpenResource(ctx, data.organizationId, refOf(data), view);
      const result = await explainUseCase(ctx, view, { organizationId: data.organizationId, userId: data.userId, ...refOf(data) });
      return { message: 'Access explained successfully.', data: result };
    },
  });
}

const change = () =>
  z.object({
    type: z.string().describe('The event type (`GrantAdded`, `FolderMoved`, `UserGroupMemberRemoved`...), or `expired` when a temporary grant ran out.'),
    time: z.number().describe('Unix milliseconds: the event\'s time, or the expiry (`expiresAt * 1000`).'),
    actor: z.string().describe('Who made it: `apikey:<id>`, `workspace:<id>`, `cli`, `system:<process>`...; `expiry` for an expiry; `unknown` on events older than the actor.'),
  });

const interval = z.object({
  userId: z.string(),
  accessRole: accessRole(),
  from: z.number().describe('Unix milliseconds: when the user could open it with this role through this grant.'),
  to: z.number().nullable().describe('Unix milliseconds: when that ended; null while it holds.'),
  via: z.object({ level: level(), id: z.string(), groupId: z.string().optional() }).describe('The grant the role came from, as users/get names it.'),
  openedBy: change().describe('The change that opened the interval.'),
  closedBy: change().nullable().describe('The change that closed it; null while open.'),
});

function historyRoute() {
  return defineRoute({
    path: '/v2/auth/access/history',
    tag: 'Permissions',
    doc: {
      summary: 'Who could open a folder or document, and when',
      description: 'For `documentId` or `folderId` (exactly one): the intervals during which each user could open it through a grant (their own or a ' +
        'group\'s), each exactly the users/get row of every instant inside it (`accessRole`, `via`), with the change that opened and closed it ' +
        '(event type, time, actor; a temporary grant running out closes at its `expiresAt`). With `userId`, that user\'s only; with `from` / `to` ' +
        '(ISO 8601 UTC with milliseconds or Unix milliseconds), those overlapping [from, to). Ordered by `from`, then userId. Users let in with no ' +
        `grant (a public resource, users/get's \`everyone\`) have no interval, nor has a resource that never existed. ` +
        `At most ${MAX_HISTORY_ROWS.toLocaleString('en-US')} changes to what the ` +
        `resource is resolved from and ${MAX_HISTORY_CHANGES.toLocaleString('en-US')} instants of change are examined per call (INVALID_ARGUMENT beyond). ` +
        `\`pageSize\` 1 to ${MAX_PAGE_SIZE} (default ${HISTORY_DEFAULT_PAGE_SIZE}); \`result.pageToken\` while more may follow, bound to the query that made it. ` +
        `A page reads at most ${HISTORY_READ_BUDGET.toLocaleString('en-US')} store documents resolving users and runs at most the server's query deadline ` +
        '(`QUERY_DEADLINE_MS`); when either runs out first the page ends early, possibly empty, with a `result.pageToken` that goes on from the ' +
        'instant and user it reached. So keep reading while a token comes back. The deadline passing before a page examined anyone, or the request ' +
        'timeout, is RESOURCE_EXHAUSTED naming it. When the server keeps a limited history (`HISTORY_RETENTION_DAYS`), a `from` before its ' +
        'horizon (now minus that many days) or a `to` at or before it is INVALID_ARGUMENT naming the horizon; without `from` the history ' +
        'starts at the horizon, and an interval already open then is shown from it, `openedBy` `{ type: "retentionHorizon", time: <horizon>, ' +
        'actor: "retention" }`.',
      example: { organizationId: 'org1', documentId: 'freestyle-comments1', from: '2026-11-01T00:00:00.000Z' },
    },
    mutates: false,
    auth: 'apiKey',
    schema: oneResource(z.object({
      organizationId: id(),
      documentId: id().optional(),
      folderId: id().optional(),
      userId: id().optional(),
      from: asOf().describe('Intervals still open at or after this instant (ISO 8601 UTC with milliseconds, or Unix milliseconds).'),
      to: asOf().describe('Intervals begun before this instant.'),
      pageSize: pageSize(),
      pageToken: pageToken(),
    })),
    response: z.array(interval),
    paged: 'pageToken',
    async handler(data, ctx) {
      const page = await accessHistoryOf(ctx, data);
      return { message: 'Access history retrieved successfully.', data: page.data, pageToken: page.pageToken };
    },
  });
}
