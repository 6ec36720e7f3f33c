/**
 * `collab access review` (issue 25): every user with access to every folder and document of
 * an organization, now or as of a past instant, as CSV or JSON lines, on a DATA_DIR the
 * service wrote. Each resource's rows must be users/get's answer for it (asked through the
 * API, with the same asOf, before the service stopped).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { harness, tempDir, type Tenant } from './support/app.js';
import { ROOT } from './support/process.js';

const dir = tempDir('collab-access-review-');
let t: Tenant;
let before = 0;
const RESOURCES = [['folder', 'f'], ['folder', 'g, "x"'], ['document', 'd1'], ['document', 'd2']] as const;
/** users/get's rows per resource, as `resourceType resourceId` -> rows, now and as of `before`. */
const expected: Record<'now' | 'before', Array<Record<string, unknown>>> = { now: [], before: [] };

const cli = (...args: string[]) => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), 'access', 'review', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dir },
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, lines: r.stdout.split('\n').filter(Boolean) };
};

test.before(async () => {
  const h = await harness({ DATA_DIR: dir });
  t = await h.tenant();
  const post = async (url: string, data: unknown) => {
    const r = await h.post(url, data, t.headers);
    assert.is(r.status, 200, `${url}: ${JSON.stringify(r.body)}`);
    return r.body.result;
  };
  await post('/v2/organizations/add', { organizations: [{ organizationId: 'acme' }] });
  await post('/v2/organizations/folders/add', { organizationId: 'acme', folders: [{ folderId: 'f', accessType: 'restricted' }, { folderId: 'g, "x"' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'acme', folderId: 'f', documents: [{ documentId: 'd1' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'd2', accessType: 'public' }] });
  await post('/v2/auth/permissions/add', { userId: 'u1', permissions: { resources: [{ type: 'folder', id: 'f', organizationId: 'acme', accessRole: 'viewer' }] } });
  await post('/v2/auth/permissions/add', { userId: 'u2', permissions: { resources: [{ type: 'organization', id: 'acme', accessRole: 'viewer' }] } });
  await post('/v2/organizations/usergroups/add', { organizationId: 'acme', organizationUserGroups: [{ groupId: 'team', groupName: 'Team' }] });
  await post('/v2/organizations/usergroups/users/add', { organizationId: 'acme', organizationUserGroupId: 'team', userIds: ['u2'] });
  await post('/v2/auth/permissions/add', { group: { groupId: 'team' }, permissions: { resources: [{ type: 'document', id: 'd1', organizationId: 'acme', accessRole: 'editor' }] } });
  // `before`: an instant after all of the above and before the revocation (the clock moves on first).
  const start = Date.now();
  while (Date.now() <= start) await new Promise((r) => setImmediate(r));
  before = Date.now();
  while (Date.now() <= before) await new Promise((r) => setImmediate(r));
  await post('/v2/auth/permissions/remove', { userId: 'u1', permissions: { resources: [{ type: 'folder', id: 'f', organizationId: 'acme' }] } });
  for (const [when, asOf] of [['now', undefined], ['before', before]] as const) {
    for (const [type, id] of RESOURCES) {
      const r = await post('/v2/auth/users/get', { organizationId: 'acme', ...(type === 'folder' ? { folderId: id } : { documentId: id }), ...(asOf ? { asOf } : {}) });
      if (r.data.everyone) expected[when].push({ resourceType: type, resourceId: id, userId: '*', accessRole: 'editor', via: { type: 'public' } });
      for (const u of r.data.users) expected[when].push({ resourceType: type, resourceId: id, ...u });
    }
  }
  await h.app.close();
  await h.services.close();
});
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('JSON lines, now and as of a past instant: each resource\'s users/get rows, folders then documents', () => {
  const now = cli('--api-key', t.apiKey, '--org', 'acme', '--format', 'json');
  assert.is(now.code, 0, now.stderr);
  assert.equal(now.lines.map((l) => JSON.parse(l)), expected.now);
  const then = cli('--api-key', t.apiKey, '--org', 'acme', '--format', 'json', '--as-of', new Date(before).toISOString());
  assert.is(then.code, 0, then.stderr);
  assert.equal(then.lines.map((l) => JSON.parse(l)), expected.before);
  assert.ok(expected.before.some((r) => r.userId === 'u1') && !expected.now.some((r) => r.userId === 'u1'), 'the revocation shows between the two');
  assert.equal(cli('--api-key', t.apiKey, '--org', 'acme', '--format', 'json', '--as-of', String(before)).lines, then.lines, 'Unix ms alike');
});

test('CSV: a header, then one line per row, fields quoted where needed', () => {
  const r = cli('--api-key', t.apiKey, '--org', 'acme');
  assert.is(r.code, 0, r.stderr);
  assert.is(r.lines[0], 'resourceType,resourceId,userId,accessRole,viaType,viaLevel,viaId,viaGroupId,expiresAt');
  assert.is(r.lines.length, expected.now.length + 1);
  assert.ok(r.lines.includes('document,d1,u2,editor,group,resource,d1,team,'), r.stdout);
  assert.ok(r.lines.includes('document,d2,*,editor,public,,,,'), r.stdout);
  assert.ok(r.lines.some((l) => l.startsWith('folder,"g, ""x""",u2,viewer,user,organization,acme')), r.stdout);
});

test('refusals: a missing organization, a future or malformed --as-of, a bad format', () => {
  const missing = cli('--api-key', t.apiKey, '--org', 'nope');
  assert.is(missing.code, 1);
  assert.match(missing.stderr, 'Organization does not exist');
  const future = cli('--api-key', t.apiKey, '--org', 'acme', '--as-of', String(Date.now() + 3_600_000));
  assert.is(future.code, 1);
  assert.match(future.stderr, '--as-of is after now');
  assert.match(cli('--api-key', t.apiKey, '--org', 'acme', '--as-of', 'yesterday').stderr, '--as-of must be an ISO 8601 instant');
  const format = cli('--api-key', t.apiKey, '--org', 'acme', '--format', 'xml');
  assert.is(format.code, 2);
  assert.match(format.stderr, '--format must be csv or json');
});

test.run();
