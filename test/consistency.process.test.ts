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

/** Every request completed so far, by request id: the pid that answered it and its status (pino's lines). */
function completions(s: Service): Map<string, { pid: number; status: number }> {
  const done = new Map<string, { pid: number; status: number }>();
  for (const line of s.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const l = JSON.parse(line) as { msg?: string; reqId?: string; pid?: number; res?: { statusCode?: number } };
      if (l.msg === 'request completed' && l.reqId && typeof l.pid === 'number') done.set(l.reqId, { pid: l.pid, status: l.res?.statusCode ?? 0 });
    } catch {
      /* a line still being written */
    }
  }
  return done;
}

/** The pid that completed each named request, waiting for the log lines to arrive. */
async function servedBy(s: Service, ids: string[]): Promise<Map<string, number>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const done = completions(s);
    const pids = new Map(ids.filter((id) => done.has(id)).map((id) => [id, done.get(id)!.pid] as const));
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
