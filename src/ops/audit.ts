/**
 * `collab audit`: the history of a key, an organization, a folder, a document or an agent, in
 * log order, as readable lines or JSON lines (one entry per line, the shape of
 * `/v2/audit/events/get`). It reads the audit index (projections/audit.ts) after bringing the
 * read models up to the log's head, page by page: memory stays flat however long the history.
 */
import { parseArgs } from 'node:util';
import type { ReadView } from '../ports/read-store.js';
import { auditEntryView, scanAudit, subjectOf, type AuditFilter, type AuditTarget } from '../../queries/audit.js';
import type { AuditEventDoc } from '../../projections/audit.js';
import type { Cursor } from '../../queries/paging.js';

export class AuditUsageError extends Error {}

export interface AuditArgs {
  target: AuditTarget;
  filter: AuditFilter;
  json: boolean;
}

/** ISO 8601 (`2025-01-31`, `2025-01-31T12:00:00Z`) or milliseconds since the epoch. */
function parseTime(flag: string, v: string): number {
  const n = /^\d{1,16}$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(n)) throw new AuditUsageError(`${flag} must be an ISO 8601 time or milliseconds since the epoch, got ${JSON.stringify(v)}`);
  return n;
}

export function parseAuditArgs(args: string[]): AuditArgs {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: false,
    strict: true,
    options: {
      'api-key': { type: 'string' },
      organization: { type: 'string' },
      folder: { type: 'string' },
      document: { type: 'string' },
      agent: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      type: { type: 'string', multiple: true },
      json: { type: 'boolean', default: false },
    },
  });
  void positionals;
  const apiKey = values['api-key'];
  if (!apiKey) throw new AuditUsageError('audit needs --api-key <key> (the tenant whose history to print)');
  const target: AuditTarget = {
    apiKey,
    ...(values.organization !== undefined ? { organizationId: values.organization } : {}),
    ...(values.folder !== undefined ? { folderId: values.folder } : {}),
    ...(values.document !== undefined ? { documentId: values.document } : {}),
    ...(values.agent !== undefined ? { agentId: values.agent } : {}),
  };
  try {
    subjectOf(target);
  } catch (e) {
    throw new AuditUsageError((e as Error).message.replace(/data\./g, '--').replace(/organizationId/g, 'organization').replace(/folderId/g, 'folder').replace(/documentId/g, 'document').replace(/agentId/g, 'agent'));
  }
  const filter: AuditFilter = {};
  if (values.since !== undefined) filter.fromTime = parseTime('--since', values.since);
  if (values.until !== undefined) filter.toTime = parseTime('--until', values.until);
  if (filter.fromTime !== undefined && filter.toTime !== undefined && filter.fromTime > filter.toTime) {
    throw new AuditUsageError('--since is after --until');
  }
  const types = (values.type ?? []).flatMap((t) => t.split(',')).map((t) => t.trim()).filter(Boolean);
  if (types.length) filter.types = types;
  return { target, filter, json: values.json ?? false };
}

/** `2025-01-31T12:00:00.000Z  DocumentAdded  document ["acme","d1"] rev 0  by apikey:K  request r1  {...}` */
function auditLine(e: AuditEventDoc): string {
  const data = JSON.stringify(e.data);
  return [
    new Date(e.time).toISOString(),
    e.type,
    `${e.category} ${JSON.stringify(e.streamIds)} rev ${e.revision}`,
    `by ${e.actor}`,
    `request ${e.requestId}${e.causationId ? ` caused by ${e.causationId}` : ''}`,
    data.length > 2000 ? `${data.slice(0, 2000)}...` : data,
  ].join('  ');
}

/** Writes every matching entry, oldest first; returns how many. */
export async function printAudit(read: ReadView, a: AuditArgs, write: (line: string) => void): Promise<number> {
  const { subject } = subjectOf(a.target);
  let after: Cursor | undefined;
  let n = 0;
  for (;;) {
    const r = await scanAudit(read, subject, a.filter, { after, want: 1000, scanLimit: 10_000 });
    for (const { event } of r.events) {
      write(a.json ? JSON.stringify(auditEntryView(event)) : auditLine(event));
      n++;
    }
    const next = r.events.length >= 1000 ? r.events.at(-1)!.cursor : r.stoppedAt;
    if (!next) return n;
    after = next;
  }
}
