/**
 * Presence (semantics §5), API-key mode: `/v2/presence/add`, `/update`, `/get` and the
 * spec's `/delete`. Ephemeral: nothing here touches the event log (src/presence/store.ts).
 *
 * - add: the users join (or refresh) the document's presence list.
 * - update: refreshes users already present (a heartbeat, or a new name/email/status); a
 *   user without a live entry gets `success: false` and must be added again.
 * - get: live entries of one document, or of all documents of the organization, paged like
 *   every list (semantics §1 Limits): `pageSize` 1..1000 (default 1000), `pageToken`;
 *   `result.pageToken` while more may follow.
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

  async function write(data: z.output<typeof writeSchema>, ctx: RequestContext, onlyPresent: boolean) {
    const scope = { apiKey: ctx.apiKey, organizationId: data.organizationId, documentId: data.documentId };
    const applied = await writePresence(services.read, scope, data.users as PresenceInput[], { now: ctx.now, ttlMs, onlyPresent });
    const results: Record<string, { success: boolean; id: string; message: string }> = {};
    for (const u of data.users) {
      const ok = applied.get(u.userId) === true;
      results[u.userId] = {
        success: ok,
        id: u.userId,
        message: ok ? (onlyPresent ? 'Presence updated.' : 'User added to presence.') : 'User is not present on this document.',
      };
    }
    return results;
  }

  const add = defineRoute({
    path: '/v2/presence/add',
    mutates: true,
    auth: 'apiKey',
    schema: writeSchema,
    handler: async (data, ctx) => ({ message: 'Presence added successfully.', data: await write(data, ctx, false) }),
  });

  const update = defineRoute({
    path: '/v2/presence/update',
    mutates: true,
    auth: 'apiKey',
    schema: writeSchema,
    handler: async (data, ctx) => ({ message: 'Presence updated successfully.', data: await write(data, ctx, true) }),
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
