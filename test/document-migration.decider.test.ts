/**
 * The document migration job (commands/document-migration.ts), and the two moves it makes
 * on other aggregates: a user's grant (commands/grant.ts MoveGrant) and a group's grant
 * (commands/group.ts MoveGroupAccess). given/when/then.
 */
import { test } from 'uvu';
import { spec } from './support/decider.js';
import { documentMigrationDecider, type DocumentMigrationEvent } from '../commands/document-migration.js';
import { grantsDecider, type GrantEvent } from '../commands/grant.js';
import { groupDecider, type GroupEvent } from '../commands/group.js';

const now = 1_700_000_000_000;
const metadata = { now };
const ref = { organizationId: 'o', migrationId: 'm' };
const started: DocumentMigrationEvent = { type: 'DocumentMigrationStarted', data: { ...ref, documentId: 'd', newDocumentId: 'd2', startedAt: now } };
const completed: DocumentMigrationEvent = { type: 'DocumentMigrationCompleted', data: { ...ref, grantsMoved: 2, groupGrantsMoved: 1, completedAt: now } };
const failed: DocumentMigrationEvent = { type: 'DocumentMigrationFailed', data: { ...ref, error: 'Document already exists', failedAt: now } };
const migration = (events: DocumentMigrationEvent[]) => spec(documentMigrationDecider).given(events);
const start = { type: 'StartDocumentMigration' as const, data: { ...ref, documentId: 'd', newDocumentId: 'd2' }, metadata };
const complete = { type: 'CompleteDocumentMigration' as const, data: { ...ref, grantsMoved: 2, groupGrantsMoved: 1 }, metadata };
const fail = { type: 'FailDocumentMigration' as const, data: { ...ref, error: 'Document already exists' }, metadata };

test('StartDocumentMigration: starts once; the same id twice is INVALID_ARGUMENT; a started one is ALREADY_EXISTS', () => {
  migration([]).when(start).then([started]);
  migration([]).when({ ...start, data: { ...start.data, newDocumentId: 'd' } }).thenFails('INVALID_ARGUMENT', 'data.newDocumentId must differ from data.documentId.');
  migration([started]).when(start).thenFails('ALREADY_EXISTS', 'Migration already exists.');
  migration([started, completed]).when(start).thenFails('ALREADY_EXISTS');
});

test('CompleteDocumentMigration: completes a started one; again is nothing; after a failure or before a start it is refused', () => {
  migration([started]).when(complete).then([completed]);
  migration([started, completed]).when(complete).thenNothing();
  migration([started, failed]).when(complete).thenFails('FAILED_PRECONDITION', 'The migration has failed already.');
  migration([]).when(complete).thenFails('NOT_FOUND', 'Migration does not exist.');
});

test('FailDocumentMigration: fails a started one; again is nothing; a completed one is refused', () => {
  migration([started]).when(fail).then([failed]);
  migration([started, failed]).when(fail).thenNothing();
  migration([started, completed]).when(fail).thenFails('FAILED_PRECONDITION', 'The migration has completed already.');
  migration([]).when(fail).thenFails('NOT_FOUND');
});

const from = { resourceType: 'document' as const, resourceId: 'd' };
const to = { resourceType: 'document' as const, resourceId: 'd2' };

test('MoveGrant: the grant on the old id, role, expiry and access fields kept, is the grant on the new one, in one append', () => {
  const user = { organizationId: 'o', userId: 'u' };
  const granted: GrantEvent = { type: 'GrantAdded', data: { ...user, ...from, accessRole: 'viewer', expiresAt: 1_800_000_000, grantedAt: now - 5, accessFields: ['team:red'] } };
  const move = { type: 'MoveGrant' as const, data: { ...user, from, to }, metadata };
  spec(grantsDecider).given([granted]).when(move).then([
    { type: 'GrantAdded', data: { ...user, ...to, accessRole: 'viewer', expiresAt: 1_800_000_000, grantedAt: now, accessFields: ['team:red'] } },
    { type: 'GrantRevoked', data: { ...user, ...from, revokedAt: now } },
  ]);
  const plain: GrantEvent = { type: 'GrantAdded', data: { ...user, ...from, accessRole: 'editor', expiresAt: null, grantedAt: now - 5 } };
  spec(grantsDecider).given([plain]).when(move).then([
    { type: 'GrantAdded', data: { ...user, ...to, accessRole: 'editor', expiresAt: null, grantedAt: now } },
    { type: 'GrantRevoked', data: { ...user, ...from, revokedAt: now } },
  ]);
  // Moved already (a migration run again) or never granted: nothing.
  spec(grantsDecider).given([granted, { type: 'GrantRevoked', data: { ...user, ...from, revokedAt: now } }]).when(move).thenNothing();
  spec(grantsDecider).given([]).when(move).thenNothing();
});

test('MoveGroupAccess: the group\'s grant moves in one append; none, or a group that does not exist: nothing', () => {
  const group = { organizationId: 'o', groupId: 'g' };
  const added: GroupEvent = { type: 'UserGroupAdded', data: { ...group, groupName: 'G', createdAt: now } };
  const granted: GroupEvent = { type: 'GroupAccessGranted', data: { ...group, ...from, accessRole: 'editor', expiresAt: null, grantedAt: now - 5 } };
  const move = { type: 'MoveGroupAccess' as const, data: { ...group, from, to }, metadata };
  spec(groupDecider).given([added, granted]).when(move).then([
    { type: 'GroupAccessGranted', data: { ...group, ...to, accessRole: 'editor', expiresAt: null, grantedAt: now } },
    { type: 'GroupAccessRevoked', data: { ...group, ...from, revokedAt: now } },
  ]);
  spec(groupDecider).given([added]).when(move).thenNothing();
  spec(groupDecider).given([]).when(move).thenNothing();
});

test.run();
