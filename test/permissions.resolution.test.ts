/**
 * Permission resolution as a table (semantics §3), end to end: the fixture is built through
 * the API (folders, documents, users, grants, moves, access changes, deletions), then every
 * named case asks /v2/auth/permissions/get for one user and one resource.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { FUTURE, NOW, PAST } from './support/time.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.ok(url, data, t.headers);

test.before(async () => {
  h = await harness({}, { clock: () => NOW });
  t = await h.tenant();
  const o = 'o';
  await post('/v2/organizations/folders/add', {
    organizationId: o,
    createOrganization: true,
    folders: [
      { folderId: 'fPub', accessType: 'public' },
      { folderId: 'fPriv', accessType: 'organizationPrivate' },
      { folderId: 'fRes', accessType: 'restricted' },
      { folderId: 'top', accessType: 'restricted' },
      { folderId: 'mid', parentFolderId: 'top' },
      { folderId: 'leaf', parentFolderId: 'mid' },
      { folderId: 'mv', parentFolderId: 'fPub' },
      { folderId: 'fChg', accessType: 'public' },
      { folderId: 'fInh', parentFolderId: 'fRes', accessType: 'public' },
      { folderId: 'gone', accessType: 'public' },
    ],
  });
  const docs = async (folderId: string | undefined, documents: object[]) =>
    post('/v2/organizations/documents/add', { organizationId: o, ...(folderId ? { folderId } : {}), documents });
  await docs('fPub', [{ documentId: 'dPub' }, { documentId: 'dDis' }, { documentId: 'dOwnRes', accessType: 'restricted' }]);
  await docs('fPriv', [{ documentId: 'dPriv' }]);
  await docs('fRes', [{ documentId: 'dRes' }, { documentId: 'dOwnPub', accessType: 'public' }]);
  await docs('leaf', [{ documentId: 'dLeaf' }]);
  await docs('mv', [{ documentId: 'dMv' }]);
  await docs('fChg', [{ documentId: 'dChg' }]);
  await docs('gone', [{ documentId: 'dGone' }]);
  await docs(undefined, [{ documentId: 'dRoot' }, { documentId: 'dRootRes', accessType: 'restricted' }]);
  await post('/v2/organizations/documents/access/disablestate/update', { organizationId: o, documentIds: ['dDis'], disabled: true });

  const users = async (scope: object, list: object[]) => post('/v2/users/add', { organizationId: o, ...scope, users: list });
  await users({}, [
    { userId: 'orgEd', name: 'Org Editor' },
    { userId: 'orgView', name: 'Org Viewer', accessRole: 'viewer' },
    { userId: 'tmpView', name: 'Temp' },
    { userId: 'permUser', name: 'Perm' },
  ]);
  for (const f of ['fPub', 'fPriv', 'fRes']) await users({ folderId: f }, [{ userId: 'fldView', accessRole: 'viewer' }]);
  await users({ folderId: 'fPub' }, [{ userId: 'oldParent', accessRole: 'viewer' }]);
  await users({ folderId: 'top' }, [{ userId: 'ancUser', accessRole: 'viewer' }, { userId: 'bothUser', accessRole: 'viewer' }]);
  await users({ folderId: 'mid' }, [{ userId: 'midUser', accessRole: 'editor' }, { userId: 'bothUser', accessRole: 'editor' }]);
  for (const d of ['dPub', 'dPriv', 'dRes']) await users({ documentId: d }, [{ userId: 'docView', accessRole: 'viewer' }]);
  const temp = (userId: string, expiresAt: number) =>
    post('/v2/auth/permissions/add', {
      user: { userId },
      permissions: { resources: ['dPub', 'dPriv', 'dRes'].map((id) => ({ type: 'document', id, organizationId: o, accessRole: 'viewer', expiresAt })) },
    });
  await temp('tmpView', FUTURE);
  await temp('expView', PAST);
  await post('/v2/auth/permissions/add', { userId: 'orgTmp', permissions: { resources: [{ type: 'organization', id: o, accessRole: 'viewer', expiresAt: FUTURE }] } });
  const refused = await post('/v2/auth/permissions/add', { userId: 'permUser', permissions: { resources: [{ type: 'organization', id: o, accessRole: 'viewer', expiresAt: FUTURE }] } });
  assert.is(refused.data.o.success, false);

  await post('/v2/organizations/folders/update', { organizationId: o, folders: [{ folderId: 'mv', parentFolderId: 'fRes' }] });
  await post('/v2/organizations/folders/access/update', { organizationId: o, folderIds: ['fChg'], accessType: 'restricted' });
  await post('/v2/organizations/folders/access/update', { organizationId: o, folderIds: ['fInh'], inheritFromParent: true });
  await post('/v2/organizations/folders/delete', { organizationId: o, folderId: 'gone' });

  await post('/v2/organizations/add', { organizations: [{ organizationId: 'o2' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'o2', documents: [{ documentId: 'dX' }] });
  await post('/v2/users/add', { organizationId: 'o2', users: [{ userId: 'orgEd' }] });
  await post('/v2/organizations/access/disablestate/update', { organizationIds: ['o2'], disabled: true });
});

test.after(async () => {
  await h.close();
});

type Kind = 'documents' | 'folders' | 'organization';
const resolve = async (user: string, kind: Kind, id: string, org = 'o') => {
  const data = kind === 'organization' ? {} : { [kind === 'documents' ? 'documentIds' : 'folderIds']: [id] };
  const r = await h.post('/v2/auth/permissions/get', { organizationId: org, userIds: [user], ...data }, t.headers);
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.is(r.body.result.message, 'User permissions retrieved successfully.');
  return r.body.result.data[user][kind][id];
};

const ed = (accessType: string) => ({ accessRole: 'editor', accessType });
const vw = (accessType: string, expiresAt?: number) => ({ accessRole: 'viewer', accessType, ...(expiresAt ? { expiresAt } : {}) });
const no = (accessType: string, what = 'document') => ({ error: `User does not have access to ${what}`, errorCode: 'permission_denied', accessType });
const disabled = (accessType: string) => ({ error: 'Document is disabled', errorCode: 'permission_denied', accessType });

type Case = [name: string, user: string, kind: Kind, id: string, expected: object, org?: string];
const cases: Case[] = [];
// Documents in folders of each access type x each grant scope (21 cases).
const docTable: Record<string, [string, Record<string, object>]> = {
  public: ['dPub', { none: ed('public'), orgEd: ed('public'), orgView: vw('public'), fldView: vw('public'), docView: vw('public'), tmpView: vw('public', FUTURE), expView: ed('public') }],
  organizationPrivate: ['dPriv', { none: no('organizationPrivate'), orgEd: ed('organizationPrivate'), orgView: vw('organizationPrivate'), fldView: vw('organizationPrivate'), docView: vw('organizationPrivate'), tmpView: vw('organizationPrivate', FUTURE), expView: no('organizationPrivate') }],
  restricted: ['dRes', { none: no('restricted'), orgEd: no('restricted'), orgView: no('restricted'), fldView: vw('restricted'), docView: vw('restricted'), tmpView: vw('restricted', FUTURE), expView: no('restricted') }],
};
for (const [type, [doc, byUser]] of Object.entries(docTable)) {
  for (const [user, expected] of Object.entries(byUser)) cases.push([`${type} document, ${user}`, user, 'documents', doc, expected]);
}
// Folders of each access type x each grant scope (21 cases).
const folderTable: Record<string, [string, Record<string, object>]> = {
  public: ['fPub', { none: ed('public'), orgEd: ed('public'), orgView: vw('public'), fldView: vw('public'), docView: ed('public'), tmpView: ed('public'), expView: ed('public') }],
  organizationPrivate: ['fPriv', { none: no('organizationPrivate', 'folder'), orgEd: ed('organizationPrivate'), orgView: vw('organizationPrivate'), fldView: vw('organizationPrivate'), docView: no('organizationPrivate', 'folder'), tmpView: ed('organizationPrivate'), expView: no('organizationPrivate', 'folder') }],
  restricted: ['fRes', { none: no('restricted', 'folder'), orgEd: no('restricted', 'folder'), orgView: no('restricted', 'folder'), fldView: vw('restricted'), docView: no('restricted', 'folder'), tmpView: no('restricted', 'folder'), expView: no('restricted', 'folder') }],
};
for (const [type, [folder, byUser]] of Object.entries(folderTable)) {
  for (const [user, expected] of Object.entries(byUser)) cases.push([`${type} folder, ${user}`, user, 'folders', folder, expected]);
}
const orgDenied = { error: 'User does not have access to organization', errorCode: 'permission_denied' };
cases.push(
  ['organization entry, non-member', 'none', 'organization', 'o', orgDenied],
  ['organization entry, editor member', 'orgEd', 'organization', 'o', { accessRole: 'editor' }],
  ['organization entry, viewer member', 'orgView', 'organization', 'o', { accessRole: 'viewer' }],
  ['organization entry, folder-only user is not a member', 'fldView', 'organization', 'o', orgDenied],
  ['organization entry, temporary member shows expiresAt', 'orgTmp', 'organization', 'o', { accessRole: 'viewer', expiresAt: FUTURE }],
  ['a temporary grant never replaces a permanent one', 'permUser', 'organization', 'o', { accessRole: 'editor' }],
  ['temporary org member reads an organizationPrivate document with expiresAt', 'orgTmp', 'documents', 'dPriv', vw('organizationPrivate', FUTURE)],
  // Inheritance through several levels, nearest grant first.
  ['restricted inherited two levels, no grant', 'none', 'documents', 'dLeaf', no('restricted')],
  ['restricted inherited, grant on the top ancestor', 'ancUser', 'documents', 'dLeaf', vw('restricted')],
  ['restricted inherited, grant on the middle ancestor', 'midUser', 'documents', 'dLeaf', ed('restricted')],
  ['nearest ancestor grant decides the role', 'bothUser', 'documents', 'dLeaf', ed('restricted')],
  ['restricted inherited, org membership is not enough', 'orgEd', 'documents', 'dLeaf', no('restricted')],
  ['folder inheriting restricted, ancestor grant', 'ancUser', 'folders', 'leaf', vw('restricted')],
  ['folder inheriting restricted, no grant', 'none', 'folders', 'mid', no('restricted', 'folder')],
  // A document's own type wins over its folder's.
  ['own public type inside a restricted folder', 'none', 'documents', 'dOwnPub', ed('public')],
  ['own restricted type inside a public folder', 'orgEd', 'documents', 'dOwnRes', no('restricted')],
  ['own restricted type, folder grant still counts', 'fldView', 'documents', 'dOwnRes', vw('restricted')],
  ['root document inherits the organization default (public)', 'none', 'documents', 'dRoot', ed('public')],
  ['root restricted document, org member denied', 'orgEd', 'documents', 'dRootRes', no('restricted')],
  // Disabled document / organization.
  ['disabled document denies a member', 'orgEd', 'documents', 'dDis', disabled('public')],
  ['disabled document denies everyone', 'none', 'documents', 'dDis', disabled('public')],
  ['disabled organization denies its documents', 'orgEd', 'documents', 'dX', disabled('public'), 'o2'],
  ['disabled organization still reports membership', 'orgEd', 'organization', 'o2', { accessRole: 'editor' }, 'o2'],
  // Moved folder and access changes.
  ['moved folder: its document now inherits restricted', 'none', 'documents', 'dMv', no('restricted')],
  ['moved folder: a grant on the old parent no longer applies', 'oldParent', 'documents', 'dMv', no('restricted')],
  ['moved folder: a grant on the new parent applies', 'fldView', 'documents', 'dMv', vw('restricted')],
  ['moved folder itself inherits restricted', 'oldParent', 'folders', 'mv', no('restricted', 'folder')],
  ['folder access change reaches its documents', 'none', 'documents', 'dChg', no('restricted')],
  ['inheritFromParent: folder takes its parent type', 'none', 'folders', 'fInh', no('restricted', 'folder')],
  ['inheritFromParent: parent folder grant applies', 'fldView', 'folders', 'fInh', vw('restricted')],
);

for (const [name, user, kind, id, expected, org] of cases) {
  test(name, async () => {
    assert.equal(await resolve(user, kind, id, org), expected);
  });
}

test('the table has at least 60 cases', () => {
  assert.ok(cases.length >= 60, `${cases.length} cases`);
});

test('several users and resources in one query, keyed by user then resource', async () => {
  const r = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['orgEd', 'none'], documentIds: ['dPub', 'dRes'], folderIds: ['fPriv'] }, t.headers);
  const d = r.body.result.data;
  assert.equal(d.orgEd.documents, { dPub: ed('public'), dRes: no('restricted') });
  assert.equal(d.none.folders, { fPriv: no('organizationPrivate', 'folder') });
  assert.equal(d.orgEd.organization, { o: { accessRole: 'editor' } });
});

const notFoundCases: Array<[string, object, string, string]> = [
  ['document of a deleted folder', { documentIds: ['dGone'] }, 'documents', 'dGone'],
  ['deleted folder', { folderIds: ['gone'] }, 'folders', 'gone'],
  ['document that never existed', { documentIds: ['nope'] }, 'documents', 'nope'],
  ['folder that never existed', { folderIds: ['nope'] }, 'folders', 'nope'],
];
for (const [name, data, kind, id] of notFoundCases) {
  test(`missing resource: ${name} -> NOT_FOUND with details`, async () => {
    const r = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['orgEd'], ...data }, t.headers);
    assert.is(r.status, 404);
    assert.is(r.body.error.status, 'NOT_FOUND');
    assert.type(r.body.error.message, 'string');
    const entry = r.body.error.details.orgEd[kind][id];
    assert.is(entry.errorCode, 'does_not_exist');
    assert.type(entry.error, 'string');
  });
}

test('missing organization -> NOT_FOUND', async () => {
  const r = await h.post('/v2/auth/permissions/get', { organizationId: 'nope', userIds: ['orgEd'] }, t.headers);
  assert.is(r.status, 404);
  assert.equal(r.body.error, { status: 'NOT_FOUND', message: 'Organization does not exist.' });
});

test('bad input gets the failure envelope', async () => {
  for (const data of [{}, { organizationId: 'o' }, { organizationId: 'o', userIds: 'u' }, { organizationId: { $gt: '' }, userIds: ['u'] }, { organizationId: 'o', userIds: ['x'.repeat(5000)] }, { organizationId: 'o', userIds: Array(1001).fill('u') }]) {
    const r = await h.post('/v2/auth/permissions/get', data, t.headers);
    assert.is(r.status, 400);
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
  }
});

test.run();
