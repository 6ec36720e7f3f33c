/** `collab audit`: histories as readable lines or JSON lines, filtered, on a DATA_DIR the service wrote. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { harness, tempDir, type Tenant } from './support/app.js';
import { ROOT } from './support/process.js';

const dir = tempDir('collab-audit-cli-');
let t: Tenant;
let between = 0;

const cli = (...args: string[]) => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), 'audit', ...args], {
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
    assert.is(r.status, 200, JSON.stringify(r.body));
  };
  await post('/v2/organizations/add', { organizations: [{ organizationId: 'acme' }] });
  await post('/v2/organizations/documents/add', { organizationId: 'acme', documents: [{ documentId: 'd 1"', documentName: 'First' }] });
  // `between` falls strictly between the two writes' times, whatever the clock's resolution (a
  // slow machine only widens the gaps: these pauses cannot make the filters below fail).
  await new Promise((r) => setTimeout(r, 20));
  between = Date.now();
  await new Promise((r) => setTimeout(r, 20));
  await post('/v2/organizations/documents/update', { organizationId: 'acme', documents: [{ documentId: 'd 1"', documentName: 'Second' }] });
  await post('/v2/agents/create', { agentId: 'bot', name: 'Bot' });
  // Stop the service without removing its data: the CLI reads the same folder.
  await h.app.close();
  await h.services.close();
});
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('readable lines of a document history, in order, with metadata', () => {
  const r = cli('--api-key', t.apiKey, '--organization', 'acme', '--document', 'd 1"');
  assert.is(r.code, 0, r.stderr);
  assert.is(r.lines.length, 2);
  assert.match(r.lines[0]!, /^\d{4}-\d\d-\d\dT\S+Z  DocumentAdded  document \["acme","d 1\\""\] rev 0  by apikey:/);
  assert.match(r.lines[0]!, /request \S+/);
  assert.match(r.lines[1]!, /DocumentRenamed .*"documentName":"Second"/);
});

test('JSON lines, the same entries as the endpoint; organization, agent and key histories', () => {
  const org = cli('--api-key', t.apiKey, '--organization', 'acme', '--json');
  assert.is(org.code, 0, org.stderr);
  const entries = org.lines.map((l) => JSON.parse(l));
  assert.equal(entries.map((e) => e.type), ['OrganizationCreated', 'DocumentAdded', 'DocumentRenamed']);
  assert.equal(Object.keys(entries[0]).sort(), ['actor', 'data', 'id', 'position', 'requestId', 'revision', 'stream', 'time', 'type']);
  const agent = cli('--api-key', t.apiKey, '--agent', 'bot', '--json');
  assert.equal(agent.lines.map((l) => JSON.parse(l).type), ['AgentCreated']);
  const key = cli('--api-key', t.apiKey, '--json');
  const keyTypes = key.lines.map((l) => JSON.parse(l).type);
  assert.is(keyTypes[0], 'ApiKeyCreated');
  assert.ok(keyTypes.includes('AgentCreated'));
});

test('filters: time range and event types', () => {
  const since = cli('--api-key', t.apiKey, '--organization', 'acme', '--since', new Date(between).toISOString(), '--json');
  assert.equal(since.lines.map((l) => JSON.parse(l).type), ['DocumentRenamed']);
  const until = cli('--api-key', t.apiKey, '--organization', 'acme', '--until', String(between), '--json');
  assert.equal(until.lines.map((l) => JSON.parse(l).type), ['OrganizationCreated', 'DocumentAdded']);
  const typed = cli('--api-key', t.apiKey, '--type', 'OrganizationCreated,DocumentRenamed', '--json');
  assert.equal(typed.lines.map((l) => JSON.parse(l).type), ['OrganizationCreated', 'DocumentRenamed']);
  const none = cli('--api-key', 'someone-else', '--organization', 'acme');
  assert.is(none.code, 0);
  assert.equal(none.lines, []);
});

test('usage errors exit 2', () => {
  for (const args of [[], ['--api-key', 'k', '--document', 'd'], ['--api-key', 'k', '--since', 'not a time'], ['--api-key', 'k', '--bogus']]) {
    const r = cli(...args);
    assert.is(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /usage:/);
  }
});

test.run();
