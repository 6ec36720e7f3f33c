/**
 * A user token cannot tell missing from forbidden (issue 22, finding 3): on every route that
 * takes a user token, a folder, document or organization the token's user may not open gets
 * exactly the answer of one that does not exist, byte for byte apart from the ids named and
 * the request id. With the API key's own headers the answers stay as they were (NOT_FOUND for
 * the missing one, the access type and explanation for the forbidden one).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Response, type Tenant } from './support/app.js';
import { allRoutes } from '../src/app.js';

interface Ctx {
  h: Harness;
  t: Tenant;
  token: string;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The ids a case swaps: a forbidden one and a missing one, each replaced by `<id>` before comparing. */
interface Ids {
  org: string;
  doc: string;
  folder: string;
}

const FORBIDDEN_DOC: Ids = { org: 'org-1', doc: 'doc-closed', folder: 'folder-open' };
const MISSING_DOC: Ids = { org: 'org-1', doc: 'doc-missing', folder: 'folder-open' };
const DISABLED_DOC: Ids = { org: 'org-1', doc: 'doc-disabled', folder: 'folder-open' };
const FORBIDDEN_FOLDER: Ids = { org: 'org-1', doc: 'doc-open', folder: 'folder-closed' };
const MISSING_FOLDER: Ids = { org: 'org-1', doc: 'doc-open', folder: 'folder-missing' };
const FORBIDDEN_ORG: Ids = { org: 'org-2', doc: 'doc-2', folder: 'folder-2' };
const MISSING_ORG: Ids = { org: 'org-missing', doc: 'doc-2', folder: 'folder-2' };

/** Every user-token route, with each way it names a resource. */
const CASES: Array<{ route: string; name: string; data: (i: Ids) => unknown; pairs: Array<[Ids, Ids]> }> = [
  { route: '/v2/auth/permissions/get', name: 'documentIds', data: (i) => ({ organizationId: i.org, userIds: ['u1'], documentIds: [i.doc, 'doc-open'] }), pairs: [[FORBIDDEN_DOC, MISSING_DOC], [DISABLED_DOC, MISSING_DOC]] },
  { route: '/v2/auth/permissions/get', name: 'folderIds', data: (i) => ({ organizationId: i.org, userIds: ['u1'], folderIds: [i.folder] }), pairs: [[FORBIDDEN_FOLDER, MISSING_FOLDER]] },
  { route: '/v2/auth/permissions/get', name: 'organization', data: (i) => ({ organizationId: i.org, userIds: ['u1'], folderIds: [i.folder], documentIds: [i.doc] }), pairs: [[FORBIDDEN_ORG, MISSING_ORG]] },
  { route: '/v2/auth/resources/get', name: 'folderId, documents', data: (i) => ({ organizationId: i.org, userId: 'u1', type: 'document', folderId: i.folder }), pairs: [[FORBIDDEN_FOLDER, MISSING_FOLDER], [FORBIDDEN_ORG, MISSING_ORG]] },
  { route: '/v2/auth/resources/get', name: 'folderId, folders', data: (i) => ({ organizationId: i.org, userId: 'u1', type: 'folder', folderId: i.folder }), pairs: [[FORBIDDEN_FOLDER, MISSING_FOLDER], [FORBIDDEN_ORG, MISSING_ORG]] },
  { route: '/v2/auth/resources/get', name: 'organization', data: (i) => ({ organizationId: i.org, userId: 'u1', type: 'document' }), pairs: [[FORBIDDEN_ORG, MISSING_ORG]] },
  { route: '/v2/auth/permissions/explain', name: 'documentId', data: (i) => ({ organizationId: i.org, userId: 'u1', documentId: i.doc }), pairs: [[FORBIDDEN_DOC, MISSING_DOC], [DISABLED_DOC, MISSING_DOC], [FORBIDDEN_ORG, MISSING_ORG]] },
  { route: '/v2/auth/permissions/explain', name: 'folderId', data: (i) => ({ organizationId: i.org, userId: 'u1', folderId: i.folder }), pairs: [[FORBIDDEN_FOLDER, MISSING_FOLDER], [FORBIDDEN_ORG, MISSING_ORG]] },
  ...(['/v2/presence/add', '/v2/presence/update'] as const).map((route) => (
    { route, name: 'documentId', data: (i: Ids) => ({ organizationId: i.org, documentId: i.doc, users: [{ userId: 'u1' }] }), pairs: [[FORBIDDEN_DOC, MISSING_DOC], [DISABLED_DOC, MISSING_DOC], [FORBIDDEN_ORG, MISSING_ORG]] as Array<[Ids, Ids]> }
  )),
  { route: '/v2/presence/get', name: 'documentId', data: (i) => ({ organizationId: i.org, documentId: i.doc }), pairs: [[FORBIDDEN_DOC, MISSING_DOC], [DISABLED_DOC, MISSING_DOC], [FORBIDDEN_ORG, MISSING_ORG]] },
  { route: '/v2/presence/delete', name: 'documentId', data: (i) => ({ organizationId: i.org, documentId: i.doc, userIds: ['u1'] }), pairs: [[FORBIDDEN_DOC, MISSING_DOC], [DISABLED_DOC, MISSING_DOC], [FORBIDDEN_ORG, MISSING_ORG]] },
];

