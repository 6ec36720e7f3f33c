/**
 * Presence (semantics §5), the use cases behind src/http/routes/presence.ts: who is on a
 * document, kept in the read store with a lifetime (src/presence/store.ts), never in the
 * event log. What a user token may do (its own entry, on a document its user may open) is
 * the route's check, made before these run.
 *
 * Names and e-mails are stored sealed with the user's personal data key, like their profile
 * (src/usecases/personal.ts, docs/privacy.md): an entry left in a store's free space after
 * it expired or was replaced is unreadable once the user's data is deleted.
 */
import { presencePage, presenceView, removePresence as removeEntries, writePresence, type PresenceInput } from '../presence/store.js';
import { DEFAULT_PAGE_SIZE } from '../../queries/paging.js';
import type { TenantReadContext } from './context.js';
import { openPersonal, preparePersonalKeys, sealPersonal } from './personal.js';

/** A presence write: users on one document of an organization. */
interface PresenceWrite {
  organizationId: string;
  documentId: string;
  users: PresenceInput[];
}

/** Writes the users; returns the ids that had no live entry (each once; none unless `onlyPresent`). */
async function write(ctx: TenantReadContext, input: PresenceWrite, onlyPresent: boolean): Promise<string[]> {
  const scope = { apiKey: ctx.apiKey, organizationId: input.organizationId, documentId: input.documentId };
  const ttlMs = ctx.services.config.presenceTtlSeconds * 1000;
  await preparePersonalKeys(ctx, input.users);
  const users = await Promise.all(input.users.map(async (u) => ({ ...u, ...(await sealPersonal(ctx, u.userId, { name: u.name, email: u.email })) })));
  const applied = await writePresence(ctx.services.read, scope, users, { now: ctx.now, ttlMs, onlyPresent });
  return [...new Set(input.users.map((u) => u.userId).filter((u) => applied.get(u) !== true))];
}

/** presence/add: the users join (or refresh) the document's presence list. */
export async function addPresence(ctx: TenantReadContext, input: PresenceWrite): Promise<void> {
  await write(ctx, input, false);
}

/**
 * presence/update: refreshes the users already present; one without a live entry is not
 * added, the others still are refreshed. Returns the ids of those not present.
 */
export function updatePresence(ctx: TenantReadContext, input: PresenceWrite): Promise<string[]> {
  return write(ctx, input, true);
}

/** presence/get: a page of the live entries of one document, or of every document of the organization. */
export async function listPresence(
  ctx: TenantReadContext,
  input: { organizationId: string; documentId?: string | undefined; userIds?: string[] | undefined; pageSize?: number | undefined; pageToken?: string | undefined },
) {
  const page = await presencePage(
    ctx.services.read,
    { apiKey: ctx.apiKey, organizationId: input.organizationId },
    { documentId: input.documentId, userIds: input.userIds, pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE, pageToken: input.pageToken },
    ctx.now,
  );
  const rows = await Promise.all(page.rows.map(async (d) => presenceView({ ...d, ...(await openPersonal(ctx, d.userId, { name: d.name, email: d.email })) })));
  return { rows, pageToken: page.pageToken };
}

/** presence/delete: removes the users; one who is not present is no error. */
export async function removePresence(ctx: TenantReadContext, input: { organizationId: string; documentId: string; userIds: string[] }): Promise<void> {
  await removeEntries(ctx.services.read, { apiKey: ctx.apiKey, organizationId: input.organizationId, documentId: input.documentId }, input.userIds, ctx.now);
}
