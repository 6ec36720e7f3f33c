import { test } from 'uvu';
import * as assert from 'uvu/assert';
import path from 'node:path';
import { checkServing, ConfigError, DEFAULT_REGIONS, loadConfig } from '../src/config/config.js';

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
  // No ADMIN_TOKEN: sign-up is open, so only this machine reaches it unless HOST says otherwise.
  assert.is(c.host, '127.0.0.1');
  assert.is(c.dataDir, path.resolve('./data'));
  assert.is(c.eventStoreUrl, undefined);
  assert.is(c.mongodbUrl, undefined);
  assert.is(c.adminToken, undefined);
  assert.is(c.logLevel, 'info');
  assert.equal(c.regions, DEFAULT_REGIONS);
  assert.is(c.backgroundThread, true);
  assert.is(c.folderMaxDepth, 100);
  assert.is(c.accessIndexEntries, 500_000);
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
    FOLDER_MAX_DEPTH: '250',
    ACCESS_INDEX_ENTRIES: '0',
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
  assert.is(c.accessIndexEntries, 0);
  assert.equal(Buffer.from(c.secretsKey!), Buffer.alloc(32, 0xab));
  assert.is(loadConfig({ BACKGROUND_THREAD: '1' }).backgroundThread, true);
});

test('the change stream: its bounds by default and as set; a heartbeat must come before the idle connection timeout', () => {
  const c = loadConfig({});
  assert.equal([c.changesStreamMaxPerTenant, c.changesStreamHeartbeatMs, c.changesStreamStallMs, c.changesStreamPollMs], [100, 15_000, 30_000, 1000]);
  const set = loadConfig({ CHANGES_STREAM_MAX_PER_TENANT: '5', CHANGES_STREAM_HEARTBEAT_MS: '2000', CHANGES_STREAM_STALL_MS: '500', CHANGES_STREAM_POLL_MS: '50' });
  assert.equal([set.changesStreamMaxPerTenant, set.changesStreamHeartbeatMs, set.changesStreamStallMs, set.changesStreamPollMs], [5, 2000, 500, 50]);
  failsOn({ CHANGES_STREAM_MAX_PER_TENANT: '0' }, 'CHANGES_STREAM_MAX_PER_TENANT');
  failsOn({ CHANGES_STREAM_HEARTBEAT_MS: '60000' }, 'CHANGES_STREAM_HEARTBEAT_MS');
  assert.is(loadConfig({ CHANGES_STREAM_HEARTBEAT_MS: '60000', CONNECTION_TIMEOUT_MS: '0' }).changesStreamHeartbeatMs, 60_000, 'no idle timeout: any heartbeat');
  failsOn({ CHANGES_STREAM_STALL_MS: 'soon' }, 'CHANGES_STREAM_STALL_MS');
  failsOn({ CHANGES_STREAM_POLL_MS: '1' }, 'CHANGES_STREAM_POLL_MS');
});

test('history and audit retention: keep everything by default; whole days, 0 to 36500', () => {
  const c = loadConfig({});
  assert.equal([c.historyRetentionDays, c.auditRetentionDays], [0, 0]);
  const set = loadConfig({ HISTORY_RETENTION_DAYS: '365', AUDIT_RETENTION_DAYS: '0' });
  assert.equal([set.historyRetentionDays, set.auditRetentionDays], [365, 0]);
  for (const variable of ['HISTORY_RETENTION_DAYS', 'AUDIT_RETENTION_DAYS']) {
    failsOn({ [variable]: '-1' }, variable);
    failsOn({ [variable]: '36501' }, variable);
    failsOn({ [variable]: '30d' }, variable);
  }
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
  failsOn({ FOLDER_MAX_DEPTH: '0' }, 'FOLDER_MAX_DEPTH');
  failsOn({ FOLDER_MAX_DEPTH: '1001' }, 'FOLDER_MAX_DEPTH');
  failsOn({ FOLDER_MAX_DEPTH: 'deep' }, 'FOLDER_MAX_DEPTH');
  failsOn({ ACCESS_INDEX_ENTRIES: '-1' }, 'ACCESS_INDEX_ENTRIES');
  failsOn({ ACCESS_INDEX_ENTRIES: 'many' }, 'ACCESS_INDEX_ENTRIES');
});

