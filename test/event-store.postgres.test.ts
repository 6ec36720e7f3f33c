/**
 * The event store contract against a real PostgreSQL server, started for this run
 * (test/support/postgres.ts): each test on a database of its own. Never skipped: without a
 * server the suite fails and says why.
 */
import { PostgresEventStore } from '../src/adapters/postgres-event-store.js';
import { eventStoreContract } from './contract/event-store.contract.js';
import { freshDatabase } from './support/postgres.js';

const s = eventStoreContract('PostgreSQL (a real server)', async () => new PostgresEventStore(await freshDatabase('es')));
s.run();
