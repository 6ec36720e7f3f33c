/**
 * documents/migrate and documents/migrate/status (the hosted pages
 * rest-apis/v2/documents/migrate-documents*.mdx): one document moved to a new id with
 * everything this service attaches to a document, recorded as a migration job
 * (commands/document-migration.ts).
 *
 * Checked before anything is written (each a failure envelope): the two ids differ, the
 * organization and the document exist, the new id is free, and the document holds at most
 * MAX_MIGRATION_GRANTS grants. Then, in order:
 * 1. DocumentMigrationStarted on the migration's stream;
 * 1b. the old document claimed for this migration (DocumentMigrationClaimed on its stream,
 *    at the version this decision read, commands/document.ts): of two migrations of one
 *    document sent at once, exactly one claims it; the other is refused (FAILED_PRECONDITION,
 *    naming the migration that holds it) and recorded failed, before it made anything. Without
 *    the claim both made their new document and the grants landed on one of the two copies;
 * 2. the new document, with the old one's name, folder, own access type and disabled flag,
 *    and the migration's id (so the migration knows it as its own). Refused (the id was taken
 *    meanwhile): the claim released, DocumentMigrationFailed with the refusal's message, which
 *    is the answer too; nothing else changed;
 * 3. each user's grant on it moved (one append per user: role, expiry, access fields kept);
 * 4. each group's grant moved likewise;
 * 5. the old document deleted (reason `migrated`): a grant given to it meanwhile goes with it
 *    through the deletion cascade, as any deleted document's;
 * 6. DocumentMigrationCompleted with the counts moved.
 *
 * Steps 3 to 5 change nothing when done already, so a migration stopped among them (a crash,
 * a store that went away) stays `in_progress`, and the same request sent again finds it and
 * finishes it: the new document is its own, the grants still on the old id move, the old id
 * goes. A request sent again after completion finds the old id gone: NOT_FOUND, and nothing
 * changes (an Idempotency-Key replays the first answer instead). Presence is not moved: it is
 * who is on the document now, and expires within a minute.
 */
import { documentDecider, documentNotFound, documentStream, type DocumentState } from '../../commands/document.js';
import { documentMigrationDecider, documentMigrationStream, MAX_MIGRATION_GRANTS } from '../../commands/document-migration.js';
import { grantsDecider, grantsStream, type Resource } from '../../commands/grant.js';
import { groupDecider, groupStream } from '../../commands/group.js';
import { documentGrantHolders, migrationStatus, unfinishedMigration } from '../../queries/document-migrations.js';
import { requireOrganization } from '../../queries/organizations.js';
import { ApiError, invalidArgument } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import type { TenantReadContext } from './context.js';

interface MigrateInput {
  organizationId: string;
  documentId: string;
  newDocumentId: string;
}

const loadDocument = async (ctx: TenantReadContext, organizationId: string, documentId: string) =>
  (await ctx.services.commands.load(documentDecider, documentStream(ctx.apiKey, organizationId, documentId))).state;

/** What must hold before a new migration starts; answers the old document's state. */
async function checked(ctx: TenantReadContext, input: MigrateInput) {
  const { organizationId, documentId, newDocumentId } = input;
  const source = await loadDocument(ctx, organizationId, documentId);
  if (source.status !== 'active') throw documentNotFound();
  if ((await loadDocument(ctx, organizationId, newDocumentId)).status === 'active') throw new ApiError('ALREADY_EXISTS', `Document ${JSON.stringify(newDocumentId)} already exists.`);
  const holders = await documentGrantHolders(ctx.services.read, ctx.apiKey, organizationId, documentId);
  if (holders.users.length + holders.groups.length > MAX_MIGRATION_GRANTS) {
    throw new ApiError('FAILED_PRECONDITION', `The document holds more than ${MAX_MIGRATION_GRANTS} grants (users' and groups'); a migration moves at most ${MAX_MIGRATION_GRANTS}. Remove some first.`);
  }
  return source;
}

/** Step 2: the new document as the old one is, marked with the migration. */
async function addTarget(ctx: TenantReadContext, input: MigrateInput, source: Extract<DocumentState, { status: 'active' }>, migrationId: string) {
  const { organizationId, documentId, newDocumentId } = input;
  await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, newDocumentId), {
    type: 'AddDocument',
    data: {
      organizationId,
      documentId: newDocumentId,
      documentName: source.documentName,
      folderId: source.folderId,
      ...(source.accessType !== null ? { accessType: source.accessType } : {}),
      disabled: source.disabled,
      migration: { migrationId, fromDocumentId: documentId },
    },
  });
}

/** Step 1b: the old document is this migration's to move (again: nothing); refused when another migration holds it. */
async function claimSource(ctx: TenantReadContext, input: MigrateInput, migrationId: string) {
  const { organizationId, documentId, newDocumentId } = input;
  await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, documentId), {
    type: 'ClaimForMigration', data: { organizationId, documentId, migrationId, newDocumentId },
  });
}

