/**
 * The change stream across processes (issue 36): under `serve --workers 2` the API processes
 * never apply the projections (the background process does), so a stream wakes on the notices
 * of applied positions (the cluster relay; on PostgreSQL, TEST_STORE=postgres, the store's
 * LISTEN as well), with its poll only as the safety net. Writes go through fresh connections
 * (either API process), streams are open on fresh connections too, and every stream sees
 * every write, in order. SIGTERM with streams open: each gets its final event and the
 * service exits 0 without waiting on them.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import http from 'node:http';
import { postgresEnv, tempDir } from './support/app.js';
import { post, startService, waitHealthy } from './support/process.js';
import { waiter } from './support/wait.js';

const until = waiter(30_000, 50);

/** A stream on a connection of its own: its events as they arrive. */
function openStream(url: string, headers: Record<string, string>) {
  const events: Array<{ id?: string; event: string; data: any }> = [];
  let buffer = '';
  let ended = false;
  const req = http.get(url, { agent: false, headers });
  const status = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      resolve(res.statusCode!);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (data !== undefined) events.push({ id: /^id: (.*)$/m.exec(block)?.[1], event: /^event: (.*)$/m.exec(block)![1]!, data: JSON.parse(data) });
        }
      });
      res.on('end', () => (ended = true));
      res.on('close', () => (ended = true));
    });
    req.on('error', reject);
  });
  return { events, status, ended: () => ended, close: () => req.destroy() };
}

test('serve --workers 2: streams on either API process see every write made through either, in order; SIGTERM ends them and the service exits', async () => {
  const dir = tempDir('collab-stream-workers-');
  const store = process.env.TEST_STORE === 'postgres' ? await postgresEnv() : {};
  // The stream's own poll never fires here: what wakes it is the runner's position moving (the
  // applied notices, or the runner's own reads of the stored checkpoints).
  const s = await startService({ DATA_DIR: dir, ...store, CHANGES_STREAM_POLL_MS: '600000' }, 'src/server.ts', ['--workers', '2']);
  const streams: Array<ReturnType<typeof openStream>> = [];
  try {
    await waitHealthy(s, 60_000);
    const ws = await post(s, '/v2/workspace/create', { ownerEmail: 'stream@example.com' });
    assert.is(ws.status, 200, JSON.stringify(ws.body));
    const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const h = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
    await until('both processes know the key', async () => {
      const rs = await Promise.all([0, 1, 2, 3].map(() => fetch(`${s.url}/v2/organizations/get`, { method: 'POST', headers: { ...h, 'content-type': 'application/json', connection: 'close' }, body: '{"data":{}}' })));
      return rs.every((r) => r.status === 200);
    });
    for (let i = 0; i < 4; i++) streams.push(openStream(`${s.url}/v2/changes/stream`, h));
    for (const st of streams) assert.is(await st.status, 200);
    await post(s, '/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, h);
    for (let i = 0; i < 10; i++) {
      const w = await post(s, '/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: `d${i}` }] }, h);
      assert.is(w.status, 200, JSON.stringify(w.body));
    }
    const want = Array.from({ length: 10 }, (_, i) => `d${i}`);
    const docs = (st: ReturnType<typeof openStream>) => st.events.filter((e) => e.data.type === 'DocumentAdded').map((e) => e.data.resourceId);
    await until(() => `every write on every stream (${streams.map((st) => docs(st).length).join(', ')})`, () => streams.every((st) => docs(st).length === 10));
    for (const st of streams) assert.equal(docs(st), want);
    s.child.kill('SIGTERM');
    const exited = await s.exited;
    assert.is(exited.code, 0, s.output());
    await until('the streams ended', () => streams.every((st) => st.ended()));
    for (const st of streams) {
      const end = st.events.at(-1)!;
      assert.is(end.event, 'end', 'a final event');
      assert.is(end.data.reason, 'shutdown');
    }
  } finally {
    for (const st of streams) st.close();
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill('SIGKILL');
      await s.exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
