/**
 * Group grants in permission resolution (semantics §3 rule 7) as a table of named cases, end
 * to end: the fixture is built through the API (folders, documents, groups, members, group
 * grants with `permissions/add` `group`, own grants, leaving a group, deleting one), then
 * every case asks /v2/auth/permissions/get for one user and one resource.
 *
 * Every user here joins the organization (only members can join a group) and then loses
 * that own organization grant, so what lets them in is exactly the grants each case names.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { FUTURE, NOW, PAST } from './support/time.js';
import { groupDecider, groupStream } from '../commands/group.js';

const LATER = NOW / 1000 + 7200;

let h: Harness;
let t: Tenant;
/** The request clock; one test moves it past FUTURE. */
let clock = NOW;
const post = (url: string, data: unknown) => h.ok(url, data, t.headers);

type Res = { type: 'organization' | 'folder' | 'document'; id: string; accessRole?: 'editor' | 'viewer'; expiresAt?: number };
const res = (org: string, r: Res) => ({ ...r, ...(r.type === 'organization' ? {} : { organizationId: org }) });
/** Grants to a group; every resource must go through. */
const groupGrant = async (groupId: string, resources: Res[], org = 'o') => {
  const r = await post('/v2/auth/permissions/add', { group: { groupId }, permissions: { resources: resources.map((x) => res(org, x)) } });
  assert.is(r.data, undefined, JSON.stringify(r.data));
};
const ownGrant = async (userId: string, resources: Res[], org = 'o') => {
  const r = await post('/v2/auth/permissions/add', { userId, permissions: { resources: resources.map((x) => res(org, x)) } });
  assert.is(r.data, undefined, JSON.stringify(r.data));
};
/** `userId` joins `groups` of `org`, then holds no own grant there. */
const member = async (userId: string, groups: string[], org = 'o') => {
  await post('/v2/users/add', { organizationId: org, users: [{ userId }] });
  for (const g of groups) {
    const r = await post('/v2/organizations/usergroups/users/add', { organizationId: org, organizationUserGroupId: g, userIds: [userId] });
    assert.is(r.data[userId].success, true);
  }
  await post('/v2/auth/permissions/remove', { userId, permissions: { resources: [{ type: 'organization', id: org }] } });
};

const GROUPS = [
  'gDocView', 'gDocEd', 'gDocTmp', 'gDocTmpLater', 'gDocExp', 'gFldView', 'gTopEd', 'gMidView', 'gOrgView', 'gOrgEd',
  'gOrgTmp', 'gLeft', 'gDeleted', 'gRevoked', 'gGone', 'gDis', 'gRootRes', 'gEmpty',
];

