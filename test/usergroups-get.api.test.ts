/** API tests for usergroups/get (this service's extension: an organization's groups, paged, with member counts). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';

let h: Harness;
let t: Tenant;
const post = (url: string, data: unknown) => h.post(url, data, t.headers);
const ok = (url: string, data: unknown) => h.ok(url, data, t.headers);
const GET = '/v2/organizations/usergroups/get';

test.before(async () => {
  h = await harness();
  t = await h.tenant();
  await ok('/v2/users/add', { organizationId: 'o', users: [{ userId: 'u1' }, { userId: 'u2' }, { userId: 'u3' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'eng', groupName: 'Engineering' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'all' }] });
  await ok('/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: 'design', groupName: 'Design' }] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'eng', userIds: ['u1', 'u2'] });
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'all', userIds: ['u1', 'u2', 'u3'] });
});
test.after(async () => h.close());

test('lists the organization\'s groups in creation order with their member counts', async () => {
  const r = await ok(GET, { organizationId: 'o' });
  assert.is(r.message, 'Organization user groups retrieved successfully.');
  assert.equal(r.data, [
    { groupId: 'eng', groupName: 'Engineering', memberCount: 2 },
    { groupId: 'all', groupName: 'all', memberCount: 3 },
    { groupId: 'design', groupName: 'Design', memberCount: 0 },
  ]);
  assert.is(r.pageToken, undefined, 'one page: no token');
});

test('member counts follow removals', async () => {
  await ok('/v2/organizations/usergroups/users/delete', { organizationId: 'o', organizationUserGroupId: 'all', userIds: ['u3'] });
  const all = (await ok(GET, { organizationId: 'o' })).data.find((g: { groupId: string }) => g.groupId === 'all');
  assert.is(all.memberCount, 2);
  await ok('/v2/organizations/usergroups/users/add', { organizationId: 'o', organizationUserGroupId: 'all', userIds: ['u3'] });
});

test('pages with a token bound to its query', async () => {
  let r = await ok(GET, { organizationId: 'o', pageSize: 2 });
  assert.equal(r.data.map((g: { groupId: string }) => g.groupId), ['eng', 'all']);
  assert.type(r.pageToken, 'string');
  assert.is(r.nextPageToken, r.pageToken);
  const token = r.pageToken;
  r = await ok(GET, { organizationId: 'o', pageSize: 2, pageToken: token });
  assert.equal(r.data.map((g: { groupId: string }) => g.groupId), ['design']);
  assert.is(r.pageToken, undefined);
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'p' }] });
  const other = await post(GET, { organizationId: 'p', pageToken: token });
  assert.is(other.status, 400);
  assert.match(other.body.error.message, /data\.pageToken/);
});

test('another API key sees none of them', async () => {
  const t2 = await h.tenant();
  await h.ok('/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, t2.headers);
  assert.equal((await h.ok(GET, { organizationId: 'o' }, t2.headers)).data, []);
});

test('bad input gets the failure envelope', async () => {
  const missing = await post(GET, { organizationId: 'nope' });
  assert.is(missing.status, 404);
  assert.is(missing.body.error.status, 'NOT_FOUND');
  assert.is(missing.body.error.message, 'Organization does not exist.');
  for (const [bad, field] of [
    [{}, 'organizationId'],
    [{ organizationId: 'o', pageSize: 101 }, 'pageSize'],
    [{ organizationId: 'o', pageSize: 0 }, 'pageSize'],
    [{ organizationId: 'o', pageToken: 'forged' }, 'pageToken'],
    [{ organizationId: 'x'.repeat(257) }, 'organizationId'],
  ] as const) {
    const r = await post(GET, bad);
    assert.is(r.status, 400, JSON.stringify(bad));
    assert.is(r.body.error.status, 'INVALID_ARGUMENT');
    assert.match(r.body.error.message, new RegExp(field), JSON.stringify(r.body));
  }
});

test.run();
