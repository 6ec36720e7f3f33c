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

test('a malformed value names POSTGRES_URL and never repeats the password', () => {
  for (const bad of ['mysql://u:hunter2pw@h/db', 'postgres://u:hunter2pw@/db', 'postgres://u:hunter2pw@h:5432', 'postgres://u:hunter2pw@h:5432/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem']) {
    const m = refused({ POSTGRES_URL: bad, SECRETS_KEY: KEY });
    assert.match(m, /POSTGRES_URL/, bad);
    assert.not.match(m, /hunter2pw/, `${bad}: ${m}`);
  }
});

test.run();
