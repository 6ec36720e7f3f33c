/**
 * Which changes a user token's change stream shows (`GET /v2/changes/stream` with
 * `Authorization: Bearer`; docs/architecture.md, "The change stream"): the changes to the
 * user's own access, and the changes to what the user can open, so a front end can close a
 * document the moment its user's access ends, and learns nothing of anyone else's.
 *
 * A change of a page of the key's feed (queries/changes.ts) is shown when it is
 * - a grant or revocation of the user (`grant` family on a `grants` stream: `data.userId`), an
 *   organization membership included (a grant on the organization);
 * - the user's own group membership added or removed, or the user's own profile (`group`,
 *   `user` families: `data.userId`); never another user's membership;
 * - a grant or revocation of a group the user is a member of (`GroupAccessGranted`,
 *   `GroupAccessRevoked`), or the group's own change, now or just before the change (a
 *   revocation that came with the user's leaving the group still shows). An organization's
 *   deletion removes its groups' members first: what shows then is the organization's
 *   deletion and the user's own membership revoked;
 * - a change to a document, a folder or an organization the user can open now, or could open
 *   then (so the change that ends the access, a document deleted, disabled or made
 *   restricted, shows too): resolved as `/v2/auth/permissions/get` resolves it
 *   (queries/permissions.ts), "then" from the history read models (queries/as-of.ts), judged
 *   for a page's changes of one organization at two instants: just before the earliest, and
 *   at the latest (timestamps are milliseconds: a grant and a change can share one). A
 *   resource the user could open only strictly between those instants is not shown; the
 *   user's own grant and revocation of it are.
 * Nothing else: another user's grant, an API key's settings, agents, webhooks, migrations.
 *
 * An expiry is no event: the grant's `GrantAdded` carries `expiresAt`, and a front end closes
 * the document at that time.
 *
 * Cost, per page of at most `pageSize` changes: one membership lookup per group change (two
 * when the user is not a member now), and per organization the page touches one resolution of
 * the user over the page's documents and folders there, plus at most two as of the page's
 * instants for those the user cannot open now. Each resolution is of one user over at most
 * `pageSize` resources, far below MAX_RESOLUTION_COST; one refused (a bound, an organization
 * gone) hides its changes rather than ending the stream.
 */
import { AsOfView } from '../../queries/as-of.js';
import { historyHorizon } from '../jobs/retention.js';
import type { Pacer } from '../../queries/cost.js';
import { resolvePermissions } from '../../queries/permissions.js';
import type { AuditEventDoc } from '../../projections/audit.js';
import { GROUP_MEMBERS, memberKey } from '../../projections/groups.js';
import type { ReadView } from '../ports/read-store.js';
import { ApiError } from '../shared/errors.js';
import { organizationOf, resourceOf } from './changes.js';

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

type Kind = 'organization' | 'folder' | 'document';

/** What a row needs resolved: an organization, or one of its folders or documents. */
interface ResourceAsk {
  kind: Kind;
  organizationId: string;
  id: string;
}

/** The resource of a document, folder or organization change; undefined for other families. */
function resourceAsk(e: AuditEventDoc): ResourceAsk | undefined {
  const family = e.family;
  if (family !== 'document' && family !== 'folder' && family !== 'organization') return undefined;
  const organizationId = organizationOf(e);
  if (organizationId === undefined) return undefined;
  if (family === 'organization') return { kind: 'organization', organizationId, id: organizationId };
  const r = resourceOf(e, family);
  // A folder subtree deleted names its folders in `folderIds`: its first one stands for it.
  const id = r?.id ?? (family === 'folder' && Array.isArray(e.data.folderIds) ? str(e.data.folderIds[0]) : undefined);
  return id === undefined ? undefined : { kind: family, organizationId, id };
}

type Opened = Map<string, boolean>;
const askKey = (a: ResourceAsk) => `${a.kind}\u0000${a.id}`;

