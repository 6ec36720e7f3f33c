/**
 * Read model `documents`: one document per live document, with its folder (null: the
 * organization root), its own access type (null: inherits), its disabled flag, and `seq`,
 * the log position of its creation: a fixed-width string, so creation order is plain
 * string order and pages walk the (apiKey, organizationId[, folderId], seq) indexes.
 *
 * A folder deletion drops the documents of every folder it removed; an organization
 * deletion drops all of them. The effective access type is not stored: it is read through
 * the folder (queries/documents.ts), so folder moves never rewrite documents.
 */
import type { RecordedEvent } from '../src/ports/event-store.js';
import type { Doc } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { defineProjection } from '../src/runtime/projection.js';
import type { AccessType } from '../commands/folder-tree.js';
import type { DocumentEvent } from '../commands/document.js';
import type { OrganizationEvent } from '../commands/organization.js';
import { apiKeyOf } from './organizations.js';
import { cascadeWorkIndexes, queueCascade } from './cascade-work.js';

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
type Of<T extends Ev['type']> = Extract<Ev, { type: T }>['data'];
const data = <T extends Ev['type']>(e: RecordedEvent) => e.data as Of<T>;
const idOf = (e: RecordedEvent) => {
  const d = e.data as { organizationId: string; documentId: string };
  return documentKey(apiKeyOf(e), d.organizationId, d.documentId);
};

export const documentsProjection = defineProjection({
  name: 'documents',
  indexes: [
    ...cascadeWorkIndexes,
    { collection: DOCUMENTS, fields: ['apiKey', 'organizationId', 'seq'] },
    { collection: DOCUMENTS, fields: ['apiKey', 'organizationId', 'folderId', 'seq'] },
  ],
  handlers: {
    async DocumentAdded(e, tx) {
      const d = data<'DocumentAdded'>(e);
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
      await tx.patch(DOCUMENTS, idOf(e), { documentName: data<'DocumentRenamed'>(e).documentName });
    },
    async DocumentMoved(e, tx) {
      await tx.patch(DOCUMENTS, idOf(e), { folderId: data<'DocumentMoved'>(e).folderId });
    },
    async DocumentAccessChanged(e, tx) {
      await tx.patch(DOCUMENTS, idOf(e), { accessType: data<'DocumentAccessChanged'>(e).accessType });
    },
    async DocumentDisabledStateChanged(e, tx) {
      await tx.patch(DOCUMENTS, idOf(e), { disabled: data<'DocumentDisabledStateChanged'>(e).disabled });
    },
    async DocumentDeleted(e, tx) {
      await tx.delete(DOCUMENTS, idOf(e));
    },
    async FolderDeleted(e, tx) {
      const d = data<'FolderDeleted'>(e);
      for (const folderId of d.folderIds) {
        const filter = { apiKey: apiKeyOf(e), organizationId: d.organizationId, folderId };
        await queueCascade(tx, e, { collection: DOCUMENTS, filter, sort: 'seq', field: 'documentId' }, 'document', d.organizationId, 'folderDeleted');
        await tx.deleteMany(DOCUMENTS, filter);
      }
    },
    async OrganizationDeleted(e, tx) {
      const organizationId = data<'OrganizationDeleted'>(e).organizationId;
      const filter = { apiKey: apiKeyOf(e), organizationId };
      await queueCascade(tx, e, { collection: DOCUMENTS, filter, sort: 'seq', field: 'documentId' }, 'document', organizationId, 'organizationDeleted');
      await tx.deleteMany(DOCUMENTS, filter);
    },
  },
});
