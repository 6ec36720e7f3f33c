/**
 * Secrets at rest (issue 12): every kind of secret is configured through the API, then the
 * raw SQLite files (events.db, readmodels.db and their WAL files, read as bytes while the
 * service has them open, and again after it closed them) are searched for each secret's clear
 * value: none is there. Control values that are not secrets (a URL, a name) are found in the
 * same bytes, so the search is known to see what was written.
 *
 * The same check runs against the production adapters in their contract suites (the stored
 * events and documents, through the ports): test/contract/secrets-at-rest.contract.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { harness, tempDir } from './support/app.js';
import { configureEverySecret, secretsAtRestContract } from './contract/secrets-at-rest.contract.js';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';

const FILES = ['events.db', 'events.db-wal', 'readmodels.db', 'readmodels.db-wal'];

function scan(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const f of FILES) {
    const p = path.join(dir, f);
    if (fs.existsSync(p)) out.set(f, fs.readFileSync(p));
  }
  return out;
}

test('no secret in clear in events.db, readmodels.db or their WAL files', async () => {
  const h = await harness();
  let closed = false;
  try {
    const run = await configureEverySecret(h.services, (url, data, headers) => h.post(url, data, headers));
    const check = (files: Map<string, Buffer>, when: string) => {
      assert.ok(files.has('events.db') && files.has('readmodels.db'), `${when}: the files exist`);
      const all = Buffer.concat([...files.values()]);
      for (const [name, value] of Object.entries(run.controls)) {
        assert.ok(all.includes(Buffer.from(value)), `${when}: control value ${name} (${value}) not found: the search does not see the data`);
      }
      for (const [name, value] of Object.entries(run.secrets)) {
        for (const [file, bytes] of files) {
          assert.not.ok(bytes.includes(Buffer.from(value)), `${when}: ${name} is in clear in ${file}`);
        }
      }
    };
    const live = scan(h.dataDir);
    assert.ok((live.get('events.db-wal')?.length ?? 0) + (live.get('readmodels.db-wal')?.length ?? 0) > 0, 'the WAL files hold the recent writes');
    check(live, 'while open');
    await h.app.close();
    await h.services.close();
    closed = true;
    check(scan(h.dataDir), 'after closing');
    console.log(`  at rest: ${Object.keys(run.secrets).length} secrets absent from ${FILES.length} files, ${Object.keys(run.controls).length} controls present`);
  } finally {
    if (!closed) await h.close();
    else fs.rmSync(h.dataDir, { recursive: true, force: true });
  }
});

test('sealing is bounded: at most 1000 values at secret positions per agent configuration, refused before anything is stored', async () => {
  const h = await harness();
  try {
    const t = await h.tenant();
    const events = (await h.services.events.readAll()).length;
    const tooMany = await h.post('/v2/agents/create', { name: 'x', contextGathering: { strategyOptions: { list: Array(1001).fill(1) } } }, t.headers);
    assert.is(tooMany.status, 400, JSON.stringify(tooMany.body));
    assert.is(tooMany.body.error.status, 'INVALID_ARGUMENT');
    assert.match(tooMany.body.error.message, /at most 1000 values under contextGathering\.strategyOptions and execution\.mcpServers\[\]\.auth .*got 1001/);
    const update = await h.post('/v2/agents/update', { agentId: 'nope', execution: { mcpServers: [{ name: 's', url: 'https://m.example', auth: { type: 'x', list: Array(1001).fill('v') } }] } }, t.headers);
    assert.is(update.status, 400);
    assert.is((await h.services.events.readAll()).length, events, 'nothing stored');
    const atLimit = await h.post('/v2/agents/create', { agentId: 'a', name: 'x', contextGathering: { strategyOptions: { list: Array(1000).fill(1) } } }, t.headers);
    assert.is(atLimit.status, 200, JSON.stringify(atLimit.body));
    const stored = (await h.services.events.readAll()).at(-1)!;
    assert.ok(JSON.stringify(stored.data).length < 150_000, 'the sealed configuration stays small');
  } finally {
    await h.close();
  }
});

test.run();

secretsAtRestContract('embedded SQLite stores, through the ports', async () => {
  const dir = tempDir('collab-at-rest-');
  return {
    events: new SqliteEventStore(path.join(dir, 'events.db')),
    read: new SqliteReadStore(path.join(dir, 'readmodels.db')),
    cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}).run();
