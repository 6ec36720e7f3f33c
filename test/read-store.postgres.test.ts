/**
 * The read store contract and secrets at rest against a real PostgreSQL server, started for
 * this run (test/support/postgres.ts). Never skipped: without a server the suites fail and say why.
 */
import { PostgresReadStore } from '../src/adapters/postgres-read-store.js';
import { PostgresEventStore } from '../src/adapters/postgres-event-store.js';
import { readStoreContract } from './contract/read-store.contract.js';
import { secretsAtRestContract } from './contract/secrets-at-rest.contract.js';
import { freshDatabase } from './support/postgres.js';

let url = '';
const s = readStoreContract(
  'PostgreSQL (a real server)',
  async () => {
    url = await freshDatabase('rs');
    return new PostgresReadStore(url);
  },
  // A second store on the same database: another process, for the interleaved cases.
  { openPeer: async () => new PostgresReadStore(url) },
);
s.run();

// The same without named (prepared) statements (POSTGRES_PREPARED_STATEMENTS=false).
let unnamedUrl = '';
readStoreContract(
  'PostgreSQL, statements unnamed',
  async () => {
    unnamedUrl = await freshDatabase('rsu');
    return new PostgresReadStore(unnamedUrl, { preparedStatements: false });
  },
  { openPeer: async () => new PostgresReadStore(unnamedUrl, { preparedStatements: false }) },
).run();

// Tables made without index columns, as releases before them made every table (and as a
// table a write creates first still is): the expression indexes and their queries.
let plainUrl = '';
readStoreContract(
  'PostgreSQL, tables without index columns',
  async () => {
    plainUrl = await freshDatabase('rsp');
    return new PostgresReadStore(plainUrl, { indexColumns: false });
  },
  { openPeer: async () => new PostgresReadStore(plainUrl, { indexColumns: false }) },
).run();

// Secrets at rest (issue 12): both ports in one PostgreSQL database, read back through the ports.
secretsAtRestContract('PostgreSQL log + read store (one database)', async () => {
  const db = await freshDatabase('secrets');
  return {
    events: new PostgresEventStore(db),
    read: new PostgresReadStore(db),
    async cleanup() {},
  };
}).run();
