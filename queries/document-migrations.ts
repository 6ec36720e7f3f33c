/**
 * Reads for documents/migrate: who holds a grant on the document being moved (the grants
 * and group-grants read models), and a migration's status (projections/document-migrations.ts).
 */
import type { ReadView } from '../src/ports/read-store.js';
import { MAX_MIGRATION_GRANTS, migrationNotFound } from '../commands/document-migration.js';
import { GRANTS, type GrantDoc } from '../projections/grants.js';
import { GROUP_GRANTS, type GroupGrantDoc } from '../projections/group-grants.js';
import { DOCUMENT_MIGRATIONS, migrationKey, type MigrationDoc } from '../projections/document-migrations.js';

const PAGE = 1000;

/** The `field` values of the rows matching `filter`, in that order, at most `max` of them. */
async function idsOf<T extends GrantDoc | GroupGrantDoc>(read: ReadView, collection: string, filter: Record<string, string>, field: 'userId' | 'groupId', max: number): Promise<string[]> {
  const out: string[] = [];
  for (let after: { value: string; id: string } | undefined; out.length < max; ) {
    const page = await read.find<T>(collection, filter, { sort: field, after, limit: Math.min(PAGE, max - out.length) });
    for (const d of page) out.push((d as unknown as Record<string, string>)[field]!);
    const last = page[page.length - 1];
    if (!last || page.length < PAGE) break;
    after = { value: (last as unknown as Record<string, string>)[field]!, id: last._id };
  }
  return out;
}

/**
 * The users and the groups holding a grant on the document, expired ones included (a grant
 * moves as it is). Reads at most MAX_MIGRATION_GRANTS + 1 rows: one past the bound says
 * the document holds too many.
 */
export async function documentGrantHolders(read: ReadView, apiKey: string, organizationId: string, documentId: string) {
  const filter = { apiKey, organizationId, resourceType: 'document', resourceId: documentId };
  const users = await idsOf<GrantDoc>(read, GRANTS, filter, 'userId', MAX_MIGRATION_GRANTS + 1);
  const groups = await idsOf<GroupGrantDoc>(read, GROUP_GRANTS, filter, 'groupId', MAX_MIGRATION_GRANTS + 1 - users.length);
  return { users, groups };
}

/** documents/migrate/status: the hosted answer (`migrationId`, `status`) and what the migration moved or why it failed. */
export async function migrationStatus(read: ReadView, apiKey: string, organizationId: string, migrationId: string) {
  const m = await read.get<MigrationDoc>(DOCUMENT_MIGRATIONS, migrationKey(apiKey, organizationId, migrationId));
  if (!m) throw migrationNotFound();
  return {
    migrationId: m.migrationId,
    status: m.status,
    documentId: m.documentId,
    newDocumentId: m.newDocumentId,
    startedAt: m.startedAt,
    ...(m.completedAt !== undefined ? { completedAt: m.completedAt } : {}),
    ...(m.grantsMoved !== undefined ? { grantsMoved: m.grantsMoved, groupGrantsMoved: m.groupGrantsMoved ?? 0 } : {}),
    ...(m.error !== undefined ? { error: m.error } : {}),
  };
}

/** The migration of `documentId` to `newDocumentId` that started and neither completed nor failed, if any. */
export async function unfinishedMigration(read: ReadView, apiKey: string, organizationId: string, documentId: string, newDocumentId: string): Promise<string | undefined> {
  const [m] = await read.find<MigrationDoc>(DOCUMENT_MIGRATIONS, { apiKey, organizationId, documentId, newDocumentId, status: 'in_progress' }, { limit: 1 });
  return m?.migrationId;
}
