/**
 * Presence (semantics §5), API-key mode: `/v2/presence/add`, `/update`, `/get` and the
 * spec's `/delete`. Ephemeral: nothing here touches the event log (src/presence/store.ts).
 *
 * - add: the users join (or refresh) the document's presence list. Answers `{ success: true }`
 *   (the hosted API's answer).
 * - update: refreshes users already present (a heartbeat, or a new name/email/status). A user
 *   without a live entry is not added (add them again): the others are still updated (the
 *   batch rule, semantics §0), and the answer says so: `{ success: false, notPresent: [ids] }`
 *   with its own message. When all were present: `{ success: true }`, as documented.
 * - get (not in the hosted API): live entries of one document, or of all documents of the
 *   organization, paged like every list (semantics §1 Limits): `pageSize` 1..1000 (default
 *   1000), `pageToken`; `result.pageToken` while more may follow.
 * - delete: removes the users; removing someone absent is not an error.
 *
 * All four take a user token (route.ts `userToken`): the front end of a user then keeps its
 * own entry and reads a document's presence itself, on documents its user may open
 * (src/http/acting-user.ts), writing only its own entry (`users`, `userIds` = its user) and
 * reading one document at a time (`documentId` required). Those checks are made here; the
 * rest is a use case (src/usecases/presence.ts).
 */
import { z } from 'zod';
import type { Services } from '../../composition/services.js';
import { addPresence, listPresence, removePresence, updatePresence } from '../../usecases/presence.js';
import type { RequestContext } from '../context.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { email, id, ids, items, text } from '../validation.js';
import { pageSize, pageToken } from './domain.js';
import { mayOpenDocument, onlySelf, requireField } from '../acting-user.js';

const presenceStatus = z.enum(['online', 'away', 'offline']);

const userSchema = z.object({
  userId: id(),
  name: text(256).optional(),
  email: email().optional(),
  status: presenceStatus.optional(),
});

const writeSchema = z.object({ organizationId: id(), documentId: id(), users: items(userSchema) });

// ---- answers ----

/** The hosted API's answer to a presence write. */
const done = z.object({ success: z.literal(true) });

/** An entry as `presenceView` (src/presence/store.ts) shows it. */
const presenceAnswer = z.object({
  userId: z.string(),
  documentId: z.string(),
  name: z.string().optional(),
  email: z.string().optional(),
  status: presenceStatus,
  lastSeenAt: z.number().describe('Unix milliseconds of the last add or update.'),
  expiresAt: z.number().describe('Unix seconds: the entry is gone after this unless refreshed.'),
});

/** A user token writes only its own entry, on a document its user may open. */
async function asTokenUser(data: z.output<typeof writeSchema>, ctx: RequestContext): Promise<void> {
  onlySelf(ctx, 'data.users[].userId', data.users.map((u) => u.userId));
  await mayOpenDocument(ctx, data.organizationId, data.documentId);
}

const TOKEN_WRITE = 'With a user token: only the token\'s own user, on a document that user may open (PERMISSION_DENIED otherwise).';

