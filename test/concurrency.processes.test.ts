/**
 * Two service processes on one DATA_DIR (issue 7.4 across processes): parallel adds of the
 * same document id, spread over both, still give exactly one success per id (the append's
 * expected revision decides, not a process's cached state), no 5xx, and the read models of
 * the data folder equal a fresh rebuild from the log.
 *
 * CONCURRENCY_ROUNDS sets the rounds (npm test: 20; npm run test:reliability: 200).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { tempDir } from './support/app.js';
import { post, SERVE_ARGS, startService, waitHealthy, type Service } from './support/process.js';
import { compareWithRebuild } from './support/rebuild.js';
import { waiter } from './support/wait.js';

const ROUNDS = Number(process.env.CONCURRENCY_ROUNDS ?? 20);

/** Polls until `check` passes (the other process picks up new events within ~0.5 s). */
const until = waiter(15_000, 50);

test(`two processes, ${ROUNDS} rounds of 8 parallel adds of one document id: exactly one succeeds`, async () => {
  const dir = tempDir('collab-two-');
  const procs: Service[] = [];
  try {
    procs.push(await startService({ DATA_DIR: dir }, 'src/server.ts', SERVE_ARGS));
    procs.push(await startService({ DATA_DIR: dir }, 'src/server.ts', SERVE_ARGS));
    await Promise.all(procs.map((p) => waitHealthy(p)));
    const [a, b] = procs as [Service, Service];
    const ws = await post(a, '/v2/workspace/create', { ownerEmail: 'two@example.com' });
    const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const h = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
    assert.is((await post(a, '/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, h)).status, 200);
    await until('the second process to see the organization', async () => (await post(b, '/v2/organizations/documents/get', { organizationId: 'o' }, h)).status === 200);
    for (let round = 0; round < ROUNDS; round++) {
      const id = `d${round}`;
      const rs = await Promise.all(
        Array.from({ length: 8 }, (_, i) => post(procs[i % 2]!, '/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: id, documentName: `n${i}` }] }, h)),
      );
      for (const r of rs) assert.is(r.status, 200, JSON.stringify(r.body));
      const items = rs.map((r) => r.body.result.data[id]);
      assert.is(items.filter((x) => x.success).length, 1, `round ${round}: ${JSON.stringify(items)}`);
      for (const x of items) if (!x.success) assert.is(x.message, 'Document already exists');
    }
    for (const p of procs) {
      await until('both processes to catch up', async () => (await fetch(`${p.url}/readyz`)).status === 200);
      const docs = await post(p, '/v2/organizations/documents/get', { organizationId: 'o' }, h);
      assert.is(docs.body.result.data.length, ROUNDS);
    }
    for (const p of procs) {
      p.child.kill('SIGTERM');
      assert.is((await p.exited).code, 0, p.output());
    }
    const cmp = await compareWithRebuild(dir);
    assert.equal(cmp.diffs, []);
  } finally {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