/** Which of `asks` (one organization's) `userId` may open, read through `read` at `atMs`. */
async function openable(read: ReadView, apiKey: string, userId: string, atMs: number, organizationId: string, asks: readonly ResourceAsk[], pacer: Pacer): Promise<Opened> {
  const documentIds = [...new Set(asks.filter((a) => a.kind === 'document').map((a) => a.id))];
  const folderIds = [...new Set(asks.filter((a) => a.kind === 'folder').map((a) => a.id))];
  let entries;
  try {
    const rows = await resolvePermissions(read, apiKey, atMs, { organizationId, userIds: [userId], ...(documentIds.length ? { documentIds } : {}), ...(folderIds.length ? { folderIds } : {}) }, { pacer });
    entries = rows[userId];
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    // A missing resource: the others as resolved (permissionsForActingUser does the same); any
    // other refusal (no such organization, a bound): nothing opens.
    entries = error.status === 'NOT_FOUND' ? (error.details as Record<string, typeof entries> | undefined)?.[userId] : undefined;
  }
  const out: Opened = new Map();
  const opens = (e: unknown) => typeof e === 'object' && e !== null && 'accessRole' in e;
  for (const a of asks) {
    const entry = a.kind === 'organization' ? entries?.organization[a.id] : a.kind === 'folder' ? entries?.folders?.[a.id] : entries?.documents?.[a.id];
    out.set(askKey(a), opens(entry));
  }
  return out;
}

/** Whether `userId` is a member of the group, now or (with `beforeMs`) at that instant. */
async function isMember(read: ReadView, apiKey: string, userId: string, organizationId: string, groupId: string, beforeMs?: number): Promise<boolean> {
  const view = beforeMs === undefined ? read : new AsOfView(read, beforeMs);
  try {
    return (await view.get(GROUP_MEMBERS, memberKey(apiKey, organizationId, groupId, userId))) !== null;
  } catch (error) {
    if (error instanceof ApiError) return false;
    throw error;
  }
}

/**
 * The rows of `rows` (one page of `apiKey`'s feed, in log order) that `userId`'s stream
 * shows, in the same order. `nowMs`: the instant "can open now" is judged at.
 * `historyRetentionDays` (HISTORY_RETENTION_DAYS): "could open then" is never asked of an
 * instant before the retention horizon (historyHorizon, src/jobs/retention.ts), whose versions
 * may be deleted; such a change of a resource the user cannot open now is not shown (hiding
 * is the safe side).
 */
export async function rowsForUser(read: ReadView, apiKey: string, userId: string, nowMs: number, rows: readonly AuditEventDoc[], pacer: Pacer, historyRetentionDays = 0): Promise<AuditEventDoc[]> {
  const horizon = (await historyHorizon(read, historyRetentionDays, nowMs))?.at ?? -Infinity;
  const shown = new Set<AuditEventDoc>();
  const byOrganization = new Map<string, Array<{ row: AuditEventDoc; ask: ResourceAsk }>>();
  for (const e of rows) {
    const d = e.data;
    if (e.family === 'grant' && e.category === 'grants') {
      if (d.userId === userId) shown.add(e);
    } else if (e.family === 'user') {
      if (d.userId === userId || (d.userId === undefined && e.streamIds[0] === userId)) shown.add(e);
    } else if (e.family === 'group' && d.userId !== undefined) {
      // A membership: the user's own only (who else is in its groups is not its business).
      if (d.userId === userId) shown.add(e);
    } else if (e.family === 'group' || (e.family === 'grant' && e.category === 'usergroup')) {
      // A group's own change or its grants: for its members.
      const organizationId = organizationOf(e);
      const groupId = str(d.groupId) ?? e.streamIds[1];
      if (organizationId === undefined || groupId === undefined) continue;
      pacer.check();
      if ((await isMember(read, apiKey, userId, organizationId, groupId)) || (e.time - 1 >= horizon && (await isMember(read, apiKey, userId, organizationId, groupId, e.time - 1)))) shown.add(e);
    } else {
      const ask = resourceAsk(e);
      if (!ask) continue;
      const list = byOrganization.get(ask.organizationId) ?? [];
      list.push({ row: e, ask });
      byOrganization.set(ask.organizationId, list);
    }
  }
  for (const [organizationId, list] of byOrganization) {
    pacer.check();
    const now = await openable(read, apiKey, userId, nowMs, organizationId, list.map((x) => x.ask), pacer);
    const closed = list.filter((x) => !now.get(askKey(x.ask)));
    for (const x of list) if (now.get(askKey(x.ask))) shown.add(x.row);
    if (closed.length === 0) continue;
    // Then: just before the earliest of them (the change that ends the access, a deletion,
    // shows), and at the instant of the latest (a grant and a change in the same millisecond).
    const times = closed.map((x) => x.row.time);
    let still = closed;
    for (const at of [Math.min(...times) - 1, Math.max(...times)]) {
      if (at < horizon) continue;
      const then = await openable(new AsOfView(read, at), apiKey, userId, at, organizationId, still.map((x) => x.ask), pacer);
      for (const x of still) if (then.get(askKey(x.ask))) shown.add(x.row);
      still = still.filter((x) => !shown.has(x.row));
      if (still.length === 0) break;
    }
  }
  return rows.filter((e) => shown.has(e));
}
