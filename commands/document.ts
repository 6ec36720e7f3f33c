/**
 * Document aggregate: one stream per document,
 * `streamName('document', apiKey, organizationId, documentId)`.
 *
 * A document knows its folder id, its own access type (null: inherits from its folder) and
 * its disabled flag. Whether the folder exists is checked by the route against the
 * organization's tree before the command runs; the effective access type is computed by
 * the read side (projections/documents.ts, queries/permissions.ts), so moving a folder never
 * touches its documents' streams.
 *
 * documents/migrate claims the document before it makes the new one
 * (src/usecases/document-migration.ts): `DocumentMigrationClaimed`, appended at the stream's
 * expected version, so of two migrations racing for one document exactly one appends it; the
 * other's append conflicts, is decided again on the fresh state, and is refused.
 * Example: migrations M1 (d to d-a) and M2 (d to d-b) both read d at version 3; M1 appends
 * its claim as version 4; M2's append at 3 conflicts, M2 reloads d, finds it claimed by M1
 * and gets FAILED_PRECONDITION: only d-a is ever made. The claim goes with the document's
 * deletion (the migration's last move), or is released when its migration fails.
 */
import { ApiError, assertNever, failedPrecondition, invalidArgument, notFound } from '../src/shared/errors.js';
import type { Command, Decider, DomainEvent } from '../src/runtime/decider.js';
import type { AccessType } from './folder-tree.js';
import { streamName } from '../src/shared/ids.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/shared/ids.ts). */
export const documentStream = (apiKey: string, organizationId: string, documentId: string) =>
  streamName('document', apiKey, organizationId, documentId);

// ---- events ----

type DocRef = {
  organizationId: string;
  documentId: string;
};

/** `migrated`: documents/migrate moved it to a new id (commands/document-migration.ts). */
/** The migration that made a document (commands/document-migration.ts), so a migration sent again knows its own document. */
type DocumentMigrationRef = { migrationId: string; fromDocumentId: string };

type DeletionReason = 'request' | 'folderDeleted' | 'organizationDeleted' | 'migrated';

export type DocumentEvent =
  | DomainEvent<'DocumentAdded', DocRef & {
      documentName: string;
      folderId: string | null;
      accessType: AccessType | null;
      disabled: boolean;
      createdAt: number;
      /** Present when documents/migrate made it: the migration, and the id the document had. */
      migration?: DocumentMigrationRef;
    }>
  | DomainEvent<'DocumentRenamed', DocRef & { documentName: string }>
  | DomainEvent<'DocumentMoved', DocRef & { folderId: string | null; previousFolderId: string | null }>
  | DomainEvent<'DocumentAccessChanged', DocRef & { accessType: AccessType | null }>
  | DomainEvent<'DocumentDisabledStateChanged', DocRef & { disabled: boolean }>
  | DomainEvent<'DocumentDeleted', DocRef & { reason: DeletionReason; deletedAt: number }>
  /** documents/migrate: migration `migrationId` took the document, to move it to `newDocumentId`. */
  | DomainEvent<'DocumentMigrationClaimed', DocRef & { migrationId: string; newDocumentId: string; claimedAt: number }>
  /** The claiming migration failed: the document is free to be migrated again. */
  | DomainEvent<'DocumentMigrationClaimReleased', DocRef & { migrationId: string }>;

// ---- state ----

export type DocumentState =
  | { status: 'none' }
  | {
      status: 'active';
      folderId: string | null;
      documentName: string;
      accessType: AccessType | null;
      disabled: boolean;
      /** The migration that made this document, if one did. */
      migrationId?: string;
      /** The migration moving this document away, once it has claimed it. */
      claimedBy?: { migrationId: string; newDocumentId: string };
    };

const initialState = (): DocumentState => ({ status: 'none' });

// ---- evolve ----

function evolve(state: DocumentState, event: DocumentEvent): DocumentState {
  if (event.type === 'DocumentAdded') {
    const d = event.data;
    const s: DocumentState = { status: 'active', folderId: d.folderId, documentName: d.documentName, accessType: d.accessType, disabled: d.disabled };
    if (d.migration) s.migrationId = d.migration.migrationId;
    return s;
  }
  if (state.status !== 'active') return state;
  switch (event.type) {
    case 'DocumentRenamed':
      return { ...state, documentName: event.data.documentName };
    case 'DocumentMoved':
      return { ...state, folderId: event.data.folderId };
    case 'DocumentAccessChanged':
      return { ...state, accessType: event.data.accessType };
    case 'DocumentDisabledStateChanged':
      return { ...state, disabled: event.data.disabled };
    case 'DocumentDeleted':
      return { status: 'none' };
    case 'DocumentMigrationClaimed':
      return { ...state, claimedBy: { migrationId: event.data.migrationId, newDocumentId: event.data.newDocumentId } };
    case 'DocumentMigrationClaimReleased': {
      if (state.claimedBy?.migrationId !== event.data.migrationId) return state;
      const { claimedBy: _released, ...rest } = state;
      return rest;
    }
    default:
      return assertNever(event, 'document event');
  }
}

// ---- commands ----