test.before(async () => {
  h = await harness({}, { clock: () => clock });
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
      { folderId: 'fGone', accessType: 'restricted' },
    ],
  });
  const docs = async (folderId: string | undefined, documents: object[]) =>
    post('/v2/organizations/documents/add', { organizationId: o, ...(folderId ? { folderId } : {}), documents });
  await docs('fPub', [{ documentId: 'dPub' }, { documentId: 'dDis' }, { documentId: 'dOwnRes', accessType: 'restricted' }]);
  await docs('fPriv', [{ documentId: 'dPriv' }]);
  await docs('fRes', [{ documentId: 'dRes' }]);
  await docs('leaf', [{ documentId: 'dLeaf' }]);
  await docs(undefined, [{ documentId: 'dRoot' }, { documentId: 'dRootPriv', accessType: 'organizationPrivate' }, { documentId: 'dRootRes', accessType: 'restricted' }]);
  await post('/v2/organizations/documents/access/disablestate/update', { organizationId: o, documentIds: ['dDis'], disabled: true });
  await post('/v2/organizations/usergroups/add', { organizationId: o, organizationUserGroups: GROUPS.map((groupId) => ({ groupId, groupName: groupId })) });

  await groupGrant('gDocView', [{ type: 'document', id: 'dRes', accessRole: 'viewer' }, { type: 'document', id: 'dPriv', accessRole: 'viewer' }, { type: 'document', id: 'dPub', accessRole: 'viewer' }]);
  await groupGrant('gDocEd', [{ type: 'document', id: 'dRes' }]);
  await groupGrant('gDocTmp', [{ type: 'document', id: 'dRes', expiresAt: FUTURE }]);
  await groupGrant('gDocTmpLater', [{ type: 'document', id: 'dRes', expiresAt: LATER }]);
  await groupGrant('gDocExp', [{ type: 'document', id: 'dRes', expiresAt: PAST }, { type: 'document', id: 'dPriv', expiresAt: PAST }, { type: 'document', id: 'dPub', accessRole: 'viewer', expiresAt: PAST }]);
  await groupGrant('gFldView', ['fRes', 'fPriv', 'fPub'].map((id) => ({ type: 'folder' as const, id, accessRole: 'viewer' as const })));
  await groupGrant('gTopEd', [{ type: 'folder', id: 'top' }]);
  await groupGrant('gMidView', [{ type: 'folder', id: 'mid', accessRole: 'viewer' }]);
  await groupGrant('gOrgView', [{ type: 'organization', id: o, accessRole: 'viewer' }]);
  await groupGrant('gOrgEd', [{ type: 'organization', id: o }]);
  await groupGrant('gOrgTmp', [{ type: 'organization', id: o, accessRole: 'viewer', expiresAt: FUTURE }]);
  for (const g of ['gLeft', 'gDeleted', 'gRevoked']) await groupGrant(g, [{ type: 'document', id: 'dRes' }]);
  await groupGrant('gGone', [{ type: 'folder', id: 'fGone' }]);
  await groupGrant('gDis', [{ type: 'document', id: 'dDis' }]);
  await groupGrant('gRootRes', [{ type: 'document', id: 'dRootRes', accessRole: 'viewer' }]);

  await member('uDocView', ['gDocView']);
  await member('uRoles', ['gDocView', 'gDocEd']);
  await member('uTmpVsPerm', ['gDocTmp', 'gDocView']);
  await member('uTmpTmp', ['gDocTmp', 'gDocTmpLater']);
  await member('uPermTmp', ['gDocEd', 'gDocTmp']);
  await member('uExp', ['gDocExp']);
  await member('uExpView', ['gDocExp', 'gDocView']);
  await member('uOwnView', ['gDocEd']);
  await ownGrant('uOwnView', [{ type: 'document', id: 'dRes', accessRole: 'viewer' }]);
  await member('uOwnTmp', ['gDocEd']);
  await ownGrant('uOwnTmp', [{ type: 'document', id: 'dRes', accessRole: 'viewer', expiresAt: FUTURE }]);
  await member('uOwnExp', ['gDocView']);
  await ownGrant('uOwnExp', [{ type: 'document', id: 'dRes', expiresAt: PAST }]);
  await member('uFld', ['gFldView']);
  await member('uNearGroup', ['gMidView']);
  await ownGrant('uNearGroup', [{ type: 'folder', id: 'top' }]);
  await member('uNearUser', ['gTopEd']);
  await ownGrant('uNearUser', [{ type: 'folder', id: 'mid', accessRole: 'viewer' }]);
  await member('uTop', ['gTopEd']);
  await member('uTopMid', ['gTopEd', 'gMidView']);
  await member('uOrgView', ['gOrgView']);
  await member('uOrgRoles', ['gOrgView', 'gOrgEd']);
  await member('uOrgTmp', ['gOrgTmp']);
  await member('uOrgOwn', ['gOrgEd']);
  await ownGrant('uOrgOwn', [{ type: 'organization', id: o, accessRole: 'viewer' }]);
  await member('uOrgDoc', ['gOrgEd', 'gDocView']);
  await member('uLeft', ['gLeft']);
  await member('uDeleted', ['gDeleted']);
  await member('uRevoked', ['gRevoked']);
  await member('uGone', ['gGone']);
  await member('uDis', ['gDis', 'gOrgEd']);
  await member('uEmpty', ['gEmpty']);
  await member('uRootRes', ['gRootRes', 'gOrgEd']);

  // Leaving, deleting, revoking: each takes the group's access away.
  await post('/v2/organizations/usergroups/users/delete', { organizationId: o, organizationUserGroupId: 'gLeft', userIds: ['uLeft'] });
  // No route deletes a group on its own (organizations/delete does, through the cascade): the
  // group's own command, as the cascade sends it.
  await h.services.commands.handle(groupDecider, groupStream(t.apiKey, o, 'gDeleted'), {
    type: 'DeleteGroup', data: { organizationId: o, groupId: 'gDeleted' }, metadata: { now: NOW },
  }, { requestId: 'test', actor: 'test', time: NOW, apiKey: t.apiKey });
  await h.services.cascade.settle();
  await post('/v2/auth/permissions/remove', { group: { groupId: 'gRevoked' }, permissions: { resources: [{ type: 'document', id: 'dRes', organizationId: o }] } });
  // A folder deleted and made again with the same id: the group's old grant stays gone.
  await post('/v2/organizations/folders/delete', { organizationId: o, folderId: 'fGone' });
  await h.services.cascade.settle();
  await post('/v2/organizations/folders/add', { organizationId: o, folders: [{ folderId: 'fGone', accessType: 'restricted' }] });

  // A disabled organization, and a group of another organization with the same id.
  await post('/v2/organizations/documents/add', { organizationId: 'o2', createOrganization: true, documents: [{ documentId: 'dX', accessType: 'organizationPrivate' }] });
  await post('/v2/organizations/usergroups/add', { organizationId: 'o2', organizationUserGroups: [{ groupId: 'gOrgEd', groupName: 'other' }] });
  await groupGrant('gOrgEd', [{ type: 'organization', id: 'o2' }, { type: 'document', id: 'dX' }], 'o2');
  await member('uO2', ['gOrgEd'], 'o2');
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
  return r.body.result.data[user][kind][id];
};

