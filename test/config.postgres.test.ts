/** POSTGRES_URL in the configuration (issue 23): checked at start, messages naming the variable, the password never echoed. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../src/config/config.js';

const KEY = Buffer.alloc(32, 7).toString('base64');
const refused = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
};

test('a valid connection string selects PostgreSQL, TLS options included', () => {
  const c = loadConfig({ POSTGRES_URL: 'postgres://collab:s3cret@db.internal:5432/collab?sslmode=verify-full', SECRETS_KEY: KEY });
  assert.is(c.postgresUrl, 'postgres://collab:s3cret@db.internal:5432/collab?sslmode=verify-full');
  assert.is(loadConfig({}).postgresUrl, undefined);
});

test('both stores on PostgreSQL: SECRETS_KEY is required (every process shares one master key)', () => {
  const m = refused({ POSTGRES_URL: 'postgres://collab@db:5432/collab' });
  assert.match(m, /SECRETS_KEY/);
  assert.match(m, /POSTGRES_URL/);
});

test('several hosts (failover by URL, as libpq writes them): each host checked, target_session_attrs read-write, primary or any', () => {
  const url = 'postgres://collab:pw@db1:5432,db2:5433/collab?target_session_attrs=read-write&sslmode=disable';
  assert.is(loadConfig({ POSTGRES_URL: url, SECRETS_KEY: KEY }).postgresUrl, url);
  assert.match(refused({ POSTGRES_URL: 'postgres://collab:pw@db1:5432,db2:5433/collab?target_session_attrs=standby', SECRETS_KEY: KEY }), /target_session_attrs=standby/);
  assert.match(refused({ POSTGRES_URL: 'postgres://collab:pw@db1:5432,/collab', SECRETS_KEY: KEY }), /POSTGRES_URL/);
});

test('POSTGRES_LISTEN_URL (a direct connection for LISTEN behind a pooler) is checked as POSTGRES_URL is, and named; POSTGRES_POOL_SIZE is bounded', () => {
  const base = { POSTGRES_URL: 'postgres://collab:pw@pgbouncer:6432/collab', SECRETS_KEY: KEY };
  assert.is(loadConfig(base).postgresListenUrl, undefined);
  assert.is(loadConfig({ ...base, POSTGRES_LISTEN_URL: 'postgres://collab:pw@db:5432/collab' }).postgresListenUrl, 'postgres://collab:pw@db:5432/collab');
  const m = refused({ ...base, POSTGRES_LISTEN_URL: 'postgres://collab:hunter2pw@db:5432' });
  assert.match(m, /POSTGRES_LISTEN_URL/);
  assert.not.match(m, /hunter2pw/);
  assert.is(loadConfig(base).postgresPoolSize, 10);
  assert.is(loadConfig({ ...base, POSTGRES_POOL_SIZE: '4' }).postgresPoolSize, 4);
  assert.match(refused({ ...base, POSTGRES_POOL_SIZE: '0' }), /POSTGRES_POOL_SIZE/);
});

test('POSTGRES_REPLICA_URLS: standbys separated by commas or spaces, each checked as POSTGRES_URL is, named by its place, never echoed; unset: none', () => {
  const base = { POSTGRES_URL: 'postgres://collab:pw@db:5432/collab', SECRETS_KEY: KEY };
  assert.equal(loadConfig(base).postgresReplicaUrls, []);
  assert.is(loadConfig(base).postgresReplicaMaxLagMs, 5000);
  const two = loadConfig({ ...base, POSTGRES_REPLICA_URLS: ' postgres://collab:pw@s1:5432/collab, postgres://collab:pw@s2:5432/collab\npostgres://collab:pw@s3:5432/collab ', POSTGRES_REPLICA_MAX_LAG_MS: '2000' });
  assert.equal(two.postgresReplicaUrls, ['postgres://collab:pw@s1:5432/collab', 'postgres://collab:pw@s2:5432/collab', 'postgres://collab:pw@s3:5432/collab']);
  assert.is(two.postgresReplicaMaxLagMs, 2000);
  for (const bad of ['postgres://collab:hunter2pw@s1:5432', 'mysql://collab:hunter2pw@s1/collab', 'postgres://collab:hunter2pw@s1:5432,s2:5432/collab']) {
    const m = refused({ ...base, POSTGRES_REPLICA_URLS: `postgres://collab:pw@s0:5432/collab ${bad}` });
    assert.match(m, /POSTGRES_REPLICA_URLS \(entry 2 of/, `${bad}: ${m}`);
    assert.not.match(m, /hunter2pw/, `${bad}: ${m}`);
  }
  assert.match(refused({ ...base, POSTGRES_REPLICA_URLS: 'postgres://c@s1/collab,postgres://c@s1/collab' }), /twice/);
  assert.match(refused({ POSTGRES_REPLICA_URLS: 'postgres://c@s1/collab' }), /POSTGRES_REPLICA_URLS: needs POSTGRES_URL/);
  assert.match(refused({ ...base, MONGODB_URL: 'mongodb://m:27017/collab', POSTGRES_REPLICA_URLS: 'postgres://c@s1/collab' }), /needs POSTGRES_URL/);
  assert.match(refused({ ...base, POSTGRES_REPLICA_MAX_LAG_MS: '10' }), /POSTGRES_REPLICA_MAX_LAG_MS/);
});

test('a malformed value names POSTGRES_URL and never repeats the password', () => {
  for (const bad of ['mysql://u:hunter2pw@h/db', 'postgres://u:hunter2pw@/db', 'postgres://u:hunter2pw@h:5432', 'postgres://u:hunter2pw@h:5432/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem']) {
    const m = refused({ POSTGRES_URL: bad, SECRETS_KEY: KEY });
    assert.match(m, /POSTGRES_URL/, bad);
    assert.not.match(m, /hunter2pw/, `${bad}: ${m}`);
  }
});

test.run();
