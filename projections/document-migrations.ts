/**
 * Read model of document migrations (documents/migrate/status): one row per migration, its
 * status as the hosted API names them (`in_progress`, `completed`, `failed`) and what it
 * moved. An organization's migrations go with it.
 */
import type { Doc } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { defineProjection } from '../src/runtime/projection.js';
import type { DocumentMigrationEvent } from '../commands/document-migration.js';
import type { OrganizationEvent } from '../commands/organization.js';
import { apiKeyOf } from './organizations.js';

export const DOCUMENT_MIGRATIONS = 'document_migrations';

export interface MigrationDoc extends Doc {
  apiKey: string;
  organizationId: string;
  migrationId: string;
  documentId: string;
  newDocumentId: string;
  status: 'in_progress' | 'completed' | 'failed';
  startedAt: number;
  completedAt?: number;
  grantsMoved?: number;
  groupGrantsMoved?: number;
  error?: string;
}

export const migrationKey = (apiKey: string, organizationId: string, migrationId: string) => key(apiKey, organizationId, migrationId);

export const documentMigrationsProjection = defineProjection<DocumentMigrationEvent | OrganizationEvent>({
  name: 'documentMigrations',
  indexes: [
    { collection: DOCUMENT_MIGRATIONS, fields: ['apiKey', 'organizationId'] },
    // A migration sent again finds the unfinished one of the same two ids (src/usecases/document-migration.ts).
    { collection: DOCUMENT_MIGRATIONS, fields: ['apiKey', 'organizationId', 'documentId', 'newDocumentId', 'status'] },
  ],
  handlers: {
    async DocumentMigrationStarted(e, tx) {
      const d = e.data;
      const doc: MigrationDoc = {
        _id: migrationKey(apiKeyOf(e), d.organizationId, d.migrationId),
        apiKey: apiKeyOf(e),
        organizationId: d.organizationId,
        migrationId: d.migrationId,
        documentId: d.documentId,
        newDocumentId: d.newDocumentId,
        status: 'in_progress',
        startedAt: d.startedAt,
      };
      await tx.upsert(DOCUMENT_MIGRATIONS, doc);
    },
    async DocumentMigrationCompleted(e, tx) {
      const d = e.data;
      const set = { status: 'completed', completedAt: d.completedAt, grantsMoved: d.grantsMoved, groupGrantsMoved: d.groupGrantsMoved };
      await tx.patch(DOCUMENT_MIGRATIONS, migrationKey(apiKeyOf(e), d.organizationId, d.migrationId), set);
    },
    async DocumentMigrationFailed(e, tx) {
      const d = e.data;
      await tx.patch(DOCUMENT_MIGRATIONS, migrationKey(apiKeyOf(e), d.organizationId, d.migrationId), { status: 'failed', completedAt: d.failedAt, error: d.error });
    },
    async OrganizationDeleted(e, tx) {
      await tx.deleteMany(DOCUMENT_MIGRATIONS, { apiKey: apiKeyOf(e), organizationId: e.data.organizationId });
    },
  },
});