const ed = (accessType: string, expiresAt?: number) => ({ accessRole: 'editor', accessType, ...(expiresAt ? { expiresAt } : {}) });
const vw = (accessType: string, expiresAt?: number) => ({ accessRole: 'viewer', accessType, ...(expiresAt ? { expiresAt } : {}) });
const no = (accessType: string, what = 'document') => ({ error: `User does not have access to ${what}`, errorCode: 'permission_denied', accessType });
const disabled = (accessType: string) => ({ error: 'Document is disabled', errorCode: 'permission_denied', accessType });
const orgDenied = { error: 'User does not have access to organization', errorCode: 'permission_denied' };

type Case = [name: string, user: string, kind: Kind, id: string, expected: object, org?: string];
const cases: Case[] = [
  // A group's grant on the resource, by access type.
  ['group viewer grant on a restricted document lets the member in', 'uDocView', 'documents', 'dRes', vw('restricted')],
  ['group viewer grant on an organizationPrivate document', 'uDocView', 'documents', 'dPriv', vw('organizationPrivate')],
  ['group viewer grant on a public document gives its role', 'uDocView', 'documents', 'dPub', vw('public')],
  ['a group grant on one document says nothing of another', 'uDocView', 'documents', 'dRootRes', no('restricted')],
  ['a member of a group without grants gets nothing', 'uEmpty', 'documents', 'dRes', no('restricted')],
  ['a member of a group without grants is not an organization member', 'uEmpty', 'organization', 'o', orgDenied],
  // Among the user's groups at one level.
  ['among groups the higher role wins (editor over viewer)', 'uRoles', 'documents', 'dRes', ed('restricted')],
  ['the higher role wins even when temporary (editor until FUTURE over viewer permanent)', 'uTmpVsPerm', 'documents', 'dRes', ed('restricted', FUTURE)],
  ['same role: the later expiry wins', 'uTmpTmp', 'documents', 'dRes', ed('restricted', LATER)],
  ['same role: permanent wins over temporary (no expiresAt)', 'uPermTmp', 'documents', 'dRes', ed('restricted')],
  ['an expired group grant counts as absent (restricted)', 'uExp', 'documents', 'dRes', no('restricted')],
  ['an expired group grant counts as absent (organizationPrivate)', 'uExp', 'documents', 'dPriv', no('organizationPrivate')],
  ['an expired group grant gives no role on a public document (default editor)', 'uExp', 'documents', 'dPub', ed('public')],
  ['an expired group editor grant leaves the live viewer group grant', 'uExpView', 'documents', 'dRes', vw('restricted')],
  // The user's own grant at the same level.
  ["the user's own grant decides over a group's at the same level (viewer over editor)", 'uOwnView', 'documents', 'dRes', vw('restricted')],
  ["the user's own temporary grant decides over a group's permanent one", 'uOwnTmp', 'documents', 'dRes', vw('restricted', FUTURE)],
  ["the user's own expired grant is absent: the group's counts", 'uOwnExp', 'documents', 'dRes', vw('restricted')],
  // Levels: nearest first, whoever holds the grant.
  ['group grant on the folder reaches its restricted document', 'uFld', 'documents', 'dRes', vw('restricted')],
  ['group grant on a restricted folder', 'uFld', 'folders', 'fRes', vw('restricted')],
  ['group grant on an organizationPrivate folder', 'uFld', 'folders', 'fPriv', vw('organizationPrivate')],
  ['group grant on an organizationPrivate folder reaches its document', 'uFld', 'documents', 'dPriv', vw('organizationPrivate')],
  ['group folder grant gives its role on a public folder', 'uFld', 'folders', 'fPub', vw('public')],
  ['group folder grant still counts for a restricted document in a public folder', 'uFld', 'documents', 'dOwnRes', vw('restricted')],
  ['group folder grant does not reach another folder', 'uFld', 'folders', 'top', no('restricted', 'folder')],
  ["a group's grant at a nearer level beats the user's own at a farther level", 'uNearGroup', 'documents', 'dLeaf', vw('restricted')],
  ["the user's own grant at a nearer level beats a group's at a farther level", 'uNearUser', 'documents', 'dLeaf', vw('restricted')],
  ['group grant on the top ancestor, two levels up', 'uTop', 'documents', 'dLeaf', ed('restricted')],
  ['group grant on the top ancestor reaches the inheriting folder', 'uTop', 'folders', 'leaf', ed('restricted')],
  ["two groups at two levels: the nearer group's role, not the higher one", 'uTopMid', 'documents', 'dLeaf', vw('restricted')],
  ["two groups at two levels: the folder between them takes the nearer", 'uTopMid', 'folders', 'mid', vw('restricted')],
  // A group grant on the organization is membership.
  ['group grant on the organization: organization entry', 'uOrgView', 'organization', 'o', { accessRole: 'viewer' }],
  ['group organization grant is membership for an organizationPrivate document', 'uOrgView', 'documents', 'dPriv', vw('organizationPrivate')],
  ['group organization grant is membership for an organizationPrivate root document', 'uOrgView', 'documents', 'dRootPriv', vw('organizationPrivate')],
  ['group organization grant is membership for an organizationPrivate folder', 'uOrgView', 'folders', 'fPriv', vw('organizationPrivate')],
  ['group organization grant alone does not open a restricted document', 'uOrgView', 'documents', 'dRes', no('restricted')],
  ['group organization grant alone does not open a restricted folder', 'uOrgView', 'folders', 'fRes', no('restricted', 'folder')],
  ['group organization grant gives its role on a public document', 'uOrgView', 'documents', 'dRoot', vw('public')],
  ['organization entry: the higher role among groups', 'uOrgRoles', 'organization', 'o', { accessRole: 'editor' }],
  ['organization entry through a temporary group grant shows expiresAt', 'uOrgTmp', 'organization', 'o', { accessRole: 'viewer', expiresAt: FUTURE }],
  ['temporary group membership reads an organizationPrivate document with expiresAt', 'uOrgTmp', 'documents', 'dPriv', vw('organizationPrivate', FUTURE)],
  ["organization entry: the user's own grant decides over the group's", 'uOrgOwn', 'organization', 'o', { accessRole: 'viewer' }],
  ['public document: a group document grant (viewer) is more specific than a group organization grant (editor)', 'uOrgDoc', 'documents', 'dPub', vw('public')],
  ['restricted root document: group document grant opens it', 'uRootRes', 'documents', 'dRootRes', vw('restricted')],
  // Taking access away.
  ['leaving the group takes its grant away', 'uLeft', 'documents', 'dRes', no('restricted')],
  ["the group's deletion takes its grant away", 'uDeleted', 'documents', 'dRes', no('restricted')],
  ["permissions/remove of the group's grant takes it from the member", 'uRevoked', 'documents', 'dRes', no('restricted')],
  ['a grant on a deleted folder does not come back with a folder made again with its id', 'uGone', 'folders', 'fGone', no('restricted', 'folder')],
  // Disabled document and organization still deny.
  ['a disabled document denies a group-granted member', 'uDis', 'documents', 'dDis', disabled('public')],
  ['a disabled organization denies a group-granted member its documents', 'uO2', 'documents', 'dX', disabled('organizationPrivate'), 'o2'],
  ['a disabled organization still reports membership through a group', 'uO2', 'organization', 'o2', { accessRole: 'editor' }, 'o2'],
  // Groups are per organization.
  ['a group with the same id in another organization grants nothing here', 'uO2', 'documents', 'dPriv', no('organizationPrivate')],
  ['no group, no grant: denied (control)', 'nobody', 'documents', 'dRes', no('restricted')],
];

