/**
 * The composition root's product: every dependency the HTTP app, the CLI and the tests
 * need, passed in explicitly (no module singletons).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/config.js';
import type { EventStore, LogPosition } from '../ports/event-store.js';
import { readCheckpoints, type ReadStore } from '../ports/read-store.js';
import type { ReplicaSet } from '../adapters/postgres-replicas.js';
import { SqliteEventStore } from '../adapters/sqlite-event-store.js';
import { SqliteReadStore } from '../adapters/sqlite-read-store.js';
import { PRESENCE } from '../presence/store.js';
import { IDEMPOTENCY_KEYS } from '../runtime/idempotency.js';
import { CommandHandler } from '../runtime/command-handler.js';
import { forkLanes, ProjectionRunner, type RunnerLogger } from '../runtime/projection-runner.js';
import { allProjections } from '../../projections/index.js';
import { WebhookDeliverer, type WebhookOptions } from '../webhooks/deliverer.js';
import { egressPolicyOf } from '../adapters/egress.js';
import { CascadeWorker } from '../jobs/cascade.js';
import { RetentionJob } from '../jobs/retention.js';
import { openReadModels, SHARED_COLLECTIONS } from '../ops/read-models.js';
import { attachAccessIndex } from '../../queries/access-index.js';
import type { GenerationalReadStore } from '../runtime/generations.js';
import { Lease } from '../runtime/lease.js';
import { BackgroundThread } from '../runtime/background.js';
import { shareLogReads } from '../runtime/shared-log-reads.js';
import { openSecretStore, type SecretStore } from '../secrets/store.js';
import { installPageTokenKey } from '../../queries/paging.js';

const silentLogger = { error() {}, warn() {}, info() {} };

export interface Services {
  config: Config;
  events: EventStore;
  read: ReadStore;
  /** The same read store, with its read-model generation controls (src/runtime/generations.ts). */
  generations: GenerationalReadStore;
  commands: CommandHandler;
  /** Seals and opens the secrets tenants configure; shreds a deleted API key's (src/secrets/store.ts). */
  secrets: SecretStore;
  projections: ProjectionRunner;
  /** Sends webhooks (src/webhooks/); runs only when the services follow the log. */
  webhooks: WebhookDeliverer;
  /** Appends the per-item events of folder and organization deletions (src/jobs/cascade.ts); `settle` waits for them. */
  cascade: Pick<CascadeWorker, 'settle'>;
  /**
   * Deletes history versions and audit entries past HISTORY_RETENTION_DAYS / AUDIT_RETENTION_DAYS
   * (src/jobs/retention.ts); runs where the projections are applied. `prune` runs it once now.
   */
  retention: Pick<RetentionJob, 'prune'>;
  /** The worker thread doing the background work, when the services run one (OpenOptions.thread). */
  background: BackgroundThread | null;
  /** Hot standbys read-only requests may read (POSTGRES_REPLICA_URLS), when the services serve requests and it is set. */
  replicas?: ReplicaSet;
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
  /**
   * Runs the background work (projections, webhooks, cascades) on a worker thread
   * (src/runtime/background.ts); role `all` only. serve passes `config.backgroundThread`.
   * Options that cannot cross threads (clock, webhook tuning) then apply to this thread only.
   */
  thread?: boolean;
  /** Wraps the event store before anything uses it (the background thread's notifications). */
  decorateEvents?: (events: EventStore) => EventStore;
  /**
   * Who holds this process's leases (src/runtime/lease.ts); unique per Lease by default. The
   * background thread keeps one across restarts, so a thread started again after a crash
   * takes over its predecessor's leases at once instead of after their TTL.
   */
  leaseHolder?: string;
  /** Events applied per read-model transaction (default 1000). */
  batchSize?: number;
  /** Told the position every projection passed after each batch this process applies. */
  onApplied?: (position: LogPosition) => void;
  /** Open POSTGRES_REPLICA_URLS' standbys for reads (a process that answers requests: serve). */
  readReplicas?: boolean;
  /** How often the retention job runs (default an hour; tests shorten it). */
  retentionEveryMs?: number;
}

/**
 * Opens the stores named by the configuration, each on its own: EVENTSTORE_URL selects
 * EventStoreDB for the log, MONGODB_URL MongoDB for the read models; POSTGRES_URL PostgreSQL for
 * whichever of the two is unset (both, in one database, when neither is); whichever is still
 * unset is the embedded SQLite file in DATA_DIR.
 */
export async function openServices(config: Config, options: OpenOptions = {}): Promise<Services> {
  const embedded = !(config.eventStoreUrl ?? config.postgresUrl) || !(config.mongodbUrl ?? config.postgresUrl);
  if (embedded) fs.mkdirSync(config.dataDir, { recursive: true });
  // Processes (and their background threads) starting together on one fresh DATA_DIR race to
  // create the same files, tables and indexes; SQLite can then answer "database is locked"
  // without waiting (a lock upgrade it cannot queue for). Opening again shortly after is safe:
  // nothing is half-done, every step is idempotent (IF NOT EXISTS, transactions).
  for (let attempt = 1; ; attempt++) {
    try {
      return await openOnce(config, options);
    } catch (error) {
      if (attempt >= 5 || !/database is locked|SQLITE_BUSY/.test(`${(error as { code?: string }).code ?? ''} ${(error as Error).message}`)) throw error;
      options.logger?.warn({ err: error, attempt }, 'store busy while opening; trying again');
      await new Promise((r) => setTimeout(r, 200 * attempt));
    }
  }
}

