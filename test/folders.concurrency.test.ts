/**
 * The folder tree stays a tree under concurrency: 100 rounds of two opposite moves sent in
 * parallel (A under B, B under A) never both succeed. And a move of a folder with 10,000
 * descendants completes and is visible to the next read.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.post(url, data, t.headers);

test.before(async () => {
  h = await harness();
  t = await h.tenant();
});
test.after(async () => h.close());

/** Walks parents from every folder; a walk longer than the folder count is a cycle. */
function assertTree(rows: Array<{ folderId: string; parentFolderId: string | null }>) {
  const parent = new Map(rows.map((r) => [r.folderId, r.parentFolderId]));
  for (const start of parent.keys()) {
    let cur: string | null | undefined = start;
    for (let steps = 0; cur != null; steps++) {
      assert.ok(steps <= parent.size, `cycle through ${start}`);
      cur = parent.get(cur);
    }
  }
}

test('100 rounds of opposite moves in parallel: never both, never a cycle', async () => {
  const o = 'race';
  let bothOk = 0;
  for (let round = 0; round < 100; round++) {
    const a = `a${round}`;
    const b = `b${round}`;
    const add = await post('/v2/organizations/folders/add', { organizationId: o, createOrganization: true, folders: [{ folderId: a }, { folderId: b }] });
    assert.is(add.status, 200);
    const [x, y] = await Promise.all([
      post('/v2/organizations/folders/update', { organizationId: o, folders: [{ folderId: a, parentFolderId: b }] }),
      post('/v2/organizations/folders/update', { organizationId: o, folders: [{ folderId: b, parentFolderId: a }] }),
    ]);
    assert.is(x.status, 200, JSON.stringify(x.body));
    assert.is(y.status, 200, JSON.stringify(y.body));
    const okA = x.body.result.data[a].success;
    const okB = y.body.result.data[b].success;
    assert.ok(okA !== okB, `round ${round}: exactly one move succeeds (${okA}, ${okB})`);
    if (okA && okB) bothOk++;
  }
  assert.is(bothOk, 0);
  const all = await post('/v2/organizations/folders/get', { organizationId: o });
  assert.is(all.body.result.data.length, 200);
  assertTree(all.body.result.data);
  // The write side agrees: replaying the stream gives the same parents.
  const events = await h.services.events.readAll();
  const parent = new Map<string, string | null>();
  for (const e of events) {
    if (e.data.organizationId !== o) continue;
    if (e.type === 'FolderAdded' || e.type === 'FolderMoved') parent.set(e.data.folderId as string, e.data.parentFolderId as string | null);
  }
  assertTree([...parent].map(([folderId, parentFolderId]) => ({ folderId, parentFolderId })));
});

test('moving a folder with 10,000 descendants completes and the next read sees it', async () => {
  const o = 'big';
  // root -> 100 children -> 99 grandchildren each: 100 + 9,900 = 10,000 descendants.
  const folders: Array<{ folderId: string; parentFolderId?: string }> = [{ folderId: 'root-folder' }, { folderId: 'target', accessType: 'restricted' } as never];
  for (let i = 0; i < 100; i++) {
    folders.push({ folderId: `c${i}`, parentFolderId: 'root-folder' });
    for (let j = 0; j < 99; j++) folders.push({ folderId: `c${i}-${j}`, parentFolderId: `c${i}` });
  }
  for (let i = 0; i < folders.length; i += 1000) {
    const r = await post('/v2/organizations/folders/add', { organizationId: o, createOrganization: true, folders: folders.slice(i, i + 1000) });
    assert.is(r.status, 200);
  }
  await post('/v2/organizations/documents/add', { organizationId: o, folderId: 'c99-98', documents: [{ documentId: 'deep' }] });
  const started = Date.now();
  const move = await post('/v2/organizations/folders/update', { organizationId: o, folders: [{ folderId: 'root-folder', parentFolderId: 'target' }] });
  const took = Date.now() - started;
  assert.is(move.status, 200);
  assert.is(move.body.result.data['root-folder'].success, true);
  const deepest = await post('/v2/organizations/folders/get', { organizationId: o, folderId: 'c99-98', maxDepth: 0 });
  assert.equal(deepest.body.result.data[0].ancestors, ['root', 'target', 'root-folder', 'c99']);
  assert.is(deepest.body.result.data[0].accessType, 'restricted');
  const doc = await post('/v2/organizations/documents/get', { organizationId: o, documentIds: ['deep'] });
  assert.is(doc.body.result.data[0].accessType, 'restricted');
  const count = await h.services.read.count('folders', { apiKey: t.apiKey, organizationId: o });
  assert.is(count, 10_002);
  console.log(`    moved a folder with 10,000 descendants in ${took} ms`);
});

test.run();
