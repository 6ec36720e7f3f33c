import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spec } from './support/decider.js';
import { documentDecider, type DocumentEvent } from '../commands/document.js';

const now = 1_700_000_000_000;
const meta = { now };
const ref = { organizationId: 'o', documentId: 'd' };
const added: DocumentEvent = { type: 'DocumentAdded', data: { ...ref, documentName: 'D', folderId: 'f', accessType: null, disabled: false, createdAt: now } };
const given = (events: DocumentEvent[]) => spec(documentDecider).given(events);

test('AddDocument: adds with defaults; existing is ALREADY_EXISTS; re-add after delete', () => {
  given([]).when({ type: 'AddDocument', data: { ...ref, folderId: null }, metadata: meta }).then([
    { type: 'DocumentAdded', data: { ...ref, documentName: 'd', folderId: null, accessType: null, disabled: false, createdAt: now } },
  ]);
  given([added]).when({ type: 'AddDocument', data: { ...ref, folderId: null }, metadata: meta }).thenFails('ALREADY_EXISTS', 'Document already exists');
  const deleted: DocumentEvent = { type: 'DocumentDeleted', data: { ...ref, reason: 'request', deletedAt: now } };
  given([added, deleted]).when({ type: 'AddDocument', data: { ...ref, documentName: 'D', folderId: 'f' }, metadata: meta }).then([added]);
});

test('AddDocument by a migration: the event names it, and the state keeps its id through later changes', () => {
  const migration = { migrationId: 'm', fromDocumentId: 'old' };
  const byMigration: DocumentEvent = { type: 'DocumentAdded', data: { ...ref, documentName: 'D', folderId: 'f', accessType: 'restricted', disabled: true, createdAt: now, migration } };
  given([]).when({ type: 'AddDocument', data: { ...ref, documentName: 'D', folderId: 'f', accessType: 'restricted', disabled: true, migration }, metadata: meta }).then([byMigration]);
  const state = given([byMigration, { type: 'DocumentRenamed', data: { ...ref, documentName: 'E' } }]).state;
  assert.is(state.status === 'active' ? state.migrationId : null, 'm');
  assert.is(given([added]).state.status === 'active' && 'migrationId' in given([added]).state, false, 'a document added otherwise names none');
});

test('UpdateDocument: only what changes; missing is NOT_FOUND', () => {
  given([added]).when({ type: 'UpdateDocument', data: { ...ref, documentName: 'E', accessType: 'restricted', disabled: true }, metadata: meta }).then([
    { type: 'DocumentRenamed', data: { ...ref, documentName: 'E' } },
    { type: 'DocumentAccessChanged', data: { ...ref, accessType: 'restricted' } },
    { type: 'DocumentDisabledStateChanged', data: { ...ref, disabled: true } },
  ]);
  given([added]).when({ type: 'UpdateDocument', data: { ...ref, documentName: 'D' }, metadata: meta }).thenNothing();
  given([]).when({ type: 'UpdateDocument', data: { ...ref, documentName: 'E' }, metadata: meta }).thenFails('NOT_FOUND', 'Document does not exist');
});

test('MoveDocument: moves; same folder is a no-op; missing is INVALID_ARGUMENT naming it', () => {
  given([added]).when({ type: 'MoveDocument', data: { ...ref, folderId: null }, metadata: meta }).then([
    { type: 'DocumentMoved', data: { ...ref, folderId: null, previousFolderId: 'f' } },
  ]);
  given([added]).when({ type: 'MoveDocument', data: { ...ref, folderId: 'f' }, metadata: meta }).thenNothing();
  given([]).when({ type: 'MoveDocument', data: { ...ref, folderId: 'f' }, metadata: meta }).thenFails('INVALID_ARGUMENT', 'Document "d" does not exist.');
});