test('the edge: timeouts, connection cap, sign-up limit, idempotency bound, proxy trust', () => {
  const c = loadConfig({});
  assert.is(c.requestTimeoutMs, 30_000);
  assert.is(c.headersTimeoutMs, 10_000);
  assert.is(c.keepAliveTimeoutMs, 72_000);
  assert.is(c.connectionTimeoutMs, 60_000);
  assert.is(c.maxConnections, 1000);
  assert.is(c.signupRatePerMinute, 10);
  assert.is(c.signupBurst, 5);
  assert.is(c.idempotencyMaxResponseBytes, 262_144);
  assert.is(c.trustProxy, false);
  // A short request timeout pulls the headers timeout's default down with it, and a long
  // one pushes the idle-connection timeout's up.
  assert.is(loadConfig({ REQUEST_TIMEOUT_MS: '5000' }).headersTimeoutMs, 5000);
  assert.is(loadConfig({ REQUEST_TIMEOUT_MS: '120000' }).connectionTimeoutMs, 240_000);
  assert.is(loadConfig({ READ_YOUR_WRITES_TIMEOUT_MS: '60000' }).connectionTimeoutMs, 90_000);
  assert.is(loadConfig({ CONNECTION_TIMEOUT_MS: '0' }).connectionTimeoutMs, 0);
  // PostgreSQL's statement timeout follows the request timeout unless set; 0 leaves it to the server.
  assert.is(c.statementTimeoutMs, 30_000);
  assert.is(loadConfig({ REQUEST_TIMEOUT_MS: '5000' }).statementTimeoutMs, 5000);
  assert.is(loadConfig({ STATEMENT_TIMEOUT_MS: '0' }).statementTimeoutMs, 0);
  failsOn({ STATEMENT_TIMEOUT_MS: '-1' }, 'STATEMENT_TIMEOUT_MS');
  failsOn({ STATEMENT_TIMEOUT_MS: 'soon' }, 'STATEMENT_TIMEOUT_MS');
  // Prepared statements unless a pooler in transaction mode cannot carry them.
  assert.is(c.postgresPreparedStatements, true);
  assert.is(loadConfig({ POSTGRES_PREPARED_STATEMENTS: 'false' }).postgresPreparedStatements, false);
  failsOn({ POSTGRES_PREPARED_STATEMENTS: 'maybe' }, 'POSTGRES_PREPARED_STATEMENTS');
  assert.is(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
  assert.is(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
  assert.is(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
  assert.equal(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.5,loopback,::1,fd00::/8' }).trustProxy, ['10.0.0.0/8', '192.168.1.5', 'loopback', '::1', 'fd00::/8']);
  failsOn({ REQUEST_TIMEOUT_MS: '0' }, 'REQUEST_TIMEOUT_MS');
  failsOn({ HEADERS_TIMEOUT_MS: '40000' }, 'HEADERS_TIMEOUT_MS');
  failsOn({ CONNECTION_TIMEOUT_MS: '30000' }, 'CONNECTION_TIMEOUT_MS');
  failsOn({ CONNECTION_TIMEOUT_MS: '40000', READ_YOUR_WRITES_TIMEOUT_MS: '50000' }, 'CONNECTION_TIMEOUT_MS');
  failsOn({ KEEP_ALIVE_TIMEOUT_MS: '10' }, 'KEEP_ALIVE_TIMEOUT_MS');
  failsOn({ MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS');
  failsOn({ SIGNUP_RATE_PER_MINUTE: 'ten' }, 'SIGNUP_RATE_PER_MINUTE');
  failsOn({ SIGNUP_BURST: '0' }, 'SIGNUP_BURST');
  failsOn({ IDEMPOTENCY_MAX_RESPONSE_BYTES: '-1' }, 'IDEMPOTENCY_MAX_RESPONSE_BYTES');
  failsOn({ TRUST_PROXY: 'yes' }, 'TRUST_PROXY');
  failsOn({ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY');
  failsOn({ TRUST_PROXY: '10.0.0.1,,10.0.0.2' }, 'TRUST_PROXY');
  failsOn({ TRUST_PROXY: '101' }, 'TRUST_PROXY');
});


test('host: loopback without ADMIN_TOKEN, every interface with it, HOST wins either way', () => {
  assert.is(loadConfig({}).host, '127.0.0.1');
  assert.is(loadConfig({ ADMIN_TOKEN: 'a-long-enough-admin-token' }).host, '0.0.0.0');
  assert.is(loadConfig({ HOST: '0.0.0.0' }).host, '0.0.0.0');
  assert.is(loadConfig({ HOST: '127.0.0.1', ADMIN_TOKEN: 'a-long-enough-admin-token' }).host, '127.0.0.1');
});

test('serving under NODE_ENV=production needs ADMIN_TOKEN or OPEN_SIGNUP=1; the CLI does not', () => {
  const refused = loadConfig({ NODE_ENV: 'production' });
  try {
    checkServing(refused);
    assert.unreachable('production without ADMIN_TOKEN was served');
  } catch (e) {
    assert.instance(e, ConfigError);
    assert.is((e as ConfigError).variable, 'ADMIN_TOKEN');
    assert.match((e as Error).message, /OPEN_SIGNUP=1/);
  }
  checkServing(loadConfig({ NODE_ENV: 'production', ADMIN_TOKEN: 'a-long-enough-admin-token' }));
  checkServing(loadConfig({ NODE_ENV: 'production', OPEN_SIGNUP: '1' }));
  checkServing(loadConfig({}));
  failsOn({ OPEN_SIGNUP: 'maybe' }, 'OPEN_SIGNUP');
  failsOn({ METRICS_OPEN: 'maybe' }, 'METRICS_OPEN');
});

test.run();