export type DocumentCommand =
  | Command<'AddDocument', DocRef & {
      documentName?: string;
      folderId: string | null;
      accessType?: AccessType;
      disabled?: boolean;
      migration?: DocumentMigrationRef;
    }>
  | Command<'UpdateDocument', DocRef & { documentName?: string; accessType?: AccessType; disabled?: boolean }>
  | Command<'MoveDocument', DocRef & { folderId: string | null }>
  /** accessType null: inherit from the folder. */
  | Command<'SetDocumentAccess', DocRef & { accessType: AccessType | null }>
  | Command<'SetDocumentDisabled', DocRef & { disabled: boolean }>
  | Command<'DeleteDocument', DocRef & { reason: DeletionReason }>
  /** documents/migrate, before it makes the new document: the same migration again claims nothing more. */
  | Command<'ClaimForMigration', DocRef & { migrationId: string; newDocumentId: string }>
  /** documents/migrate failed: frees the document if this migration holds it. */
  | Command<'ReleaseMigrationClaim', DocRef & { migrationId: string }>;

// ---- decide ----

export const documentNotFound = () => notFound('Document does not exist');

/** Another migration holds the document: this one must not make a second copy of it. */
const claimedByAnother = (documentId: string, claim: { migrationId: string; newDocumentId: string }) =>
  failedPrecondition(`Document ${JSON.stringify(documentId)} is being migrated to ${JSON.stringify(claim.newDocumentId)} (migration ${claim.migrationId}); it cannot be migrated again.`);

function active(state: DocumentState) {
  if (state.status !== 'active') throw documentNotFound();
  return state;
}

function decide(command: DocumentCommand, state: DocumentState): DocumentEvent[] {
  // Event data names the document as literal keys, not `{ ...ref, more }`: on Node 20's V8
  // each key added after a spread costs about 1 us (docs/performance.md), 6 us per DocumentAdded.
  const { organizationId, documentId } = command.data;
  switch (command.type) {
    case 'AddDocument': {
      if (state.status === 'active') throw new ApiError('ALREADY_EXISTS', 'Document already exists');
      const d = command.data;
      const added: Extract<DocumentEvent, { type: 'DocumentAdded' }> = {
        type: 'DocumentAdded',
        data: {
          organizationId,
          documentId,
          documentName: d.documentName ?? documentId,
          folderId: d.folderId,
          accessType: d.accessType ?? null,
          disabled: d.disabled ?? false,
          createdAt: command.metadata.now,
        },
      };
      if (d.migration) added.data.migration = d.migration;
      return [added];
    }
    case 'UpdateDocument': {
      const s = active(state);
      const d = command.data;
      const events: DocumentEvent[] = [];
      if (d.documentName !== undefined && d.documentName !== s.documentName) {
        events.push({ type: 'DocumentRenamed', data: { organizationId, documentId, documentName: d.documentName } });
      }
      if (d.accessType !== undefined && d.accessType !== s.accessType) {
        events.push({ type: 'DocumentAccessChanged', data: { organizationId, documentId, accessType: d.accessType } });
      }
      if (d.disabled !== undefined && d.disabled !== s.disabled) {
        events.push({ type: 'DocumentDisabledStateChanged', data: { organizationId, documentId, disabled: d.disabled } });
      }
      return events;
    }
    case 'MoveDocument': {
      if (state.status !== 'active') throw invalidArgument(`Document ${JSON.stringify(documentId)} does not exist.`);
      if (state.folderId === command.data.folderId) return [];
      return [{ type: 'DocumentMoved', data: { organizationId, documentId, folderId: command.data.folderId, previousFolderId: state.folderId } }];
    }
    case 'SetDocumentAccess': {
      const s = active(state);
      const accessType = command.data.accessType;
      return s.accessType === accessType ? [] : [{ type: 'DocumentAccessChanged', data: { organizationId, documentId, accessType } }];
    }
    case 'SetDocumentDisabled': {
      const s = active(state);
      const disabled = command.data.disabled;
      return s.disabled === disabled ? [] : [{ type: 'DocumentDisabledStateChanged', data: { organizationId, documentId, disabled } }];
    }
    case 'DeleteDocument':
      // A missing document is not an error (spec: success with "Document does not exist").
      if (state.status !== 'active') return [];
      return [{ type: 'DocumentDeleted', data: { organizationId, documentId, reason: command.data.reason, deletedAt: command.metadata.now } }];
    case 'ClaimForMigration': {
      const s = active(state);
      const { migrationId, newDocumentId } = command.data;
      if (s.claimedBy?.migrationId === migrationId) return [];
      if (s.claimedBy) throw claimedByAnother(documentId, s.claimedBy);
      return [{ type: 'DocumentMigrationClaimed', data: { organizationId, documentId, migrationId, newDocumentId, claimedAt: command.metadata.now } }];
    }
    case 'ReleaseMigrationClaim':
      if (state.status !== 'active' || state.claimedBy?.migrationId !== command.data.migrationId) return [];
      return [{ type: 'DocumentMigrationClaimReleased', data: { organizationId, documentId, migrationId: command.data.migrationId } }];
    default:
      return assertNever(command, 'document command');
  }
}

export const documentDecider: Decider<DocumentState, DocumentCommand, DocumentEvent> = {
  name: 'document',
  initialState,
  evolve,
  decide,
};
