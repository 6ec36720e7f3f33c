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

test('CreateOrganization with updateExisting (organizations/add): an existing organization takes the name sent', () => {
  const add = (organizationName?: string): OrganizationCommand => ({ type: 'CreateOrganization', data: { organizationId: org, organizationName, updateExisting: true }, metadata: meta });
  given([]).when(add('Acme')).then([{ type: 'OrganizationCreated', data: { organizationId: org, organizationName: 'Acme', createdAt: now } }]);
  given([created]).when(add('Acme')).then([{ type: 'OrganizationRenamed', data: { organizationId: org, organizationName: 'Acme' } }]);
  given([created]).when(add(org)).thenNothing();
  given([created]).when(add()).thenNothing();
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
    x: { id: 'x', success: false, message: 'Folder already exists' },
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
  assert.equal(o.d, { id: 'd', success: true, message: 'Folder Updated.' });
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

// ---- folder depth (semantics §1 Limits) ----

/** Events for a chain f1 -> f2 -> ... -> f<n> under the root (f<k> is at level k). */
const chain = (n: number, prefix = 'f'): OrganizationEvent[] =>
  Array.from({ length: n }, (_, i) => folder(`${prefix}${i + 1}`, i === 0 ? null : `${prefix}${i}`));
const add = (folders: Array<{ folderId: string; parentFolderId?: string }>, maxDepth?: number): OrganizationCommand => ({
  type: 'AddFolders', data: { organizationId: org, folders, ...(maxDepth !== undefined ? { maxDepth } : {}) }, metadata: meta,
});
const move = (folders: Array<{ folderId: string; parentFolderId: string | null }>, maxDepth?: number): OrganizationCommand => ({
  type: 'UpdateFolders', data: { organizationId: org, folders, ...(maxDepth !== undefined ? { maxDepth } : {}) }, metadata: meta,
});

test('AddFolders: level 100 is added, level 101 refuses the whole batch naming the limit (default 100)', () => {
  given([created, ...chain(99)]).when(add([{ folderId: 'f100', parentFolderId: 'f99' }])).then([folder('f100', 'f99')]);
  // A batch that builds its own chain: the 101st level refuses all of it, the first items too.
  const batch = Array.from({ length: 101 }, (_, i) => ({ folderId: `n${i + 1}`, ...(i > 0 ? { parentFolderId: `n${i}` } : {}) }));
  given([created]).when(add(batch.slice(0, 100))).then(chain(100, 'n'));
  given([created]).when(add(batch)).thenFails('INVALID_ARGUMENT', /data\.folders\[100\] \(folder "n101"\).*limited to 100 levels/);
  given([created, ...chain(100)]).when(add([{ folderId: 'ok' }, { folderId: 'x', parentFolderId: 'f100' }])).thenFails('INVALID_ARGUMENT', /data\.folders\[1\].*100 levels/);
});

test('AddFolders: the limit is the command\'s maxDepth (FOLDER_MAX_DEPTH)', () => {
  given([created, ...chain(2)]).when(add([{ folderId: 'x', parentFolderId: 'f2' }], 3)).then([folder('x', 'f2')]);
  given([created, ...chain(3)]).when(add([{ folderId: 'x', parentFolderId: 'f3' }], 3)).thenFails('INVALID_ARGUMENT', /limited to 3 levels/);
});

test('UpdateFolders: a move is refused when the moved subtree would go past the limit, accepted when it fits', () => {
  // Chain f1..f96 and a separate subtree s1 -> s2 -> s3 -> s4 (s4 is 3 levels below s1).
  const tree = [created, ...chain(96), ...chain(4, 's')];
  // Under f96, s1 lands at 97 and s4 at 100: fits.
  given(tree).when(move([{ folderId: 's1', parentFolderId: 'f96' }])).then([
    { type: 'FolderMoved', data: { organizationId: org, folderId: 's1', parentFolderId: 'f96', previousParentFolderId: null } },
  ]);
  // One level lower (a folder under f96 first): s4 would be at 101.
  given([...tree, folder('g97', 'f96')]).when(move([{ folderId: 's1', parentFolderId: 'g97' }])).thenFails('INVALID_ARGUMENT', /folder "s1".*limited to 100 levels/);
  // The moved folder itself past the limit.
  given([created, ...chain(100), folder('leaf')]).when(move([{ folderId: 'leaf', parentFolderId: 'f100' }])).thenFails('INVALID_ARGUMENT', /100 levels/);
  // Earlier moves of the same batch count: p alone fits under f96 (level 97), but once s1's
  // chain hangs under p, p's subtree reaches 97 + 4 = 101.
  const withP = [...tree, folder('p')];
  given(withP).when(move([{ folderId: 'p', parentFolderId: 'f96' }])).then([
    { type: 'FolderMoved', data: { organizationId: org, folderId: 'p', parentFolderId: 'f96', previousParentFolderId: null } },
  ]);
  given(withP).when(move([{ folderId: 's1', parentFolderId: 'p' }, { folderId: 'p', parentFolderId: 'f96' }]))
    .thenFails('INVALID_ARGUMENT', /data\.folders\[1\] \(folder "p"\).*limited to 100 levels/);
});

test('UpdateFolders: a move up or sideways is always accepted, even in a tree deeper than the limit', () => {
  const deep = [created, ...chain(120)];
  given(deep).when(move([{ folderId: 'f110', parentFolderId: 'f50' }])).then([
    { type: 'FolderMoved', data: { organizationId: org, folderId: 'f110', parentFolderId: 'f50', previousParentFolderId: 'f109' } },
  ]);
  // Lowering a folder in such a tree is refused: f1's chain already ends past the limit.
  given([...deep, folder('q')]).when(move([{ folderId: 'f1', parentFolderId: 'q' }])).thenFails('INVALID_ARGUMENT', /100 levels/);
});

test.run();
