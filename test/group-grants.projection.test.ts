/**
 * The `group_grants` read model (projections/group-grants.ts), given(events).then(readModel):
 * grants, replacement, revocation, the group's, a resource's and the organization's deletion,
 * the cascade items a deletion queues, another API key, and replay twice.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { project, projectionSpec, type GivenEvent } from './support/projection.js';
import { groupGrantsProjection, GROUP_GRANTS, groupGrantKey, type GroupGrantDoc } from '../projections/group-grants.js';
import { CASCADE_WORK, type WorkItem } from '../projections/cascade-work.js';
import type { ResourceType } from '../commands/grant.js';

const K = 'key-1';
const o = 'o';
const ev = (type: string, data: Record<string, unknown>, apiKey = K): GivenEvent => ({ type, data: { organizationId: o, ...data }, metadata: { apiKey } });
const granted = (groupId: string, resourceType: ResourceType, resourceId: string, accessRole = 'editor', expiresAt: number | null = null, apiKey = K) =>
  ev('GroupAccessGranted', { groupId, resourceType, resourceId, accessRole, expiresAt, grantedAt: 1 }, apiKey);
const revoked = (groupId: string, resourceType: ResourceType, resourceId: string) =>
  ev('GroupAccessRevoked', { groupId, resourceType, resourceId, revokedAt: 2 });
const row = (groupId: string, resourceType: ResourceType, resourceId: string, accessRole = 'editor', expiresAt: number | null = null, apiKey = K): GroupGrantDoc => ({
  _id: groupGrantKey(apiKey, o, groupId, resourceType, resourceId),
  apiKey, organizationId: o, groupId, resourceType, resourceId, accessRole: accessRole as GroupGrantDoc['accessRole'], expiresAt,
});

const base = [
  granted('g', 'organization', o, 'viewer'),
  granted('g', 'folder', 'f'),
  granted('g', 'document', 'd', 'viewer', 99),
  granted('h', 'document', 'd'),
  granted('h', 'folder', 'f', 'viewer'),
];

test('grants: one document per (group, resource)', async () => {
  await projectionSpec(groupGrantsProjection).given(base).then({
    [GROUP_GRANTS]: [
      row('g', 'organization', o, 'viewer'), row('g', 'folder', 'f'), row('g', 'document', 'd', 'viewer', 99),
      row('h', 'document', 'd'), row('h', 'folder', 'f', 'viewer'),
    ],
  });
});

test('a new grant on the same resource replaces the document; a revoke deletes it', async () => {
  await projectionSpec(groupGrantsProjection).given([
    granted('g', 'document', 'd', 'viewer', 99),
    granted('g', 'document', 'd', 'editor'),
    granted('g', 'folder', 'f'),
    revoked('g', 'folder', 'f'),
    revoked('g', 'folder', 'never'),
  ]).then({ [GROUP_GRANTS]: [row('g', 'document', 'd')] });
});

test("the group's deletion takes its grants, and only its own", async () => {
  await projectionSpec(groupGrantsProjection).given([...base, ev('UserGroupDeleted', { groupId: 'g', deletedAt: 3 })]).then({
    [GROUP_GRANTS]: [row('h', 'document', 'd'), row('h', 'folder', 'f', 'viewer')],
  });
});

test('a deleted folder or document takes the grants on it; the organization takes all', async () => {
  await projectionSpec(groupGrantsProjection).given([...base, ev('FolderDeleted', { folderId: 'f', folderIds: ['f'], deletedAt: 3 })]).then({
    [GROUP_GRANTS]: [row('g', 'organization', o, 'viewer'), row('g', 'document', 'd', 'viewer', 99), row('h', 'document', 'd')],
  });
  await projectionSpec(groupGrantsProjection).given([...base, ev('DocumentDeleted', { documentId: 'd', reason: 'request', deletedAt: 3 })]).then({
    [GROUP_GRANTS]: [row('g', 'organization', o, 'viewer'), row('g', 'folder', 'f'), row('h', 'folder', 'f', 'viewer')],
  });
  await projectionSpec(groupGrantsProjection).given([...base, ev('OrganizationDeleted', { deletedAt: 3 })]).then({ [GROUP_GRANTS]: [] });
});

test('a folder deletion queues one cascade item per group granted on it (write side revokes too)', async () => {
  const store = await project(groupGrantsProjection, [...base, ev('FolderDeleted', { folderId: 'f', folderIds: ['f'], deletedAt: 3 })]);
  try {
    const items = (await store.find<WorkItem>(CASCADE_WORK, {})).map((i) => [i.kind, i.targetId, i.reason, i.resource]);
    items.sort((a, b) => String(a[1]).localeCompare(String(b[1])));
    assert.equal(items, [
      ['resourceGroupGrants', 'g', 'folderDeleted', { resourceType: 'folder', resourceId: 'f' }],
      ['resourceGroupGrants', 'h', 'folderDeleted', { resourceType: 'folder', resourceId: 'f' }],
    ]);
  } finally {
    await store.close();
  }
});

test('two API keys never share a group grant', async () => {
  await projectionSpec(groupGrantsProjection).given([granted('g', 'document', 'd'), granted('g', 'document', 'd', 'viewer', null, 'key-2')]).then({
    [GROUP_GRANTS]: [row('g', 'document', 'd'), row('g', 'document', 'd', 'viewer', null, 'key-2')],
  });
});

test('replay twice: the same read model', async () => {
  await projectionSpec(groupGrantsProjection).given(base).replayTwice([GROUP_GRANTS]);
  await projectionSpec(groupGrantsProjection).given([
    ...base,
    revoked('h', 'document', 'd'),
    granted('h', 'document', 'd', 'viewer', 50),
    ev('UserGroupDeleted', { groupId: 'g', deletedAt: 3 }),
    granted('g', 'folder', 'f', 'viewer'),
    ev('DocumentDeleted', { documentId: 'd', reason: 'request', deletedAt: 4 }),
  ]).replayTwice([GROUP_GRANTS]);
});

test.run();
