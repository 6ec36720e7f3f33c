/**
 * Drop-in for clients of the hosted API (issue 14), workspace, agents and presence: every
 * request example of the hosted docs for the endpoints served here, kept as data in
 * test/fixtures/hosted/{workspace,agents,presence}/, runs through app.inject and must answer
 * with the documented status, message (character for character) and shape, except the
 * deliberate differences of docs/compatibility.md, which the fixtures encode as such.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { harness, type Harness } from './support/app.js';
import { loadFixtures, matchShape, runFixture } from './support/hosted-fixtures.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'hosted');
const fixtures = loadFixtures(ROOT, ['workspace', 'agents', 'presence']);

const S = suite<{ h: Harness }>('hosted API fixtures: workspace, agents, presence');
S.before(async (ctx) => {
  ctx.h = await harness();
});
S.after(async (ctx) => ctx.h.close());

S('the fixtures cover every endpoint of these areas that the service serves', () => {
  const endpoints = new Set(fixtures.map((f) => f.fixture.endpoint));
  for (const e of [
    '/v2/workspace/create',
    '/v2/workspace/apikey/create',
    '/v2/workspace/authtokens/get',
    '/v2/workspace/authtoken/reset',
    '/v2/workspace/emailconfig/update',
    '/v2/workspace/webhookconfig/update',
    '/v2/workspace/domains/add',
    '/v2/workspace/domains/delete',
    '/v2/workspace/domains/get',
    '/v2/workspace/get',
    '/v2/workspace/apikeys/get',
    '/v2/workspace/apikey/update',
    '/v2/workspace/apikeyconfig/get',
    '/v2/workspace/apikeyconfig/update',
    '/v2/workspace/emailconfig/get',
    '/v2/workspace/webhookconfig/get',
    '/v2/workspace/advancedwebhookconfig/get',
    '/v2/workspace/advancedwebhookconfig/update',
    '/v2/workspace/advancedwebhook/endpoints/create',
    '/v2/workspace/advancedwebhook/endpoints/update',
    '/v2/workspace/advancedwebhook/endpoints/delete',
    '/v2/workspace/advancedwebhook/endpoints/get',
    '/v2/workspace/advancedwebhook/endpoints/secret/get',
    '/v2/agents/create',
    '/v2/agents/update',
    '/v2/agents/delete',
    '/v2/agents/get',
    '/v2/agents/groups/create',
    '/v2/agents/groups/update',
    '/v2/agents/groups/delete',
    '/v2/agents/groups/get',
    '/v2/agents/groups/list',
    '/v2/agents/groups/add-agents',
    '/v2/agents/groups/remove-agents',
    '/v2/presence/add',
    '/v2/presence/update',
    '/v2/presence/delete',
    '/v2/presence/get',
  ]) {
    assert.ok(endpoints.has(e), `no fixture for ${e}`);
  }
});

// The matcher itself must be able to fail, or a fixture proves nothing.
S('the shape matcher refuses what does not match', () => {
  // uvu's assert.throws passes its own assertion errors on, so the refusal is caught here.
  const refuses = (actual: unknown, shape: unknown) => {
    let refused = false;
    try {
      matchShape(actual, shape, 'x');
    } catch {
      refused = true;
    }
    assert.ok(refused, `${JSON.stringify(actual)} must not match ${JSON.stringify(shape)}`);
  };
  refuses({ a: 1 }, { a: 'string' });
  refuses({}, { a: 'string' });
  refuses({ a: 'x', b: 1 }, { a: 'string', $only: true });
  refuses({ a: 'x' }, { a: { $eq: 'y' } });
  refuses([1, 'x'], { $arrayOf: 'number' });
  refuses({ k1: { t: 1 } }, { $values: { t: 'string' } });
  refuses({ k1: {}, k2: {} }, { $count: 1 });
  refuses({ a: 1 }, { $absent: ['a'] });
  refuses(null, 'number');
  matchShape({ a: 'x', b: null, c: [1], k: { z: { t: 's' } } }, { a: 'string', b: 'number|null', c: { $arrayOf: 'number' }, d: 'string?', k: { $values: { t: 'string' }, $count: 1 } }, 'x');
});

for (const { file, fixture } of fixtures) {
  S(`${file}: ${fixture.cases.length} documented example(s) of ${fixture.endpoint} answer as documented`, async ({ h }) => {
    const checked = await runFixture(h, fixture, file);
    assert.ok(checked >= fixture.cases.length, `${file}: every case checked`);
  });
}

S.run();
