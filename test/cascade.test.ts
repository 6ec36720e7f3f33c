/**
 * The deletion cascade is durable: the work it owes is queued with the projections'
 * checkpoint, so a process that stops before the worker ran still leaves it to the next.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { loadConfig } from '../src/config/config.js';
import { openServices, type Services } from '../src/composition/services.js';
import { buildApp } from '../src/app.js';
import { CASCADE_WORK } from '../projections/cascade-work.js';
import type { CascadeWorker } from '../src/jobs/cascade.js';
import { harness, tempDir } from './support/app.js';
import { documentDecider, documentStream } from '../commands/document.js';

async function withApp<T>(dir: string, follow: boolean, fn: (s: Services, post: (r: string, d: unknown, h: Record<string, string>) => Promise<any>) => Promise<T>) {
  // Without followers nothing would ever catch up: do not wait for read models on writes.
  const env = { DATA_DIR: dir, LOG_LEVEL: 'silent', ...(follow ? {} : { READ_YOUR_WRITES_TIMEOUT_MS: '0' }) };
  const services = await openServices(loadConfig(env), { follow, webhooks: false });
  const app = await buildApp(services, { logger: false });
  try {
    const post = async (url: string, data: unknown, headers: Record<string, string>) => {
      const res = await app.inject({ method: 'POST', url, payload: { data }, headers });
      return JSON.parse(res.body);
    };
    return await fn(services, post);
  } finally {
    await app.close();
    await services.close();
  }
}

/**
 * A process whose cascade worker never runs (as if killed right after answering): a fresh
 * workspace, and `run` that posts with its API key and catches the projections up by hand.
 */
