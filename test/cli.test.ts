/**
 * The CLI as a user runs it (`bin/collab.mjs`), on the same DATA_DIR a server then uses.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { tempDir } from './support/app.js';
import { ROOT, post, startService, waitHealthy } from './support/process.js';

const cli = (dir: string, ...args: string[]) => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), ...args], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dir },
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

test('workspace create, workspace set, then the server honours the settings', async () => {
  const dir = tempDir('collab-cli-');
  try {
    const created = cli(dir, 'workspace', 'create', '--email', 'ops@example.com', '--workspace-name', 'Ops');
    assert.is(created.code, 0, created.stderr);
    const ws = JSON.parse(created.stdout);
    assert.is(ws.name, 'Ops');
    assert.type(ws.authToken, 'string');

    const set = cli(dir, 'workspace', 'set', ws.id, '--plan', 'paid', '--production-keys', 'on', '--max-production-keys', '1');
    assert.is(set.code, 0, set.stderr);
    assert.equal(JSON.parse(set.stdout), { workspaceId: ws.id, plan: 'paid', productionKeysEnabled: true, maxProductionKeys: 1 });

    const s = await startService({ DATA_DIR: dir });
    try {
      await waitHealthy(s);
      const headers = { 'x-service-workspace-id': ws.id, 'x-service-workspace-auth-token': ws.authToken };
      const body = { ownerEmail: 'ops@example.com', type: 'production' };
      assert.is((await post(s, '/v2/workspace/apikey/create', body, headers)).status, 200);
      const second = await post(s, '/v2/workspace/apikey/create', body, headers);
      assert.is(second.status, 429);
      assert.is(second.body.error.status, 'RESOURCE_EXHAUSTED');
    } finally {
      s.child.kill('SIGTERM');
      await s.exited;
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('usage errors exit 2 with the usage; an unknown workspace exits 1', () => {
  const dir = tempDir('collab-cli-');
  try {
    const none = cli(dir, 'workspace', 'create');
    assert.is(none.code, 2);
    assert.match(none.stderr, /--email/);
    assert.match(none.stderr, /usage:/);
    const badPlan = cli(dir, 'workspace', 'set', 'w', '--plan', 'gold');
    assert.is(badPlan.code, 2);
    assert.match(badPlan.stderr, /--plan must be free or paid/);
    const unknownFlag = cli(dir, 'workspace', 'create', '--email', 'a@b.co', '--colour', 'red');
    assert.is(unknownFlag.code, 2);
    const missing = cli(dir, 'workspace', 'set', 'no-such-workspace', '--plan', 'paid');
    assert.is(missing.code, 1);
    assert.match(missing.stderr, /NOT_FOUND: Workspace not found/);
    const unknown = cli(dir, 'frobnicate');
    assert.is(unknown.code, 2);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
