/**
 * The history twins (projections/history.ts) and the view at an instant (queries/as-of.ts),
 * given(events) at chosen times: versions with their intervals and the changes that opened
 * and closed them; two changes in one millisecond; an event stamped before the latest
 * version; a folder move versioning the subtree below it; deletions closing what the live
 * handler deletes; and what an AsOfView reads at each boundary.
 * Documents keep their open version in the live row (withOpenVersions): a DocumentAdded
 * writes no version row; a change closes the live row's version into h_documents; a re-created
 * id and a lagging clock start after the latest version; folder and organization deletions
 * close every document they drop; an asOf listing merges live rows and closed versions in the
 * stores' byte order under one cursor; rows written before keep their open version in
 * h_documents and count once.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { project, projectionSpec, recorded, type GivenEvent } from './support/projection.js';
import { historyCollection, type VersionDoc } from '../projections/history.js';
import { DOCUMENTS, documentKey, documentsProjection, type DocumentDoc } from '../projections/documents.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import type { Doc } from '../src/ports/read-store.js';
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

// ---- documents: the open version in the live row ----

const docEvent = (time: number, type: string, documentId: string, data: Record<string, unknown> = {}): GivenEvent => ({
  ...at(time, type, { documentId, ...data }),
  // One stream per document, as commands/document.ts appends them: its DocumentAdded at revision 0 is its first event ever.
  stream: `document|${documentId}`,
});
const addDoc = (time: number, documentId: string, folderId: string | null = null) =>
  docEvent(time, 'DocumentAdded', documentId, { documentName: documentId, folderId, accessType: null, disabled: false, createdAt: time });
const rename = (time: number, documentId: string, documentName: string) => docEvent(time, 'DocumentRenamed', documentId, { documentName });
const deleteDoc = (time: number, documentId: string) => docEvent(time, 'DocumentDeleted', documentId, { reason: 'request', deletedAt: time });
const dk = (d: string) => documentKey(K, o, d);

async function documentVersions(events: GivenEvent[]) {
  const store = await project(documentsProjection, events);
  const closed = await store.find<VersionDoc>(historyCollection(DOCUMENTS), {}, { sort: 'validFrom' });
  const live = await store.find<DocumentDoc>(DOCUMENTS, {});
  return { store, closed, live };
}

test('documents: an added document is its live row alone; each change closes its version into h_documents', async () => {
  const { store, closed, live } = await documentVersions([addDoc(100, 'd'), rename(200, 'd', 'Two'), rename(200, 'd', 'Three'), rename(350, 'd', 'Four')]);
  // 200: two renames in one millisecond are one version (Three); 0 ms versions are not written.
  assert.equal(closed.map((v) => [v.documentName, v.validFrom, v.validTo, v.open, v.openedBy.type, v.closedBy?.type]), [
    ['d', 100, 200, false, 'DocumentAdded', 'DocumentRenamed'],
    ['Three', 200, 350, false, 'DocumentRenamed', 'DocumentRenamed'],
  ]);
  // The closed versions are keyed and shaped as a twin's: the live key with the start appended.
  assert.equal(closed[0]!._id, '["key-1","o","d",100]');
  assert.equal(closed[0]!.entity, dk('d'));
  assert.equal(live.map((d) => [d.documentName, d.validFrom, d.openedBy]), [['Four', 350, { type: 'DocumentRenamed', time: 350, actor: 'apikey:k1' }]]);
  const name = async (t: number) => (await new AsOfView(store, t).get<DocumentDoc>(DOCUMENTS, dk('d')))?.documentName ?? null;
  assert.equal(await Promise.all([99, 100, 199, 200, 349, 350, 10_000].map(name)), [null, 'd', 'd', 'Three', 'Three', 'Four', 'Four']);
  // An answer read from the live row shows none of the version fields.
  const now = (await new AsOfView(store, 400).get(DOCUMENTS, dk('d')))!;
  assert.not.ok('validFrom' in now || 'openedBy' in now, JSON.stringify(now));
  assert.equal(now, (await new AsOfView(store, 400).find(DOCUMENTS, { apiKey: K, organizationId: o }))[0]);
  await store.close();
});

test('documents: a DocumentAdded at revision 0 reads nothing; a re-created id starts after its last version even from a lagging clock', async () => {
  const reads: string[] = [];
  const store = new SqliteReadStore(':memory:');
  await store.ensureIndexes(documentsProjection.indexes);
  const events = recorded([addDoc(100, 'd'), deleteDoc(300, 'd'), addDoc(250, 'd'), rename(260, 'd', 'Again')]);
  for (const e of events) {
    await store.transaction((tx) => {
      const counting = new Proxy(tx, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver) as unknown;
          if (typeof v !== 'function') return v;
          return (...args: unknown[]) => {
            if (['get', 'getMany', 'find', 'count'].includes(String(prop))) reads.push(`${e.revision}:${String(prop)}`);
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      return documentsProjection.apply(e, counting);
    });
  }
  // Revision 0 read nothing; the re-add (revision 2) looked for the live row, then for the latest closed version.
  assert.equal(reads.filter((r) => r.startsWith('0:')), []);
  assert.equal(reads.filter((r) => r.startsWith('2:')), ['2:get', '2:find']);
  const closed = await store.find<VersionDoc>(historyCollection(DOCUMENTS), {}, { sort: 'validFrom' });
  // The re-add stamped 250 opens at 300 (the deletion's time); its rename at 260 is taken as happening at 300 too: 0 ms, one version.
  assert.equal(closed.map((v) => [v.documentName, v.validFrom, v.validTo]), [['d', 100, 300]]);
  const [row] = await store.find<DocumentDoc>(DOCUMENTS, {});
  assert.equal([row!.documentName, row!.validFrom, (row!.openedBy as { type: string }).type], ['Again', 300, 'DocumentRenamed']);
  const view = (t: number) => new AsOfView(store, t);
  assert.equal((await view(299).get<DocumentDoc>(DOCUMENTS, dk('d')))?.documentName, 'd');
  assert.equal((await view(300).get<DocumentDoc>(DOCUMENTS, dk('d')))?.documentName, 'Again');
  await store.close();
});

test('documents: folder and organization deletions close every document they drop; replayed twice, nothing changes', async () => {
  const events = [
    addDoc(100, 'a', 'f'),
    addDoc(100, 'b', 'f'),
    addDoc(110, 'c', 'g'),
    addDoc(120, 'e'),
    rename(150, 'b', 'B'),
    at(200, 'FolderDeleted', { folderId: 'f', folderIds: ['f'], deletedAt: 200 }),
    at(300, 'OrganizationDeleted', { deletedAt: 300 }),
    // The cascade's own deletions come later, on rows already gone: nothing more closes.
    deleteDoc(400, 'a'),
    addDoc(500, 'a'),
  ];
  const { store, closed, live } = await documentVersions(events);
  assert.equal(closed.map((v) => [v.documentId, v.documentName, v.validFrom, v.validTo, v.closedBy?.type]).sort(), [
    ['a', 'a', 100, 200, 'FolderDeleted'],
    ['b', 'B', 150, 200, 'FolderDeleted'],
    ['b', 'b', 100, 150, 'DocumentRenamed'],
    ['c', 'c', 110, 300, 'OrganizationDeleted'],
    ['e', 'e', 120, 300, 'OrganizationDeleted'],
  ]);
  assert.equal(live.map((d) => [d.documentId, d.validFrom]), [['a', 500]]);
  const ids = async (t: number) => (await new AsOfView(store, t).find<DocumentDoc>(DOCUMENTS, { apiKey: K, organizationId: o }, { sort: 'seq' })).map((d) => d.documentId);
  assert.equal(await Promise.all([100, 199, 200, 299, 300, 500].map(ids)), [['a', 'b'], ['a', 'b', 'c', 'e'], ['c', 'e'], ['c', 'e'], [], ['a']]);
  assert.is(await new AsOfView(store, 150).count(DOCUMENTS, { apiKey: K, organizationId: o, folderId: 'f' }), 2);
  await store.close();
  await projectionSpec(documentsProjection).given(events).replayTwice([DOCUMENTS, historyCollection(DOCUMENTS)]);
});

test('documents: an asOf listing merges live rows and closed versions in the stores\' byte order, paged by one cursor', async () => {
  // U+E000 sorts after U+10000 in JavaScript (UTF-16 units: 0xE000 > 0xD800) but before it in
  // the stores (UTF-8 bytes). Half the documents are closed at 300 (read from h_documents at
  // 250), half still live: a merge comparing with `<` would page them out of the stores' order.
  const names = ['a', '\u{E000}', '\u{10000}', '\u{E000}b', '\u{10000}b', 'z'];
  const events: GivenEvent[] = names.map((d) => addDoc(100, d));
  for (const d of names.filter((_, i) => i % 2 === 1)) events.push(deleteDoc(300, d));
  const store = await project(documentsProjection, events);
  const view = new AsOfView(store, 250);
  const filter = { apiKey: K, organizationId: o };
  const bytes = (s: string) => Buffer.from(s, 'utf8');
  const expected = names.map(dk).sort((x, y) => Buffer.compare(bytes(x), bytes(y)));
  for (const sort of [undefined, 'seq'] as const) {
    const all = (await view.find<DocumentDoc>(DOCUMENTS, filter, sort ? { sort } : {})).map((d) => d._id);
    if (!sort) assert.equal(all, expected, 'by id: the stores\' order');
    else assert.equal(all, names.map(dk), 'by seq: creation order');
    // Pages of one and of two, each going on from the last row's (value, live key).
    for (const size of [1, 2]) {
      const paged: string[] = [];
      let after: { value: string; id: string } | undefined;
      for (;;) {
        const page = await view.find<DocumentDoc>(DOCUMENTS, filter, { ...(sort ? { sort } : {}), ...(after ? { after } : {}), limit: size });
        paged.push(...page.map((d) => d._id));
        if (page.length < size) break;
        const last = page[page.length - 1]!;
        after = { value: sort ? last.seq : last._id, id: last._id };
      }
      assert.equal(paged, all, `pages of ${size}, sort ${sort ?? '_id'}`);
    }
  }
  // getMany: in the order asked, live or closed.
  assert.equal((await view.getMany<DocumentDoc>(DOCUMENTS, [dk('z'), dk('\u{E000}'), dk('missing'), dk('a')])).map((d) => d.documentId), ['z', '\u{E000}', 'a']);
  await store.close();
});

test('documents: rows written before keep their open version in h_documents, count once, and take the new shape at their next change', async () => {
  const store = new SqliteReadStore(':memory:');
  await store.ensureIndexes(documentsProjection.indexes);
  const h = historyCollection(DOCUMENTS);
  const openedBy = { type: 'DocumentAdded', time: 100, actor: 'apikey:k1' };
  // As the history.documents twin left them: the live row without version fields, its open version in h_documents.
  const row = (d: string): DocumentDoc => ({ _id: dk(d), apiKey: K, organizationId: o, documentId: d, documentName: d, folderId: null, accessType: null, disabled: false, seq: `000${d}`, createdAt: 100 });
  await store.transaction(async (tx) => {
    for (const d of ['p', 'q']) {
      await tx.upsert(DOCUMENTS, row(d));
      const v: Doc = { ...row(d), _id: `${dk(d).slice(0, -1)},100]`, entity: dk(d), validFrom: 100, validTo: null, back: -100, open: true, openedBy };
      await tx.upsert(h, v);
    }
  });
  const filter = { apiKey: K, organizationId: o };
  const listed = async (t: number) => (await new AsOfView(store, t).find<DocumentDoc>(DOCUMENTS, filter, { sort: 'seq' })).map((d) => `${d.documentId}:${d.documentName}`);
  assert.equal(await listed(150), ['p:p', 'q:q']);
  assert.equal(await listed(50), []);
  for (const e of recorded([rename(200, 'p', 'P'), deleteDoc(300, 'q')])) await store.transaction((tx) => documentsProjection.apply(e, tx));
  assert.equal(await listed(150), ['p:p', 'q:q']);
  assert.equal(await listed(250), ['p:P', 'q:q']);
  assert.equal(await listed(300), ['p:P']);
  assert.is(await new AsOfView(store, 250).count(DOCUMENTS, filter), 2);
  const versions = await store.find<VersionDoc>(h, {}, { sort: 'validFrom' });
  assert.equal(versions.map((v) => [v.documentId, v.documentName, v.validFrom, v.validTo, v.open]).sort(), [['p', 'p', 100, 200, false], ['q', 'q', 100, 300, false]]);
  const [p] = await store.find<DocumentDoc>(DOCUMENTS, {});
  assert.equal([p!.documentName, p!.validFrom], ['P', 200]);
  await store.close();
});

test.run();
