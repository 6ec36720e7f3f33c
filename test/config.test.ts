import { test } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { ConfigError, DEFAULT_REGIONS, loadConfig } from '../src/config.js';

const failsOn = (env: Record<string, string>, variable: string) => {
  try {
    loadConfig(env);
  } catch (e) {
    assert.instance(e, ConfigError);
    assert.is((e as ConfigError).variable, variable);
    assert.ok((e as Error).message.startsWith(`${variable}:`), (e as Error).message);
    return;
  }
  assert.unreachable(`${JSON.stringify(env)} was accepted`);
};

test('defaults', () => {
  const c = loadConfig({});
  assert.is(c.port, 8080);
  assert.is(c.host, '0.0.0.0');
  assert.is(c.dataDir, path.resolve('./data'));
  assert.is(c.eventStoreUrl, undefined);
  assert.is(c.mongodbUrl, undefined);
  assert.is(c.adminToken, undefined);
  assert.is(c.logLevel, 'info');
  assert.equal(c.regions, DEFAULT_REGIONS);
  assert.is(c.backgroundThread, true);
});

test('values are read', () => {
  const c = loadConfig({
    PORT: '9000',
    HOST: '127.0.0.1',
    DATA_DIR: '/tmp/x',
    EVENTSTORE_URL: 'esdb://localhost:2113?tls=false',
    MONGODB_URL: 'mongodb://localhost:27017/collab',
    SECRETS_KEY: 'ab'.repeat(32),
    ADMIN_TOKEN: 'a-long-enough-admin-token',
    LOG_LEVEL: 'debug',
    REGIONS: 'usa, europe',
    BACKGROUND_THREAD: 'false',
  });
  assert.is(c.port, 9000);
  assert.is(c.host, '127.0.0.1');
  assert.is(c.dataDir, '/tmp/x');
  assert.is(c.eventStoreUrl, 'esdb://localhost:2113?tls=false');
  assert.is(c.mongodbUrl, 'mongodb://localhost:27017/collab');
  assert.is(c.adminToken, 'a-long-enough-admin-token');
  assert.is(c.logLevel, 'debug');
  assert.equal(c.regions, ['usa', 'europe']);
  assert.is(c.backgroundThread, false);
  assert.equal(Buffer.from(c.secretsKey!), Buffer.alloc(32, 0xab));
  assert.is(loadConfig({ BACKGROUND_THREAD: '1' }).backgroundThread, true);
});

test('SECRETS_KEY: base64 (either alphabet) or hex, 32 bytes; required with both production stores; never echoed', () => {
  const bytes = Buffer.from(Array.from({ length: 32 }, (_, i) => 250 - i));
  assert.equal(Buffer.from(loadConfig({ SECRETS_KEY: bytes.toString('base64') }).secretsKey!), bytes);
  assert.equal(Buffer.from(loadConfig({ SECRETS_KEY: bytes.toString('base64url') }).secretsKey!), bytes);
  assert.equal(Buffer.from(loadConfig({ SECRETS_KEY: ` ${bytes.toString('hex')}\n` }).secretsKey!), bytes);
  assert.is(loadConfig({}).secretsKey, undefined);
  assert.is(loadConfig({ EVENTSTORE_URL: 'esdb://h:2113' }).secretsKey, undefined, 'one production store: the key file in DATA_DIR will do');
  failsOn({ EVENTSTORE_URL: 'esdb://h:2113', MONGODB_URL: 'mongodb://h/db' }, 'SECRETS_KEY');
  for (const bad of ['short', bytes.subarray(0, 31).toString('base64'), bytes.toString('hex').slice(1), `${bytes.toString('base64')}xx`]) {
    failsOn({ SECRETS_KEY: bad }, 'SECRETS_KEY');
    try {
      loadConfig({ SECRETS_KEY: bad });
    } catch (e) {
      assert.not.ok((e as Error).message.includes(bad), 'the value is not echoed');
    }
  }
});

test('bad values fail fast naming the variable', () => {
  failsOn({ PORT: 'eighty' }, 'PORT');
  failsOn({ PORT: '70000' }, 'PORT');
  failsOn({ PORT: '-1' }, 'PORT');
  failsOn({ LOG_LEVEL: 'loud' }, 'LOG_LEVEL');
  failsOn({ EVENTSTORE_URL: 'not a url' }, 'EVENTSTORE_URL');
  failsOn({ EVENTSTORE_URL: 'http://localhost:2113' }, 'EVENTSTORE_URL');
  failsOn({ MONGODB_URL: 'postgres://x' }, 'MONGODB_URL');
  failsOn({ ADMIN_TOKEN: 'short' }, 'ADMIN_TOKEN');
  failsOn({ REGIONS: 'usa,,europe' }, 'REGIONS');
  failsOn({ REGIONS: 'Mars Base' }, 'REGIONS');
  failsOn({ BODY_LIMIT_BYTES: '10' }, 'BODY_LIMIT_BYTES');
  failsOn({ READ_YOUR_WRITES_TIMEOUT_MS: 'soon' }, 'READ_YOUR_WRITES_TIMEOUT_MS');
  failsOn({ BACKGROUND_THREAD: 'yes' }, 'BACKGROUND_THREAD');
});

test.run();