/** A refused migration: the old document freed (if it claimed it) and the migration recorded failed with `err`'s message. */
async function failMigration(ctx: TenantReadContext, input: MigrateInput, migrationId: string, err: unknown) {
  const { organizationId, documentId } = input;
  await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, documentId), {
    type: 'ReleaseMigrationClaim', data: { organizationId, documentId, migrationId },
  });
  const error = err instanceof Error ? err.message : String(err);
  await ctx.execute(documentMigrationDecider, documentMigrationStream(ctx.apiKey, organizationId, migrationId), {
    type: 'FailDocumentMigration', data: { organizationId, migrationId, error },
  });
}

/**
 * A migration sent again: steps 1b and 2 if they never happened. Refused when the new id is
 * another's document, or another migration holds the old one: then it can never finish, so
 * it is recorded failed and frees the old document for another migration.
 */
async function resumeTarget(ctx: TenantReadContext, input: MigrateInput, migrationId: string) {
  const target = await loadDocument(ctx, input.organizationId, input.newDocumentId);
  if (target.status === 'active') {
    if (target.migrationId === migrationId) return;
    const err = new ApiError('ALREADY_EXISTS', `Document ${JSON.stringify(input.newDocumentId)} already exists.`);
    await failMigration(ctx, input, migrationId, err);
    throw err;
  }
  const source = await loadDocument(ctx, input.organizationId, input.documentId);
  if (source.status !== 'active') throw documentNotFound();
  try {
    await claimSource(ctx, input, migrationId);
    await addTarget(ctx, input, source, migrationId);
  } catch (err) {
    if (err instanceof ApiError && (err.status === 'FAILED_PRECONDITION' || err.status === 'ALREADY_EXISTS')) await failMigration(ctx, input, migrationId, err);
    throw err;
  }
}

/** Steps 3 to 5: the grants still on the old id, then the old id's deletion; answers the counts moved. */
async function moveGrants(ctx: TenantReadContext, input: MigrateInput) {
  const { organizationId, documentId, newDocumentId } = input;
  const holders = await documentGrantHolders(ctx.services.read, ctx.apiKey, organizationId, documentId);
  const from: Resource = { resourceType: 'document', resourceId: documentId };
  const to: Resource = { resourceType: 'document', resourceId: newDocumentId };
  let grantsMoved = 0;
  for (const userId of holders.users) {
    const r = await ctx.execute(grantsDecider, grantsStream(ctx.apiKey, organizationId, userId), { type: 'MoveGrant', data: { organizationId, userId, from, to } });
    if (r.events.length > 0) grantsMoved++;
  }
  let groupGrantsMoved = 0;
  for (const groupId of holders.groups) {
    const r = await ctx.execute(groupDecider, groupStream(ctx.apiKey, organizationId, groupId), { type: 'MoveGroupAccess', data: { organizationId, groupId, from, to } });
    if (r.events.length > 0) groupGrantsMoved++;
  }
  await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, documentId), { type: 'DeleteDocument', data: { organizationId, documentId, reason: 'migrated' } });
  return { grantsMoved, groupGrantsMoved };
}

/** Steps 1 and 2 of a new migration; answers its id. A refused step 2 records the migration failed. */
async function start(ctx: TenantReadContext, input: MigrateInput): Promise<string> {
  const source = await checked(ctx, input);
  const { organizationId, documentId, newDocumentId } = input;
  const migrationId = newId();
  const stream = documentMigrationStream(ctx.apiKey, organizationId, migrationId);
  await ctx.execute(documentMigrationDecider, stream, { type: 'StartDocumentMigration', data: { organizationId, migrationId, documentId, newDocumentId } });
  try {
    await claimSource(ctx, input, migrationId);
    await addTarget(ctx, input, source, migrationId);
  } catch (err) {
    await failMigration(ctx, input, migrationId, err);
    throw err;
  }
  return migrationId;
}

/** documents/migrate: `{ migrationId }` once the document is at its new id (a new migration, or an unfinished one finished). */
export async function migrateDocument(ctx: TenantReadContext, input: MigrateInput): Promise<{ migrationId: string }> {
  const { organizationId, documentId, newDocumentId } = input;
  if (documentId === newDocumentId) throw invalidArgument('data.newDocumentId must differ from data.documentId.');
  await requireOrganization(ctx.services.read, ctx.apiKey, organizationId);
  const unfinished = await unfinishedMigration(ctx.services.read, ctx.apiKey, organizationId, documentId, newDocumentId);
  let migrationId: string;
  if (unfinished === undefined) {
    migrationId = await start(ctx, input);
  } else {
    migrationId = unfinished;
    await resumeTarget(ctx, input, migrationId);
  }
  const counts = await moveGrants(ctx, input);
  await ctx.execute(documentMigrationDecider, documentMigrationStream(ctx.apiKey, organizationId, migrationId), {
    type: 'CompleteDocumentMigration', data: { organizationId, migrationId, ...counts },
  });
  return { migrationId };
}

/** documents/migrate/status: the migration's status from its read model. */
export async function getMigrationStatus(ctx: TenantReadContext, input: { organizationId: string; migrationId: string }) {
  await requireOrganization(ctx.services.read, ctx.apiKey, input.organizationId);
  return migrationStatus(ctx.services.read, ctx.apiKey, input.organizationId, input.migrationId);
}
