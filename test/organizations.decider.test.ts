import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spec } from './support/decider.js';
import { organizationDecider, plan, type OrganizationEvent, type OrganizationCommand } from '../commands/organization.js';

const now = 1_700_000_000_000;
const meta = { now };
const org = 'org-1';
const created: OrganizationEvent = { type: 'OrganizationCreated', data: { organizationId: org, organizationName: org, createdAt: now } };
const folder = (folderId: string, parentFolderId: string | null = null, accessType: 'public' | 'restricted' | null = null): OrganizationEvent => ({
  type: 'FolderAdded',
  data: { organizationId: org, folderId, folderName: folderId, parentFolderId, accessType, createdAt: now },
});
const given = (events: OrganizationEvent[]) => spec(organizationDecider).given(events);
const outcomes = (events: OrganizationEvent[], command: OrganizationCommand) => {
  const state = events.reduce(organizationDecider.evolve, organizationDecider.initialState());
  return Object.fromEntries(plan(command, state).outcomes);
};

test('CreateOrganization creates; twice is ALREADY_EXISTS; ifMissing is a no-op', () => {
  given([]).when({ type: 'CreateOrganization', data: { organizationId: org, organizationName: 'Acme' }, metadata: meta }).then([
    { type: 'OrganizationCreated', data: { organizationId: org, organizationName: 'Acme', createdAt: now } },
  ]);
  given([created]).when({ type: 'CreateOrganization', data: { organizationId: org }, metadata: meta }).thenFails('ALREADY_EXISTS', 'Organization already exists.');
  given([created]).when({ type: 'CreateOrganization', data: { organizationId: org, ifMissing: true }, metadata: meta }).thenNothing();
});

test('RenameOrganization: renames, no-op on same name, NOT_FOUND when missing', () => {
  given([created]).when({ type: 'RenameOrganization', data: { organizationId: org, organizationName: 'New' }, metadata: meta }).then([
    { type: 'OrganizationRenamed', data: { organizationId: org, organizationName: 'New' } },
  ]);
  given([created]).when({ type: 'RenameOrganization', data: { organizationId: org, organizationName: org }, metadata: meta }).thenNothing();
  given([]).when({ type: 'RenameOrganization', data: { organizationId: org, organizationName: 'x' }, metadata: meta }).thenFails('NOT_FOUND', 'Organization does not exist.');
});

test('SetOrganizationDisabled and DeleteOrganization', () => {
  given([created]).when({ type: 'SetOrganizationDisabled', data: { organizationId: org, disabled: true }, metadata: meta }).then([
    { type: 'OrganizationDisabledStateChanged', data: { organizationId: org, disabled: true } },
  ]);
  given([created]).when({ type: 'SetOrganizationDisabled', data: { organizationId: org, disabled: false }, metadata: meta }).thenNothing();
  given([]).when({ type: 'SetOrganizationDisabled', data: { organizationId: org, disabled: true }, metadata: meta }).thenFails('NOT_FOUND');
  given([created]).when({ type: 'DeleteOrganization', data: { organizationId: org }, metadata: meta }).then([
    { type: 'OrganizationDeleted', data: { organizationId: org, deletedAt: now } },
  ]);
  given([]).when({ type: 'DeleteOrganization', data: { organizationId: org }, metadata: meta }).thenFails('NOT_FOUND');
});

test('a deleted organization can be created again, with an empty tree', () => {
  const events: OrganizationEvent[] = [created, folder('a'), { type: 'OrganizationDeleted', data: { organizationId: org, deletedAt: now } }, created];
  given(events).when({ type: 'AddFolders', data: { organizationId: org, folders: [{ folderId: 'a' }] }, metadata: meta }).then([folder('a')]);
});

test('AddFolders: per item; existing, unknown parent, and order within the batch', () => {
  const cmd: OrganizationCommand = {
    type: 'AddFolders',
    data: { organizationId: org, folders: [{ folderId: 'a' }, { folderId: 'b', parentFolderId: 'a', accessType: 'restricted' }, { folderId: 'x' }, { folderId: 'c', parentFolderId: 'nope' }] },
    metadata: meta,
  };
  given([created, folder('x')]).when(cmd).then([folder('a'), folder('b', 'a', 'restricted')]);
  assert.equal(outcomes([created, folder('x')], cmd), {
    a: { id: 'a', success: true, message: 'Folder added.' },
    b: { id: 'b', success: true, message: 'Folder added.' },
    x: { id: 'x', success: false, message: 'Folder already exists.' },
    c: { id: 'c', success: false, message: 'Parent folder "nope" does not exist.' },
  });
});

test('AddFolders: NOT_FOUND without the organization, created with createOrganization', () => {
  given([]).when({ type: 'AddFolders', data: { organizationId: org, folders: [{ folderId: 'a' }] }, metadata: meta }).thenFails('NOT_FOUND', 'Organization does not exist.');
  given([]).when({ type: 'AddFolders', data: { organizationId: org, createOrganization: true, folders: [{ folderId: 'a' }] }, metadata: meta }).then([created, folder('a')]);
});