async function openOnce(config: Config, options: OpenOptions): Promise<Services> {
  let events: EventStore | null = null;
  let read: ReadStore | null = null;
  let replicas: ReplicaSet | null = null;
  try {
    // The production clients load only when configured: the embedded default (and its
    // background thread, which loads this module again) does not carry them in memory.
    events = config.eventStoreUrl
      ? new (await import('../adapters/esdb-event-store.js')).EsdbEventStore(config.eventStoreUrl, { logger: options.logger })
      : config.postgresUrl
        ? new (await import('../adapters/postgres-event-store.js')).PostgresEventStore(config.postgresUrl, {
            logger: options.logger,
            statementTimeoutMs: config.statementTimeoutMs,
            poolSize: config.postgresPoolSize,
            lockTimeoutMs: config.lockTimeoutMs,
            ...(config.postgresListenUrl ? { listenUrl: config.postgresListenUrl } : {}),
          })
        : new SqliteEventStore(path.join(config.dataDir, 'events.db'));
    if (config.postgresUrl && !config.mongodbUrl) {
      const pgOptions = {
        logger: options.logger,
        statementTimeoutMs: config.statementTimeoutMs,
        preparedStatements: config.postgresPreparedStatements,
        poolSize: config.postgresPoolSize,
        lockTimeoutMs: config.lockTimeoutMs,
        // Not read models: their writes (leases, presence, deliveries...) leave the access
        // index's change signal alone, and so add nothing to those commits.
        signalExempt: SHARED_COLLECTIONS,
      };
      if (options.readReplicas && config.postgresReplicaUrls.length > 0) {
        const { ReplicaSet } = await import('../adapters/postgres-replicas.js');
        replicas = new ReplicaSet(config.postgresReplicaUrls, config.postgresReplicaMaxLagMs, pgOptions, options.logger);
      }
      read = new (await import('../adapters/postgres-read-store.js')).PostgresReadStore(config.postgresUrl, {
        ...pgOptions,
        ...(config.postgresListenUrl ? { listenUrl: config.postgresListenUrl } : {}),
        ...(replicas ? { routing: replicas } : {}),
      });
    } else {
      read = config.mongodbUrl
        ? new (await import('../adapters/mongo-read-store.js')).MongoReadStore(config.mongodbUrl, { ttlCollections: [PRESENCE, IDEMPOTENCY_KEYS] })
        : new SqliteReadStore(path.join(config.dataDir, 'readmodels.db'));
    }
    return await assemble(config, events, read, options, replicas ?? undefined);
  } catch (error) {
    await events?.close().catch(() => undefined);
    await read?.close().catch(() => undefined);
    await replicas?.close().catch(() => undefined);
    throw error;
  }
}

const DAY = 24 * 60 * 60 * 1000;

/** The webhook deliverer as the configuration sets it, with the test overrides of `options.webhooks`. */
function webhookDeliverer(config: Config, followed: EventStore, read: ReadStore, commands: CommandHandler, clock: () => number, secrets: SecretStore, options: OpenOptions) {
  const webhookOptions = typeof options.webhooks === 'object' ? options.webhooks : {};
  return new WebhookDeliverer(followed, read, commands, clock, {
    concurrency: config.webhookConcurrency,
    maxInFlightPerEndpoint: config.webhookMaxInFlightPerEndpoint,
    maxInFlightPerWorkspace: config.webhookMaxInFlightPerWorkspace,
    breakerAfter: config.webhookBreakerAfter,
    breakerTimeoutMs: config.webhookBreakerTimeoutMs,
    breakerBackoffMs: config.webhookBreakerBackoffSeconds * 1000,
    breakerMaxBackoffMs: config.webhookBreakerMaxBackoffSeconds * 1000,
    disableAfterMs: config.webhookDisableAfterDays * DAY,
    retentionMs: config.webhookRetentionDays * DAY,
    egress: egressPolicyOf(config),
    logger: options.logger,
    lease: new Lease(read, 'webhooks', { ttlMs: config.leaseTtlMs, logger: options.logger, holder: options.leaseHolder }),
    secrets,
    ...webhookOptions,
  });
}

/**
 * The background work on a worker thread, poked on every append; if it fails to start, this
 * thread's projections stop with it.
 */
async function startBackgroundThread(config: Config, logger: RunnerLogger, events: EventStore, projections: ProjectionRunner) {
  const thread = new BackgroundThread(config, { logger, onApplied: (position) => projections.observed(position) });
  const unsubscribe = events.onAppended(() => thread.poke());
  try {
    await thread.start();
  } catch (error) {
    unsubscribe();
    await projections.stop();
    throw error;
  }
  return { thread, unsubscribe };
}

