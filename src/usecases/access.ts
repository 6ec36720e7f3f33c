/**
 * The access questions (semantics §3 "Access queries", issue 25): which resources a user can
 * open (resources/get), who can open a resource (users/get), why (permissions/explain), now
 * or as of a past instant. The HTTP routes (src/http/routes/access-queries.ts) validate and
 * check the acting user; the answers come from here.
 *
 * `asOf` (issue 25): the same question answered as it would have been at that instant. The
 * rules are the live ones (queries/permissions.ts, queries/access.ts), read through an
 * AsOfView of the history read models (queries/as-of.ts) with grants judged at `asOf`
 * instead of the clock: an event counts from its own time on, a temporary grant while
 * asOf < expiresAt * 1000, and an organization, folder or document that did not exist then
 * answers as a missing one does today.
 */
import type { ReadView } from '../ports/read-store.js';
import { invalidArgument } from '../shared/errors.js';
import { ACCESS_READ_BUDGET, explainAccess, resourcesPage, usersPage, type ExplainQuery, type ResourceRef, type ResourcesQuery } from '../../queries/access.js';
import { Deadline } from '../../queries/cost.js';
import { AsOfView } from '../../queries/as-of.js';
import { accessHistory, HISTORY_READ_BUDGET, type HistoryQuery } from '../../queries/access-history.js';
import type { AccessRole } from '../../commands/grant.js';
import type { Services } from '../composition/services.js';
import { historyHorizon } from '../jobs/retention.js';

/** `asOf` as requests give it: an ISO 8601 UTC instant with milliseconds, or Unix milliseconds. */
export type AsOfInput = string | number;

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * `asOf` in Unix ms, checked: INVALID_ARGUMENT naming `field` when malformed or after `nowMs`.
 * Example: "2026-11-25T15:04:05.123Z" and 1795619045123 are the same instant;
 * "2026-11-25T15:04:05Z" (no milliseconds), "2026-02-30T00:00:00.000Z" and -1 are refused.
 */
function parseAsOf(value: AsOfInput | undefined, nowMs: number, field: string): number | undefined {
  const ms = parseInstant(value, field);
  if (ms !== undefined && ms > nowMs) throw invalidArgument(`${field} is after now (${new Date(nowMs).toISOString()}): only the past can be asked about.`);
  return ms;
}

type Horizon = Awaited<ReturnType<typeof historyHorizon>>;

/**
 * INVALID_ARGUMENT naming `field` when `ms` is before the history retention horizon: the
 * versions that answered then may be deleted, and an answer from what is left could be
 * wrong. `atOrBefore`: the horizon itself is refused too (the end of a range, which excludes it).
 */
function checkHorizon(ms: number, horizon: Horizon, field: string, atOrBefore = false): void {
  if (horizon === undefined || ms > horizon.at || (ms === horizon.at && !atOrBefore)) return;
  throw invalidArgument(`${field} is before the history retention horizon (${new Date(horizon.at).toISOString()}): ${horizon.why}.`);
}

/**
 * `asOf` checked as parseAsOf does, and INVALID_ARGUMENT when before the history retention
 * horizon (historyHorizon, src/jobs/retention.ts), read only when there is an instant to check.
 */
export async function checkedAsOf(read: ReadView, value: AsOfInput | undefined, nowMs: number, historyRetentionDays: number, field = 'data.asOf'): Promise<number | undefined> {
  const ms = parseAsOf(value, nowMs, field);
  if (ms !== undefined) checkHorizon(ms, await historyHorizon(read, historyRetentionDays, nowMs), field);
  return ms;
}

