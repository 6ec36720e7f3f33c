/**
 * The OpenAPI document describes every domain route (organizations, folders, documents,
 * users, user groups, permissions): a summary, its tag, a 200 answer whose `result.data` says
 * something (not `{}`), NOT_FOUND where the route can answer it, and a request example the
 * route itself accepts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { domainRoutes } from '../src/http/routes/domain-routes.js';
import { harness, type Harness } from './support/app.js';

/** path -> [tag, whether the success answer carries `data`, whether the route can answer NOT_FOUND]. */
const expected: Record<string, [tag: string, data: boolean, notFound: boolean]> = {
  '/v2/organizations/add': ['Organizations', true, false],
  '/v2/organizations/get': ['Organizations', true, false],
  '/v2/organizations/update': ['Organizations', true, false],
  '/v2/organizations/delete': ['Organizations', true, false],
  '/v2/organizations/access/disablestate/update': ['Organizations', true, false],
  '/v2/organizations/folders/add': ['Folders', true, true],
  '/v2/organizations/folders/update': ['Folders', true, true],
  '/v2/organizations/folders/delete': ['Folders', true, true],
  '/v2/organizations/folders/access/update': ['Folders', true, true],
  '/v2/organizations/folders/get': ['Folders', true, true],
  '/v2/organizations/documents/add': ['Documents', true, true],
  '/v2/organizations/documents/get': ['Documents', true, true],
  '/v2/organizations/documents/update': ['Documents', true, true],
  '/v2/organizations/documents/delete': ['Documents', true, true],
  '/v2/organizations/documents/move': ['Documents', false, true],
  '/v2/organizations/documents/access/update': ['Documents', true, true],
  '/v2/organizations/documents/migrate': ['Documents', true, true],
  '/v2/organizations/documents/migrate/status': ['Documents', true, true],
  '/v2/organizations/documents/access/disablestate/update': ['Documents', true, true],
  '/v2/users/add': ['Users', true, true],
  '/v2/users/update': ['Users', true, true],
  '/v2/users/delete': ['Users', true, true],
  '/v2/users/get': ['Users', true, true],
  '/v2/users/data/get': ['Personal data', true, true],
  '/v2/users/data/delete': ['Personal data', true, false],
  '/v2/users/data/delete/status': ['Personal data', true, true],
  '/v2/organizations/usergroups/add': ['User groups', true, true],
  '/v2/organizations/usergroups/get': ['User groups', true, true],
  '/v2/organizations/usergroups/users/add': ['User groups', true, true],
  '/v2/organizations/usergroups/users/delete': ['User groups', true, true],
  '/v2/auth/permissions/get': ['Permissions', true, true],
  '/v2/auth/permissions/add': ['Permissions', true, false],
  '/v2/auth/permissions/remove': ['Permissions', true, false],
  '/v2/auth/resources/get': ['Permissions', true, true],
  '/v2/auth/users/get': ['Permissions', true, true],
  '/v2/auth/permissions/explain': ['Permissions', true, true],
  '/v2/auth/access/history': ['Permissions', true, false],
};

let h: Harness;
let doc: any;

test.before(async () => {
  h = await harness();
  const res = await h.app.inject({ method: 'GET', url: '/openapi.json' });
  assert.is(res.statusCode, 200);
  doc = JSON.parse(res.body);
});
test.after(async () => h.close());

test('the list above is every domain route (a new route is checked too)', () => {
  assert.equal(domainRoutes(h.services).map((r) => r.path).sort(), Object.keys(expected).sort());
});

for (const [path, [tag, hasData, notFound]] of Object.entries(expected)) {
  test(`${path}: summary, tag, 200 answer with its data, failures`, () => {
    const op = doc.paths[path]?.post;
    assert.ok(op, `${path} is in the document`);
    assert.type(op.summary, 'string');
    assert.ok(op.summary.length > 0 && op.summary !== path, `${path} has a summary of its own`);
    assert.equal(op.tags, [tag]);
    const result = op.responses['200'].content['application/json'].schema.properties.result;
    if (hasData) {
      const data = result.properties.data;
      assert.ok(data, `${path}: result.data is declared`);
      assert.not.equal(data, {}, `${path}: result.data says what it holds`);
    } else {
      assert.not.ok('data' in result.properties, `${path}: answers without data`);
    }
    assert.is('404' in op.responses, notFound, `${path}: 404 declared exactly when the route can answer it`);
  });
}

test('every domain route has a request example its own schema accepts, shown in the document', () => {
  for (const route of domainRoutes(h.services)) {
    const example = route.doc?.example;
    assert.ok(example, `${route.path} has an example`);
    const parsed = route.schema.safeParse(example);
    assert.ok(parsed.success, `${route.path}: its example is refused: ${parsed.error?.message}`);
    const body = doc.paths[route.path].post.requestBody.content['application/json'];
    assert.equal(body.example ?? body.examples?.[0], { data: example }, `${route.path}: the document shows the example`);
  }
});

test('a nested folder row is described once and refers to itself for its subfolders', () => {
  const row = doc.components.schemas.FolderRow;
  assert.ok(row, 'FolderRow is a component');
  assert.equal(row.properties.subFolders.items, { $ref: '#/components/schemas/FolderRow' });
  assert.ok(row.required.includes('accessType'));
  assert.not.ok(row.required.includes('subFolders'));
});

test.run();
