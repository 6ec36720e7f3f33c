/**
 * The read store contract against MongoDB, whenever MONGODB_URL is set
 * (`npm run test:integration`; docker compose up starts a single-node replica set, which the
 * transaction assertions need). Each run uses a throwaway database, dropped at the end.
 * Without the URL the suite is skipped and counted as skipped.
 */
import { test } from 'uvu';
import { randomUUID } from 'node:crypto';
import { MongoReadStore } from '../src/adapters/mongo-read-store.js';
import { parseMongoUrl } from '../src/adapters/mongo-url.js';
import { readStoreContract } from './contract/read-store.contract.js';
import { secretsAtRestContract } from './contract/secrets-at-rest.contract.js';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { tempDir } from './support/app.js';
import fs from 'node:fs';
import path from 'node:path';

const url = process.env.MONGODB_URL;
if (url) {
  const dbName = `collab_contract_${randomUUID().slice(0, 8)}`;
  const open = async () => new MongoReadStore(url, { dbName });
  // A second store on the same database: another process, for the interleaved cases.
  const s = readStoreContract(`MongoDB (${parseMongoUrl(url).hosts.join(',')}, database ${dbName})`, open, { openPeer: open });
  s.after(async () => {
    const store = new MongoReadStore(url, { dbName });
    await store.dropDatabase();
    await store.close();
  });
  s.run();
  // Secrets at rest (issue 12): what a run stores in MongoDB, read back through the port.
  const secretsDb = `collab_secrets_${randomUUID().slice(0, 8)}`;
  secretsAtRestContract(`SQLite log + MongoDB read store (database ${secretsDb})`, async () => {
    const dir = tempDir('collab-secrets-mongo-');
    return {
      events: new SqliteEventStore(path.join(dir, 'events.db')),
      read: new MongoReadStore(url, { dbName: secretsDb }),
      async cleanup() {
        const store = new MongoReadStore(url, { dbName: secretsDb });
        await store.dropDatabase();
        await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }).run();
} else {
  test.skip('read store contract: MongoDB (set MONGODB_URL=mongodb://host:27017/?replicaSet=rs0 to run it)', () => {});
  test.skip('secrets at rest: MongoDB (set MONGODB_URL to run it)', () => {});
  test.run();
}
