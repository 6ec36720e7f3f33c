/**
 * The read store contract and secrets at rest against a real PostgreSQL server, started for
 * this run (test/support/postgres.ts). Never skipped: without a server the suites fail and say why.
 */
import { PostgresReadStore, type PostgresReadStoreOptions } from '../src/adapters/postgres-read-store.js';
import { PostgresEventStore } from '../src/adapters/postgres-event-store.js';
import { readStoreContract } from './contract/read-store.contract.js';
import { secretsAtRestContract } from './contract/secrets-at-rest.contract.js';
import { freshDatabase } from './support/postgres.js';

/**
 * The contract on a fresh database per case with stores opened with `options`; the peer is a
 * second store on the same database (another process, for the interleaved cases).
 */
function contractOn(name: string, prefix: string, options: PostgresReadStoreOptions = {}) {
  let url = '';
  readStoreContract(
    name,
    async () => {
      url = await freshDatabase(prefix);
      return new PostgresReadStore(url, options);
    },
    { openPeer: async () => new PostgresReadStore(url, options) },
  ).run();
}

contractOn('PostgreSQL (a real server)', 'rs');
// The same without named (prepared) statements (POSTGRES_PREPARED_STATEMENTS=false).
contractOn('PostgreSQL, statements unnamed', 'rsu', { preparedStatements: false });
// Tables made without index columns, as releases before them made every table (and as a
// table a write creates first still is): the expression indexes and their queries.
contractOn('PostgreSQL, tables without index columns', 'rsp', { indexColumns: false });

// Secrets at rest (issue 12): both ports in one PostgreSQL database, read back through the ports.
secretsAtRestContract('PostgreSQL log + read store (one database)', async () => {
  const db = await freshDatabase('secrets');
  return {
    events: new PostgresEventStore(db),
    read: new PostgresReadStore(db),
    async cleanup() {},
  };
}).run();
