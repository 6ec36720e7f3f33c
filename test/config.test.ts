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
  assert.is(c.folderMaxDepth, 100);
});

test('values are read', () => {
  const c = loadConfig({
    PORT: '9000',
    HOST: '127.0.0.1',
    DATA_DIR: '/tmp/x',
    EVENTSTORE_URL: 'esdb://localhost:2113?tls=false',
    MONGODB_URL: 'mongodb://localhost:27017/collab',
    ADMIN_TOKEN: 'a-long-enough-admin-token',
    LOG_LEVEL: 'debug',
    REGIONS: 'usa, europe',
    BACKGROUND_THREAD: 'false',
    FOLDER_MAX_DEPTH: '250',
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
  assert.is(c.folderMaxDepth, 250);
  assert.is(loadConfig({ BACKGROUND_THREAD: '1' }).backgroundThread, true);
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
  failsOn({ FOLDER_MAX_DEPTH: '0' }, 'FOLDER_MAX_DEPTH');
  failsOn({ FOLDER_MAX_DEPTH: '1001' }, 'FOLDER_MAX_DEPTH');
  failsOn({ FOLDER_MAX_DEPTH: 'deep' }, 'FOLDER_MAX_DEPTH');
});

test.run();
