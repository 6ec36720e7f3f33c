/**
 * The change feed of one API key (`/v2/changes/get`): its events in log order strictly after
 * a position, from the audit index (projections/audit.ts), never from the log itself.
 *
 * Stable under concurrent writes: the projections apply the log in order, each batch with
 * its checkpoints in one transaction, so the rows at or before `bound` (a position every
 * projection had passed before the reads began) are all there, and no row at or before it
 * appears later. A page keeps only rows at or before `bound`, so pages never skip a change
 * (no gap) and the next page starts strictly after the last one (no duplicate), however many
 * reads a page makes (one per family with a `types` filter, each at its own moment).
 *
 * Bounded: one indexed read of at most `pageSize` rows, or one per family asked for.
 */
import { LOG_START, type LogPosition } from '../src/ports/event-store.js';
import type { ReadView } from '../src/ports/read-store.js';
import { invalidArgument } from '../src/shared/errors.js';
import { AUDIT_EVENTS, AUDIT_RETENTION, CHANGE_FAMILIES, type AuditEventDoc, type AuditPrunedDoc, type ChangeFamily } from '../projections/audit.js';
import type { Pacer } from './cost.js';

export interface ChangesPage {
  /** The page's rows, in log order. */
  rows: AuditEventDoc[];
  /** Where the next page starts (strictly after): the last row's position, or `bound` when the page holds every row up to it. */
  next: LogPosition;
}

/**
 * INVALID_ARGUMENT naming `field` when `apiKey`'s feed would go on after `after` over changes the
 * audit retention deleted (AUDIT_RETENTION_DAYS, src/jobs/retention.ts): the page would start
 * at the oldest change kept and say nothing of the gap. One read of one document.
 */
export async function checkNotPruned(read: ReadView, apiKey: string, after: LogPosition, field: string): Promise<void> {
  const pruned = await read.get<AuditPrunedDoc>(AUDIT_RETENTION, apiKey);
  if (!pruned || after >= pruned.through) return;
  throw invalidArgument(
    `${after === LOG_START ? 'The changes from the start' : `The changes after ${field}`} are no longer all kept: the audit retention (AUDIT_RETENTION_DAYS) ` +
      `deleted those up to ${new Date(pruned.time).toISOString()}. Start again from a recent token (a write's x-consistency-token, or the stream's since=now).`,
  );
}

/** The keyset cursor after every row at `position` (audit row ids are positions). */
const past = (position: LogPosition) => ({ value: position, id: '~' });

/**
 * The next page of `apiKey`'s changes after `after`, at most `pageSize`, of `families` only
 * when given (all when absent). Rows past `bound` are left for a later page.
 */
export async function changesPage(
  read: ReadView,
  apiKey: string,
  options: { after: LogPosition; bound: LogPosition; pageSize: number; families?: readonly ChangeFamily[] | undefined; pacer: Pacer },
): Promise<ChangesPage> {
  const { after, bound, pageSize, pacer } = options;
  if (bound <= after) return { rows: [], next: after };
  const families = options.families && new Set(options.families).size < CHANGE_FAMILIES.length ? [...new Set(options.families)] : undefined;
  let found: AuditEventDoc[];
  if (!families) {
    found = await read.find<AuditEventDoc>(AUDIT_EVENTS, { apiKey }, { sort: 'position', after: past(after), limit: pageSize });
    await pacer.spend(found.length);
  } else {
    // Each family's first `pageSize` after the cursor: the first `pageSize` of their merge are
    // the filtered feed's next ones (a row has one family, so no row comes twice).
    found = [];
    for (const family of families) {
      pacer.check();
      const rows = await read.find<AuditEventDoc>(AUDIT_EVENTS, { apiKey, family }, { sort: 'position', after: past(after), limit: pageSize });
      await pacer.spend(rows.length);
      found.push(...rows);
    }
    found.sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0));
  }
  const rows = found.filter((r) => r.position <= bound).slice(0, pageSize);
  // A full page may have more after it; a short one holds every row up to `bound`.
  return { rows, next: rows.length === pageSize ? rows.at(-1)!.position : bound };
}