/** The answer with the case's ids (and the request id) replaced, as the caller sees it. */
function seen(res: Response, ids: Ids): string {
  let text = JSON.stringify({ status: res.status, body: res.body });
  for (const id of [ids.doc, ids.folder, ids.org]) text = text.split(JSON.stringify(id).slice(1, -1)).join('<id>');
  return text.split(String(res.headers['x-request-id'])).join('<request>');
}

const M = suite<Ctx>('user tokens: missing answers exactly as forbidden');
M.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  const { h, t } = ctx;
  const ok = async (route: string, data: unknown) => {
    const res = await h.post(route, data, t.headers);
    assert.is(res.status, 200, `${route}: ${JSON.stringify(res.body)}`);
  };
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'org-1' }, { organizationId: 'org-2' }] });
  await ok('/v2/organizations/folders/add', {
    organizationId: 'org-1',
    folders: [{ folderId: 'folder-open', folderName: 'open', accessType: 'restricted' }, { folderId: 'folder-closed', folderName: 'closed', accessType: 'restricted' }],
  });
  await ok('/v2/organizations/folders/add', { organizationId: 'org-2', folders: [{ folderId: 'folder-2', folderName: 'two', accessType: 'restricted' }] });
  await ok('/v2/organizations/documents/add', {
    organizationId: 'org-1',
    documents: [
      { documentId: 'doc-open', accessType: 'restricted' },
      { documentId: 'doc-closed', accessType: 'restricted' },
      { documentId: 'doc-disabled', accessType: 'restricted', disabled: true },
    ],
  });
  await ok('/v2/organizations/documents/add', { organizationId: 'org-2', documents: [{ documentId: 'doc-2', accessType: 'restricted' }] });
  const minted = await h.post('/v2/auth/generate_token', {
    userId: 'u1',
    userProperties: { name: 'u1', email: 'u1@example.com' },
    permissions: {
      resources: [
        { type: 'document', id: 'doc-open', organizationId: 'org-1', accessRole: 'viewer' },
        { type: 'document', id: 'doc-disabled', organizationId: 'org-1', accessRole: 'viewer' },
        { type: 'folder', id: 'folder-open', organizationId: 'org-1', accessRole: 'viewer' },
      ],
    },
  }, t.headers);
  assert.is(minted.status, 200, JSON.stringify(minted.body));
  ctx.token = minted.body.result.data.token;
});
M.after(async (ctx) => ctx.h.close());

M('every user-token route is in the table', async ({ h }) => {
  const tokenRoutes = allRoutes(h.services).filter((r) => r.userToken).map((r) => r.path);
  assert.equal([...new Set(CASES.map((c) => c.route))].sort(), [...new Set(tokenRoutes)].sort());
});

