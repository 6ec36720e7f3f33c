/**
 * Access context at the edge (semantics §1 Limits, §4a): what a request may carry in
 * `context.access`, and what happens beyond a stored limit, through the HTTP API.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.post(url, data, t.headers);
const doc = (access: unknown, id = 'd') => ({ type: 'document', id, organizationId: 'o', context: { access } });
const token = (userId: string, resources: object[]) => ({ userId, userProperties: { name: 'N', email: 'n@example.com' }, permissions: { resources } });
const fields = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `v${from + i}`);

test.before(async () => {
  h = await harness();
  t = await h.tenant();
  const r = await post('/v2/organizations/documents/add', { organizationId: 'o', createOrganization: true, documents: [{ documentId: 'd' }, { documentId: 'e' }] });
  assert.is(r.status, 200);
});
test.after(async () => h.close());

const bad: Array<[string, unknown, RegExp]> = [
  ['a field name with a colon', { 'a:b': 1 }, /data\.permissions\.resources\[0\]\.context\.access\.a:b is not a valid field name: field names may not contain ":"/],
  ['an empty field name', { '': 1 }, /field names are 1 to 128 characters/],
  ['a field name of 129 characters', { ['f'.repeat(129)]: 1 }, /field names are 1 to 128 characters/],
  ['a value of 257 characters', { f: 'x'.repeat(257) }, /context\.access\.f must be at most 256 characters/],
  ['an empty string value', { f: '' }, /context\.access\.f must not be empty/],
  ['a boolean value', { f: true }, /context\.access\.f/],
  ['an object value', { f: { g: 1 } }, /context\.access\.f/],
  ['a nested array', { f: [[1]] }, /context\.access\.f/],
  ['201 values of one field', { f: fields(201) }, /context\.access\.f must have at most 200 items/],
  ['201 field:value pairs over several fields', { f: fields(150), g: fields(51) }, /context\.access must have at most 200 field:value pairs \(it has 201\)/],
  ['201 fields', Object.fromEntries(fields(201).map((k) => [k, 1])), /context\.access must have at most 200 fields/],
  ['access that is not an object', 'widgetId:1', /context\.access/],
];

for (const [name, access, message] of bad) {
  test(`refused before anything is stored: ${name}`, async () => {
    const before = await h.services.events.headPosition();
    for (const [url, data] of [
      ['/v2/auth/permissions/add', { userId: 'u', permissions: { resources: [doc(access)] } }],
      ['/v2/auth/permissions/remove', { userId: 'u', permissions: { resources: [doc(access)] } }],
      ['/v2/auth/generate_token', token('u', [doc(access)])],
    ] as const) {
      const r = await post(url, data);
      assert.is(r.status, 400, `${url}: ${JSON.stringify(r.body).slice(0, 300)}`);
      assert.is(r.body.error.status, 'INVALID_ARGUMENT');
      assert.match(r.body.error.message, message, url);
    }
    assert.is(await h.services.events.headPosition(), before, 'nothing appended');
  });
}

test('200 pairs on one resource are accepted; `context` without `access` adds none', async () => {
  let r = await post('/v2/auth/permissions/add', { userId: 'ok', permissions: { resources: [doc({ f: fields(150), g: fields(50) })] } });
  assert.equal(r.body, { result: { status: 'success', message: 'Permissions added successfully.' } });
  r = await post('/v2/auth/permissions/add', { userId: 'ok2', permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'o', context: {} }] } });
  assert.is(r.status, 200);
  const got = await post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['ok', 'ok2'], documentIds: ['d'] });
  assert.is(got.body.result.data.ok.context.accessFields.length, 200);
  assert.is('context' in got.body.result.data.ok2, false);
});

test('beyond 200 on one stored grant: that resource fails inside a success, the others go through', async () => {
  await post('/v2/auth/permissions/add', { userId: 'full', permissions: { resources: [doc({ f: fields(200) })] } });
  const r = await post('/v2/auth/permissions/add', { userId: 'full', permissions: { resources: [doc({ g: 1 }), doc({ g: 1 }, 'e')] } });
  assert.is(r.status, 200);
  assert.equal(r.body.result.data.d, {
    success: false,
    type: 'document',
    message: 'The user would hold 201 access fields on this resource; a resource holds at most 200.',
  });
  assert.equal(r.body.result.data.e, { success: true, type: 'document', message: 'Permission added.' });
  const got = await post('/v2/auth/permissions/get', { organizationId: 'o', userIds: ['full'], documentIds: ['d'] });
  assert.not.ok(got.body.result.data.full.context.accessFields.includes('g:1'), 'nothing of the refused resource was stored');
});

test('generate_token beyond a stored limit: INVALID_ARGUMENT naming the resource, no grant written, no token', async () => {
  await post('/v2/auth/permissions/add', { userId: 'tok', permissions: { resources: [doc({ f: fields(200) })] } });
  const before = await h.services.events.headPosition();
  const r = await post('/v2/auth/generate_token', token('tok', [doc({ g: 1 }, 'e'), doc({ g: 1 })]));
  assert.is(r.status, 400, JSON.stringify(r.body));
  assert.is(r.body.error.status, 'INVALID_ARGUMENT');
  assert.equal(r.body.error.details, { resources: { d: 'The user would hold 201 access fields on this resource; a resource holds at most 200.' } });
  assert.is(await h.services.events.headPosition(), before, 'no grant on e either');
});

test('permissions/remove with context on a user without the grant: success, nothing to remove', async () => {
  const before = await h.services.events.headPosition();
  const r = await post('/v2/auth/permissions/remove', { userId: 'nobody', permissions: { resources: [doc({ f: 'v1' })] } });
  assert.equal(r.body, { result: { status: 'success', message: 'Permissions removed successfully.' } });
  assert.is(await h.services.events.headPosition(), before);
});

test('the token names the access context it was issued with', async () => {
  const r = await post('/v2/auth/generate_token', token('claims', [doc({ widgetId: [1, 2] })]));
  assert.is(r.status, 200, JSON.stringify(r.body));
  const claims = JSON.parse(Buffer.from(r.body.result.data.token.split('.')[1], 'base64url').toString('utf8'));
  assert.equal(claims.resources[0].context, { access: { widgetId: [1, 2] } });
});

test.run();
