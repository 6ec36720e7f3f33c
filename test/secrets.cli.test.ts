/**
 * Rotation and deletion through the CLI as an operator runs it (`bin/collab.mjs`), beside a
 * running server on the same DATA_DIR: the server honours each change at its next request.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { tempDir } from './support/app.js';
import { ROOT, post, startService, waitHealthy } from './support/process.js';
import { loadConfig } from '../src/config/config.js';
import { openServices } from '../src/composition/services.js';
import { verifyUserToken } from '../src/usecases/user-tokens.js';
import { MASTER_KEY_FILE } from '../src/secrets/store.js';

const cli = (dir: string, ...args: string[]) => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'collab.mjs'), ...args], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dir, SECRETS_KEY: '' },
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};
const json = (r: { code: number | null; stdout: string; stderr: string }) => {
  assert.is(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
};
const kidOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid as string;

/** Which of `tokens` the stores (opened as another process would) still accept. */
async function accepted(dir: string, tokens: string[]): Promise<boolean[]> {
  const s = await openServices(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }), { follow: false, webhooks: false });
  try {
    await s.projections.catchUp();
    return await Promise.all(tokens.map((t) => verifyUserToken(s, t).then(() => true, () => false)));
  } finally {
    await s.close();
  }
}

test('workspace rotate-token, apikey rotate-signing-key [--revoke-previous], apikey delete, with a server running', async () => {
  const dir = tempDir('collab-secrets-cli-');
  const s = await startService({ DATA_DIR: dir, SECRETS_KEY: '' });
  try {
    await waitHealthy(s);
    const ws = json(cli(dir, 'workspace', 'create', '--email', 'ops@example.com'));
    assert.ok(fs.existsSync(path.join(dir, MASTER_KEY_FILE)), 'the master key file is in DATA_DIR');
    const [apiKey, key] = Object.entries(ws.apiKeyList)[0] as [string, { authToken: string }];
    const wsHeaders = { 'x-service-workspace-id': ws.id, 'x-service-workspace-auth-token': ws.authToken };
    const keyHeaders = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
    const token = async () => {
      const r = await post(s, '/v2/auth/generate_token', { userId: 'u', userProperties: { name: 'U', email: 'u@example.com' } }, keyHeaders);
      assert.is(r.status, 200, JSON.stringify(r.body));
      return r.body.result.data.token as string;
    };

    // The workspace auth token.
    const rotated = json(cli(dir, 'workspace', 'rotate-token', ws.id));
    assert.is(rotated.workspaceId, ws.id);
    assert.is((await post(s, '/v2/workspace/authtokens/get', { apiKey }, wsHeaders)).status, 403, 'the old workspace token stops');
    const newWsHeaders = { ...wsHeaders, 'x-service-workspace-auth-token': rotated.authToken };
    assert.is((await post(s, '/v2/workspace/authtokens/get', { apiKey }, newWsHeaders)).status, 200);

    // The signing key: old tokens stay valid, new ones carry the new kid.
    const t1 = await token();
    const r1 = json(cli(dir, 'apikey', 'rotate-signing-key', apiKey));
    assert.equal(r1.revokedKids, []);
    const t2 = await token();
    assert.is(kidOf(t2), r1.kid);
    assert.is.not(kidOf(t1), r1.kid);
    assert.equal(await accepted(dir, [t1, t2]), [true, true]);
    // ... and with --revoke-previous, every earlier token stops.
    const r2 = json(cli(dir, 'apikey', 'rotate-signing-key', apiKey, '--revoke-previous'));
    assert.equal([...r2.revokedKids].sort(), [kidOf(t1), kidOf(t2)].sort());
    const t3 = await token();
    assert.is(kidOf(t3), r2.kid);
    assert.equal(await accepted(dir, [t1, t2, t3]), [false, false, true]);

    // Deletion: the server refuses the key's credentials at once.
    const del = json(cli(dir, 'apikey', 'delete', apiKey));
    assert.equal(del, { apiKey, deleted: true });
    assert.is((await post(s, '/v2/agents/get', {}, keyHeaders)).status, 403);
    assert.is((await post(s, '/v2/workspace/authtokens/get', { apiKey }, newWsHeaders)).status, 404);
    assert.equal(await accepted(dir, [t3]), [false]);
    // Again: the read models no longer know the key; naming the workspace finishes it anyway.
    const again = cli(dir, 'apikey', 'delete', apiKey);
    assert.is(again.code, 1);
    assert.match(again.stderr, /NOT_FOUND: API key not found/);
    assert.equal(json(cli(dir, 'apikey', 'delete', apiKey, '--workspace', ws.id)), { apiKey, deleted: true });
    // Its history stays for audit, the deletion included, with no secret in it.
    const audit = cli(dir, 'audit', '--api-key', apiKey, '--json');
    assert.is(audit.code, 0, audit.stderr);
    const types = audit.stdout.trim().split('\n').map((l) => JSON.parse(l).type);
    assert.ok(types.includes('ApiKeyTokenSigningKeyRotated') && types.includes('ApiKeyDeleted'), types.join(','));
    assert.not.ok(audit.stdout.includes('enc:v1:'));

    // Usage errors.
    const usage = cli(dir, 'apikey', 'rotate-signing-key');
    assert.is(usage.code, 2);
    assert.match(usage.stderr, /takes exactly one API key/);
    assert.is(cli(dir, 'apikey', 'frobnicate', apiKey).code, 2);
    assert.is(cli(dir, 'apikey', 'delete', apiKey, '--revoke-previous').code, 2);
    const missing = cli(dir, 'workspace', 'rotate-token', 'no-such-workspace');
    assert.is(missing.code, 1);
    assert.match(missing.stderr, /NOT_FOUND: Workspace not found/);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