test('UpdateFolders: rename, move, root, cycle, missing parent, missing folder', () => {
  const tree = [created, folder('a'), folder('b', 'a'), folder('c', 'b'), folder('d')];
  const cmd: OrganizationCommand = {
    type: 'UpdateFolders',
    data: {
      organizationId: org,
      folders: [
        { folderId: 'd', folderName: 'D' },
        { folderId: 'a', parentFolderId: 'c' },
        { folderId: 'a', parentFolderId: 'a' },
        { folderId: 'c', parentFolderId: 'root' },
        { folderId: 'b', parentFolderId: 'zz' },
        { folderId: 'zz', folderName: 'q' },
      ],
    },
    metadata: meta,
  };
  given(tree).when(cmd).then([
    { type: 'FolderRenamed', data: { organizationId: org, folderId: 'd', folderName: 'D' } },
    { type: 'FolderMoved', data: { organizationId: org, folderId: 'c', parentFolderId: null, previousParentFolderId: 'b' } },
  ]);
  const o = outcomes(tree, cmd);
  assert.equal(o.d, { id: 'd', success: true, message: 'Folder updated.' });
  assert.equal(o.a, { id: 'a', success: false, message: 'Moving the folder under itself or one of its subfolders would create a cycle.' });
  assert.equal(o.c!.success, true);
  assert.equal(o.b, { id: 'b', success: false, message: 'Parent folder "zz" does not exist.' });
  assert.equal(o.zz, { id: 'zz', success: false, message: 'Folder does not exist.' });
});

test('UpdateFolders: opposite moves decided in sequence never both succeed', () => {
  const tree = [created, folder('a'), folder('b')];
  const first: OrganizationCommand = { type: 'UpdateFolders', data: { organizationId: org, folders: [{ folderId: 'a', parentFolderId: 'b' }] }, metadata: meta };
  const moved: OrganizationEvent = { type: 'FolderMoved', data: { organizationId: org, folderId: 'a', parentFolderId: 'b', previousParentFolderId: null } };
  given(tree).when(first).then([moved]);
  given([...tree, moved]).when({ type: 'UpdateFolders', data: { organizationId: org, folders: [{ folderId: 'b', parentFolderId: 'a' }] }, metadata: meta }).thenNothing();
});

test('SetFolderAccess: set, inherit (null), unchanged, missing', () => {
  const tree = [created, folder('a'), folder('b', null, 'restricted')];
  const cmd: OrganizationCommand = { type: 'SetFolderAccess', data: { organizationId: org, folderIds: ['a', 'b', 'zz'], accessType: 'restricted' }, metadata: meta };
  given(tree).when(cmd).then([{ type: 'FolderAccessChanged', data: { organizationId: org, folderId: 'a', accessType: 'restricted' } }]);
  assert.equal(outcomes(tree, cmd).zz, { success: false, accessType: 'restricted', message: 'Folder does not exist.' });
  const inherit: OrganizationCommand = { type: 'SetFolderAccess', data: { organizationId: org, folderIds: ['b'], accessType: null }, metadata: meta };
  given(tree).when(inherit).then([{ type: 'FolderAccessChanged', data: { organizationId: org, folderId: 'b', accessType: null } }]);
  assert.equal(outcomes(tree, inherit).b, { success: true, accessType: null, inheritFromParent: true, message: 'Folder access type updated.' });
});

test('DeleteFolder removes the subtree; missing folder has the spec code', () => {
  const tree = [created, folder('a'), folder('b', 'a'), folder('c', 'b'), folder('d')];
  given(tree).when({ type: 'DeleteFolder', data: { organizationId: org, folderId: 'a' }, metadata: meta }).then([
    { type: 'FolderDeleted', data: { organizationId: org, folderId: 'a', folderIds: ['a', 'b', 'c'], deletedAt: now } },
  ]);
  given(tree).when({ type: 'DeleteFolder', data: { organizationId: org, folderId: 'zz' }, metadata: meta }).thenFails('NOT_FOUND', 'Folder not found.');
  given([]).when({ type: 'DeleteFolder', data: { organizationId: org, folderId: 'a' }, metadata: meta }).thenFails('NOT_FOUND', 'Organization does not exist.');
  const deleted: OrganizationEvent = { type: 'FolderDeleted', data: { organizationId: org, folderId: 'a', folderIds: ['a', 'b', 'c'], deletedAt: now } };
  given([...tree, deleted]).when({ type: 'AddFolders', data: { organizationId: org, folders: [{ folderId: 'c', parentFolderId: 'd' }] }, metadata: meta }).then([folder('c', 'd')]);
});

test.run();
