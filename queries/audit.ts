/**
 * Audit history of one subject (a key, an organization, a folder, a document, an agent), in
 * log order, from the audit index (projections/audit.ts). Time range and event types are
 * filters applied while walking the subject's rows: a page scans at most `scanLimit` rows, so
 * a narrow filter over a long history answers in bounded time with a `pageToken` to go on
 * (a page may then hold fewer rows than asked, even none, and still have a token).
 */
import { invalidArgument } from '../src/shared/errors.js';
import type { Filter, ReadView } from '../src/ports/read-store.js';
import { AUDIT_EVENTS, AUDIT_SUBJECTS, redactForAudit, subjectKey, type AuditEventDoc, type AuditSubjectDoc, type SubjectKind } from '../projections/audit.js';
import { decodePageToken, encodePageToken, type Cursor } from './paging.js';

export interface AuditTarget {
  apiKey: string;
  organizationId?: string;
  folderId?: string;
  documentId?: string;
  agentId?: string;
}

export interface AuditFilter {
  /** Inclusive bounds on the event's time, milliseconds since the epoch. */
  fromTime?: number;
  toTime?: number;
  /** Event types to keep; all when absent or empty. */
  types?: string[];
}

/** The subject a target names; throws INVALID_ARGUMENT for combinations that name nothing. */
export function subjectOf(t: AuditTarget): { kind: SubjectKind; subject: string } {
  const { apiKey, organizationId: org, folderId, documentId, agentId } = t;
  if (agentId !== undefined) {
    if (org !== undefined || folderId !== undefined || documentId !== undefined) {
      throw invalidArgument('data.agentId cannot be combined with organizationId, folderId or documentId.');
    }
    return { kind: 'agent', subject: subjectKey('agent', apiKey, agentId) };
  }
  if (folderId !== undefined && documentId !== undefined) throw invalidArgument('Give data.folderId or data.documentId, not both.');
  if ((folderId !== undefined || documentId !== undefined) && org === undefined) {
    throw invalidArgument(`data.organizationId is required with data.${folderId !== undefined ? 'folderId' : 'documentId'}.`);
  }
  if (folderId !== undefined) return { kind: 'folder', subject: subjectKey('folder', apiKey, org!, folderId) };
  if (documentId !== undefined) return { kind: 'document', subject: subjectKey('document', apiKey, org!, documentId) };
  if (org !== undefined) return { kind: 'organization', subject: subjectKey('organization', apiKey, org) };
  return { kind: 'key', subject: subjectKey('key', apiKey) };
}

const matches = (e: AuditEventDoc, f: AuditFilter) =>
  (f.fromTime === undefined || e.time >= f.fromTime) &&
  (f.toTime === undefined || e.time <= f.toTime) &&
  (!f.types || f.types.length === 0 || f.types.includes(e.type));

export interface ScanResult {
  /** Matches, each with the cursor of its subject row. */
  events: Array<{ event: AuditEventDoc; cursor: Cursor }>;
  /** Set when the scan stopped at `scanLimit` before the history ended: where to go on. */
  stoppedAt?: Cursor;
}

/**
 * Where a subject's rows are (projections/audit.ts): key and organization subjects are the
 * `audit_events` of the key (and organization); folder, document and agent subjects are the
 * events whose `target` they are, merged in log order with their `audit_subjects` rows.
 */
function sourceOf(subject: string): { events: Filter; rows: boolean } {
  const [kind, apiKey, org] = JSON.parse(subject) as [SubjectKind, string, string?];
  if (kind === 'key') return { events: { apiKey }, rows: false };
  if (kind === 'organization') return { events: { apiKey, 'data.organizationId': org! }, rows: false };
  return { events: { target: subject }, rows: true };
}

/**
 * The cursor after every row at `position` in both sources: event ids are positions (digits)
 * and subject row ids are JSON arrays (`[`), both below `~`.
 */