test('SetDocumentAccess: set, inherit, no-op, missing', () => {
  given([added]).when({ type: 'SetDocumentAccess', data: { ...ref, accessType: 'public' }, metadata: meta }).then([
    { type: 'DocumentAccessChanged', data: { ...ref, accessType: 'public' } },
  ]);
  given([added]).when({ type: 'SetDocumentAccess', data: { ...ref, accessType: null }, metadata: meta }).thenNothing();
  given([]).when({ type: 'SetDocumentAccess', data: { ...ref, accessType: 'public' }, metadata: meta }).thenFails('NOT_FOUND');
});

test('SetDocumentDisabled: set, no-op, missing', () => {
  given([added]).when({ type: 'SetDocumentDisabled', data: { ...ref, disabled: true }, metadata: meta }).then([
    { type: 'DocumentDisabledStateChanged', data: { ...ref, disabled: true } },
  ]);
  given([added]).when({ type: 'SetDocumentDisabled', data: { ...ref, disabled: false }, metadata: meta }).thenNothing();
  given([]).when({ type: 'SetDocumentDisabled', data: { ...ref, disabled: true }, metadata: meta }).thenFails('NOT_FOUND');
});

const claim = { type: 'ClaimForMigration' as const, data: { ...ref, migrationId: 'm1', newDocumentId: 'd-a' }, metadata: meta };
const claimed: DocumentEvent = { type: 'DocumentMigrationClaimed', data: { ...ref, migrationId: 'm1', newDocumentId: 'd-a', claimedAt: now } };
const released: DocumentEvent = { type: 'DocumentMigrationClaimReleased', data: { ...ref, migrationId: 'm1' } };

test('ClaimForMigration: claims a free document; the same migration again is nothing; another migration is refused naming the holder', () => {
  given([added]).when(claim).then([claimed]);
  given([added, claimed]).when(claim).thenNothing();
  // Two migrations that read the document at one version: the second, decided again on the
  // state after the first's append (the handler's conflict retry), is refused.
  given([added, claimed]).when({ ...claim, data: { ...claim.data, migrationId: 'm2', newDocumentId: 'd-b' } })
    .thenFails('FAILED_PRECONDITION', 'Document "d" is being migrated to "d-a" (migration m1); it cannot be migrated again.');
  given([]).when(claim).thenFails('NOT_FOUND', 'Document does not exist');
  given([added, claimed, { type: 'DocumentDeleted', data: { ...ref, reason: 'migrated', deletedAt: now } }]).when(claim).thenFails('NOT_FOUND');
});

test('ReleaseMigrationClaim: frees the document its migration holds; another migration\'s release, or none held, is nothing', () => {
  given([added, claimed]).when({ type: 'ReleaseMigrationClaim', data: { ...ref, migrationId: 'm1' }, metadata: meta }).then([released]);
  given([added, claimed]).when({ type: 'ReleaseMigrationClaim', data: { ...ref, migrationId: 'm2' }, metadata: meta }).thenNothing();
  given([added]).when({ type: 'ReleaseMigrationClaim', data: { ...ref, migrationId: 'm1' }, metadata: meta }).thenNothing();
  given([]).when({ type: 'ReleaseMigrationClaim', data: { ...ref, migrationId: 'm1' }, metadata: meta }).thenNothing();
  // Released, the document can be claimed by another migration.
  given([added, claimed, released]).when({ ...claim, data: { ...claim.data, migrationId: 'm2', newDocumentId: 'd-b' } })
    .then([{ type: 'DocumentMigrationClaimed', data: { ...ref, migrationId: 'm2', newDocumentId: 'd-b', claimedAt: now } }]);
});

test('DeleteDocument: deletes; missing is nothing (reported as does-not-exist by the route)', () => {
  given([added]).when({ type: 'DeleteDocument', data: { ...ref, reason: 'folderDeleted' }, metadata: meta }).then([
    { type: 'DocumentDeleted', data: { ...ref, reason: 'folderDeleted', deletedAt: now } },
  ]);
  given([]).when({ type: 'DeleteDocument', data: { ...ref, reason: 'request' }, metadata: meta }).thenNothing();
});

test.run();
