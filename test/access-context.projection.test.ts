/**
 * Access context in the grants read model (projections/grants.ts): given(events)
 * .then(readModel), and the same events applied twice end in the same documents.
 */
import { test } from 'uvu';
import { projectionSpec, type GivenEvent } from './support/projection.js';
import { grantsProjection, GRANTS, grantKey } from '../projections/grants.js';

const K = 'key-1';
const o = 'o';
const ev = (type: string, data: Record<string, unknown>): GivenEvent => ({ type, data: { organizationId: o, userId: 'u', ...data }, metadata: { apiKey: K } });
const added = (resourceType: string, resourceId: string, accessFields?: string[]) =>
  ev('GrantAdded', { resourceType, resourceId, accessRole: 'editor', expiresAt: null, grantedAt: 1, ...(accessFields ? { accessFields } : {}) });
const removed = (resourceType: string, resourceId: string, accessFields: string[]) =>
  ev('AccessFieldsRemoved', { resourceType, resourceId, accessFields, removedAt: 2 });
const row = (resourceType: string, resourceId: string, accessFields?: string[]) => ({
  _id: grantKey(K, o, 'u', resourceType as 'document', resourceId),
  apiKey: K,
  organizationId: o,
  userId: 'u',
  resourceType,
  resourceId,
  accessRole: 'editor',
  expiresAt: null,
  ...(accessFields ? { accessFields } : {}),
});

test('a grant keeps the access fields its GrantAdded carries; a later GrantAdded replaces them', async () => {
  await projectionSpec(grantsProjection).given([added('document', 'd', ['a:1', 'b:2'])]).then({ [GRANTS]: [row('document', 'd', ['a:1', 'b:2'])] });
  await projectionSpec(grantsProjection).given([added('document', 'd', ['a:1']), added('document', 'd', ['a:1', 'c:3'])]).then({ [GRANTS]: [row('document', 'd', ['a:1', 'c:3'])] });
  await projectionSpec(grantsProjection).given([added('document', 'd', ['a:1']), added('document', 'd')]).then({ [GRANTS]: [row('document', 'd')] });
});

test('AccessFieldsRemoved takes those fields away; the last one gone leaves no accessFields key', async () => {
  await projectionSpec(grantsProjection).given([added('folder', 'f', ['a:1', 'b:2']), removed('folder', 'f', ['a:1'])]).then({ [GRANTS]: [row('folder', 'f', ['b:2'])] });
  await projectionSpec(grantsProjection).given([added('folder', 'f', ['a:1']), removed('folder', 'f', ['a:1'])]).then({ [GRANTS]: [row('folder', 'f')] });
});

test('AccessFieldsRemoved for a grant that is gone changes nothing', async () => {
  await projectionSpec(grantsProjection).given([
    added('document', 'd', ['a:1']),
    ev('GrantRevoked', { resourceType: 'document', resourceId: 'd', revokedAt: 2 }),
    removed('document', 'd', ['a:1']),
  ]).then({ [GRANTS]: [] });
});

test('fields go with their grant: revoked, or its resource deleted', async () => {
  await projectionSpec(grantsProjection).given([
    added('organization', o, ['team:x']),
    added('document', 'd', ['a:1']),
    ev('DocumentDeleted', { documentId: 'd', reason: 'request', deletedAt: 3 }),
  ]).then({ [GRANTS]: [row('organization', o, ['team:x'])] });
});

test('replay twice: the same documents', async () => {
  await projectionSpec(grantsProjection).given([
    added('organization', o, ['team:x', 'team:y']),
    added('document', 'd', ['a:1', 'b:2']),
    removed('document', 'd', ['a:1']),
    added('folder', 'f', ['c:3']),
    removed('organization', o, ['team:x', 'team:y']),
    added('document', 'd', ['b:2', 'd:4']),
  ]).replayTwice([GRANTS]);
});

test.run();