const past = (position: string): Cursor => ({ value: position, id: '~' });

/** Walks a subject's rows after `after`, keeping matches, until `want` matches or `scanLimit` rows. */
export async function scanAudit(
  read: ReadView,
  subject: string,
  filter: AuditFilter,
  options: { after?: Cursor; want: number; scanLimit: number; chunk?: number },
): Promise<ScanResult> {
  const chunk = options.chunk ?? 500;
  const source = sourceOf(subject);
  const out: ScanResult['events'] = [];
  let after = options.after;
  let scanned = 0;
  for (;;) {
    const limit = Math.min(chunk, options.scanLimit - scanned);
    if (limit <= 0) return { events: out, stoppedAt: after };
    // Both sources hold at most one entry per event; each gives its first `limit` after the
    // cursor, so the first `limit` of their merge are the subject's next `limit` events.
    const events = await read.find<AuditEventDoc>(AUDIT_EVENTS, source.events, { sort: 'position', after, limit });
    let merged: Array<{ position: string; event?: AuditEventDoc }> = events.map((e) => ({ position: e.position, event: e }));
    if (source.rows) {
      const rows = await read.find<AuditSubjectDoc>(AUDIT_SUBJECTS, { subject }, { sort: 'position', after, limit });
      if (rows.length > 0) {
        merged = merged
          .concat(rows.map((r) => ({ position: r.position })))
          .sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0))
          .filter((m, i, all) => i === 0 || all[i - 1]!.position !== m.position);
        merged.length = Math.min(merged.length, limit);
        const missing = merged.filter((m) => !m.event).map((m) => m.position);
        const docs = missing.length ? await read.getMany<AuditEventDoc>(AUDIT_EVENTS, missing) : [];
        const byPosition = new Map(docs.map((d) => [d.position, d]));
        for (const m of merged) m.event ??= byPosition.get(m.position);
      }
    }
    if (merged.length === 0) return { events: out };
    for (const m of merged) {
      scanned++;
      after = past(m.position);
      const e = m.event;
      if (e && matches(e, filter)) {
        out.push({ event: e, cursor: after });
        if (out.length >= options.want) return { events: out };
      }
    }
    if (merged.length < limit) return { events: out };
  }
}

/** The public shape of an audit entry (API and JSON lines). */
export const auditEntryView = (e: AuditEventDoc) => ({
  id: e.eventId,
  position: e.position,
  type: e.type,
  time: e.time,
  actor: e.actor,
  requestId: e.requestId,
  ...(e.causationId !== undefined ? { causationId: e.causationId } : {}),
  stream: { category: e.category, ids: e.streamIds },
  revision: e.revision,
  // Redacted again on the way out, for rows a version with name-based redaction wrote.
  data: redactForAudit(e.type, e.data),
});

const MAX_AUDIT_SCAN = 5000;

/** One page for `/v2/audit/events/get`: the token is bound to the subject and filters. */
export async function auditPage(
  read: ReadView,
  target: AuditTarget,
  filter: AuditFilter,
  page: { pageSize: number; pageToken?: string },
) {
  const { subject } = subjectOf(target);
  const query = { q: 'audit', subject, fromTime: filter.fromTime ?? null, toTime: filter.toTime ?? null, types: [...(filter.types ?? [])].sort() };
  const after = decodePageToken(page.pageToken, query);
  // One match more than the page: a token only when another row exists (or the scan stopped early).
  const r = await scanAudit(read, subject, filter, { after, want: page.pageSize + 1, scanLimit: Math.max(MAX_AUDIT_SCAN, page.pageSize + 1) });
  const rows = r.events.slice(0, page.pageSize);
  const next = r.events.length > page.pageSize ? rows.at(-1)!.cursor : r.stoppedAt;
  return {
    rows: rows.map((x) => auditEntryView(x.event)),
    pageToken: next ? encodePageToken(query, next) : undefined,
  };
}
