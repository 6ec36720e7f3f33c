import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { project, projectionSpec, type GivenEvent } from './support/projection.js';
import { organizationsProjection, ORGANIZATIONS } from '../projections/organizations.js';
import { foldersProjection, FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { documentsProjection, DOCUMENTS } from '../projections/documents.js';
import { grantsProjection, GRANTS } from '../projections/grants.js';
import { usersProjection, USER_DATA_JOBS, USERS } from '../projections/users.js';
import { groupsProjection, USER_GROUPS, GROUP_MEMBERS } from '../projections/groups.js';
import { key } from '../src/shared/ids.js';
import { encodePosition } from '../src/adapters/sqlite-event-store.js';

const K = 'key-1';
const o = 'o';
const m = { metadata: { apiKey: K } };
const ev = (type: string, data: Record<string, unknown>): GivenEvent => ({ type, data: { organizationId: o, ...data }, ...m });
const orgCreated = ev('OrganizationCreated', { organizationName: 'O', createdAt: 1 });
const folder = (folderId: string, parentFolderId: string | null = null, accessType: string | null = null) =>
  ev('FolderAdded', { folderId, folderName: folderId, parentFolderId, accessType, createdAt: 1 });
const doc = (documentId: string, folderId: string | null = null) =>
  ev('DocumentAdded', { documentId, documentName: documentId, folderId, accessType: null, disabled: false, createdAt: 1 });

test('organizations: created, renamed, disabled, deleted; replay twice', async () => {
  const events = [orgCreated, ev('OrganizationRenamed', { organizationName: 'P' }), ev('OrganizationDisabledStateChanged', { disabled: true })];
  await projectionSpec(organizationsProjection).given(events).then({
    [ORGANIZATIONS]: [{ _id: key(K, o), apiKey: K, organizationId: o, organizationName: 'P', disabled: true, seq: encodePosition(1), createdAt: 1 }],
  });
  await projectionSpec(organizationsProjection).given([...events, ev('OrganizationDeleted', { deletedAt: 2 })]).then({ [ORGANIZATIONS]: [] });
  await projectionSpec(organizationsProjection).given(events).replayTwice([ORGANIZATIONS]);
});

test('folders: ancestors and effective access through adds, moves and access changes', async () => {
  const events = [
    folder('a', null, 'restricted'),
    folder('b', 'a'),
    folder('c', 'b'),
    folder('x', null, 'organizationPrivate'),
    ev('FolderMoved', { folderId: 'b', parentFolderId: 'x', previousParentFolderId: 'a' }),
    ev('FolderAccessChanged', { folderId: 'x', accessType: 'public' }),
    ev('FolderRenamed', { folderId: 'c', folderName: 'C' }),
  ];
  const store = await project(foldersProjection, events);
  const get = (id: string) => store.get<FolderDoc>(FOLDERS, folderKey(K, o, id));
  const c = await get('c');
  assert.equal(c!.ancestors, ['x', 'b']);
  assert.is(c!.effectiveAccessType, 'public');
  assert.is(c!.folderName, 'C');
  assert.is((await get('a'))!.effectiveAccessType, 'restricted');
  await store.close();
  await projectionSpec(foldersProjection).given(events).replayTwice([FOLDERS]);
});

test('folders: inheriting again takes the parent type; deletion drops the subtree', async () => {
  const events = [folder('a', null, 'restricted'), folder('b', 'a', 'public'), folder('c', 'b'), ev('FolderAccessChanged', { folderId: 'b', accessType: null })];
  const store = await project(foldersProjection, events);
  assert.is((await store.get<FolderDoc>(FOLDERS, folderKey(K, o, 'c')))!.effectiveAccessType, 'restricted');
  await store.close();
  await projectionSpec(foldersProjection).given([...events, folder('z'), ev('FolderDeleted', { folderId: 'a', folderIds: ['a', 'b', 'c'], deletedAt: 2 })]).then({
    [FOLDERS]: [{
      _id: folderKey(K, o, 'z'), apiKey: K, organizationId: o, folderId: 'z', folderName: 'z', parentFolderId: null, ancestors: [],
      accessType: null, effectiveAccessType: 'public', seq: encodePosition(5), createdAt: 1, lastUpdated: 1,
    }],
  });
  await projectionSpec(foldersProjection).given([...events, ev('FolderDeleted', { folderId: 'b', folderIds: ['b', 'c'], deletedAt: 2 })]).replayTwice([FOLDERS]);
});

test('documents: lifecycle, folder deletion, organization deletion; replay twice', async () => {
  const events = [
    doc('d1', 'f'),
    doc('d2'),
    ev('DocumentRenamed', { documentId: 'd2', documentName: 'Two' }),
    ev('DocumentMoved', { documentId: 'd2', folderId: 'g', previousFolderId: null }),
    ev('DocumentAccessChanged', { documentId: 'd2', accessType: 'restricted' }),
    ev('DocumentDisabledStateChanged', { documentId: 'd2', disabled: true }),
    doc('d3'),
    ev('DocumentDeleted', { documentId: 'd3', reason: 'request', deletedAt: 2 }),
  ];
  // Each row carries its open version (projections/history.ts, withOpenVersions): the
  // harness stamps event i at T0 + i, by actor `test`.
  const T0 = 1_700_000_000_000;
  const opened = (i: number, type: string) => ({ validFrom: T0 + i, openedBy: { type, time: T0 + i, actor: 'test' } });
  const d2 = { _id: key(K, o, 'd2'), apiKey: K, organizationId: o, documentId: 'd2', documentName: 'Two', folderId: 'g', accessType: 'restricted', disabled: true, seq: encodePosition(2), createdAt: 1, ...opened(5, 'DocumentDisabledStateChanged') };
  await projectionSpec(documentsProjection).given(events).then({
    [DOCUMENTS]: [
      { _id: key(K, o, 'd1'), apiKey: K, organizationId: o, documentId: 'd1', documentName: 'd1', folderId: 'f', accessType: null, disabled: false, seq: encodePosition(1), createdAt: 1, ...opened(0, 'DocumentAdded') },
      d2,
    ],
  });
  await projectionSpec(documentsProjection).given([...events, ev('FolderDeleted', { folderId: 'f', folderIds: ['f'], deletedAt: 3 })]).then({
    [DOCUMENTS]: [d2],
  });
  await projectionSpec(documentsProjection).given([...events, ev('OrganizationDeleted', { deletedAt: 3 })]).then({ [DOCUMENTS]: [] });
  await projectionSpec(documentsProjection).given(events).replayTwice([DOCUMENTS]);
});

test('grants: added, replaced, revoked, dropped with their resource; replay twice', async () => {
  const grant = (userId: string, resourceType: string, resourceId: string, accessRole = 'editor', expiresAt: number | null = null) =>
    ev('GrantAdded', { userId, resourceType, resourceId, accessRole, expiresAt, grantedAt: 1 });
  const events = [
    grant('u', 'organization', o),
    grant('u', 'folder', 'f'),
    grant('u', 'document', 'd', 'viewer', 99),
    grant('v', 'document', 'd'),
    grant('v', 'organization', o, 'viewer'),
    ev('GrantRevoked', { userId: 'v', resourceType: 'organization', resourceId: o, revokedAt: 2 }),
  ];
  await projectionSpec(grantsProjection).given(events).then({
    [GRANTS]: [
      { _id: key(K, o, 'u', 'organization', o), apiKey: K, organizationId: o, userId: 'u', resourceType: 'organization', resourceId: o, accessRole: 'editor', expiresAt: null },
      { _id: key(K, o, 'u', 'folder', 'f'), apiKey: K, organizationId: o, userId: 'u', resourceType: 'folder', resourceId: 'f', accessRole: 'editor', expiresAt: null },
      { _id: key(K, o, 'u', 'document', 'd'), apiKey: K, organizationId: o, userId: 'u', resourceType: 'document', resourceId: 'd', accessRole: 'viewer', expiresAt: 99 },
      { _id: key(K, o, 'v', 'document', 'd'), apiKey: K, organizationId: o, userId: 'v', resourceType: 'document', resourceId: 'd', accessRole: 'editor', expiresAt: null },
    ],
  });
  await projectionSpec(grantsProjection).given([
    ...events,
    ev('FolderDeleted', { folderId: 'f', folderIds: ['f'], deletedAt: 3 }),
    ev('DocumentDeleted', { documentId: 'd', reason: 'request', deletedAt: 3 }),
  ]).then({
    [GRANTS]: [{ _id: key(K, o, 'u', 'organization', o), apiKey: K, organizationId: o, userId: 'u', resourceType: 'organization', resourceId: o, accessRole: 'editor', expiresAt: null }],
  });
  await projectionSpec(grantsProjection).given([...events, ev('OrganizationDeleted', { deletedAt: 3 })]).then({ [GRANTS]: [] });
  await projectionSpec(grantsProjection).given(events).replayTwice([GRANTS]);
});

test('users: added and updated; replay twice', async () => {
  const events: GivenEvent[] = [
    { type: 'UserAdded', data: { userId: 'u', name: 'Ada', email: 'a@x.io', initial: 'A', createdAt: 1 }, ...m },
    { type: 'UserProfileUpdated', data: { userId: 'u', name: 'Bob', initial: 'B' }, ...m },
  ];
  await projectionSpec(usersProjection).given(events).then({
    [USERS]: [{ _id: key(K, 'u'), apiKey: K, userId: 'u', name: 'Bob', email: 'a@x.io', initial: 'B' }],
  });
  await projectionSpec(usersProjection).given(events).replayTwice([USERS]);
});

test('users: an erased user has no row; the job counts each user once; replay twice', async () => {
  const erased = (userId: string, erasedAt: number): GivenEvent => ({ type: 'UserErased', data: { userId, jobId: 'j', jobTasks: 2, erasedAt }, ...m });
  const events: GivenEvent[] = [
    { type: 'UserAdded', data: { userId: 'u', name: 'enc:v1:k:A', email: '', initial: '', createdAt: 1 }, ...m },
    erased('u', 5),
    erased('u', 6),
  ];
  await projectionSpec(usersProjection).given(events).then({
    [USERS]: [],
    [USER_DATA_JOBS]: [{ _id: key(K, 'j'), apiKey: K, jobId: 'j', tasksCount: 2, erased: ['u'], lastTaskCompletedTime: 6 }],
  });
  await projectionSpec(usersProjection).given([...events, erased('v', 7)]).then({
    [USERS]: [],
    [USER_DATA_JOBS]: [{ _id: key(K, 'j'), apiKey: K, jobId: 'j', tasksCount: 2, erased: ['u', 'v'], lastTaskCompletedTime: 7 }],
  });
  await projectionSpec(usersProjection).given(events).replayTwice([USERS, USER_DATA_JOBS]);
});

test('groups: groups and memberships; deletion; replay twice', async () => {
  const events = [
    ev('UserGroupAdded', { groupId: 'g', groupName: 'G', createdAt: 1 }),
    ev('UserGroupMemberAdded', { groupId: 'g', userId: 'a' }),
    ev('UserGroupMemberAdded', { groupId: 'g', userId: 'b' }),
    ev('UserGroupMemberRemoved', { groupId: 'g', userId: 'a' }),
  ];
  await projectionSpec(groupsProjection).given(events).then({
    [USER_GROUPS]: [{ _id: key(K, o, 'g'), apiKey: K, organizationId: o, groupId: 'g', groupName: 'G', seq: encodePosition(1) }],
    [GROUP_MEMBERS]: [{ _id: key(K, o, 'g', 'b'), apiKey: K, organizationId: o, groupId: 'g', userId: 'b' }],
  });
  await projectionSpec(groupsProjection).given([...events, ev('UserGroupDeleted', { groupId: 'g', deletedAt: 2 })]).then({ [USER_GROUPS]: [], [GROUP_MEMBERS]: [] });
  await projectionSpec(groupsProjection).given([...events, ev('OrganizationDeleted', { deletedAt: 2 })]).then({ [USER_GROUPS]: [], [GROUP_MEMBERS]: [] });
  await projectionSpec(groupsProjection).given(events).replayTwice([USER_GROUPS, GROUP_MEMBERS]);
});

test('two API keys never share a read-model document', async () => {
  const other = { ...orgCreated, metadata: { apiKey: 'key-2' } };
  await projectionSpec(organizationsProjection).given([orgCreated, other]).then({
    [ORGANIZATIONS]: [
      { _id: key(K, o), apiKey: K, organizationId: o, organizationName: 'O', disabled: false, seq: encodePosition(1), createdAt: 1 },
      { _id: key('key-2', o), apiKey: 'key-2', organizationId: o, organizationName: 'O', disabled: false, seq: encodePosition(2), createdAt: 1 },
    ],
  });
});

test.run();
