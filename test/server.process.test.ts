/**
 * The real process: starts on an empty DATA_DIR, survives kill -9 without losing an
 * acknowledged write, shuts down cleanly on SIGTERM, refuses bad configuration by name.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import http from 'node:http';
import { tempDir } from './support/app.js';
import { logLines, post, SERVE_ARGS, startService, waitHealthy } from './support/process.js';
import { waiter } from './support/wait.js';

const until = waiter(20_000, 10);

test('kill -9 right after acknowledged writes: after a restart every one of them is there', async () => {
  const dir = tempDir('collab-crash-');
  try {
    let s = await startService({ DATA_DIR: dir }, 'src/server.ts', SERVE_ARGS);
    await waitHealthy(s);
    const ws = await post(s, '/v2/workspace/create', { ownerEmail: 'crash@example.com' });
    assert.is(ws.status, 200);
    const w = ws.body.result.data;
    const wsHeaders = { 'x-service-workspace-id': w.id, 'x-service-workspace-auth-token': w.authToken };
    // Several keys in flight at once, then kill -9 the moment the last one is acknowledged.
    const keys = await Promise.all(
      Array.from({ length: 5 }, () => post(s, '/v2/workspace/apikey/create', { ownerEmail: 'o@example.com', type: 'testing', createAuthToken: true }, wsHeaders)),
    );
    for (const k of keys) assert.is(k.status, 200);
    s.child.kill('SIGKILL');
    assert.is((await s.exited).signal, 'SIGKILL');

    s = await startService({ DATA_DIR: dir }, 'src/server.ts', SERVE_ARGS);
    await waitHealthy(s);
    for (const k of keys) {
      const tokens = await post(s, '/v2/workspace/authtokens/get', { apiKey: k.body.result.data.apiKey }, wsHeaders);
      assert.is(tokens.status, 200, JSON.stringify(tokens.body));
      assert.is(tokens.body.result.data.authTokens.length, 1);
      // The key and its token work on an API-key route after the restart.
      const keyHeaders = { 'x-service-api-key': k.body.result.data.apiKey, 'x-service-auth-token': k.body.result.data.authToken };
      const agents = await post(s, '/v2/agents/get', {}, keyHeaders);
      assert.is(agents.status, 200, JSON.stringify(agents.body));
    }
    const ready = await fetch(`${s.url}/readyz`);
    assert.is(ready.status, 200);
    s.child.kill('SIGTERM');
    assert.is((await s.exited).code, 0, s.output());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('SIGTERM: finishes the request in flight, then exits 0', async () => {
  const dir = tempDir('collab-term-');
  try {
    const s = await startService({ DATA_DIR: dir, LOG_LEVEL: 'info' }, 'src/server.ts', SERVE_ARGS);
    await waitHealthy(s);
    // In flight for certain, not after a guess of how long it takes to arrive: the headers and
    // half the body are sent, the server has logged the request (it waits for the rest), and
    // the rest is sent only once the process handling it has begun shutting down.
    const body = JSON.stringify({ data: { ownerEmail: 'term@example.com' } });
    const req = http.request(`${s.url}/v2/workspace/create`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-request-id': 'in-flight' },
    });
    const inflight = new Promise<{ status: number; text: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    req.write(body.slice(0, 10));
    let pid = 0;
    await until('the server to log the request', () => {
      pid = logLines(s).find((l) => l.reqId === 'in-flight' && l.msg === 'incoming request')?.pid ?? 0;
      return pid !== 0;
    });
    s.child.kill('SIGTERM');
    await until('the process with the request to begin shutting down', () => logLines(s).some((l) => l.pid === pid && l.msg === 'shutting down'));
    req.end(body.slice(10));
    const res = await inflight;
    assert.is(res.status, 200, res.text);
    const { code } = await s.exited;
    assert.is(code, 0, s.output());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('bad configuration stops the start with a message naming the variable', async () => {
  const s = await startService({ DATA_DIR: tempDir('collab-cfg-'), LOG_LEVEL: 'chatty' }, 'src/server.ts', SERVE_ARGS);
  const { code } = await s.exited;
  assert.is(code, 2);
  assert.match(s.output(), /LOG_LEVEL: must be one of/);
});

test('NODE_ENV=production without ADMIN_TOKEN: the server refuses to start (exit 2, naming ADMIN_TOKEN and OPEN_SIGNUP)', async () => {
  const env = { DATA_DIR: tempDir('collab-cfg-'), NODE_ENV: 'production', ADMIN_TOKEN: '' };
  const s = await startService(env, 'src/server.ts', SERVE_ARGS);
  const { code } = await s.exited;
  assert.is(code, 2);
  assert.match(s.output(), /ADMIN_TOKEN: is required to serve with NODE_ENV=production/);
  assert.match(s.output(), /OPEN_SIGNUP=1/);
});

test.run();
