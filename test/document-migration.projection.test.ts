/** The document migrations read model (projections/document-migrations.ts): given(events).then(readModel), replayed twice. */
import { test } from 'uvu';
import { projectionSpec, type GivenEvent } from './support/projection.js';
import { DOCUMENT_MIGRATIONS, documentMigrationsProjection, migrationKey } from '../projections/document-migrations.js';

const metadata = { apiKey: 'k' };
const ref = (migrationId: string) => ({ organizationId: 'o', migrationId });
const started = (migrationId: string, documentId: string): GivenEvent => ({
  type: 'DocumentMigrationStarted', data: { ...ref(migrationId), documentId, newDocumentId: `${documentId}2`, startedAt: 10 }, metadata,
});
const row = (migrationId: string, documentId: string) => ({
  _id: migrationKey('k', 'o', migrationId), apiKey: 'k', organizationId: 'o', migrationId, documentId, newDocumentId: `${documentId}2`, startedAt: 10,
});
const events: GivenEvent[] = [
  started('m1', 'a'),
  started('m2', 'b'),
  started('m3', 'c'),
  { type: 'DocumentMigrationCompleted', data: { ...ref('m1'), grantsMoved: 3, groupGrantsMoved: 1, completedAt: 20 }, metadata },
  { type: 'DocumentMigrationFailed', data: { ...ref('m2'), error: 'Document "b2" already exists.', failedAt: 30 }, metadata },
];

test('started is in_progress; completed carries the counts; failed the error', async () => {
  await projectionSpec(documentMigrationsProjection).given(events).then({
    [DOCUMENT_MIGRATIONS]: [
      { ...row('m1', 'a'), status: 'completed', completedAt: 20, grantsMoved: 3, groupGrantsMoved: 1 },
      { ...row('m2', 'b'), status: 'failed', completedAt: 30, error: 'Document "b2" already exists.' },
      { ...row('m3', 'c'), status: 'in_progress' },
    ],
  });
});

test('the organization\'s deletion takes its migrations, another key\'s stay', async () => {
  const other: GivenEvent = { ...started('m9', 'z'), metadata: { apiKey: 'k2' } };
  await projectionSpec(documentMigrationsProjection).given([...events, other, { type: 'OrganizationDeleted', data: { organizationId: 'o', deletedAt: 40 }, metadata }]).then({
    [DOCUMENT_MIGRATIONS]: [{ ...row('m9', 'z'), _id: migrationKey('k2', 'o', 'm9'), apiKey: 'k2', status: 'in_progress' }],
  });
});

test('replayed twice, the read model is the same', async () => {
  await projectionSpec(documentMigrationsProjection).given(events).replayTwice([DOCUMENT_MIGRATIONS]);
});

test.run();
