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
} else {
  test.skip('read store contract: MongoDB (set MONGODB_URL=mongodb://host:27017/?replicaSet=rs0 to run it)', () => {});
  test.run();
}