async function withoutWorker<T>(dir: string, fn: (s: Services, run: (r: string, d: unknown) => Promise<any>, headers: Record<string, string>) => Promise<T>) {
  return withApp(dir, false, async (s, post) => {
    const ws = await post('/v2/workspace/create', { ownerEmail: 'c@example.com' }, {});
    await s.projections.catchUp();
    const [apiKey, key] = Object.entries(ws.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
    const run = async (r: string, d: unknown) => {
      const out = await post(r, d, headers);
      await s.projections.catchUp();
      return out;
    };
    return fn(s, run, headers);
  });
}

test('a folder deletion whose cascade had not run when the process stopped completes after the restart', async () => {
  const dir = tempDir('collab-cascade-');
  try {
    const headers = await withoutWorker(dir, async (s, run, h) => {
      await run('/v2/organizations/folders/add', { organizationId: 'o', createOrganization: true, folders: [{ folderId: 'F' }, { folderId: 'G', parentFolderId: 'F' }] });
      await run('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'F', documents: [{ documentId: 'd1' }] });
      await run('/v2/organizations/documents/add', { organizationId: 'o', folderId: 'G', documents: [{ documentId: 'd2' }] });
      await run('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'keep' }] });
      const del = await run('/v2/organizations/folders/delete', { organizationId: 'o', folderId: 'F' });
      assert.is(del.result.message, 'Folder deletion initiated successfully.');
      assert.is(await s.read.count(CASCADE_WORK, {}), 2, 'two documents queued');
      const deleted = (await s.events.readAll()).filter((e) => e.type === 'DocumentDeleted');
      assert.is(deleted.length, 0, 'nothing appended yet');
      const docs = await run('/v2/organizations/documents/get', { organizationId: 'o' });
      assert.equal(docs.result.data.map((d: { id: string }) => d.id), ['keep'], 'reads already exclude the subtree');
      return h;
    });
    // Second process on the same data: the worker picks the queued work up.
    await withApp(dir, true, async (s) => {
      await s.cascade.settle();
      const events = await s.events.readAll();
      const folderDeleted = events.find((e) => e.type === 'FolderDeleted')!;
      const deleted = events.filter((e) => e.type === 'DocumentDeleted');
      assert.equal(deleted.map((e) => e.data.documentId).sort(), ['d1', 'd2']);
      for (const e of deleted) {
        assert.is(e.data.reason, 'folderDeleted');
        assert.is(e.metadata.actor, 'system:cascade');
        assert.is(e.metadata.causationId, folderDeleted.id);
        assert.is(e.metadata.requestId, folderDeleted.metadata.requestId);
        assert.is(e.metadata.apiKey, headers['x-service-api-key']);
      }
      assert.is(await s.read.count(CASCADE_WORK, {}), 0);
      // Running the same work again appends nothing: the commands are idempotent.
      const before = events.length;
      await (s.cascade as CascadeWorker).drain();
      assert.is((await s.events.readAll()).length, before);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('queued work never touches what was created after the deletion, nor re-runs after a rebuild', async () => {
  const dir = tempDir('collab-cascade-');
  try {
    const headers = await withoutWorker(dir, async (s, run, h) => {
      const apiKey = h['x-service-api-key']!;
      await run('/v2/organizations/documents/add', { organizationId: 'o', createOrganization: true, documents: [{ documentId: 'd' }, { documentId: 'e' }] });
      await run('/v2/organizations/delete', { organizationIds: ['o'] });
      // Re-created with the same ids before the cascade ran; the old d's stream still says
      // "active" until the cascade runs, so simulate a re-add that got through (as after a
      // process restart between deletion and cascade) by appending on the write side.
      await run('/v2/organizations/add', { organizations: [{ organizationId: 'o' }] });
      await s.commands.handle(documentDecider, documentStream(apiKey, 'o', 'd'), { type: 'DeleteDocument', data: { organizationId: 'o', documentId: 'd', reason: 'organizationDeleted' }, metadata: { now: 1 } }, { requestId: 'x', actor: 'test', time: 1, apiKey });
      await run('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'd', documentName: 'new d' }] });
      assert.is(await s.read.count(CASCADE_WORK, {}), 2);
      return h;
    });
    await withApp(dir, true, async (s, post) => {
      await s.cascade.settle();
      const docs = await post('/v2/organizations/documents/get', { organizationId: 'o' }, headers);
      assert.equal(docs.result.data.map((d: { id: string; documentName: string }) => [d.id, d.documentName]), [['d', 'new d']]);
      const deleted = (await s.events.readAll()).filter((e) => e.type === 'DocumentDeleted' && e.metadata.actor === 'system:cascade');
      assert.equal(deleted.map((e) => e.data.documentId), ['e'], 'the new d is left alone; the old e is removed');
      // A rebuild queues historical work again: it is recognised as done.
      const before = (await s.events.readAll()).length;
      const deletion = (await s.events.readAll()).find((e) => e.type === 'OrganizationDeleted')!;
      await s.read.transaction((tx) =>
        tx.upsert(CASCADE_WORK, { _id: 'requeued', kind: 'document', apiKey: headers['x-service-api-key']!, organizationId: 'o', targetId: 'e', reason: 'organizationDeleted', causationId: deletion.id, requestId: 'r', seq: deletion.position }),
      );
      await s.cascade.settle();
      assert.is((await s.events.readAll()).length, before);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('an organization deletion appends a removal for every document, user grant set and group', async () => {
  const h = await harness();
  try {
    const t = await h.tenant();
    const post = (r: string, d: unknown) => h.post(r, d, t.headers);
    await post('/v2/organizations/documents/add', { organizationId: 'gone', createOrganization: true, documents: [{ documentId: 'a' }, { documentId: 'b' }] });
    await post('/v2/users/add', { organizationId: 'gone', users: [{ userId: 'u1', name: 'U', email: 'u@example.com' }] });
    await post('/v2/organizations/usergroups/add', { organizationId: 'gone', organizationUserGroups: [{ groupId: 'g1', groupName: 'G' }] });
    const other = await post('/v2/organizations/documents/add', { organizationId: 'stays', createOrganization: true, documents: [{ documentId: 'a' }] });
    assert.is(other.status, 200);
    const res = await post('/v2/organizations/delete', { organizationIds: ['gone'] });
    assert.is(res.status, 200, JSON.stringify(res.body));
    await h.services.cascade.settle();
    const events = await h.services.events.readAll();
    const cause = events.find((e) => e.type === 'OrganizationDeleted')!;
    const caused = events.filter((e) => e.metadata.causationId === cause.id);
    assert.equal(caused.filter((e) => e.type === 'DocumentDeleted').map((e) => e.data.documentId).sort(), ['a', 'b']);
    assert.ok(caused.some((e) => e.type === 'GrantRevoked' && e.data.userId === 'u1'));
    assert.ok(caused.some((e) => e.type === 'UserGroupDeleted' && e.data.groupId === 'g1'));
    // The other organization's document with the same id is untouched.
    const left = await post('/v2/organizations/documents/get', { organizationId: 'stays' });
    assert.equal(left.body.result.data.map((d: { id: string }) => d.id), ['a']);
  } finally {
    await h.close();
  }
});

test.run();
