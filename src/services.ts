/**
 * The composition root's product: every dependency the HTTP app, the CLI and the tests
 * need, passed in explicitly (no module singletons).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import type { EventStore } from './ports/event-store.js';
import type { ReadStore } from './ports/read-store.js';
import { SqliteEventStore } from './adapters/sqlite-event-store.js';
import { SqliteReadStore } from './adapters/sqlite-read-store.js';
import { EsdbEventStore } from './adapters/esdb-event-store.js';
import { MongoReadStore } from './adapters/mongo-read-store.js';
import { PRESENCE } from './presence/store.js';
import { IDEMPOTENCY_KEYS } from './http/idempotency.js';
import { CommandHandler } from './runtime/command-handler.js';
import { ProjectionRunner, type RunnerLogger } from './runtime/projection-runner.js';
import { allProjections } from '../projections/index.js';
import { WebhookDeliverer, type WebhookOptions } from './webhooks/deliverer.js';
import { CascadeWorker } from './cascade.js';
import { openReadModels } from './ops/read-models.js';
import type { GenerationalReadStore } from './runtime/generations.js';
import { Lease } from './runtime/lease.js';

const silentLogger = { error() {}, warn() {}, info() {} };

export interface Services {
  config: Config;
  events: EventStore;
  read: ReadStore;
  /** The same read store, with its read-model generation controls (src/runtime/generations.ts). */
  generations: GenerationalReadStore;
  commands: CommandHandler;
  projections: ProjectionRunner;
  /** Sends webhooks (src/webhooks/); runs only when the services follow the log. */
  webhooks: WebhookDeliverer;
  /** Appends the per-item events of folder and organization deletions (src/cascade.ts). */
  cascade: CascadeWorker;
  clock: () => number;
  close(): Promise<void>;
}

export interface OpenOptions {
  clock?: () => number;
  logger?: RunnerLogger;
  /** Start following the log (the server does; a one-shot CLI command catches up instead). */
  follow?: boolean;
  /** Webhook delivery: false keeps it from sending even when following; options tune it (tests). */
  webhooks?: boolean | WebhookOptions;
  /**
   * `all` (default): serve and work; `api`: serve only (projections are applied by another
   * process: writes wait for the checkpoints it stores); `worker`: work only. Workers compete
   * for the `projections` and `webhooks` leases: one process applies, another takes over.
   */
  role?: 'all' | 'api' | 'worker';
}

/**
 * Opens the stores named by the configuration, each on its own: EVENTSTORE_URL selects
 * EventStoreDB for the log, MONGODB_URL MongoDB for the read models; whichever is unset is the
 * embedded SQLite file in DATA_DIR.
 */
export async function openServices(config: Config, options: OpenOptions = {}): Promise<Services> {
  if (!config.eventStoreUrl || !config.mongodbUrl) fs.mkdirSync(config.dataDir, { recursive: true });
  const events: EventStore = config.eventStoreUrl
    ? new EsdbEventStore(config.eventStoreUrl, { logger: options.logger })
    : new SqliteEventStore(path.join(config.dataDir, 'events.db'));
  const read: ReadStore = config.mongodbUrl
    ? new MongoReadStore(config.mongodbUrl, { ttlCollections: [PRESENCE, IDEMPOTENCY_KEYS] })
    : new SqliteReadStore(path.join(config.dataDir, 'readmodels.db'));
  try {
    return await assemble(config, events, read, options);
  } catch (error) {
    await events.close().catch(() => undefined);
    await read.close().catch(() => undefined);
    throw error;
  }
}

export async function assemble(
  config: Config,
  events: EventStore,
  read: ReadStore,
  options: OpenOptions = {},
): Promise<Services> {
  const generations = await openReadModels(read, allProjections);
  read = generations;
  const api = options.role === 'api';
  const commands = new CommandHandler(events);
  const projections = new ProjectionRunner(events, read, allProjections, {
    logger: options.logger,
    observe: api,
    lease: api ? undefined : new Lease(read, 'projections', { ttlMs: config.leaseTtlMs, logger: options.logger }),
  });
  await projections.init();
  if (options.follow !== false) projections.start();
  const clock = options.clock ?? Date.now;
  const webhookOptions = typeof options.webhooks === 'object' ? options.webhooks : {};
  const webhooks = new WebhookDeliverer(events, read, commands, clock, {
    logger: options.logger,
    lease: new Lease(read, 'webhooks', { ttlMs: config.leaseTtlMs, logger: options.logger }),
    ...webhookOptions,
  });
  if (options.follow !== false && options.webhooks !== false && !api) {
    await webhooks.init();
    webhooks.start();
  }
  const cascade = new CascadeWorker(events, read, commands, projections, clock, options.logger ?? silentLogger);
  if (options.follow !== false && !api) cascade.start();
  let closed = false;
  return {
    config,
    events,
    read,
    generations,
    commands,
    projections,
    webhooks,
    cascade,
    clock,
    async close() {
      if (closed) return;
      closed = true;
      await cascade.stop();
      await webhooks.stop();
      await projections.stop();
      await events.close();
      await read.close();
    },
  };
}
