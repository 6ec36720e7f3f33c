/**
 * Consistency tokens under `serve --workers 2` (issue 36): writes answer without waiting for
 * the read models (READ_YOUR_WRITES_TIMEOUT_MS=0), each on a connection of its own, so the
 * cluster hands writes and reads to either API process; a read carrying the write's token
 * always sees the write, whichever process serves it, while the background process applies
 * the projections. Which process answered is read from the log (as workers.process does).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { tempDir } from './support/app.js';
import { fresh, logLines, post, servedBy, startService, waitHealthy, type Service } from './support/process.js';

/** Every request completed so far, by request id: the pid that answered it and its status (pino's lines). */
function completions(s: Service): Map<string, { pid: number; status: number }> {
  const done = new Map<string, { pid: number; status: number }>();
  for (const l of logLines(s)) if (l.msg === 'request completed' && typeof l.reqId === 'string' && typeof l.pid === 'number') done.set(l.reqId, { pid: l.pid, status: l.res?.statusCode ?? 0 });
  return done;
}

test('serve --workers 2: a write through one API process, read with its token through another, always shows the write', async () => {
  const dir = tempDir('collab-consistency-workers-');
  const s = await startService({ DATA_DIR: dir, LOG_LEVEL: 'info', READ_YOUR_WRITES_TIMEOUT_MS: '0', CONSISTENCY_WAIT_MS: '10000' }, 'src/server.ts', ['--workers', '2']);
  try {
    await waitHealthy(s, 60_000);
    const ws = await post(s, '/v2/workspace/create', { ownerEmail: 'tokens@example.com' });
    assert.is(ws.status, 200, JSON.stringify(ws.body));
    const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const h = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
    // The key's credentials are read from the read models, and on a loaded machine the second
    // API process may start listening seconds after the first: wait until both have answered
    // it (the condition the rounds below need), not for a number of tries.
    const ready = Date.now() + 60_000;
    for (let i = 0; ; i++) {
      await fresh(s, '/v2/organizations/get', {}, h, `auth-${i}`);
      const answered = new Set([...completions(s)].filter(([id, c]) => id.startsWith('auth-') && c.status === 200).map(([, c]) => c.pid));
      if (answered.size === 2) break;
      assert.ok(Date.now() < ready, `both API processes did not answer the key within 60 s:\n${s.output()}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    const org = await fresh(s, '/v2/organizations/add', { organizations: [{ organizationId: 'o' }] }, h, 'org');
    assert.is(org.status, 200, JSON.stringify(org.body));
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const w = await fresh(s, '/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: `d${i}` }] }, { ...h, 'x-consistency-token': org.token! }, `w${i}`);
      assert.is(w.status, 200, JSON.stringify(w.body));
      assert.type(w.token, 'string');
      const r = await fresh(s, '/v2/organizations/documents/get', { organizationId: 'o', documentIds: [`d${i}`] }, { ...h, 'x-consistency-token': w.token! }, `r${i}`);
      assert.is(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.result.data.map((d: { id: string }) => d.id), [`d${i}`], `round ${i}`);
      ids.push(`w${i}`, `r${i}`);
    }
    const pids = await servedBy(s, ids);
    assert.is(new Set(pids.values()).size, 2, 'both API processes answered');
    let crossed = 0;
    for (let i = 0; i < 20; i++) if (pids.get(`w${i}`) !== undefined && pids.get(`w${i}`) !== pids.get(`r${i}`)) crossed++;
    assert.ok(crossed > 0, 'some reads were served by another process than their write');
    s.child.kill('SIGTERM');
    assert.is((await s.exited).code, 0, s.output());
  } finally {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill('SIGKILL');
      await s.exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