M('the fixture: the user opens what it was given and nothing else (through the API key)', async ({ h, t }) => {
  const res = await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u1'], documentIds: ['doc-open', 'doc-closed', 'doc-disabled'], folderIds: ['folder-open', 'folder-closed'] }, t.headers);
  assert.is(res.status, 200, JSON.stringify(res.body));
  const { documents, folders } = res.body.result.data.u1;
  assert.is(documents['doc-open'].accessRole, 'viewer');
  assert.is(documents['doc-closed'].errorCode, 'permission_denied');
  assert.is(documents['doc-disabled'].error, 'Document is disabled');
  assert.is(folders['folder-open'].accessRole, 'viewer');
  assert.is(folders['folder-closed'].errorCode, 'permission_denied');
});

for (const c of CASES) {
  M(`${c.route} (${c.name}): forbidden and missing answer alike`, async ({ h, token }) => {
    for (const [forbidden, missing] of c.pairs) {
      const a = await h.post(c.route, c.data(forbidden), bearer(token));
      const b = await h.post(c.route, c.data(missing), bearer(token));
      assert.is(seen(a, forbidden), seen(b, missing), `${JSON.stringify(forbidden)} against ${JSON.stringify(missing)}`);
      assert.ok(a.status === 200 || a.status === 403, `${a.status} ${JSON.stringify(a.body)}`);
    }
  });
}

M('what the user may open is answered in full; permissions/explain shows the deciding details only there', async ({ h, token }) => {
  const why = await h.post('/v2/auth/permissions/explain', { organizationId: 'org-1', userId: 'u1', documentId: 'doc-open' }, bearer(token));
  assert.is(why.status, 200, JSON.stringify(why.body));
  assert.equal(why.body.result.data.accessType, { value: 'restricted', from: { level: 'resource', id: 'doc-open' } });
  const closed = await h.post('/v2/auth/permissions/explain', { organizationId: 'org-1', userId: 'u1', documentId: 'doc-closed' }, bearer(token));
  assert.is(closed.status, 403);
  assert.not.match(JSON.stringify(closed.body), /restricted|accessType|candidates/);
  const perms = await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u1'], documentIds: ['doc-open', 'doc-closed'] }, bearer(token));
  assert.equal(perms.body.result.data.u1.documents, {
    'doc-open': { accessRole: 'viewer', accessType: 'restricted' },
    'doc-closed': { error: 'User does not have access to document', errorCode: 'permission_denied' },
  });
  const listed = await h.post('/v2/auth/resources/get', { organizationId: 'org-1', userId: 'u1', type: 'document', folderId: 'folder-open' }, bearer(token));
  assert.is(listed.status, 200, JSON.stringify(listed.body));
});

M('with the API key\'s headers the answers stay as they were: NOT_FOUND for missing, the details for forbidden', async ({ h, t }) => {
  const missing = await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u1'], documentIds: ['doc-missing'] }, t.headers);
  assert.is(missing.status, 404);
  assert.is(missing.body.error.details.u1.documents['doc-missing'].errorCode, 'does_not_exist');
  const forbidden = await h.post('/v2/auth/permissions/get', { organizationId: 'org-1', userIds: ['u1'], documentIds: ['doc-closed'] }, t.headers);
  assert.equal(forbidden.body.result.data.u1.documents['doc-closed'], { error: 'User does not have access to document', errorCode: 'permission_denied', accessType: 'restricted' });
  const why = await h.post('/v2/auth/permissions/explain', { organizationId: 'org-1', userId: 'u1', documentId: 'doc-closed' }, t.headers);
  assert.is(why.status, 200);
  assert.is(why.body.result.data.entry.errorCode, 'permission_denied');
  assert.is((await h.post('/v2/auth/permissions/explain', { organizationId: 'org-1', userId: 'u1', documentId: 'doc-missing' }, t.headers)).status, 404);
  assert.is((await h.post('/v2/auth/resources/get', { organizationId: 'org-missing', userId: 'u1', type: 'document' }, t.headers)).status, 404);
  const closedFolder = await h.post('/v2/auth/resources/get', { organizationId: 'org-1', userId: 'u1', type: 'folder', folderId: 'folder-closed' }, t.headers);
  assert.is(closedFolder.status, 200, JSON.stringify(closedFolder.body));
  assert.equal(closedFolder.body.result.data, []);
});

M.run();
