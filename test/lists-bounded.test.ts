/**
 * Every list paged or bounded (issue 22):
 * - agents/get without `groupId` is paged like the other lists: built-ins, then custom
 *   agents, every row once, internal agents left out, pageSize counted in rows;
 * - folders/get with `folderId` answers at most MAX_SUBTREE_FOLDERS folders nested, and
 *   refuses a larger subtree naming maxDepth (it answered the whole subtree at once).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Response } from './support/app.js';
import { BUILT_IN_AGENTS } from '../commands/agent-catalogue.js';
import { MAX_SUBTREE_FOLDERS } from '../queries/folders.js';

const ok = (r: Response, where = '') => {
  assert.is(r.status, 200, `${where} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body.result;
};
const refused = (r: Response, message: RegExp, where = '') => {
  assert.is(r.status, 400, `${where} ${JSON.stringify(r.body).slice(0, 300)}`);
  assert.is(r.body.error.status, 'INVALID_ARGUMENT', where);
  assert.match(r.body.error.message, message, where);
};

const A = suite('lists: agents/get pages');
A.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  ctx.custom = [] as string[];
  for (let i = 0; i < 7; i++) {
    const agentId = `custom-${i}`;
    ok(await ctx.h.post('/v2/agents/create', { agentId, name: `Custom ${i}`, execution: {}, ...(i === 3 ? { metadata: { internal: true } } : {}) }, ctx.t.headers));
    if (i !== 3) ctx.custom.push(agentId);
  }
});
A.after(async (ctx) => ctx.h.close());

async function walk(ctx: any, query: Record<string, unknown>) {
  const pages: string[][] = [];
  let pageToken: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const r = ok(await ctx.h.post('/v2/agents/get', { ...query, ...(pageToken ? { pageToken } : {}) }, ctx.t.headers), JSON.stringify(query));
    pages.push(r.data.agents.map((a: { id: string }) => a.id));
    pageToken = r.pageToken;
    if (!pageToken) return pages;
  }
  throw new Error('paging never ended');
}

A('pages of pageSize rows, built-ins first, every agent once, internal ones left out', async (ctx) => {
  const builtIns = BUILT_IN_AGENTS.map((a) => a.id);
  const everything = [...builtIns, ...ctx.custom];
  const whole = await walk(ctx, {});
  assert.equal(whole, [everything], 'the default page holds them all, as the hosted answer');
  for (const pageSize of [1, 2, 4, builtIns.length, builtIns.length + 1]) {
    const pages = await walk(ctx, { pageSize });
    assert.equal(pages.flat(), everything, `pageSize ${pageSize}`);
    // The internal agent takes a place in its page without being shown.
    assert.ok(pages.every((p) => p.length <= pageSize), `pageSize ${pageSize}: ${JSON.stringify(pages)}`);
    assert.ok(pages.length >= Math.ceil(everything.length / pageSize), `pageSize ${pageSize}: paged`);
  }
  assert.equal((await walk(ctx, { filter: 'customOnly', pageSize: 2 })).flat(), ctx.custom);
  assert.equal((await walk(ctx, { filter: 'defaultOnly', pageSize: 2 })).flat(), builtIns);
  const exact = await walk(ctx, { filter: 'defaultOnly', pageSize: builtIns.length });
  assert.equal(exact, [builtIns], 'no empty page after a page that ends the list');
});

A('a token is for its own list: another filter, a group\'s list or a garbled one is refused', async (ctx) => {
  const first = ok(await ctx.h.post('/v2/agents/get', { pageSize: 1 }, ctx.t.headers));
  assert.type(first.pageToken, 'string');
  refused(await ctx.h.post('/v2/agents/get', { filter: 'customOnly', pageToken: first.pageToken }, ctx.t.headers), /data\.pageToken/);
  ok(await ctx.h.post('/v2/agents/groups/create', { name: 'g', agentIds: ['custom-0'] }, ctx.t.headers));
  const groups = ok(await ctx.h.post('/v2/agents/groups/list', {}, ctx.t.headers)).data;
  const groupId = (groups.groups ?? groups)[0].id;
  refused(await ctx.h.post('/v2/agents/get', { groupId, pageToken: first.pageToken }, ctx.t.headers), /data\.pageToken/);
  assert.equal(ok(await ctx.h.post('/v2/agents/get', { groupId }, ctx.t.headers)).data.agents.map((a: { id: string }) => a.id), ['custom-0']);
  refused(await ctx.h.post('/v2/agents/get', { pageToken: 'nope' }, ctx.t.headers), /data\.pageToken/);
  refused(await ctx.h.post('/v2/agents/get', { pageSize: 1001 }, ctx.t.headers), /data\.pageSize must be at most 1000/);
});

A.run();

const F = suite('lists: folders/get with folderId is bounded');
F.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  ok(await ctx.h.post('/v2/organizations/add', { organizations: [{ organizationId: 'o', organizationName: 'o' }] }, ctx.t.headers));
  ok(await ctx.h.post('/v2/organizations/folders/add', { organizationId: 'o', folders: [{ folderId: 'top' }, { folderId: 'mid', parentFolderId: 'top' }] }, ctx.t.headers));
});
F.after(async (ctx) => ctx.h.close());

const add = async (ctx: any, parentFolderId: string, prefix: string, n: number) => {
  for (let from = 0; from < n; from += 1000) {
    const folders = Array.from({ length: Math.min(1000, n - from) }, (_, i) => ({ folderId: `${prefix}${from + i}`, parentFolderId }));
    ok(await ctx.h.post('/v2/organizations/folders/add', { organizationId: 'o', folders }, ctx.t.headers));
  }
};

F('a subtree of exactly the limit is answered; one folder more, at any depth, is refused naming maxDepth', async (ctx) => {
  // top, mid, and under mid the rest of the limit: MAX_SUBTREE_FOLDERS folders in all.
  await add(ctx, 'mid', 'leaf', MAX_SUBTREE_FOLDERS - 2);
  const get = (maxDepth: number) => ctx.h.post('/v2/organizations/folders/get', { organizationId: 'o', folderId: 'top', maxDepth }, ctx.t.headers);
  const [row] = ok(await get(2)).data;
  assert.is(row.subFolders.length, 1);
  assert.is(row.subFolders[0].subFolders.length, MAX_SUBTREE_FOLDERS - 2, 'the whole subtree, at the limit');
  await add(ctx, 'leaf0', 'deep', 1);
  assert.is(ok(await get(2)).data[0].subFolders[0].subFolders.length, MAX_SUBTREE_FOLDERS - 2, 'the folder past the limit is below maxDepth');
  refused(await get(3), new RegExp(`more than ${MAX_SUBTREE_FOLDERS} folders down to data\\.maxDepth 3`), 'one over');
  refused(await get(1000), /data\.maxDepth/, 'a deep maxDepth');
  // The flat list pages them all.
  const first = ok(await ctx.h.post('/v2/organizations/folders/get', { organizationId: 'o', pageSize: 1000 }, ctx.t.headers));
  assert.is(first.data.length, 1000);
  const rest = ok(await ctx.h.post('/v2/organizations/folders/get', { organizationId: 'o', pageSize: 1000, pageToken: first.pageToken }, ctx.t.headers));
  assert.is(rest.data.length, 1);
});

F.run();
