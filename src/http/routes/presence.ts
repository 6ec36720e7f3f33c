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
 */
import { z } from 'zod';
import { presencePage, presenceView, removePresence, writePresence, type PresenceInput } from '../../presence/store.js';
import { DEFAULT_PAGE_SIZE } from '../../../queries/paging.js';
import type { Services } from '../../services.js';
import type { RequestContext } from '../context.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { email, id, ids, items, text } from '../validation.js';
import { pageSize, pageToken } from './domain.js';

const userSchema = z.object({
  userId: id(),
  name: text(256).optional(),
  email: email().optional(),
  status: z.enum(['online', 'away', 'offline']).optional(),
});

const writeSchema = z.object({ organizationId: id(), documentId: id(), users: items(userSchema) });

export function presenceRoutes(services: Services): AnyRoute[] {
  const ttlMs = services.config.presenceTtlSeconds * 1000;

  /** Writes the users; returns the ids that had no live entry (update only). */
  async function write(data: z.output<typeof writeSchema>, ctx: RequestContext, onlyPresent: boolean): Promise<string[]> {
    const scope = { apiKey: ctx.apiKey, organizationId: data.organizationId, documentId: data.documentId };
    const applied = await writePresence(services.read, scope, data.users as PresenceInput[], { now: ctx.now, ttlMs, onlyPresent });
    return [...new Set(data.users.map((u) => u.userId).filter((u) => applied.get(u) !== true))];
  }

  const add = defineRoute({
    path: '/v2/presence/add',
    mutates: true,
    auth: 'apiKey',
    schema: writeSchema,
    async handler(data, ctx) {
      await write(data, ctx, false);
      return { message: 'Presence added successfully.', data: { success: true } };
    },
  });

  const update = defineRoute({
    path: '/v2/presence/update',
    mutates: true,
    auth: 'apiKey',
    schema: writeSchema,
    async handler(data, ctx) {
      const notPresent = await write(data, ctx, true);
      if (notPresent.length === 0) return { message: 'Presence updated successfully.', data: { success: true } };
      return {
        message: 'Presence updated for the users present; the others are not present on this document (add them with /v2/presence/add).',
        data: { success: false, notPresent },
      };
    },
  });

  const get = defineRoute({
    path: '/v2/presence/get',
    mutates: false,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      documentId: id().optional(),
      userIds: ids().optional(),
      pageSize: pageSize(),
      pageToken: pageToken(),
    }),
    async handler(data, ctx) {
      const page = await presencePage(
        services.read,
        { apiKey: ctx.apiKey, organizationId: data.organizationId },
        { documentId: data.documentId, userIds: data.userIds, pageSize: data.pageSize ?? DEFAULT_PAGE_SIZE, pageToken: data.pageToken },
        ctx.now,
      );
      return { message: 'Presence retrieved successfully.', data: page.rows.map(presenceView), pageToken: page.pageToken };
    },
  });

  const remove = defineRoute({
    path: '/v2/presence/delete',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), documentId: id(), userIds: ids() }),
    async handler(data, ctx) {
      await removePresence(services.read, { apiKey: ctx.apiKey, organizationId: data.organizationId, documentId: data.documentId }, data.userIds, ctx.now);
      return { message: 'Presence deleted successfully.', data: { success: true } };
    },
  });

  return [add, update, get, remove];
}
