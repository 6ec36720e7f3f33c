/**
 * Access context, end to end (semantics §4a): access fields given through permissions/add,
 * generate_token and taken away through permissions/remove, reported by permissions/get as
 * `context.accessFields` exactly for the fields a user holds on requested resources they may
 * open. The fixture is built through the API; each named case asks for one user.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { FUTURE, NOW, PAST } from './support/time.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.ok(url, data, t.headers);
type Access = Record<string, string | number | Array<string | number>>;
const res = (type: string, id: string, access?: Access, extra: object = {}) => ({
  type,
  id,
  ...(type === 'organization' ? {} : { organizationId: 'o' }),
  ...(access ? { context: { access } } : {}),
  ...extra,
});
const add = (userId: string, ...resources: object[]) => post('/v2/auth/permissions/add', { user: { userId }, permissions: { resources } });
const remove = (userId: string, ...resources: object[]) => post('/v2/auth/permissions/remove', { userId, permissions: { resources } });

test.before(async () => {
  h = await harness({}, { clock: () => NOW });
  t = await h.tenant();
  await post('/v2/organizations/folders/add', {
    organizationId: 'o',
    createOrganization: true,
    folders: [{ folderId: 'fRes', accessType: 'restricted' }, { folderId: 'fSub', parentFolderId: 'fRes' }],
  });
  await post('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'dPub' }, { documentId: 'dDis' }, { documentId: 'dRoot2' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'fRes', documents: [{ documentId: 'dRes' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'fSub', documents: [{ documentId: 'dSub' }] });
  await post('/v2/organizations/documents/access/disablestate/update', { organizationId: 'o', documentIds: ['dDis'], disabled: true });

  await post('/v2/users/add', { organizationId: 'o', users: [{ userId: 'plain' }] });
  await add('docOnly', res('document', 'dRes', { widgetId: [1, 2] }));
  await add('numText', res('document', 'dRes', { widgetId: [1, '1', 2.5] }));
  await add('orgCtx', res('organization', 'o', { team: 'x' }));
  await add('folderCtx', res('folder', 'fRes', { widgetId: 3 }));
  await add('union', res('folder', 'fRes', { k: [2, 1] }), res('document', 'dSub', { k: [1, 3], z: 'last' }));
  await add('expired', res('document', 'dRes', { a: 1 }, { expiresAt: PAST }));
  await add('temporary', res('document', 'dRes', { a: 1 }, { expiresAt: FUTURE }));
  await add('removed', res('document', 'dRes', { a: [1, 2] }));
  await remove('removed', res('document', 'dRes', { a: 1 }));
  await add('revoked', res('document', 'dRes', { a: 1 }));
  await remove('revoked', res('document', 'dRes'));
  await add('disabled', res('document', 'dDis', { a: 1 }));
  await add('public', res('document', 'dPub', { p: 'q' }));
  await add('orgAndDoc', res('organization', 'o', { team: 'y' }), res('document', 'dRes', { widgetId: 9 }));
  // 250 distinct fields over two resources: permissions/get reports the first 200, sorted.
  const many = (from: number) => Array.from({ length: 125 }, (_, i) => `v${String(from + i).padStart(3, '0')}`);
  await add('many', res('document', 'dRes', { m: many(0) }), res('folder', 'fRes', { m: many(125) }));
  await post('/v2/auth/generate_token', {
    userId: 'tokenUser',
    userProperties: { name: 'T', email: 't@example.com' },
    permissions: { resources: [res('document', 'dRes', { widgetId: ['t1', 't2'] }, { accessRole: 'viewer' })] },
  });
});

test.after(async () => {
  await h.close();
});

type Query = { documentIds?: string[]; folderIds?: string[] };
const get = async (user: string, q: Query) => {
  const r = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: [user], ...q }, t.headers);
  assert.is(r.status, 200, JSON.stringify(r.body));
  return r.body.result.data[user];
};

const many200 = Array.from({ length: 200 }, (_, i) => `m:v${String(i).padStart(3, '0')}`);

type Case = [name: string, user: string, query: Query, accessFields: string[] | undefined];
const cases: Case[] = [
  ['no access fields: no context key', 'plain', { documentIds: ['dPub'] }, undefined],
  ['document grant with context: reported for that document', 'docOnly', { documentIds: ['dRes'] }, ['widgetId:1', 'widgetId:2']],
  ['fields of a resource not requested are not reported', 'docOnly', { documentIds: ['dPub'] }, undefined],
  ['no resource requested, not a member: nothing', 'docOnly', {}, undefined],
  ['numbers as JavaScript writes them; 1 and "1" are one field', 'numText', { documentIds: ['dRes'] }, ['widgetId:1', 'widgetId:2.5']],
  ['organization fields: reported for a member with no resource requested', 'orgCtx', {}, ['team:x']],
  ['organization fields: a member keeps them beside a document they may not open', 'orgCtx', { documentIds: ['dRes'] }, ['team:x']],
  ['folder fields hold on the folder itself', 'folderCtx', { folderIds: ['fRes'] }, ['widgetId:3']],
  ['folder fields hold below it: subfolder', 'folderCtx', { folderIds: ['fSub'] }, ['widgetId:3']],
  ['folder fields hold below it: document two levels down', 'folderCtx', { documentIds: ['dSub'] }, ['widgetId:3']],
  ['folder fields are not above it: a public root document', 'folderCtx', { documentIds: ['dPub'] }, undefined],
  ['fields of every grant on the way, sorted and unique', 'union', { documentIds: ['dSub'] }, ['k:1', 'k:2', 'k:3', 'z:last']],
  ['fields of several requested resources together', 'union', { documentIds: ['dSub', 'dRes'] }, ['k:1', 'k:2', 'k:3', 'z:last']],
  ['only the grants that serve the requested resource', 'union', { documentIds: ['dRes'] }, ['k:1', 'k:2']],
  ['an expired grant\'s fields are gone', 'expired', { documentIds: ['dRes'] }, undefined],
  ['a temporary grant\'s fields while it lasts', 'temporary', { documentIds: ['dRes'] }, ['a:1']],
  ['permissions/remove with context takes only those fields', 'removed', { documentIds: ['dRes'] }, ['a:2']],
  ['permissions/remove without context takes the grant and its fields', 'revoked', { documentIds: ['dRes'] }, undefined],
  ['a disabled document is not opened: its fields are not reported', 'disabled', { documentIds: ['dDis'] }, undefined],
  ['a public document with a grant carrying fields', 'public', { documentIds: ['dPub'] }, ['p:q']],
  ['organization and document fields together', 'orgAndDoc', { documentIds: ['dRes'] }, ['team:y', 'widgetId:9']],
  ['organization fields only, when the document is not requested', 'orgAndDoc', { documentIds: ['dPub'] }, ['team:y']],
  ['at most 200, the first in sorted order', 'many', { documentIds: ['dRes'] }, many200],
  ['generate_token context becomes access fields', 'tokenUser', { documentIds: ['dRes'] }, ['widgetId:t1', 'widgetId:t2']],
];

for (const [name, user, query, expected] of cases) {
  test(name, async () => {
    const row = await get(user, query);
    if (expected === undefined) assert.is('context' in row, false, JSON.stringify(row));
    else assert.equal(row.context, { accessFields: expected });
  });
}

test('access fields grant nothing alone: the entries are what they are without them', async () => {
  assert.equal((await get('revoked', { documentIds: ['dRes'] })).documents.dRes, { error: 'User does not have access to document', errorCode: 'permission_denied', accessType: 'restricted' });
  assert.equal((await get('removed', { documentIds: ['dRes'] })).documents.dRes, { accessRole: 'editor', accessType: 'restricted' }, 'removing fields keeps the grant');
  assert.equal((await get('orgCtx', { documentIds: ['dRes'] })).documents.dRes.errorCode, 'permission_denied');
});

test('several users in one query: each row its own context', async () => {
  const r = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['docOnly', 'plain', 'orgCtx'], documentIds: ['dRes'] }, t.headers);
  const d = r.body.result.data;
  assert.equal(d.docOnly.context, { accessFields: ['widgetId:1', 'widgetId:2'] });
  assert.is('context' in d.plain, false);
  assert.equal(d.orgCtx.context, { accessFields: ['team:x'] });
});

test('the answer shape: context beside organization and documents', async () => {
  const row = await get('orgAndDoc', { documentIds: ['dRes'] });
  assert.equal(Object.keys(row).sort(), ['context', 'documents', 'organization']);
});

test('the table has at least 20 cases', () => {
  assert.ok(cases.length >= 20, `${cases.length} cases`);
});

test.run();
