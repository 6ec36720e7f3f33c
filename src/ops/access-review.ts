/**
 * `collab access review` (issue 25): every user with access to every folder and document of
 * an organization, now or as of a past instant, with role and the grant it comes from, as
 * CSV or JSON lines: what an access review (SOC 2, ISO 27001) asks for.
 *
 * Each row is the organization's users/get answer for one resource (queries/access.ts
 * usersPage, through an AsOfView with `--as-of`): users/get's rules, users/get's rows.
 * Streamed: the folders, then the documents, are walked a page at a time in creation order
 * (the (apiKey, organizationId, seq) indexes), each resource's users read a page at a time,
 * and every row is written before the next page is read, waiting for the output to drain.
 * So memory holds one page, never the organization: 100,000 documents are 100,000 users/get
 * questions in turn, not 100,000 rows held.
 *
 * A public resource anyone may open (users/get's `everyone`) gets one row with userId `*`,
 * role editor and via `public`: any user without a grant opens it so.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { ReadView } from '../ports/read-store.js';
import { AsOfView } from '../../queries/as-of.js';
import { usersPage, type ResourceRef, type UserRow } from '../../queries/access.js';
import { FOLDERS, folderKey, type FolderDoc } from '../../projections/folders.js';
import { DOCUMENTS, documentKey, type DocumentDoc } from '../../projections/documents.js';
import { ORGANIZATIONS, organizationKey } from '../../projections/organizations.js';
import { ApiError, notFound } from '../shared/errors.js';

export type ReviewFormat = 'csv' | 'json';

interface ReviewRow {
  resourceType: 'folder' | 'document';
  resourceId: string;
  userId: string;
  accessRole: string;
  via: { type: 'user' | 'group' | 'public'; level?: string; id?: string; groupId?: string };
  expiresAt?: number;
}

const CSV_HEADER = 'resourceType,resourceId,userId,accessRole,viaType,viaLevel,viaId,viaGroupId,expiresAt';

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled. */
const csvField = (v: string | number | undefined) => {
  const s = v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

function formatReviewRow(r: ReviewRow, format: ReviewFormat): string {
  if (format === 'json') return JSON.stringify(r);
  return [r.resourceType, r.resourceId, r.userId, r.accessRole, r.via.type, r.via.level, r.via.id, r.via.groupId, r.expiresAt].map(csvField).join(',');
}

/** Writes `line`, waiting for the output to drain when it is full (backpressure). */
async function writeLine(out: Writable, line: string): Promise<void> {
  if (!out.write(line + '\n')) await once(out, 'drain');
}

/** Resources walked per page. */
const WALK_PAGE = 500;

/** The organization's folders, then documents, in creation order, a page at a time. */
async function* resources(read: ReadView, apiKey: string, organizationId: string): AsyncGenerator<ResourceRef & { type: 'folder' | 'document'; id: string }> {
  for (const [collection, type] of [[FOLDERS, 'folder'], [DOCUMENTS, 'document']] as const) {
    let after: { value: string; id: string } | undefined;
    for (;;) {
      const page = await read.find<FolderDoc | DocumentDoc>(collection, { apiKey, organizationId }, { sort: 'seq', ...(after ? { after } : {}), limit: WALK_PAGE });
      for (const d of page) {
        if (type === 'folder') yield { type, id: (d as FolderDoc).folderId, folderId: (d as FolderDoc).folderId };
        else yield { type, id: (d as DocumentDoc).documentId, documentId: (d as DocumentDoc).documentId };
      }
      if (page.length < WALK_PAGE) break;
      const last = page[page.length - 1]!;
      const id = type === 'folder' ? folderKey(apiKey, organizationId, (last as FolderDoc).folderId) : documentKey(apiKey, organizationId, (last as DocumentDoc).documentId);
      after = { value: last.seq, id };
    }
  }
}

const rowOf = (type: 'folder' | 'document', id: string, u: UserRow): ReviewRow => ({
  resourceType: type,
  resourceId: id,
  userId: u.userId,
  accessRole: u.accessRole,
  via: u.via,
  ...(u.expiresAt !== undefined ? { expiresAt: u.expiresAt } : {}),
});

/**
 * Streams the review of `organizationId` to `out` (see the top of this file); returns the
 * rows written. `asOf` (Unix ms, checked by the caller): the review as of then.
 */
export async function accessReview(read: ReadView, apiKey: string, nowMs: number, organizationId: string, out: Writable, options: { asOf?: number; format: ReviewFormat }): Promise<number> {
  const view = options.asOf !== undefined ? new AsOfView(read, options.asOf) : read;
  const at = options.asOf ?? nowMs;
  if (!(await view.get(ORGANIZATIONS, organizationKey(apiKey, organizationId)))) throw notFound('Organization does not exist.');
  if (options.format === 'csv') await writeLine(out, CSV_HEADER);
  let rows = 0;
  for await (const r of resources(view, apiKey, organizationId)) {
    const ref: ResourceRef = r.type === 'folder' ? { folderId: r.id } : { documentId: r.id };
    let pageToken: string | undefined;
    let first = true;
    do {
      const page = await usersPage(view, apiKey, at, { organizationId, ...ref, pageSize: 1000, ...(options.asOf !== undefined ? { asOf: options.asOf } : {}), ...(pageToken ? { pageToken } : {}) })
        // A document whose folder was deleted (its own deletion still queued) is gone: skipped, as users/get refuses it.
        .catch((error: unknown) => {
          if (error instanceof ApiError && error.status === 'NOT_FOUND') return null;
          throw error;
        });
      if (!page) break;
      if (first && page.data.everyone) {
        await writeLine(out, formatReviewRow({ resourceType: r.type, resourceId: r.id, userId: '*', accessRole: 'editor', via: { type: 'public' } }, options.format));
        rows++;
      }
      first = false;
      for (const u of page.data.users) {
        await writeLine(out, formatReviewRow(rowOf(r.type, r.id, u), options.format));
        rows++;
      }
      pageToken = page.pageToken;
    } while (pageToken);
  }
  return rows;
}
