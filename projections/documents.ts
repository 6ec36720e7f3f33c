/**
 * Read model `documents`: one document per live document, with its folder (null: the
 * organization root), its own access type (null: inherits), its disabled flag, and `seq`,
 * the log position of its creation: a fixed-width string, so creation order is plain
 * string order and pages walk the (apiKey, organizationId[, folderId], seq) indexes.
 *
 * A folder deletion drops the documents of every folder it removed; an organization
 * deletion drops all of them. The effective access type is not stored: it is read through
 * the folder (queries/documents.ts), so folder moves never rewrite documents.
 *
 * History (issue 25): each row also carries `validFrom` and `openedBy`, the open version of
 * the document, and every change closes the version it ends into h_documents
 * (projections/history.ts, withOpenVersions). Answers never show those two fields.
 */
import type { Doc } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { defineProjection, type RecordedOf } from '../src/runtime/projection.js';
import type { AccessType } from '../commands/folder-tree.js';
import type { DocumentEvent } from '../commands/document.js';
import type { OrganizationEvent } from '../commands/organization.js';
import { apiKeyOf } from './organizations.js';
import { cascadeWorkIndexes, queueCascade } from './cascade-work.js';
import { withOpenVersions } from './history.js';

export const DOCUMENTS = 'documents';

export interface DocumentDoc extends Doc {
  apiKey: string;
  organizationId: string;
  documentId: string;
  documentName: string;
  folderId: string | null;
  accessType: AccessType | null;
  disabled: boolean;
  seq: string;
  createdAt: number;
}

export const documentKey = (apiKey: string, organizationId: string, documentId: string) => key(apiKey, organizationId, documentId);

type Ev = DocumentEvent | OrganizationEvent;
const idOf = (e: RecordedOf<DocumentEvent>) => documentKey(apiKeyOf(e), e.data.organizationId, e.data.documentId);

/**
 * The live handlers, as if no history were kept: `documentsProjection` below runs them with
 * the history of each document kept beside (projections/history.ts, withOpenVersions).
 */
const liveDocuments = defineProjection<Ev>({
  name: 'documents',
  indexes: [
    ...cascadeWorkIndexes,
    { collection: DOCUMENTS, fields: ['apiKey', 'organizationId', 'seq'] },
    { collection: DOCUMENTS, fields: ['apiKey', 'organizationId', 'folderId', 'seq'] },
  ],
  handlers: {
    async DocumentAdded(e, tx) {
      const d = e.data;
      const doc: DocumentDoc = {
        _id: idOf(e),
        apiKey: apiKeyOf(e),
        organizationId: d.organizationId,
        documentId: d.documentId,
        documentName: d.documentName,
        folderId: d.folderId,
        accessType: d.accessType,
        disabled: d.disabled,
        seq: e.position,
        createdAt: d.createdAt,
      };
      await tx.upsert(DOCUMENTS, doc);
    },
    async DocumentRenamed(e, tx) {
      await tx.patch(DOCUMENTS, idOf(e), { documentName: e.data.documentName });
    },
    async DocumentMoved(e, tx) {
      await tx.patch(DOCUMENTS, idOf(e), { folderId: e.data.folderId });
    },
    async DocumentAccessChanged(e, tx) {
      await tx.patch(DOCUMENTS, idOf(e), { accessType: e.data.accessType });
    },
    async DocumentDisabledStateChanged(e, tx) {
      await tx.patch(DOCUMENTS, idOf(e), { disabled: e.data.disabled });
    },
    async DocumentDeleted(e, tx) {
      await tx.delete(DOCUMENTS, idOf(e));
    },
    async FolderDeleted(e, tx) {
      const d = e.data;
      for (const folderId of d.folderIds) {
        const filter = { apiKey: apiKeyOf(e), organizationId: d.organizationId, folderId };
        await queueCascade(tx, e, { collection: DOCUMENTS, filter, sort: 'seq', field: 'documentId' }, 'document', d.organizationId, 'folderDeleted');
        await tx.deleteMany(DOCUMENTS, filter);
      }
    },
    async OrganizationDeleted(e, tx) {
      const organizationId = e.data.organizationId;
      const filter = { apiKey: apiKeyOf(e), organizationId };
      await queueCascade(tx, e, { collection: DOCUMENTS, filter, sort: 'seq', field: 'documentId' }, 'document', organizationId, 'organizationDeleted');
      await tx.deleteMany(DOCUMENTS, filter);
    },
  },
});

/**
 * A document's first event ever is the DocumentAdded at revision 0 of its own stream (one
 * stream per document, commands/document.ts; a re-created id is added at a later revision):
 * nothing can have versioned it before.
 */
export const documentsProjection = withOpenVersions(liveDocuments, DOCUMENTS, {
  pageBy: 'seq',
  first: (e) => e.type === 'DocumentAdded' && e.revision === 0,
});
