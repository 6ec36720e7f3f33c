/**
 * serve's default: projections, webhooks and cascades on a worker thread
 * (src/runtime/background.ts). The same API, through `app.inject`, with the thread on:
 * read-your-writes, cascades, a thread that dies, and shutdown.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness } from './support/app.js';

async function threaded(fn: (h: Harness, headers: Record<string, string>) => Promise<void>, env: Record<string, string> = {}) {
  const h = await harness({ BACKGROUND_THREAD: 'true', ...env });
  try {
    assert.ok(h.services.background?.running, 'the background thread runs');
    const t = await h.tenant();
    await fn(h, t.headers);
  } finally {
    await h.close();
  }
}

const ok = async (h: Harness, route: string, data: unknown, headers: Record<string, string>) => {
  const r = await h.post(route, data, headers);
  assert.is(r.status, 200, `${route}: ${JSON.stringify(r.body)}`);
  return r.body.result;
};

test('every write is visible to the next read: the thread tells the request when its events are applied', async () => {
  await threaded(async (h, headers) => {
    await ok(h, '/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, headers);
    await ok(h, '/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'f', accessType: 'restricted' }] }, headers);
    for (let b = 0; b < 3; b++) {
      const documents = Array.from({ length: 100 }, (_, i) => ({ documentId: `d${b * 100 + i}` }));
      await ok(h, '/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents }, headers);
      const page = await ok(h, '/v2/organizations/documents/get', { organizationId: 'o', folderId: 'f', pageSize: 1000 }, headers);
      assert.is(page.data.length, (b + 1) * 100, `after batch ${b}`);
    }
    const denied = await h.post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['u'], documentIds: ['d7'] }, headers);
    assert.is(denied.body.result.data.u.documents.d7.errorCode, 'permission_denied');
    await ok(h, '/v2/users/add', { organizationId: 'o', folderId: 'f', users: [{ userId: 'u', name: 'U', email: 'u@example.com', accessRole: 'viewer' }] }, headers);
    const allowed = await ok(h, '/v2/auth/permissions/get', { organizationId: 'o', userIds: ['u'], documentIds: ['d7'] }, headers);
    assert.equal(allowed.data.u.documents.d7, { accessRole: 'viewer', accessType: 'restricted' });
  });
});

test('deletion cascades run on the thread, and settle waits for them', async () => {
  await threaded(async (h, headers) => {
    await ok(h, '/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, headers);
    await ok(h, '/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'f' }] }, headers);
    await ok(h, '/v2/organizations/documents/add', { organizationId: 'o', folderId: 'f', documents: [{ documentId: 'a' }, { documentId: 'b' }] }, headers);
    await ok(h, '/v2/organizations/folders/delete', { organizationId: 'o', folderId: 'f' }, headers);
    await h.services.cascade.settle();
    const deleted = (await h.services.events.readAll()).filter((e) => e.type === 'DocumentDeleted');
    assert.equal(deleted.map((e) => e.data.documentId).sort(), ['a', 'b']);
    assert.ok(deleted.every((e) => e.metadata.actor === 'system:cascade'));
  });
});

test('a thread that dies is started again and applies what was written meanwhile', async () => {
  await threaded(async (h, headers) => {
    const bg = h.services.background!;
    await ok(h, '/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, headers);
    await bg.terminate();
    assert.not.ok(bg.running, 'the thread is gone');
    // This write is durable at once; its answer waits until the restarted thread applied it.
    await ok(h, '/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'late' }] }, headers);
    assert.ok(bg.running, 'the thread was started again');
    const got = await ok(h, '/v2/organizations/documents/get', { organizationId: 'o', documentIds: ['late'] }, headers);
    assert.equal(got.data.map((d: { id: string }) => d.id), ['late']);
    // The write's wait is bounded by READ_YOUR_WRITES_TIMEOUT_MS, whose default (5 s) a loaded
    // machine can spend on starting a thread and opening its stores: it failed once so. A wait
    // that long still fails the test if the thread never comes back; only slowness passes.
  }, { READ_YOUR_WRITES_TIMEOUT_MS: '60000' });
});

test('close stops the thread', async () => {
  const h = await harness({ BACKGROUND_THREAD: 'true' });
  const bg = h.services.background!;
  assert.ok(bg.running);
  await h.close();
  assert.not.ok(bg.running);
});

test.run();