for (const [name, user, kind, id, expected, org] of cases) {
  test(name, async () => {
    assert.equal(await resolve(user, kind, id, org), expected);
  });
}

test('the group table has at least 30 cases', () => {
  assert.ok(cases.length >= 30, `${cases.length} cases`);
});

test('several users sharing groups in one query each get their own answer', async () => {
  const r = await h.post('/v2/auth/permissions/get', {
    organizationId: 'o', userIds: ['uDocView', 'uRoles', 'uTmpVsPerm', 'uOrgView', 'nobody'], documentIds: ['dRes', 'dPriv'], folderIds: ['fRes'],
  }, t.headers);
  assert.is(r.status, 200);
  const d = r.body.result.data;
  assert.equal(d.uDocView.documents, { dRes: vw('restricted'), dPriv: vw('organizationPrivate') });
  assert.equal(d.uRoles.documents.dRes, ed('restricted'));
  assert.equal(d.uTmpVsPerm.documents.dRes, ed('restricted', FUTURE));
  assert.equal(d.uOrgView.documents, { dRes: no('restricted'), dPriv: vw('organizationPrivate') });
  assert.equal(d.uOrgView.organization, { o: { accessRole: 'viewer' } });
  assert.equal(d.nobody.folders, { fRes: no('restricted', 'folder') });
  assert.equal(d.uDocView.organization, { o: orgDenied });
});

