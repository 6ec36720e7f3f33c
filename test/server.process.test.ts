/**
 * The real process: starts on an empty DATA_DIR, survives kill -9 without losing an
 * acknowledged write, shuts down cleanly on SIGTERM, refuses bad configuration by name.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import { tempDir } from './support/app.js';
import { post, SERVE_ARGS, startService, waitHealthy } from './support/process.js';

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
    const s = await startService({ DATA_DIR: dir }, 'src/server.ts', SERVE_ARGS);
    await waitHealthy(s);
    const inflight = post(s, '/v2/workspace/create', { ownerEmail: 'term@example.com' });
    await new Promise((r) => setTimeout(r, 5));
    s.child.kill('SIGTERM');
    const res = await inflight;
    assert.ok(res.status === 200 || res.status === 503, `status ${res.status}`);
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
