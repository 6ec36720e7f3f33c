/**
 * Page tokens are opaque (issue 22; docs/security.md, Page tokens): sealed with AES-256-GCM
 * under a key derived from the master key, bound to the query (tenant included).
 *
 * - a token shows nothing of what it holds: not the log position a cursor is, not the API
 *   key or the client ids inside a row id;
 * - a token with any byte changed is refused (before, base64 JSON: an edited `after.value`
 *   moved the cursor anywhere), as are another caller's, another query's and garbage, each
 *   INVALID_ARGUMENT naming data.pageToken;
 * - a token made by one app is good in another built on the same data dir (same master
 *   key), and in no process holding another master key.
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, tempDir, type Harness, type Response, type Tenant } from './support/app.js';
import { DOCUMENTS, documentKey, type DocumentDoc } from '../projections/documents.js';
import { MasterKey } from '../src/shared/envelope.js';
import { decodePageToken, encodePageToken, installPageTokenKey } from '../queries/paging.js';

const refused = (r: Response, where: string) => {
  assert.is(r.status, 400, `${where}: ${JSON.stringify(r.body).slice(0, 300)}`);
  assert.is(r.body.error.status, 'INVALID_ARGUMENT', where);
  assert.match(r.body.error.message, /data\.pageToken is not a valid page token/, where);
};
const okResult = (r: Response, where = '') => {
  assert.is(r.status, 200, `${where} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body.result;
};

const ORG = 'org-visible-name';
const docIds = ['doc-alpha', 'doc-beta', 'doc-gamma'];

async function seed(h: Harness, t: Tenant) {
  okResult(
    await h.post('/v2/organizations/documents/add', { organizationId: ORG, createOrganization: true, documents: docIds.map((documentId) => ({ documentId })) }, t.headers),
    'documents/add',
  );
}

const S = suite('page tokens: opaque, sealed and bound to the query');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  await seed(ctx.h, ctx.t);
});
S.after(async (ctx) => ctx.h.close());

S('a token shows neither the log position, nor the API key, nor any id of the query', async ({ h, t }) => {
  const first = okResult(await h.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1 }, t.headers));
  const token: string = first.pageToken;
  assert.type(token, 'string');
  assert.ok(token.length <= 200, `reasonably short: ${token.length} characters`);
  assert.match(token, /^[A-Za-z0-9_-]+$/, 'URL-safe');
  // The cursor of the first page is the first document's seq: its log position.
  const doc = (await h.services.read.get(DOCUMENTS, documentKey(t.apiKey, ORG, first.data[0].id))) as DocumentDoc | null;
  assert.ok(doc && doc.seq.length > 0);
  const bytes = Buffer.from(token, 'base64url');
  for (const text of [bytes.toString('utf8'), bytes.toString('latin1')]) {
    // The position as stored (19 digits, zero-padded); its short form (a digit or two in a
    // fresh log) would turn up in random bytes by chance.
    for (const secret of [t.apiKey, doc!.seq, ORG, first.data[0].id]) {
      assert.not.ok(text.includes(secret), `the token's bytes contain ${JSON.stringify(secret)}`);
    }
  }
  assert.throws(() => JSON.parse(bytes.toString('utf8')), 'not JSON');
  // It still pages.
  const second = okResult(await h.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1, pageToken: token }, t.headers));
  assert.equal(second.data.map((d: { id: string }) => d.id), [docIds[1]]);
});

S('a token with any one byte changed is refused; so are shortened and lengthened ones', async ({ h, t }) => {
  const first = okResult(await h.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1 }, t.headers));
  const bytes = Buffer.from(first.pageToken as string, 'base64url');
  // Flipping the low bit turns a digit into another digit: in a readable cursor, another
  // position that the store would have paged from.
  for (let i = 0; i < bytes.length; i++) {
    const edited = Buffer.from(bytes);
    edited[i]! ^= 0x01;
    refused(await h.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1, pageToken: edited.toString('base64url') }, t.headers), `byte ${i} changed`);
  }
  refused(await h.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1, pageToken: bytes.subarray(0, bytes.length - 1).toString('base64url') }, t.headers), 'a byte short');
  refused(await h.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1, pageToken: Buffer.concat([bytes, Buffer.from('0')]).toString('base64url') }, t.headers), 'a byte more');
});

S('another caller\'s token, another query\'s, and garbage are refused', async ({ h, t }) => {
  const first = okResult(await h.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1 }, t.headers));
  const token: string = first.pageToken;
  const other = await h.tenant();
  await seed(h, other);
  refused(await h.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1, pageToken: token }, other.headers), 'another API key, the same query');
  okResult(await h.post('/v2/organizations/add', { organizations: [{ organizationId: 'org-2', organizationName: 'two' }] }, t.headers));
  refused(await h.post('/v2/organizations/documents/get', { organizationId: 'org-2', pageSize: 1, pageToken: token }, t.headers), 'another organization');
  refused(await h.post('/v2/organizations/get', { pageSize: 1, pageToken: token }, t.headers), 'another list');
  // Readable tokens of the old format, one that would page from the start, and noise.
  const legacy = Buffer.from(JSON.stringify({ q: 'x'.repeat(22), after: { value: '0', id: '' } })).toString('base64url');
  for (const garbage of [legacy, 'AAAA', 'A'.repeat(200), randomBytes(60).toString('base64url'), 'not a token!', '%00']) {
    refused(await h.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1, pageToken: garbage }, t.headers), `garbage ${garbage.slice(0, 20)}`);
  }
});

S('a token made by one app pages in another on the same data dir (one master key)', async () => {
  const dir = tempDir();
  const a = await harness({ DATA_DIR: dir });
  let t: Tenant;
  let first: { pageToken: string };
  try {
    t = await a.tenant();
    await seed(a, t);
    first = okResult(await a.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 1 }, t.headers));
  } finally {
    // Closed without removing the directory: the next app starts on the same files.
    await a.app.close();
    await a.services.close();
  }
  const b = await harness({ DATA_DIR: dir });
  try {
    const second = okResult(await b.post('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 2, pageToken: first.pageToken }, t.headers));
    assert.equal(second.data.map((d: { id: string }) => d.id), docIds.slice(1));
  } finally {
    await b.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

S.run();

const K = suite('page tokens: the key (unit)');

const deriver = (master: MasterKey) => ({ deriveKey: (purpose: string, n: number) => master.derive(purpose, n) });

K('a token opens only while a service with its master key is open', () => {
  const k1 = deriver(new MasterKey(randomBytes(32)));
  const k2 = deriver(new MasterKey(randomBytes(32)));
  const query = { apiKey: 'key-1', what: 'unit' };
  const release1 = installPageTokenKey(k1);
  const token = encodePageToken(query, { value: '00000000000000000042', id: 'row' });
  assert.equal(decodePageToken(token, query), { value: '00000000000000000042', id: 'row' });
  assert.throws(() => decodePageToken(token, { ...query, apiKey: 'key-2' }), /data\.pageToken is not a valid page token/);
  release1();
  const release2 = installPageTokenKey(k2);
  try {
    assert.throws(() => decodePageToken(token, query), /data\.pageToken is not a valid page token/, 'another master key');
    const again = installPageTokenKey(k1);
    assert.equal(decodePageToken(token, query), { value: '00000000000000000042', id: 'row' }, 'the same master key, installed again');
    again();
  } finally {
    release2();
  }
});

K.run();