test('group grants carry no access fields: a member through a group only has no context', async () => {
  const r = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['uOrgView', 'uDocView'], documentIds: ['dPriv'] }, t.headers);
  assert.is(r.body.result.data.uOrgView.context, undefined);
  assert.is(r.body.result.data.uDocView.context, undefined);
});

test("a user's own access fields are still reported when a group lets them in", async () => {
  await post('/v2/auth/permissions/add', {
    userId: 'uFld', permissions: { resources: [{ type: 'folder', id: 'fPub', organizationId: 'o', accessRole: 'viewer', context: { access: { team: 'a' } } }] },
  });
  const r = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['uFld'], documentIds: ['dOwnRes'] }, t.headers);
  assert.equal(r.body.result.data.uFld.context, { accessFields: ['team:a'] });
  await post('/v2/auth/permissions/remove', { userId: 'uFld', permissions: { resources: [{ type: 'folder', id: 'fPub', organizationId: 'o' }] } });
});

test('joining a group gives its access at once, leaving takes it away at once', async () => {
  // An organization member (only members join), which alone opens no restricted document.
  await post('/v2/users/add', { organizationId: 'o', users: [{ userId: 'uJoin' }] });
  assert.equal(await resolve('uJoin', 'documents', 'dRes'), no('restricted'));
  await post('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'gDocEd', userIds: ['uJoin'] });
  assert.equal(await resolve('uJoin', 'documents', 'dRes'), ed('restricted'));
  await post('/v2/organizations/usergroups/users/delete', { organizationId: 'o', organizationUserGroupId: 'gDocEd', userIds: ['uJoin'] });
  assert.equal(await resolve('uJoin', 'documents', 'dRes'), no('restricted'));
});

test('a group grant that expires stops counting with the clock (a later request time)', async () => {
  clock = (FUTURE + 1) * 1000;
  try {
    const r = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['uTmpVsPerm', 'uOrgTmp'], documentIds: ['dRes', 'dPriv'] }, t.headers);
    assert.is(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.result.data.uTmpVsPerm.documents.dRes, vw('restricted'));
    assert.equal(r.body.result.data.uOrgTmp.organization, { o: orgDenied });
    assert.equal(r.body.result.data.uOrgTmp.documents.dPriv, no('organizationPrivate'));
  } finally {
    clock = NOW;
  }
});