/** add and update, whose documentation names how long an entry lives (`ttl`, e.g. "60 seconds"). */
function writeRoutes(ttl: string): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/presence/add',
    tag: 'Presence',
    doc: {
      summary: 'Mark users present on a document',
      description: `Each user joins (or refreshes) the document's presence list. \`status\` defaults to \`online\` (an entry already live keeps its own). An entry lives ${ttl} unless refreshed by another add or an update. Presence is not kept in the event log. ${TOKEN_WRITE}`,
      example: {
        organizationId: 'org-123',
        documentId: 'doc-456',
        users: [
          { userId: 'user-1', name: 'User Name', email: 'user@example.com' },
          { userId: 'user-2', name: 'Another User', email: 'another@example.com', status: 'away' },
        ],
      },
    },
    mutates: true,
    auth: 'apiKey',
    userToken: true,
    schema: writeSchema,
    response: done,
    async handler(data, ctx) {
      await asTokenUser(data, ctx);
      await addPresence(ctx, data);
      return { message: 'Presence added successfully.', data: { success: true } };
    },
  });

  const update = defineRoute({
    path: '/v2/presence/update',
    tag: 'Presence',
    doc: {
      summary: 'Refresh users already present on a document',
      description: [
        `A heartbeat, or a new name, email or status: each entry lives another ${ttl}.`,
        '',
        'A user without a live entry is not added (use `/v2/presence/add`); the others are still updated. The answer then is `{ success: false, notPresent: [userIds] }` with its own message, and `{ success: true }` when every user was present.',
        '',
        TOKEN_WRITE,
      ].join('\n'),
      example: { organizationId: 'org-123', documentId: 'doc-456', users: [{ userId: 'user-1', status: 'away' }] },
    },
    mutates: true,
    auth: 'apiKey',
    userToken: true,
    schema: writeSchema,
    response: z.union([
      done,
      z.object({
        success: z.literal(false),
        notPresent: z.array(z.string()).describe('The users that had no live entry: not added, nothing changed for them.'),
      }),
    ]),
    async handler(data, ctx) {
      await asTokenUser(data, ctx);
      const notPresent = await updatePresence(ctx, data);
      if (notPresent.length === 0) return { message: 'Presence updated successfully.', data: { success: true } };
      return {
        message: 'Presence updated for the users present; the others are not present on this document (add them with /v2/presence/add).',
        data: { success: false, notPresent },
      };
    },
  });

  return [add, update];
}

const get = defineRoute({
  path: '/v2/presence/get',
  tag: 'Presence',
  doc: {
    summary: 'List who is present on a document, or on every document of an organization',
    description:
      'Live entries only, oldest join first; `userIds` narrows. Paged: `pageSize` 1 to 1000 (default 1000); `result.pageToken` while more may follow, sent back as `data.pageToken`. ' +
      'With a user token: `documentId` is required and must be a document the token\'s user may open (PERMISSION_DENIED otherwise); everyone present there is listed.',
    example: { organizationId: 'org-123', documentId: 'doc-456' },
  },
  mutates: false,
  auth: 'apiKey',
  userToken: true,
  schema: z.object({
    organizationId: id(),
    documentId: id().optional(),
    userIds: ids().optional(),
    pageSize: pageSize(),
    pageToken: pageToken(),
  }),
  response: z.array(presenceAnswer),
  paged: 'pageToken',
  async handler(data, ctx) {
    // A user token reads one document it may open (everyone present there), never the whole organization.
    requireField(ctx, 'data.documentId', data.documentId);
    if (data.documentId !== undefined) await mayOpenDocument(ctx, data.organizationId, data.documentId);
    const page = await listPresence(ctx, data);
    return { message: 'Presence retrieved successfully.', data: page.rows, pageToken: page.pageToken };
  },
});

const remove = defineRoute({
  path: '/v2/presence/delete',
  tag: 'Presence',
  doc: {
    summary: 'Remove users from a document\'s presence list',
    description: `Removing a user who is not present is not an error. ${TOKEN_WRITE}`,
    example: { organizationId: 'org-123', documentId: 'doc-456', userIds: ['user-1'] },
  },
  mutates: true,
  auth: 'apiKey',
  userToken: true,
  schema: z.object({ organizationId: id(), documentId: id(), userIds: ids() }),
  response: done,
  async handler(data, ctx) {
    onlySelf(ctx, 'data.userIds', data.userIds);
    await mayOpenDocument(ctx, data.organizationId, data.documentId);
    await removePresence(ctx, data);
    return { message: 'Presence deleted successfully.', data: { success: true } };
  },
});

export function presenceRoutes(services: Services): AnyRoute[] {
  return [...writeRoutes(`${services.config.presenceTtlSeconds} seconds`), get, remove];
}
