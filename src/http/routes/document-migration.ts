/**
 * documents/migrate and documents/migrate/status, as the hosted pages document them
 * (rest-apis/v2/documents/migrate-documents.mdx, migrate-documents-status.mdx): messages
 * character for character. What each does is src/usecases/document-migration.ts.
 */
import { z } from 'zod';
import { MAX_MIGRATION_GRANTS } from '../../../commands/document-migration.js';
import { getMigrationStatus, migrateDocument } from '../../usecases/document-migration.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id } from '../validation.js';

const migrate = defineRoute({
  path: '/v2/organizations/documents/migrate',
  tag: 'Documents',
  doc: {
    summary: 'Move a document to a new id, with everything attached to it',
    description: 'The new document takes the old one\'s name, folder, own access type and disabled flag; every user\'s and group\'s grant on it ' +
      '(role, expiry, access fields) moves to the new id; then the old id is deleted. The move is done when the answer comes: ' +
      '`documents/migrate/status` with the `migrationId` says `completed` (or `failed` with the refusal, which is also this answer). ' +
      'Refused before anything changes: the same id twice (INVALID_ARGUMENT), an organization or document that does not exist (NOT_FOUND), ' +
      `a new id that is a document already (ALREADY_EXISTS), a document holding more than ${MAX_MIGRATION_GRANTS} grants (FAILED_PRECONDITION). ` +
      'One migration per document at a time: it claims the document before making the new one, so of two migrations of one document sent at once ' +
      'exactly one moves it; the other is refused (FAILED_PRECONDITION, naming the migration that holds it) and recorded `failed`. ' +
      'A migration stopped midway (a crash, a store that went away) stays `in_progress`: the same request sent again finishes it and answers its `migrationId`. ' +
      'Sent again after it completed, the old id is gone: NOT_FOUND, and nothing changes (send an Idempotency-Key to get the first answer again).',
    example: { organizationId: 'yourOrganizationId', documentId: 'yourDocumentId', newDocumentId: 'yourNewDocumentId' },
  },
  mutates: true,
  auth: 'apiKey',
  schema: z.object({ organizationId: id(), documentId: id(), newDocumentId: id() }),
  response: z.object({ migrationId: z.string().describe('For documents/migrate/status.') }),
  errors: ['NOT_FOUND', 'FAILED_PRECONDITION'],
  handler: async (data, ctx) => ({ message: 'Document migration started successfully.', data: await migrateDocument(ctx, data) }),
});

const status = defineRoute({
  path: '/v2/organizations/documents/migrate/status',
  tag: 'Documents',
  doc: {
    summary: 'The status of a document migration',
    description: '`status` is `in_progress`, `completed` or `failed` (the hosted `pending` is never seen: a migration starts as it is recorded). ' +
      'Besides the hosted fields: the two document ids, `startedAt` and `completedAt` (ms), the grants moved, and `error` when it failed. ' +
      'A migration or organization that does not exist is NOT_FOUND.',
    example: { organizationId: 'yourOrganizationId', migrationId: 'yourMigrationId' },
  },
  mutates: false,
  auth: 'apiKey',
  schema: z.object({ organizationId: id(), migrationId: id() }),
  response: z.object({
    migrationId: z.string(),
    status: z.enum(['in_progress', 'completed', 'failed']),
    documentId: z.string().describe('The id the document had.'),
    newDocumentId: z.string().describe('The id it has now.'),
    startedAt: z.number().describe('Milliseconds since the epoch.'),
    completedAt: z.number().optional().describe('When it completed or failed (ms).'),
    grantsMoved: z.number().int().optional().describe('Users\' grants moved (completed only).'),
    groupGrantsMoved: z.number().int().optional().describe('Groups\' grants moved (completed only).'),
    error: z.string().optional().describe('Why it failed: the refusal\'s message.'),
  }),
  errors: ['NOT_FOUND'],
  handler: async (data, ctx) => ({ message: 'Migration status retrieved successfully.', data: await getMigrationStatus(ctx, data) }),
});

export function documentMigrationRoutes(): AnyRoute[] {
  return [migrate, status];
}
