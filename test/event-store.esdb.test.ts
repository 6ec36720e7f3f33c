/**
 * The event store contract against EventStoreDB, whenever EVENTSTORE_URL is set
 * (`npm run test:integration`; docker compose up starts one). Without it the suite is skipped
 * and counted as skipped, so a run never claims it passed.
 */
import { test } from 'uvu';
import { describeEventStoreUrl } from '../src/adapters/esdb-connection-string.js';
import { EsdbEventStore } from '../src/adapters/esdb-event-store.js';
import { eventStoreContract } from './contract/event-store.contract.js';

const url = process.env.EVENTSTORE_URL;
if (url) {
  // Not `new URL(url).host`: a cluster's seed list (esdb://a:2113,b:2113) is no WHATWG URL.
  eventStoreContract(`EventStoreDB (${describeEventStoreUrl(url)})`, async () => new EsdbEventStore(url)).run();
} else {
  test.skip('event store contract: EventStoreDB (set EVENTSTORE_URL=esdb://host:2113?tls=false to run it)', () => {});
  test.run();
}
