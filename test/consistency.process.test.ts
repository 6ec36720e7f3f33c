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
import http from 'node:http';
import { tempDir } from './support/app.js';
import { post, startService, waitHealthy, type Service } from './support/process.js';

/** One request on a connection of its own (no keep-alive pool), so the cluster hands each one out anew. */
function fresh(s: Service, route: string, data: unknown, headers: Record<string, string>, requestId: string) {
  const body = JSON.stringify({ data });
  return new Promise<{ status: number; body: any; token: string | undefined }>((resolve, reject) => {
    const req = http.request(`${s.url}${route}`, {
      method: 'POST',
      agent: false,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        const token = res.headers['x-consistency-token'];
        resolve({ status: res.statusCode!, body: JSON.parse(text), token: typeof token === 'string' ? token : undefined });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The pid that completed each named request (pino's `pid`), waiting for the log lines to arrive. */
async function servedBy(s: Service, ids: string[]): Promise<Map<string, number>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const pids = new Map<string, number>();
    for (const line of s.output().split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const l = JSON.parse(line) as { msg?: string; reqId?: string; pid?: number };
        if (l.msg === 'request completed' && l.reqId && ids.includes(l.reqId) && typeof l.pid === 'number') pids.set(l.reqId, l.pid);
      } catch {
        /* a line still being written */
      }
    }
    if (pids.size === ids.length || Date.now() > deadline) return pids;
    await new Promise((r) => setTimeout(r, 50));
  }
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
    // The key's credentials are read from the read models: wait until both processes know it.
    for (let i = 0; i < 200; i++) {
      const r = await fresh(s, '/v2/organizations/get', {}, h, `auth-${i}`);
      if (r.status === 200) break;
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