test('a query naming more resources than a group can hold grants reads the group whole: the same answers', async () => {
  // 999 documents and dRes: with their folder and the organization, 1,002 resources a grant
  // may sit on, more than a group can hold (MAX_GRANTS_PER_GROUP).
  const many = Array.from({ length: 999 }, (_, i) => `bulk${String(i).padStart(4, '0')}`);
  await post('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'fRes', documents: many.map((documentId) => ({ documentId })) });
  await post('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'gBulk', groupName: 'bulk' }] });
  await groupGrant('gBulk', [{ type: 'document', id: 'bulk0007', accessRole: 'viewer' }, { type: 'document', id: 'bulk0998' }]);
  await member('uBulk', ['gBulk', 'gDocView']);
  const r = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['uBulk'], documentIds: [...many, 'dRes'] }, t.headers);
  assert.is(r.status, 200, JSON.stringify(r.body));
  const d = r.body.result.data.uBulk.documents;
  assert.equal(d.bulk0007, vw('restricted'));
  assert.equal(d.bulk0998, ed('restricted'));
  assert.equal(d.bulk0008, no('restricted'));
  assert.equal(d.dRes, vw('restricted'));
  assert.is(Object.values(d).filter((e: any) => 'accessRole' in e).length, 3);
  // The same resources asked for a few at a time take the other path.
  const few = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['uBulk'], documentIds: ['bulk0007', 'bulk0998', 'bulk0008', 'dRes'] }, t.headers);
  assert.equal(few.body.result.data.uBulk.documents, { bulk0007: d.bulk0007, bulk0998: d.bulk0998, bulk0008: d.bulk0008, dRes: d.dRes });
});

test('the worked example of docs/permissions.md, "Group grants"', async () => {
  const T = FUTURE;
  await post('/v2/organizations/folders/add', {
    organizationId: 'acme', createOrganization: true,
    folders: [{ folderId: 'specs', accessType: 'restricted' }, { folderId: 'notes', accessType: 'organizationPrivate' }],
  });
  await post('/v2/organizations/documents/add', { organizationId: 'acme', folderId: 'specs', documents: [{ documentId: 'roadmap' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'acme', folderId: 'notes', documents: [{ documentId: 'minutes' }] });
  await post('/v2/users/add', { organizationId: 'acme', users: ['ana', 'bo', 'dee'].map((userId) => ({ userId, accessRole: 'viewer' })) });
  await post('/v2/organizations/usergroups/add', { organizationId: 'acme', organizationUserGroups: [{ groupId: 'design', groupName: 'Design' }, { groupId: 'leads', groupName: 'Leads' }] });
  await post('/v2/organizations/usergroups/users/add', { organizationId: 'acme', organizationUserGroupId: 'design', userIds: ['ana', 'bo', 'dee'] });
  await post('/v2/organizations/usergroups/users/add', { organizationId: 'acme', organizationUserGroupId: 'leads', userIds: ['ana'] });
  await post('/v2/auth/permissions/remove', { userId: 'dee', permissions: { resources: [{ type: 'organization', id: 'acme' }] } });
  await groupGrant('design', [{ type: 'folder', id: 'specs', accessRole: 'viewer' }], 'acme');
  await groupGrant('leads', [{ type: 'document', id: 'roadmap', expiresAt: T }], 'acme');
  await ownGrant('bo', [{ type: 'document', id: 'roadmap', accessRole: 'viewer', expiresAt: T }], 'acme');
  await groupGrant('design', [{ type: 'organization', id: 'acme' }], 'acme');
  const table = async () => {
    const r = await post('/v2/auth/permissions/get', { organizationId: 'acme', userIds: ['ana', 'bo', 'dee', 'cy'], documentIds: ['roadmap', 'minutes'] });
    return Object.fromEntries(Object.entries(r.data).map(([u, e]: [string, any]) => [u, [e.documents.roadmap, e.documents.minutes, e.organization.acme]]));
  };
  assert.equal(await table(), {
    ana: [ed('restricted', T), vw('organizationPrivate'), { accessRole: 'viewer' }],
    bo: [vw('restricted', T), vw('organizationPrivate'), { accessRole: 'viewer' }],
    dee: [vw('restricted'), ed('organizationPrivate'), { accessRole: 'editor' }],
    cy: [no('restricted'), no('organizationPrivate'), orgDenied],
  });
  clock = (T + 1) * 1000;
  try {
    const after = await table();
    assert.equal(after.ana![0], vw('restricted'));
    assert.equal(after.bo![0], vw('restricted'));
  } finally {
    clock = NOW;
  }
  await post('/v2/organizations/usergroups/users/delete', { organizationId: 'acme', organizationUserGroupId: 'design', userIds: ['dee'] });
  assert.equal((await table()).dee, [no('restricted'), no('organizationPrivate'), orgDenied]);
  // Step 4 alone opens no restricted document.
  await post('/v2/auth/permissions/remove', { group: { groupId: 'design' }, permissions: { resources: [{ type: 'folder', id: 'specs', organizationId: 'acme' }] } });
  clock = (T + 1) * 1000;
  try {
    assert.equal((await table()).ana![0], no('restricted'));
  } finally {
    clock = NOW;
  }
});

test.run();
