/**
 * Property-based fuzzing of every route the app serves (found from allRoutes, so a new
 * route is fuzzed the day it lands). Bodies are generated from the route's own field names
 * with hostile values: wrong types, nulls, huge and unicode strings, deep nesting, operator
 * objects like {"$gt": ""}, prototype keys, long arrays. Properties:
 * - never a 5xx, always the envelope (result.status "success" or error.status + message);
 * - a refused request (4xx) leaves the event log exactly as it was;
 * - the process stays healthy.
 *
 * FUZZ_RUNS sets the runs per route (npm test: 25; npm run test:reliability: 300).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { harness, type Harness, type Tenant } from './support/app.js';
import { allRoutes } from '../src/app.js';
import { settleCascades } from '../src/http/routes/cascade.js';
import { bodyFor } from './support/fuzz.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 25);

const S = suite<{ h: Harness; t: Tenant }>('fuzz: every route');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
  // Something to find: an organization, a folder, a document, a user.
  const post = (r: string, d: unknown) => ctx.h.post(r, d, ctx.t.headers);
  await post('/v2/organizations/add', { organizations: [{ organizationId: 'org' }] });
  await post('/v2/organizations/folders/add', { organizationId: 'org', folders: [{ folderId: 'f' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'org', folderId: 'f', documents: [{ documentId: 'd' }] });
  await post('/v2/users/add', { organizationId: 'org', users: [{ userId: 'u', name: 'U', email: 'u@example.com' }] });
});
S.after(async (ctx) => ctx.h.close());

S(`every route, ${RUNS} generated bodies each: envelope, no 5xx, refusals change nothing`, async ({ h, t }) => {
  const routes = allRoutes(h.services);
  assert.ok(routes.length >= 4);
  // Real ids, a missing one, and names that live on Object.prototype.
  const ids = fc.constantFrom('org', 'f', 'd', 'u', 'nope', t.apiKey, '__proto__', 'constructor', 'toString', 'hasOwnProperty');
  let cases = 0;
  for (const route of routes) {
    const headers = route.auth === 'workspace' ? t.workspaceHeaders : t.headers;
    await fc.assert(
      fc.asyncProperty(bodyFor(route.schema, ids), async (body) => {
        cases++;
        // A deletion answered earlier may still be appending its per-item events.
        await settleCascades(h.services);
        const before = await h.services.events.headPosition();
        const res = await h.app.inject({ method: 'POST', url: route.path, payload: JSON.stringify(body), headers: { ...headers, 'content-type': 'application/json' } });
        const where = `${route.path} ${JSON.stringify(body).slice(0, 300)} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
        assert.ok(res.statusCode < 500, where);
        const parsed = JSON.parse(res.body);
        if (res.statusCode === 200) {
          assert.is(parsed.result?.status, 'success', where);
          assert.type(parsed.result.message, 'string', where);
        } else {
          assert.type(parsed.error?.status, 'string', where);
          assert.type(parsed.error?.message, 'string', where);
          // folders/delete's missing folder is its own shape ({ code, message }) by the spec.
          assert.is(await h.services.events.headPosition(), before, `refused request changed the log: ${where}`);
        }
      }),
      { numRuns: RUNS, endOnFailure: true, includeErrorInReport: true },
    );
  }
  const health = await h.app.inject({ method: 'GET', url: '/healthz' });
  assert.is(health.statusCode, 200);
  console.log(`  fuzz: ${cases} cases over ${routes.length} routes`);
});

S('prototype keys never reach an object prototype', async ({ h, t }) => {
  for (const route of allRoutes(h.services)) {
    const res = await h.raw(route.path, '{"data":{"__proto__":{"polluted":true},"organizationId":"org"}}', t.headers);
    assert.ok(res.status < 500);
  }
  assert.is(({} as any).polluted, undefined);
});

S.run();
