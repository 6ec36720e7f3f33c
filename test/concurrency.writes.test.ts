/**
 * Concurrency (issue 7.4), next to test/folders.concurrency.test.ts (opposite folder moves):
 * - parallel adds of the same id (document, folder, user group, agent): exactly one
 *   succeeds, the others are told it already exists, and what is stored is the winner's;
 * - parallel grants and revokes of one user on one document (permissions/add|remove,
 *   users/add|delete at document scope): the final state, through users/get and
 *   permissions/get, is the effect of the command the log applied last;
 * - afterwards the read models equal a fresh rebuild from the log.
 *
 * CONCURRENCY_ROUNDS sets the rounds of each (npm test: 20; npm run test:reliability: 200).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { settleCascades } from '../src/http/routes/cascade.js';
import { compareWithRebuild } from './support/rebuild.js';

const ROUNDS = Number(process.env.CONCURRENCY_ROUNDS ?? 20);
const WIDTH = 8;

const S = suite<{ h: Harness; t: Tenant; n: number }>('concurrent writes');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  ctx.n = 0;
});
S.after(async (ctx) => ctx.h.close());

const post = (ctx: { h: Harness; t: Tenant; n: number }, url: string, data: unknown, requestId?: string) =>
  ctx.h.post(url, data, { ...ctx.t.headers, 'x-request-id': requestId ?? `req-${++ctx.n}` });

S(`${ROUNDS} rounds of ${WIDTH} parallel adds of one document id: exactly one succeeds`, async (ctx) => {
  await post(ctx, '/v2/organizations/add', { organizations: [{ organizationId: 'o' }] });
  for (let round = 0; round < ROUNDS; round++) {
    const id = `doc-${round}`;
    const answers = await Promise.all(
      Array.from({ length: WIDTH }, (_, i) => post(ctx, '/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: id, documentName: `name-${i}` }] })),
    );
    const items = answers.map((a) => {
      assert.is(a.status, 200, JSON.stringify(a.body));
      return a.body.result.data[id];
    });
    const winners = items.map((x, i) => (x.success ? i : -1)).filter((i) => i >= 0);
    assert.is(winners.length, 1, `round ${round}: ${JSON.stringify(items)}`);
    for (const x of items) if (!x.success) assert.is(x.message, 'Document already exists');
    const got = await post(ctx, '/v2/organizations/documents/get', { organizationId: 'o', documentIds: [id] });
    assert.equal(got.body.result.data.map((d: any) => d.documentName), [`name-${winners[0]}`]);
  }
  const log = (await ctx.h.services.events.readAll()).filter((e) => e.type === 'DocumentAdded');
  assert.is(log.length, ROUNDS, 'one DocumentAdded per id in the log');
});

S(`${ROUNDS} rounds of parallel adds of one folder, user group and agent id: exactly one each`, async (ctx) => {
  for (let round = 0; round < ROUNDS; round++) {
    const [folders, groups, agents] = await Promise.all([
      Promise.all(Array.from({ length: WIDTH }, (_, i) => post(ctx, '/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: `f-${round}`, folderName: `n${i}` }] }))),
      Promise.all(Array.from({ length: WIDTH }, (_, i) => post(ctx, '/v2/organizations/usergroups/add', { organizationId: 'o', organizationUserGroups: [{ groupId: `g-${round}`, groupName: `n${i}` }] }))),
      Promise.all(Array.from({ length: WIDTH }, (_, i) => post(ctx, '/v2/agents/create', { agentId: `a-${round}`, name: `n${i}` }))),
    ]);
    assert.is(folders.filter((r) => r.body.result?.data[`f-${round}`].success).length, 1, `folders round ${round}: ${JSON.stringify(folders.map((r) => r.body))}`);
    assert.is(groups.filter((r) => r.body.result?.data[`g-${round}`].success).length, 1, `groups round ${round}: ${JSON.stringify(groups.map((r) => r.body))}`);
    assert.is(agents.filter((r) => r.status === 200).length, 1, `agents round ${round}`);
    for (const r of agents) if (r.status !== 200) assert.equal([r.status, r.body.error.status], [409, 'ALREADY_EXISTS']);
    assert.is(agents.find((r) => r.status === 200)!.body.result.data.agentId, `a-${round}`);
    const agent = await post(ctx, '/v2/agents/get', { agentId: `a-${round}` });
    const winner = agent.body.result.data.agent.name as string;
    assert.ok(Array.from({ length: WIDTH }, (_, i) => `n${i}`).includes(winner), `one of the creates won: ${winner}`);
    assert.is(agent.body.result.data.agent.version, 1);
  }
});

type GrantCommand = { kind: 'grant'; role: 'editor' | 'viewer'; via: 'permissions' | 'users' } | { kind: 'revoke'; via: 'permissions' | 'users' };

function commandRequest(c: GrantCommand, o: string, u: string, d: string): [string, unknown] {
  if (c.kind === 'grant' && c.via === 'permissions') return ['/v2/auth/permissions/add', { userId: u, permissions: { resources: [{ type: 'document', id: d, organizationId: o, accessRole: c.role }] } }];
  if (c.kind === 'grant') return ['/v2/users/add', { organizationId: o, documentId: d, users: [{ userId: u, name: 'U', email: 'u@example.com', accessRole: c.role }] }];
  if (c.via === 'permissions') return ['/v2/auth/permissions/remove', { user: { userId: u }, permissions: { resources: [{ type: 'document', id: d, organizationId: o }] } }];
  return ['/v2/users/delete', { organizationId: o, documentId: d, userIds: [u] }];
}

S(`${ROUNDS} rounds of parallel grants and revokes: the final state is the last applied command's`, async (ctx) => {
  const o = 'grants';
  await post(ctx, '/v2/organizations/documents/add', { organizationId: o, createOrganization: true, documents: [{ documentId: 'd', accessType: 'restricted' }] });
  const seen = new Set<string>();
  for (let round = 0; round < ROUNDS; round++) {
    const u = `user-${round % 3}`;
    const commands: GrantCommand[] = Array.from({ length: 6 }, (_, i): GrantCommand =>
      (round + i) % 3 === 0 ? { kind: 'revoke', via: i % 2 ? 'users' : 'permissions' } : { kind: 'grant', role: (round * 7 + i) % 2 ? 'editor' : 'viewer', via: i % 2 ? 'users' : 'permissions' },
    );
    const rid = (i: number) => `grant-${round}-${i}`;
    const answers = await Promise.all(commands.map((c, i) => {
      const [url, data] = commandRequest(c, o, u, 'd');
      return post(ctx, url, data, rid(i));
    }));
    for (const a of answers) assert.is(a.status, 200, JSON.stringify(a.body));
    // The last event this round appended to the (organization, user) grants stream names its command.
    const events = await ctx.h.services.events.readAll();
    const mine = events.filter((e) => e.metadata.requestId.startsWith(`grant-${round}-`) && e.stream.startsWith('grants-'));
    let expected: string | null;
    if (mine.length === 0) {
      expected = null; // only revokes of nothing: no grant before, none after
    } else {
      const last = mine[mine.length - 1]!;
      const c = commands[Number(last.metadata.requestId.split('-')[2])]!;
      expected = c.kind === 'grant' ? c.role : null;
      seen.add(`${c.kind}/${c.via}`);
    }
    const users = await post(ctx, '/v2/users/get', { organizationId: o, documentId: 'd' });
    const row = users.body.result.data.find((r: any) => r.userId === u);
    assert.is(row?.accessRole ?? null, expected, `round ${round}: users/get`);
    const perm = await post(ctx, '/v2/auth/permissions/get', { organizationId: o, userIds: [u], documentIds: ['d'] });
    const entry = perm.body.result.data[u].documents.d;
    if (expected) assert.equal(entry, { accessRole: expected, accessType: 'restricted' }, `round ${round}: permissions/get`);
    else assert.is(entry.errorCode, 'permission_denied', `round ${round}: permissions/get ${JSON.stringify(entry)}`);
  }
  assert.ok(seen.size >= 2, `the last command varied: ${[...seen]}`);
});

S('after all of it, the read models equal a fresh rebuild from the log', async (ctx) => {
  await settleCascades(ctx.h.services);
  await ctx.h.services.projections.catchUp();
  const cmp = await compareWithRebuild(ctx.h.dataDir);
  assert.equal(cmp.diffs, []);
  assert.ok(cmp.collections.documents! > 0 && cmp.collections.grants! > 0, JSON.stringify(cmp.collections));
  // The comparison is not blind: a document changed behind the projections' back shows.
  const [doc] = await ctx.h.services.read.find('documents', {}, { limit: 1 });
  await ctx.h.services.read.transaction((tx) => tx.upsert('documents', { ...doc!, documentName: 'tampered' }));
  const tampered = await compareWithRebuild(ctx.h.dataDir);
  assert.is(tampered.diffs.length, 1, tampered.diffs.join('\n'));
  assert.match(tampered.diffs[0]!, /^documents\/.*tampered/);
});

S.run();