/** An instant as requests give it (see AsOfInput) in Unix ms; INVALID_ARGUMENT naming `field` when malformed. */
function parseInstant(value: AsOfInput | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw invalidArgument(`${field} must be a whole number of Unix milliseconds, 0 or more.`);
    ms = value;
  } else {
    ms = Date.parse(value);
    // Round-tripping refuses dates that do not exist (February 30th) which Date.parse rolls over.
    if (!ISO_MS.test(value) || Number.isNaN(ms) || new Date(ms).toISOString() !== value) {
      throw invalidArgument(`${field} must be an ISO 8601 instant in UTC with milliseconds, as "2026-11-25T15:04:05.123Z", or Unix milliseconds.`);
    }
  }
  return ms;
}

/** Where and at which instant an access question reads: the live read models and the clock, or the history at `asOf`. */
export interface AccessView {
  read: ReadView;
  /** The instant grants are judged at (isLive): the request's clock, or asOf. */
  atMs: number;
  asOf?: number;
}

export async function accessView(read: ReadView, nowMs: number, asOf: AsOfInput | undefined, historyRetentionDays: number): Promise<AccessView> {
  const at = await checkedAsOf(read, asOf, nowMs, historyRetentionDays);
  return at === undefined ? { read, atMs: nowMs } : { read: new AsOfView(read, at), atMs: at, asOf: at };
}

/** What an access question needs from its caller. */
export interface AccessAsker {
  readonly apiKey: string;
  readonly now: number;
  readonly services: Pick<Services, 'read' | 'config' | 'clock'>;
  /** The request's signal (src/http/cancel.ts): aborted, the query stops at its next check. */
  readonly signal?: AbortSignal;
}

// Past it a page ends early with a pageToken (queries/cost.ts), as when its budget runs out.
const deadlineOf = (ask: AccessAsker) => new Deadline(ask.services.config.queryDeadlineMs, ask.services.clock, ask.now, ask.signal);

export async function listResources(ask: AccessAsker, view: AccessView, q: ResourcesQuery) {
  return resourcesPage(view.read, ask.apiKey, view.atMs, { ...q, ...(view.asOf !== undefined ? { asOf: view.asOf } : {}) }, ACCESS_READ_BUDGET, deadlineOf(ask));
}

export interface UsersQuestion {
  organizationId: string;
  minAccessRole?: AccessRole;
  pageSize?: number;
  pageToken?: string;
}

export async function listUsers(ask: AccessAsker, view: AccessView, q: UsersQuestion & ResourceRef) {
  return usersPage(view.read, ask.apiKey, view.atMs, { ...q, ...(view.asOf !== undefined ? { asOf: view.asOf } : {}) }, ACCESS_READ_BUDGET, deadlineOf(ask));
}

export async function explain(ask: AccessAsker, view: AccessView, q: ExplainQuery) {
  return explainAccess(view.read, ask.apiKey, view.atMs, q);
}

export type HistoryQuestion = Omit<HistoryQuery, 'from' | 'to'> & { from?: AsOfInput; to?: AsOfInput };

/**
 * Who could open R when (`/v2/auth/access/history`, queries/access-history.ts): intervals
 * overlapping [from, to), each with the changes that opened and closed it; a page within the
 * read budget and the query deadline, as users/get's.
 */
export async function accessHistoryOf(ask: AccessAsker, q: HistoryQuestion) {
  const from = parseInstant(q.from, 'data.from');
  const to = parseInstant(q.to, 'data.to');
  if (from !== undefined && to !== undefined && to <= from) throw invalidArgument('data.to must be after data.from.');
  // A range reaching before the retention horizon is refused; without `from` the history
  // starts at the horizon (intervals open then are shown from it: queries/access-history.ts).
  const horizon = await historyHorizon(ask.services.read, ask.services.config.historyRetentionDays, ask.now);
  if (from !== undefined) checkHorizon(from, horizon, 'data.from');
  if (to !== undefined) checkHorizon(to, horizon, 'data.to', true);
  const { from: _f, to: _t, ...rest } = q;
  const query = { ...rest, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) } as HistoryQuery;
  return accessHistory(ask.services.read, ask.apiKey, ask.now, query, HISTORY_READ_BUDGET, deadlineOf(ask), horizon?.at);
}
