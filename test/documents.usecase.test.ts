/**
 * documents/add over an orphan (src/usecases/documents.ts `addDocument`): a document whose
 * folder was deleted before the deletion cascade reached it. The route tests cannot hold
 * the cascade back, so this drives the use case on services that do not follow the log
 * (no cascade worker): the orphan stays until the add removes it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../src/config/config.js';
import { openServices, type Services } from '../src/composition/services.js';
import { RequestContext } from '../src/http/context.js';
import { organizationDecider, organizationStream } from '../commands/organization.js';
import { documentStream } from '../commands/document.js';
import { addDocuments } from '../src/usecases/documents.js';
import { postgresEnv, tempDir } from './support/app.js';

const apiKey = 'key-1';
const silent = { info() {}, warn() {}, error() {} };
let services: Services;
let requests = 0;
const ctx = () => new RequestContext(services, `req-${++requests}`, services.clock(), silent, 'test', { apiKey, workspaceId: 'ws-1', type: 'testing' });
const eventsOf = async (documentId: string) => services.events.readStream(documentStream(apiKey, 'o', documentId));

test.before(async () => {
  const stores = process.env.TEST_STORE === 'postgres' ? await postgresEnv() : {};
  services = await openServices(loadConfig({ LOG_LEVEL: 'silent', ...stores, DATA_DIR: tempDir() }), { follow: false, webhooks: false });
});
test.after(async () => {
  await services.close();
});

test('an orphan is removed and added again; a live document is refused, nothing appended', async () => {
  const first = await addDocuments(ctx(), { organizationId: 'o', createOrganization: true, folderId: 'f', createFolder: true, documents: [{ documentId: 'd1' }, { documentId: 'd2' }] });
  assert.equal(first.d1, { success: true, id: 'd1', message: 'Added Successfully' });
  await addDocuments(ctx(), { organizationId: 'o', documents: [{ documentId: 'live' }] });
  await ctx().execute(organizationDecider, organizationStream(apiKey, 'o'), { type: 'DeleteFolder', data: { organizationId: 'o', folderId: 'f' } });
  assert.equal((await eventsOf('d1')).map((e) => e.type), ['DocumentAdded'], 'no cascade ran: d1 is an orphan');

  const again = await addDocuments(ctx(), { organizationId: 'o', documents: [{ documentId: 'd1', documentName: 'Again' }, { documentId: 'live' }] });
  assert.equal(again.d1, { success: true, id: 'd1', message: 'Added Successfully' });
  assert.equal(again.live, { success: false, id: 'live', message: 'Document already exists', code: 'already-exists' });

  const d1 = await eventsOf('d1');
  assert.equal(d1.map((e) => e.type), ['DocumentAdded', 'DocumentDeleted', 'DocumentAdded']);
  assert.is((d1[1]!.data as { reason: string }).reason, 'folderDeleted');
  assert.equal((d1[2]!.data as { folderId: unknown; documentName: unknown }).folderId, null, 'added again at the root');
  assert.equal((d1[2]!.data as { documentName: unknown }).documentName, 'Again');
  assert.equal((await eventsOf('live')).map((e) => e.type), ['DocumentAdded'], 'a live document is looked at and left alone');
  assert.equal((await eventsOf('d2')).map((e) => e.type), ['DocumentAdded'], 'an orphan not named stays for the cascade');
});

test.run();
