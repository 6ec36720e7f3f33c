/**
 * Document migration aggregate (documents/migrate, documents/migrate/status): one stream per
 * migration, `streamName('documentMigration', apiKey, organizationId, migrationId)`.
 *
 * A migration moves one document to a new id with everything attached to it. The job is
 * recorded here as facts: it started (which document, to which id), then it completed (what
 * it moved) or failed (why). The moves themselves are other aggregates' events, appended by
 * the use case between the two (src/usecases/document-migration.ts): the old document claimed
 * for the migration (DocumentMigrationClaimed, commands/document.ts: one migration per
 * document at a time, released if the migration fails), the new document
 * (DocumentAdded with the old one's name, folder, access type and disabled flag), each
 * user's grant moved (GrantAdded and GrantRevoked in one append on the user's grants
 * stream), each group's grant moved likewise, and the old document deleted (reason
 * `migrated`). The status route reads the read model of these facts
 * (projections/document-migrations.ts), never the log.
 */
import { ApiError, assertNever, invalidArgument, notFound } from '../src/shared/errors.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import { streamName } from '../src/shared/ids.js';

export const documentMigrationStream = (apiKey: string, organizationId: string, migrationId: string) =>
  streamName('documentMigration', apiKey, organizationId, migrationId);

/**
 * The most grants (users' and groups' together) one migration moves: each is one append, all
 * within the request. A document holding more is refused before anything is written
 * (docs/limits.md).
 */
export const MAX_MIGRATION_GRANTS = 10_000;

type MigrationRef = { organizationId: string; migrationId: string };

// ---- events ----

export type DocumentMigrationEvent =
  | DomainEvent<'DocumentMigrationStarted', MigrationRef & { documentId: string; newDocumentId: string; startedAt: number }>
  | DomainEvent<'DocumentMigrationCompleted', MigrationRef & { grantsMoved: number; groupGrantsMoved: number; completedAt: number }>
  | DomainEvent<'DocumentMigrationFailed', MigrationRef & { error: string; failedAt: number }>;

// ---- state ----

export type DocumentMigrationState =
  | { status: 'none' }
  | { status: 'in_progress' | 'completed' | 'failed'; documentId: string; newDocumentId: string };

const initialState = (): DocumentMigrationState => ({ status: 'none' });

function evolve(state: DocumentMigrationState, event: DocumentMigrationEvent): DocumentMigrationState {
  switch (event.type) {
    case 'DocumentMigrationStarted':
      return { status: 'in_progress', documentId: event.data.documentId, newDocumentId: event.data.newDocumentId };
    case 'DocumentMigrationCompleted':
      return state.status === 'none' ? state : { ...state, status: 'completed' };
    case 'DocumentMigrationFailed':
      return state.status === 'none' ? state : { ...state, status: 'failed' };
    default:
      return assertNever(event, 'document migration event');
  }
}

// ---- commands ----

export type DocumentMigrationCommand =
  | Command<'StartDocumentMigration', MigrationRef & { documentId: string; newDocumentId: string }>
  | Command<'CompleteDocumentMigration', MigrationRef & { grantsMoved: number; groupGrantsMoved: number }>
  | Command<'FailDocumentMigration', MigrationRef & { error: string }>;

// ---- decide ----

export const migrationNotFound = () => notFound('Migration does not exist.');

/** A finished migration takes no other ending; the same ending again changes nothing. */
function finish(state: DocumentMigrationState, ending: 'completed' | 'failed'): 'append' | 'nothing' {
  if (state.status === 'none') throw migrationNotFound();
  if (state.status === 'in_progress') return 'append';
  if (state.status === ending) return 'nothing';
  throw new ApiError('FAILED_PRECONDITION', `The migration has ${state.status === 'completed' ? 'completed' : 'failed'} already.`);
}

function decide(command: DocumentMigrationCommand, state: DocumentMigrationState): DocumentMigrationEvent[] {
  const { organizationId, migrationId } = command.data;
  const now = command.metadata.now;
  switch (command.type) {
    case 'StartDocumentMigration': {
      const { documentId, newDocumentId } = command.data;
      if (documentId === newDocumentId) throw invalidArgument('data.newDocumentId must differ from data.documentId.');
      if (state.status !== 'none') throw new ApiError('ALREADY_EXISTS', 'Migration already exists.');
      return [{ type: 'DocumentMigrationStarted', data: { organizationId, migrationId, documentId, newDocumentId, startedAt: now } }];
    }
    case 'CompleteDocumentMigration': {
      const { grantsMoved, groupGrantsMoved } = command.data;
      return finish(state, 'completed') === 'nothing' ? [] : [{ type: 'DocumentMigrationCompleted', data: { organizationId, migrationId, grantsMoved, groupGrantsMoved, completedAt: now } }];
    }
    case 'FailDocumentMigration':
      return finish(state, 'failed') === 'nothing' ? [] : [{ type: 'DocumentMigrationFailed', data: { organizationId, migrationId, error: command.data.error, failedAt: now } }];
    default:
      return assertNever(command, 'document migration command');
  }
}

export const documentMigrationDecider: Decider<DocumentMigrationState, DocumentMigrationCommand, DocumentMigrationEvent> = {
  name: 'documentMigration',
  initialState,
  evolve,
  decide,
};