/**
 * The runner of the projections. Where this process applies them on a store that takes
 * concurrent writers (PostgreSQL), each lane is written on a handle of its own
 * (ProjectionRunnerOptions.lanes); `lanes.forks` are closed after the runner stops.
 */
function projectionRunner(config: Config, followed: EventStore, read: GenerationalReadStore, observe: boolean, options: OpenOptions) {
  const lanes = observe ? { stores: new Map<string, ReadStore>(), forks: [] } : forkLanes(read, allProjections);
  const projections = new ProjectionRunner(followed, read, allProjections, {
    lanes: lanes.stores,
    logger: options.logger,
    observe,
    lease: observe ? undefined : new Lease(read, 'projections', { ttlMs: config.leaseTtlMs, logger: options.logger, holder: options.leaseHolder }),
    onApplied: options.onApplied,
    pollMs: config.projectionPollMs,
    checkpointPollMs: config.checkpointPollMs,
    batchSize: options.batchSize,
    clock: options.clock,
  });
  return { projections, lanes };
}

/** The retention job, started where the projections are applied. */
function retentionJob(job: RetentionJob, here: boolean): RetentionJob {
  if (here) job.start();
  return job;
}

export async function assemble(
  config: Config,
  events: EventStore,
  read: ReadStore,
  options: OpenOptions = {},
  replicas?: ReplicaSet,
): Promise<Services> {
  const generations = await openReadModels(read, allProjections);
  read = generations;
  // A standby's applied position, asked with the primary's own query: every projection's checkpoint.
  replicas?.start(() => appliedPosition(generations));
  // Permission resolution's per-process index (queries/access-index.ts) where the store gives its change signal.
  attachAccessIndex(read, config.accessIndexEntries);
  if (options.decorateEvents) events = options.decorateEvents(events);
  const secrets = await openSecretStore(read, config, options.clock ?? Date.now, options.logger);
  const api = options.role === 'api';
  // serve's default: the background work runs on a worker thread (src/runtime/background.ts)
  // and this thread only observes the checkpoints it stores, as an API process does.
  const threaded = options.thread === true && (options.role ?? 'all') === 'all' && options.follow !== false;
  const observe = api || threaded;
  const logger = options.logger ?? silentLogger;
  const commands = new CommandHandler(events);
  // The runner and the deliverer read the same batches of the log: one read and parse serves both.
  const followed = shareLogReads(events);
  const { projections, lanes } = projectionRunner(config, followed, generations, observe, options);
  await projections.init();
  if (options.follow !== false) projections.start();
  const clock = options.clock ?? Date.now;
  const webhooks = webhookDeliverer(config, followed, read, commands, clock, secrets, options);
  if (options.follow !== false && options.webhooks !== false && !observe) {
    await webhooks.init();
    webhooks.start();
  }
  const cascadeWorker = new CascadeWorker(events, read, commands, projections, clock, logger);
  let cascade: Pick<CascadeWorker, 'settle'> = cascadeWorker;
  let background: BackgroundThread | null = null;
  let unsubscribe = () => {};
  if (threaded) {
    const started = await startBackgroundThread(config, logger, events, projections);
    background = started.thread;
    cascade = started.thread;
    unsubscribe = started.unsubscribe;
  } else if (options.follow !== false && !api) cascadeWorker.start();
  // Where the projections are applied (on the background thread, its own services run it).
  const retention = retentionJob(new RetentionJob(read, config, projections, clock, logger, options.retentionEveryMs), options.follow !== false && !observe);
  let closed = false;
  // Page tokens are sealed with a key derived from the master key (queries/paging.ts):
  // installed here, the one place every process (API, worker, background thread) opens.
  const releasePageTokens = installPageTokenKey(secrets);
  return {
    config,
    events,
    read,
    generations,
    commands,
    secrets,
    projections,
    webhooks,
    cascade,
    retention,
    background,
    ...(replicas ? { replicas } : {}),
    clock,
    async close() {
      if (closed) return;
      closed = true;
      releasePageTokens();
      unsubscribe();
      await background?.stop();
      await retention.stop();
      await cascadeWorker.stop();
      await webhooks.stop();
      await projections.stop();
      for (const f of lanes.forks) await f.close();
      await events.close();
      await replicas?.close();
      await read.close();
    },
  };
}

/** The position every projection has applied, as the store read shows it (null when one never ran). */
async function appliedPosition(read: ReadStore): Promise<LogPosition | null> {
  const names = allProjections.map((p) => p.name);
  // One statement where the store reads several checkpoints at once (a probe every 250 ms per standby).
  const got = await readCheckpoints(read, names);
  let lowest: LogPosition | null = null;
  for (const n of names) {
    const c = got.get(n) ?? null;
    if (c === null) return null;
    if (lowest === null || c < lowest) lowest = c;
  }
  return lowest;
}
