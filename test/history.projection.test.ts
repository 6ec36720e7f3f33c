/**
 * The history twins (projections/history.ts) and the view at an instant (queries/as-of.ts),
 * given(events) at chosen times: versions with their intervals and the changes that opened
 * and closed them; two changes in one millisecond; an event stamped before the latest
 * version; a folder move versioning the subtree below it; deletions closing what the live
 * handler deletes; and what an AsOfView reads at each boundary.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { project, type GivenEvent } from './support/projection.js';
import { historyCollection, type VersionDoc } from '../projections/history.js';
import { historyProjections } from '../projections/history-access.js';
import { GRANTS, grantKey, type GrantDoc } from '../projections/grants.js';
import { FOLDERS, folderKey, type FolderDoc } from '../projections/folders.js';
import { AsOfView } from '../queries/as-of.js';
import type { Projection } from '../src/runtime/projection.js';

const K = 'key-1';
const o = 'o';
const at = (time: number, type: string, data: Record<string, unknown>, actor = 'apikey:k1'): GivenEvent => ({ type, data: { organizationId: o, ...data }, metadata: { apiKey: K, time, actor } });
const named = (name: string) => historyProjections.find((p) => p.name === name)!;
const grant = (time: number, accessRole: string, userId = 'u') =>
  at(time, 'GrantAdded', { userId, resourceType: 'document', resourceId: 'd', accessRole, expiresAt: null });
const revoke = (time: number, userId = 'u') => at(time, 'GrantRevoked', { userId, resourceType: 'document', resourceId: 'd' });

async function versions(p: Projection, events: GivenEvent[], collection: string) {
  const store = await project(p, events);
  const rows = await store.find<VersionDoc>(historyCollection(collection), {}, { sort: 'validFrom' });
  return { store, rows };
}

test('a grant added, replaced and revoked: two versions, each with its interval and changes', async () => {
  const { store, rows } = await versions(named('history.grants'), [grant(100, 'editor'), grant(250, 'viewer', 'u'), revoke(400)], GRANTS);
  const id = grantKey(K, o, 'u', 'document', 'd');
  assert.equal(rows.map((r) => [r.accessRole, r.validFrom, r.validTo, r.open, r.entity === id]), [['editor', 100, 250, false, true], ['viewer', 250, 400, false, true]]);
  assert.equal(rows[0]!.openedBy, { type: 'GrantAdded', time: 100, actor: 'apikey:k1' });
  assert.equal(rows[0]!.closedBy, { type: 'GrantAdded', time: 250, actor: 'apikey:k1' });
  assert.equal(rows[1]!.closedBy, { type: 'GrantRevoked', time: 400, actor: 'apikey:k1' });
  // The view at each boundary: an event counts from its own millisecond.
  const role = async (t: number) => (await new AsOfView(store, t).get<GrantDoc>(GRANTS, id))?.accessRole ?? null;
  assert.equal(await Promise.all([99, 100, 249, 250, 399, 400].map(role)), [null, 'editor', 'editor', 'viewer', 'viewer', null]);
  // The document read back is the live one: its _id, none of the version's fields.
  assert.equal(await new AsOfView(store, 300).get(GRANTS, id), {
    _id: id, apiKey: K, organizationId: o, userId: 'u', resourceType: 'document', resourceId: 'd', accessRole: 'viewer', expiresAt: null,
  });
  await store.close();
});

test('two changes in one millisecond are one version; a lagging clock is taken as the latest start; a 0 ms version goes', async () => {
  const { rows } = await versions(named('history.grants'), [grant(100, 'editor'), grant(200, 'viewer'), grant(200, 'editor'), grant(150, 'viewer'), revoke(150)], GRANTS);
  // 200: viewer then editor, one version (editor); the grant stamped 150 starts at 200 (after
  // the latest start) and replaces it; the revocation stamped 150 ends it at 200: 0 ms, gone.
  assert.equal(rows.map((r) => [r.accessRole, r.validFrom, r.validTo]), [['editor', 100, 200]]);
});

test('a folder move versions the folders below it; a deletion closes them', async () => {
  const added = (time: number, folderId: string, parentFolderId: string | null, accessType: string | null = null) =>
    at(time, 'FolderAdded', { folderId, folderName: folderId, parentFolderId, accessType, createdAt: time });
  const { store, rows } = await versions(named('history.folders'), [
    added(10, 'top', null, 'public'),
    added(10, 'a', null, 'restricted'),
    added(11, 'b', 'a'),
    at(20, 'FolderMoved', { folderId: 'a', parentFolderId: 'top' }),
    at(30, 'FolderDeleted', { folderIds: ['a', 'b'] }),
  ], FOLDERS);
  const of = (f: string) => rows.filter((r) => r.folderId === f).map((r) => [r.validFrom, r.validTo, (r.ancestors as string[]).join('/')]);
  assert.equal(of('a'), [[10, 20, ''], [20, 30, 'top']]);
  assert.equal(of('b'), [[11, 20, 'a'], [20, 30, 'top/a']]);
  assert.equal(of('top'), [[10, null, '']]);
  const view = (t: number) => new AsOfView(store, t);
  assert.equal((await view(25).get<FolderDoc>(FOLDERS, folderKey(K, o, 'b')))!.ancestors, ['top', 'a']);
  assert.is(await view(30).get(FOLDERS, folderKey(K, o, 'b')), null, 'deleted at 30');
  // A listing at an instant: the children of `a` then, through the live index's fields.
  assert.equal((await view(15).find<FolderDoc>(FOLDERS, { apiKey: K, organizationId: o, parentFolderId: 'a' })).map((f) => f._id), [folderKey(K, o, 'b')]);
  assert.equal(await view(30).find(FOLDERS, { apiKey: K, organizationId: o, parentFolderId: 'top' }), []);
  assert.is(await view(25).count(FOLDERS, { apiKey: K, organizationId: o }), 3);
  await store.close();
});

test('an organization deletion closes every grant of it; other keys untouched', async () => {
  const other = { ...grant(100, 'editor', 'v'), metadata: { apiKey: 'key-2', time: 100, actor: 'apikey:k2' } };
  const { rows } = await versions(named('history.grants'), [grant(100, 'editor'), grant(100, 'viewer', 'w'), other, at(500, 'OrganizationDeleted', { organizationId: o })], GRANTS);
  assert.equal(rows.map((r) => [r.apiKey, r.userId, r.validTo, r.closedBy?.type ?? null]).sort(), [
    ['key-1', 'u', 500, 'OrganizationDeleted'], ['key-1', 'w', 500, 'OrganizationDeleted'], ['key-2', 'v', null, null],
  ]);
});

test.run();
