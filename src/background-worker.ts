/**
 * The worker thread's side of src/runtime/background.ts: opens the services as `--role
 * worker` on the same store files (its own connections) and runs projections, webhook
 * delivery and cascades until told to stop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from './config/config.js';
import { LOG_START, decorateEventStore, type EventStore, type LogPosition } from './ports/event-store.js';
import { openServices } from './composition/services.js';
import type { FromThread, ToThread } from './runtime/background.js';
import type { RunnerLogger } from './runtime/projection-runner.js';

const port = parentPort;
if (!port) throw new Error('background-worker runs only as a worker thread');
const { config, leaseHolder } = workerData as { config: Config; leaseHolder: string };

const post = (m: FromThread) => port.postMessage(m);

/** Log lines go to the main thread's logger; anything that cannot be cloned is sent as text. */
const send = (level: 'error' | 'warn' | 'info') => (obj: unknown, msg?: string) => {
  try {
    post({ type: 'log', level, obj, msg });
  } catch {
    post({ type: 'log', level, obj: String(obj), msg });
  }
};
const logger: RunnerLogger = { error: send('error'), warn: send('warn'), info: send('info') };

/**
 * The thread's event store, told by the main thread when the log grows: followers subscribe
 * through `onAppended`, and the thread's own store only notifies for appends made here.
 */
function withMainThreadAppends(events: EventStore): { events: EventStore; appended(): void } {
  const listeners = new Set<(position: LogPosition) => void>();
  const wrapped = decorateEventStore(events, {
    onAppended(listener) {
      listeners.add(listener);
      const off = events.onAppended(listener);
      return () => {
        listeners.delete(listener);
        off();
      };
    },
  });
  return {
    events: wrapped,
    appended() {
      // The position is not sent: every follower reads on from its own checkpoint anyway.
      for (const l of listeners) l(LOG_START);
    },
  };
}

let appended = () => {};
const services = await openServices(config, {
  role: 'worker',
  logger,
  leaseHolder,
  decorateEvents: (events) => {
    const w = withMainThreadAppends(events);
    appended = w.appended;
    return w.events;
  },
  onApplied: (position) => post({ type: 'applied', position }),
  // Smaller transactions than catching up would use: the requests whose events are in the
  // first part of a burst are answered after that part, and their clients' next requests
  // keep the main thread busy while this one applies the rest. With 1000, ten concurrent
  // batches of 100 documents ran in lockstep: the main thread appended all ten, then idled
  // while this thread applied them in one transaction, then the other way round
  // (11k documents/s with each thread half idle; 15-17k with 100-250).
  batchSize: 250,
});

port.on('message', (m: ToThread) => {
  switch (m.type) {
    case 'appended':
      appended();
      return;
    case 'settle':
      // A rebuild may have switched the read-model generation from another thread or process
      // a moment ago; settle against the live one, not the one this thread last looked at.
      services.generations
        .refresh()
        .then(() => services.cascade.settle())
        .then(
        () => post({ type: 'settled', id: m.id }),
        (err: Error) => post({ type: 'settled', id: m.id, error: err.message }),
      );
      return;
    case 'stop':
      // process.exit in a worker thread ends the thread only; it is explicit because handles
      // that are not ours (the loader's message port) would keep the thread alive.
      services.close().then(
        () => {
          post({ type: 'stopped' });
          process.exit(0);
        },
        (err) => {
          logger.error({ err }, 'background thread did not close cleanly');
          process.exit(1);
        },
      );
      return;
  }
});
post({ type: 'ready' });
