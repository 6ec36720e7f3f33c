/**
 * Webhook delivery (docs/webhooks.md). Two loops:
 *
 * 1. **Follow**: like a projection, reads the event log after its own checkpoint
 *    (`webhooks`). For every domain event of a key whose webhook service is on (and whose
 *    triggers include the event's area) it queues one delivery per configured endpoint
 *    (raw, processed) in the outbox, in the same read-store transaction that moves the
 *    checkpoint (compare-and-set). A crash before the commit replays the batch; after it,
 *    the deliveries are durable. Delivery ids derive from event ids: never a duplicate with
 *    a new id. On its very first run (no checkpoint) it starts at the log's head: turning
 *    the deliverer on never replays history to receivers.
 * 2. **Send**: serves endpoints (an API key's raw or processed URL slot, or one of its
 *    advanced endpoints) round-robin, as described under Fairness. Each endpoint has a state
 *    document (src/webhooks/outbox.ts) saying when it next has work; the sender reads the
 *    few due first and, per endpoint, its due *head* deliveries (the oldest pending one of
 *    each (key, stream, endpoint) queue, so a stream's events arrive in order; a later one
 *    waits while an earlier one is retried). A delivery waiting for its retry holds no slot.
 *    An attempt claims its delivery with a short lease (several processes never send the
 *    same delivery at once), POSTs it with a timeout to an address the egress policy allows
 *    (src/adapters/egress.ts; a blocked destination fails the delivery at once), and records
 *    the outcome. 2xx: succeeded. 410 Gone: failed, and the endpoint is disabled
 *    (`WebhookEndpointDisabled` on the key's workspace) until its URL is set again. Anything
 *    else: retried on the schedule with jitter, then failed. An endpoint with no success
 *    since a failing streak began `disableAfterMs` ago is disabled the same way. Deliveries
 *    done longer than `retentionMs` ago are deleted by a periodic sweep.
 *
 * **Fairness.** The pool (`concurrency` attempts in flight) is shared by every tenant, and an
 * attempt to a receiver that never answers holds its slot for the whole timeout. So the
 * sender serves workspaces round-robin, then a workspace's API keys, then a key's endpoints:
 * each level has a schedule document (workspace, key, endpoint) whose `dueAt` is the later
 * of its earliest due child and when it was last served, so one just served goes behind
 * everyone waiting since before. At most `maxInFlightPerWorkspace` attempts run for one
 * workspace (all its keys), `maxInFlightPerEndpoint` for one endpoint, `concurrency` in all.
 * Example (16 slots, 4 per workspace): workspace T's 50 endpoints all hang; T holds 4 slots
 * and waits for them, the 12 others serve everyone else at once. The per-process in-flight
 * counts are in memory: only the lease holder sends. The schedule documents are in the read
 * store, written in the same transaction as the deliveries they follow (`reschedule`).
 *
 * **Breaker.** An endpoint whose attempts go unanswered (timeout, connection error)
 * `breakerAfter` times in a row is *open*: its queue is parked (its `dueAt` is held at
 * `breakerUntil`, exponential backoff from `breakerBackoffMs` up to `breakerMaxBackoffMs`),
 * then *half-open*: one attempt at a time with the short `breakerTimeoutMs`, the probe. An
 * HTTP answer of any status closes it; another unanswered probe parks it twice as long. The
 * breaker is in the endpoint's state document, so it survives a restart and a takeover of
 * the lease. Example (5, 30 s, 2 s): five 10 s timeouts open it; 30 s later a 2 s probe;
 * unanswered, 60 s later another; so a dead endpoint costs one slot 2 s a minute or less
 * instead of four slots all the time.
 *
 * Why per endpoint, key and workspace: one tenant's dead endpoints with thousands of pending
 * deliveries must not delay another tenant's delivery. The sender never reads "the first N
 * pending deliveries of everyone"; what one send step reads is bounded by the concurrency,
 * whatever the backlogs.
 *
 * Neither loop is on a request's path: requests never wait for either. The follow loop
 * writes to the read store only when a batch queues deliveries (or, at most once a second,
 * to store its checkpoint), so it does not hold up the projections' transactions.
 */
import { randomUUID } from 'node:crypto';
import { Wakeup } from '../runtime/wakeup.js';
import { LOG_START, type EventStore, type LogPosition, type RecordedEvent } from '../ports/event-store.js';
import { CheckpointConflictError, type ReadStore, type ReadTx } from '../ports/read-store.js';
import type { CommandHandler } from '../runtime/command-handler.js';
import type { RunnerLogger } from '../runtime/projection-runner.js';
import type { Lease } from '../runtime/lease.js';
import { workspaceDecider, workspaceStream } from '../../commands/workspace.js';
import { ENDPOINT_URL_FIELD, type ServiceState, type WebhookEndpoint } from '../../commands/service-config.js';
import { advancedWebhooksDecider, advancedWebhooksStream, endpointOf, signingSecrets, type AdvancedWebhooksState } from '../../commands/advanced-webhooks.js';
import { API_KEYS, type ApiKeyDoc } from '../../projections/workspaces.js';
import { key } from '../shared/ids.js';
import {
  DELIVERIES,
  ENDPOINT_STATE,
  MAX_ATTEMPT_LOG,
  WEBHOOK_CHECKPOINT,
  endpointStateId,
  outboxIndexes,
  type Attempt,
  KEY_STATE,
  WORKSPACE_STATE,
  type DeliveryDoc,
  type EndpointStateDoc,
  type KeyStateDoc,
  type WorkspaceStateDoc,
} from './outbox.js';
import { processedPayload, rawPayload } from './payloads.js';
import { signPayload } from './signature.js';
import { DestinationBlockedError, EgressPolicy, postWebhook, systemResolver, type Resolver } from '../adapters/egress.js';
import { triggerOf } from './triggers.js';
import { advancedBody, advancedTargets, isAdvancedEndpoint, signAll } from './advanced.js';
import { PARK_AFTER_ATTEMPTS, isStoreFault, park, parkedDoc } from '../runtime/parked.js';
import type { SecretStore } from '../secrets/store.js';
import { SecretUnavailableError } from '../shared/errors.js';

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
const DAY = 24 * H;
/**
 * Delay before retry n (after failed attempt n): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h,
 * each ±20 % jitter: 8 attempts over about 27.6 hours, then the delivery is failed.
 */
const DEFAULT_RETRY_SCHEDULE = [5 * S, 5 * MIN, 30 * MIN, 2 * H, 5 * H, 10 * H, 10 * H];
const DEFAULT_TIMEOUT_MS = 10 * S;
const DEFAULT_CONCURRENCY = 16;
const DEFAULT_MAX_IN_FLIGHT_PER_ENDPOINT = 4;
const DEFAULT_MAX_IN_FLIGHT_PER_WORKSPACE = 4;
const DEFAULT_BREAKER_AFTER = 5;
const DEFAULT_BREAKER_TIMEOUT_MS = 2 * S;
const DEFAULT_BREAKER_BACKOFF_MS = 30 * S;
const DEFAULT_BREAKER_MAX_BACKOFF_MS = H;
const DEFAULT_DISABLE_AFTER_MS = 5 * DAY;
const DEFAULT_RETENTION_MS = 7 * DAY;

export interface WebhookOptions {
  retrySchedule?: number[];
  /** Fraction of each delay added or taken at random. Default 0.2. */
  jitter?: number;
  timeoutMs?: number;
  /** Attempts in flight at once, all endpoints together. Default 16. */
  concurrency?: number;
  /** Attempts in flight at once to one endpoint (each of a different stream); at most maxInFlightPerWorkspace. Default 4. */
  maxInFlightPerEndpoint?: number;
  /** Attempts in flight at once for one workspace, all its keys and endpoints together; at most concurrency. Default 4. */
  maxInFlightPerWorkspace?: number;
  /** Unanswered attempts in a row (timeouts, connection errors) that open an endpoint's breaker; 0: never. Default 5. */
  breakerAfter?: number;
  /** The timeout of an attempt to an endpoint whose breaker is open (its half-open probe). Default 2 s. */
  breakerTimeoutMs?: number;
  /** How long an opening breaker parks its endpoint; doubled by each further unanswered attempt. Default 30 s. */
  breakerBackoffMs?: number;
  /** The longest park. Default 1 hour. */
  breakerMaxBackoffMs?: number;
  /** An endpoint with no success for this long since its first failure is disabled; 0: never. Default 5 days. */
  disableAfterMs?: number;
  /** Succeeded and failed deliveries are deleted this long after they completed. Default 7 days. */
  retentionMs?: number;
  /** How often the retention sweep runs, by the deliverer's clock. Default 10 minutes. */
  pruneEveryMs?: number;
  /** How often to look for new events and due retries without being woken. Default 1000. */
  pollMs?: number;
  batchSize?: number;
  logger?: RunnerLogger;
  /** With several processes: follow and send only while holding this lease (src/runtime/lease.ts). */
  lease?: Lease;
  /** Where webhooks may go (src/adapters/egress.ts). Default: the strict policy, nothing allowlisted. */
  egress?: EgressPolicy;
  /** Resolves endpoint hostnames (tests inject answers). Default: the system resolver. */
  resolve?: Resolver;
  /** Opens the stored (sealed) authToken for sending (src/secrets/store.ts); without it, stored values are used as they are. */
  secrets?: Pick<SecretStore, 'openString'>;
}

const ENDPOINTS: WebhookEndpoint[] = ['raw', 'processed'];
/** An endpoint's breaker closed, its count of unanswered attempts reset. */
const CLOSED = { unanswered: 0, breakerOpen: false, breakerUntil: 0 } as const satisfies Partial<EndpointStateDoc>;
const silent: RunnerLogger = { error() {}, warn() {}, info() {} };

/** A workspace's turns in one send step: its due keys, read on its first turn. */
interface Turn {
  workspaceId: string;
  keys: KeyTurn[] | null;
}

/** A key's turns in one send step: its due endpoints (read on its first turn) and their due heads. */
interface KeyTurn {
  apiKey: string;
  endpoints: EndpointStateDoc[] | null;
  heads: Map<string, DeliveryDoc[]>;
}

interface KeyConfig {
  workspaceId: string;
  webhook: ServiceState;
  /** The key's advanced webhooks (commands/advanced-webhooks.ts), secrets sealed. */
  advanced: AdvancedWebhooksState;
}

/** What a transaction changed of a workspace's schedule: a claim (`servedAt`), deliveries queued or completed (`pending`, a delta). */
interface WorkspaceChange {
  servedAt?: number;
  pending?: number;
}

/** Where an attempt goes and the headers that authenticate it (given the attempt's timestamp), or why it is not sent. */
type Target = { url: string; auth: (timestamp: number) => Record<string, string> } | { stop: string };

export class WebhookDeliverer {
  /** How far the follow loop has read (in memory). */
  private checkpoint: LogPosition | null = null;
  /** The stored checkpoint: the compare-and-set's expected value. */
  private persisted: LogPosition | null = null;
  private persistedAt = 0;
  private running = false;
  private loops: Promise<void>[] = [];
  private unsubscribe: (() => void) | null = null;
  private readonly follow = new Wakeup();
  private readonly send = new Wakeup();
  private readonly inflight = new Map<string, Promise<void>>();
  /** Attempts in flight per endpoint (endpoint state id). */
  private readonly endpointLoad = new Map<string, number>();
  /** Attempts in flight per workspace (this process's: only the lease holder sends). */
  private readonly workspaceLoad = new Map<string, number>();
  private prunedAt = -Infinity;
  private stopping = new AbortController();
  private readonly schedule: number[];
  private readonly jitter: number;
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  private readonly perWorkspace: number;
  private readonly breakerAfter: number;
  private readonly breakerTimeoutMs: number;
  private readonly breakerBackoffMs: number;
  private readonly breakerMaxBackoffMs: number;
  private readonly disableAfterMs: number;
  private readonly retentionMs: number;
  private readonly pruneEveryMs: number;
  private readonly pollMs: number;
  private readonly batchSize: number;
  private readonly log: RunnerLogger;
  private readonly lease: Lease | undefined;
  private readonly egress: EgressPolicy;
  private readonly resolve: Resolver;
  private readonly secrets: WebhookOptions['secrets'];
  private stale = false;

  constructor(
    private readonly events: EventStore,
    private readonly read: ReadStore,
    private readonly commands: CommandHandler,
    private readonly clock: () => number,
    options: WebhookOptions = {},
  ) {
    this.schedule = options.retrySchedule ?? DEFAULT_RETRY_SCHEDULE;
    this.jitter = options.jitter ?? 0.2;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    this.perWorkspace = Math.min(options.maxInFlightPerWorkspace ?? DEFAULT_MAX_IN_FLIGHT_PER_WORKSPACE, this.concurrency);
    this.perEndpoint = Math.min(options.maxInFlightPerEndpoint ?? DEFAULT_MAX_IN_FLIGHT_PER_ENDPOINT, this.perWorkspace);
    this.breakerAfter = options.breakerAfter ?? DEFAULT_BREAKER_AFTER;
    this.breakerTimeoutMs = Math.min(options.breakerTimeoutMs ?? DEFAULT_BREAKER_TIMEOUT_MS, this.timeoutMs);
    this.breakerBackoffMs = options.breakerBackoffMs ?? DEFAULT_BREAKER_BACKOFF_MS;
    this.breakerMaxBackoffMs = Math.max(options.breakerMaxBackoffMs ?? DEFAULT_BREAKER_MAX_BACKOFF_MS, this.breakerBackoffMs);
    this.disableAfterMs = options.disableAfterMs ?? DEFAULT_DISABLE_AFTER_MS;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.pruneEveryMs = options.pruneEveryMs ?? 10 * MIN;
    this.pollMs = options.pollMs ?? 1000;
    this.batchSize = options.batchSize ?? 500;
    this.log = options.logger ?? silent;
    this.lease = options.lease;
    this.egress = options.egress ?? new EgressPolicy();
    this.resolve = options.resolve ?? systemResolver;
    this.secrets = options.secrets;
  }

  /** Whether this process delivers now (it holds the lease, or runs alone). */
  private get active(): boolean {
    return !this.lease || this.lease.held;
  }

  async init(): Promise<void> {
    await this.read.ensureIndexes(outboxIndexes);
    await this.markHeads();
    await this.scheduleWorkspaces();
    this.checkpoint = this.persisted = await this.read.getCheckpoint(WEBHOOK_CHECKPOINT);
    if (this.checkpoint === null) {
      const head = await this.events.headPosition();
      try {
        await this.read.transaction((tx) => tx.setCheckpoint(WEBHOOK_CHECKPOINT, head, null));
        this.checkpoint = this.persisted = head;
      } catch (error) {
        if (!(error instanceof CheckpointConflictError)) throw error;
        this.checkpoint = this.persisted = await this.read.getCheckpoint(WEBHOOK_CHECKPOINT);
      }
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = new AbortController();
    this.unsubscribe = this.events.onAppended(() => this.follow.poke());
    this.lease?.start((held) => {
      // Another process may have moved the checkpoint while this one was idle.
      if (held) this.stale = true;
      this.follow.poke();
      this.send.poke();
    });
    this.loops = [this.runFollow(), this.runSend()];
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.unsubscribe?.();
    this.stopping.abort();
    this.follow.poke();
    this.send.poke();
    await Promise.all(this.loops);
    await Promise.all(this.inflight.values());
    if (this.checkpoint !== this.persisted && this.checkpoint !== null) {
      const at = this.checkpoint;
      await this.read
        .transaction((tx) => tx.setCheckpoint(WEBHOOK_CHECKPOINT, at, this.persisted))
        .then(() => (this.persisted = at))
        .catch((error) => this.log.warn({ err: error }, 'could not store the webhook checkpoint on stop'));
    }
    await this.lease?.stop();
  }

  // ---- follow ----

  private async runFollow() {
    let failures = 0;
    while (this.running) {
      this.follow.take();
      if (!this.active) {
        await this.follow.sleep(this.pollMs);
        continue;
      }
      let read = 0;
      try {
        if (this.stale) {
          this.stale = false;
          this.checkpoint = this.persisted = await this.read.getCheckpoint(WEBHOOK_CHECKPOINT);
        }
        read = await this.followStep();
        failures = 0;
      } catch (error) {
        failures++;
        this.log.error({ err: error }, 'webhook follow batch failed; retrying');
        await this.follow.sleep(Math.min(5000, 50 * 2 ** Math.min(failures, 7)));
        continue;
      }
      if (read === 0 && this.running) await this.follow.sleep(this.pollMs);
    }
  }

  /**
   * Queues the deliveries of the next batch of events; returns the number of events read. A
   * batch that fails for any reason but the store is queued again one event at a time, and an
   * event that still cannot be queued is parked (src/runtime/parked.ts), not retried forever.
   */
  async followStep(): Promise<number> {
    const batch = await this.events.readAll({ after: this.checkpoint ?? LOG_START, maxCount: this.batchSize });
    if (batch.length === 0) return 0;
    try {
      await this.queue(batch);
    } catch (error) {
      if (isStoreFault(error)) throw error;
      this.log.warn({ err: error }, 'webhook follow batch failed; queuing it one event at a time');
      for (const e of batch) await this.queueOrPark(e);
    }
    return batch.length;
  }

  /** The deliveries `events` cause under the keys' current webhook configurations. */
  private async deliveriesFor(events: readonly RecordedEvent[]): Promise<DeliveryDoc[]> {
    const configs = new Map<string, KeyConfig | null>();
    const docs: DeliveryDoc[] = [];
    for (const e of events) {
      const apiKey = e.metadata.apiKey;
      const area = triggerOf(e.stream);
      if (!apiKey || !area) continue;
      if (!configs.has(apiKey)) configs.set(apiKey, await this.configFor(apiKey));
      const cfg = configs.get(apiKey);
      if (!cfg) continue;
      for (const ep of advancedTargets(cfg.advanced, e, area)) {
        const webhookId = `${e.id}_${ep.endpointId}`;
        docs.push(this.newDelivery(e, apiKey, cfg.workspaceId, ep.endpointId, ep.url, advancedBody(e, webhookId, cfg.advanced.settings!)));
      }
      if (!cfg.webhook.enabled) continue;
      if (cfg.webhook.triggers && !cfg.webhook.triggers.includes(area)) continue;
      for (const endpoint of ENDPOINTS) {
        const url = cfg.webhook.config[ENDPOINT_URL_FIELD[endpoint]];
        if (!url || cfg.webhook.disabledEndpoints.includes(endpoint)) continue;
        docs.push(this.newDelivery(e, apiKey, cfg.workspaceId, endpoint, url, JSON.stringify(endpoint === 'raw' ? rawPayload(e) : processedPayload(e))));
      }
    }
    return docs;
  }

  /** Queues the deliveries of `events` and moves the checkpoint past them. */
  private async queue(events: readonly RecordedEvent[]): Promise<void> {
    const last = events[events.length - 1]!.position;
    const docs = await this.deliveriesFor(events);
    // A batch that queues nothing moves the checkpoint in memory only, storing it at most
    // once a second: most writes then cost the read store no extra transaction. Replaying
    // such a stretch after a crash queues nothing twice (delivery ids come from event ids).
    if (docs.length === 0 && this.clock() - this.persistedAt < 1000) {
      this.checkpoint = last;
      return;
    }
    try {
      await this.read.transaction(async (tx) => {
        await this.insert(tx, docs);
        await tx.setCheckpoint(WEBHOOK_CHECKPOINT, last, this.persisted);
      });
    } catch (error) {
      if (!(error instanceof CheckpointConflictError)) throw error;
      // Another process moved it: carry on from its checkpoint.
      this.checkpoint = this.persisted = await this.read.getCheckpoint(WEBHOOK_CHECKPOINT);
      return;
    }
    this.checkpoint = this.persisted = last;
    this.persistedAt = this.clock();
    if (docs.length > 0) this.send.poke();
  }

  private async queueOrPark(e: RecordedEvent): Promise<void> {
    let last: unknown;
    for (let attempt = 1; attempt <= PARK_AFTER_ATTEMPTS; attempt++) {
      // Another process may have moved the checkpoint past this event meanwhile.
      if (this.checkpoint !== null && this.checkpoint >= e.position) return;
      try {
        await this.queue([e]);
        return;
      } catch (error) {
        if (isStoreFault(error)) throw error;
        last = error;
        if (attempt < PARK_AFTER_ATTEMPTS) await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
    // The store must answer a plain read before anything is parked (an unrecognised outage).
    const persisted = await this.read.getCheckpoint(WEBHOOK_CHECKPOINT);
    if (persisted !== null && persisted >= e.position) {
      this.checkpoint = this.persisted = persisted;
      return;
    }
    const doc = parkedDoc('webhooks', e, last, PARK_AFTER_ATTEMPTS, this.clock());
    try {
      await this.read.transaction(async (tx) => {
        await park(tx, doc);
        await tx.setCheckpoint(WEBHOOK_CHECKPOINT, e.position, persisted);
      });
    } catch (error) {
      if (!(error instanceof CheckpointConflictError)) throw error;
      this.checkpoint = this.persisted = await this.read.getCheckpoint(WEBHOOK_CHECKPOINT);
      return;
    }
    this.checkpoint = this.persisted = e.position;
    this.persistedAt = this.clock();
    this.log.error(
      { err: last, position: e.position, eventId: e.id, eventType: e.type, apiKey: e.metadata.apiKey, parkedId: doc._id },
      `cannot queue the webhooks of event ${e.id} (${e.type}); parked it and went on (collab projections parked)`,
    );
  }

  /** Adds the deliveries not queued yet, each its queue's head when the queue has no pending one, and schedules their endpoints. */
  private async insert(tx: ReadTx, docs: readonly DeliveryDoc[]): Promise<void> {
    // Queues known to hold a pending delivery: a later one of the batch is not their head.
    // A workspace's first document counts its pending deliveries: before these are added,
    // so that the deltas below are not counted twice.
    for (const ws of new Set(docs.map((d) => d.workspaceId))) {
      if (!(await tx.get(WORKSPACE_STATE, ws))) await this.rescheduleWorkspace(tx, ws, {});
    }
    const busy = new Set<string>();
    const touched = new Map<string, { d: DeliveryDoc; added: number }>();
    for (const d of docs) {
      if (await tx.get(DELIVERIES, d._id)) continue;
      const queue = key(d.apiKey, d.endpoint, d.stream);
      d.head = !busy.has(queue) && (await tx.find(DELIVERIES, { apiKey: d.apiKey, endpoint: d.endpoint, stream: d.stream, status: 'pending' }, { limit: 1 })).length === 0;
      await tx.upsert(DELIVERIES, d);
      busy.add(queue);
      const id = endpointStateId(d.apiKey, d.endpoint);
      touched.set(id, { d, added: (touched.get(id)?.added ?? 0) + 1 });
    }
    // The config queued these, so the endpoints are enabled (again, after a new URL), and a
    // breaker opened against another URL no longer applies.
    for (const { d, added } of touched.values()) {
      await this.reschedule(
        tx,
        d,
        (s) => ({
          ...(s.disabledAt !== null ? { disabledAt: null, disabledReason: null } : {}),
          ...(s.breakerOpen && s.failingUrl !== d.url ? { breakerOpen: false, breakerUntil: 0, unanswered: 0 } : {}),
        }),
        { pending: added },
      );
    }
  }

  /** Queues one event's deliveries again, whatever the checkpoint (`collab projections retry`). */
  async requeue(e: RecordedEvent): Promise<void> {
    const docs = await this.deliveriesFor([e]);
    await this.read.transaction((tx) => this.insert(tx, docs));
  }

  private newDelivery(e: RecordedEvent, apiKey: string, workspaceId: string, endpoint: string, url: string, body: string): DeliveryDoc {
    const webhookId = `${e.id}_${endpoint}`;
    const now = this.clock();
    return {
      _id: key(apiKey, webhookId),
      apiKey,
      workspaceId,
      webhookId,
      endpoint,
      eventId: e.id,
      eventType: e.type,
      stream: e.stream,
      position: e.position,
      url,
      body,
      status: 'pending',
      head: false,
      attempts: [],
      nextAttemptAt: now,
      leaseUntil: 0,
      createdAt: now,
      completedAt: null,
      lastError: null,
    };
  }

  /** The key's current webhook configuration, secrets included: from the write side. */
  private async configFor(apiKey: string): Promise<KeyConfig | null> {
    const doc = await this.read.get<ApiKeyDoc>(API_KEYS, apiKey);
    if (!doc) return null;
    const { state } = await this.commands.load(workspaceDecider, workspaceStream(doc.workspaceId));
    const k = state.status === 'active' ? state.keys[apiKey] : undefined;
    if (!k) return null;
    const advanced = await this.commands.load(advancedWebhooksDecider, advancedWebhooksStream(apiKey));
    return { workspaceId: doc.workspaceId, webhook: k.services.webhook, advanced: advanced.state };
  }

  // ---- send ----

  private async runSend() {
    while (this.running) {
      this.send.take();
      let wait = this.pollMs;
      if (!this.active) {
        await this.send.sleep(wait);
        continue;
      }
      if (this.clock() - this.prunedAt >= this.pruneEveryMs) {
        this.prunedAt = this.clock();
        await this.prune().catch((error) => this.log.error({ err: error }, 'webhook retention sweep failed'));
      }
      try {
        const nextDue = await this.sendStep();
        if (nextDue !== null) wait = Math.min(wait, nextDue - this.clock());
      } catch (error) {
        this.log.error({ err: error }, 'webhook send step failed');
      }
      if (this.running) await this.send.sleep(wait);
    }
  }

  /**
   * Starts due deliveries until the slots are taken, one per workspace per round, in the
   * workspaces' round-robin order; within a workspace its keys take turns, within a key its
   * endpoints. A workspace with `maxInFlightPerWorkspace` attempts in flight is skipped,
   * whatever its backlog. Returns when the next known one falls due (ms), or null.
   *
   * What it reads is bounded by the concurrency, whatever the backlogs: at most
   * 2 x concurrency workspace documents (of the workspaces due, at most `concurrency` can
   * have nothing to start: each of those has an attempt in flight); per workspace it serves,
   * 2 x maxInFlightPerWorkspace key documents, and per key it serves as many endpoint
   * documents (same argument, within the workspace's cap); per endpoint it serves,
   * 2 x maxInFlightPerEndpoint head deliveries.
   */
  async sendStep(): Promise<number | null> {
    const now = this.clock();
    // Full: an attempt that ends pokes the loop.
    if (this.inflight.size >= this.concurrency) return null;
    const spaces = await this.read.find<WorkspaceStateDoc>(WORKSPACE_STATE, { scheduled: true }, { sort: 'dueAt', limit: 2 * this.concurrency });
    let nextDue: number | null = null;
    const ready: Turn[] = [];
    for (const ws of spaces) {
      if (ws.dueAt > now) {
        nextDue = ws.dueAt;
        break;
      }
      if (loadOf(this.workspaceLoad, ws._id) < this.perWorkspace) ready.push({ workspaceId: ws._id, keys: null });
    }
    for (let progress = true; progress && this.inflight.size < this.concurrency; ) {
      progress = false;
      for (const turn of ready) {
        if (this.inflight.size >= this.concurrency) break;
        if (loadOf(this.workspaceLoad, turn.workspaceId) >= this.perWorkspace) continue;
        const next = await this.nextOf(turn, now);
        if (!next) continue;
        this.launch(next.delivery, next.endpoint);
        progress = true;
      }
    }
    return nextDue;
  }

  /**
   * The workspace's next due head delivery, or null: from its due keys in their round-robin
   * order, each served key moved to the back. (Of a workspace's due keys, at most
   * `maxInFlightPerWorkspace` can have nothing to start: each has an attempt in flight.)
   */
  private async nextOf(turn: Turn, now: number): Promise<{ delivery: DeliveryDoc; endpoint: EndpointStateDoc } | null> {
    if (!turn.keys) {
      const rows = await this.read.find<KeyStateDoc>(KEY_STATE, { workspaceId: turn.workspaceId, scheduled: true }, { sort: 'dueAt', limit: 2 * this.perWorkspace });
      turn.keys = rows.filter((k) => k.dueAt <= now).map((k) => ({ apiKey: k._id, endpoints: null, heads: new Map() }));
    }
    return takeTurn(turn.keys, (k) => this.nextOfKey(k, now));
  }

  /**
   * The key's next due head delivery, or null: from its due endpoints in their round-robin
   * order, each served endpoint moved to the back. An endpoint whose breaker is open (no
   * longer parked: half-open) gets one attempt at a time, its probe.
   */
  private async nextOfKey(turn: KeyTurn, now: number): Promise<{ delivery: DeliveryDoc; endpoint: EndpointStateDoc } | null> {
    if (!turn.endpoints) {
      const rows = await this.read.find<EndpointStateDoc>(ENDPOINT_STATE, { apiKey: turn.apiKey, scheduled: true }, { sort: 'dueAt', limit: 2 * this.perWorkspace });
      turn.endpoints = rows.filter((ep) => ep.dueAt <= now);
    }
    return takeTurn(turn.endpoints, async (ep) => {
      if (loadOf(this.endpointLoad, ep._id) >= (ep.breakerOpen ? 1 : this.perEndpoint)) return null;
      let due = turn.heads.get(ep._id);
      if (!due) {
        const rows = await this.read.find<DeliveryDoc>(
          DELIVERIES,
          { apiKey: ep.apiKey, endpoint: ep.endpoint, head: true },
          { sort: 'nextAttemptAt', limit: 2 * this.perEndpoint },
        );
        due = rows.filter((d) => d.nextAttemptAt <= now && d.leaseUntil <= now && !this.inflight.has(d._id));
        turn.heads.set(ep._id, due);
      }
      const d = due.shift();
      return d ? { delivery: d, endpoint: ep } : null;
    });
  }

  private launch(d: DeliveryDoc, ep: EndpointStateDoc) {
    const loads = [
      [this.endpointLoad, ep._id],
      [this.workspaceLoad, ep.workspaceId],
    ] as const;
    for (const [load, id] of loads) load.set(id, loadOf(load, id) + 1);
    // An open breaker's probe waits the short timeout: a tarpit then holds a slot for that long.
    const timeoutMs = ep.breakerOpen ? this.breakerTimeoutMs : this.timeoutMs;
    const p = this.attempt(d._id, timeoutMs)
      .catch((error) => this.log.error({ err: error, delivery: d.webhookId }, 'webhook attempt failed'))
      .finally(() => {
        this.inflight.delete(d._id);
        for (const [load, id] of loads) {
          const left = loadOf(load, id) - 1;
          if (left > 0) load.set(id, left);
          else load.delete(id);
        }
        this.send.poke();
      });
    this.inflight.set(d._id, p);
  }

  private async attempt(id: string, timeoutMs: number): Promise<void> {
    const d = await this.claim(id);
    if (!d) return;
    if (!this.running) return this.release(d);
    const cfg = await this.configFor(d.apiKey);
    const target = isAdvancedEndpoint(d.endpoint) ? await this.advancedTarget(d, cfg) : await this.basicTarget(d, cfg);
    if ('stop' in target) {
      await this.settle(d, { status: 'failed', lastError: `Not sent: ${target.stop}.` });
      return;
    }
    const sent = await this.post(d, target, timeoutMs);
    if (!sent) return this.release(d);
    await this.recordOutcome(d, target.url, sent.attempt, sent.blocked);
  }

  /** A basic endpoint (raw or processed URL): `Authorization: Basic <authToken>` and its signature, when a token is set. */
  private async basicTarget(d: DeliveryDoc, cfg: KeyConfig | null): Promise<Target> {
    const endpoint = d.endpoint as WebhookEndpoint;
    const url = cfg?.webhook.config[ENDPOINT_URL_FIELD[endpoint]];
    if (!cfg || !cfg.webhook.enabled) return { stop: 'the webhook service was turned off' };
    if (cfg.webhook.disabledEndpoints.includes(endpoint)) return { stop: `the endpoint is disabled${await this.disabledReason(d)}` };
    if (!url) return { stop: 'the endpoint has no URL any more' };
    const authToken = await this.openAuthToken(d.apiKey, cfg.webhook.config.authToken);
    if (authToken === null) return { stop: 'the webhook authToken cannot be decrypted (its data key is gone)' };
    return {
      url,
      auth: (timestamp): Record<string, string> => (authToken ? { authorization: `Basic ${authToken}`, 'webhook-signature': signPayload(authToken, d.webhookId, timestamp, d.body) } : {}),
    };
  }

  /** An advanced endpoint: signed with every secret that signs now (a rotated-out one during its grace too), no Authorization. */
  private async advancedTarget(d: DeliveryDoc, cfg: KeyConfig | null): Promise<Target> {
    const ep = cfg ? endpointOf(cfg.advanced, d.endpoint) : undefined;
    if (!cfg?.advanced.settings?.isEnabled) return { stop: 'advanced webhooks were turned off' };
    if (!ep) return { stop: 'the endpoint was deleted' };
    if (ep.disabled) return { stop: `the endpoint is disabled${ep.disabledReason ? ` (${ep.disabledReason})` : ''}` };
    const secrets: string[] = [];
    for (const sealed of signingSecrets(ep, this.clock())) {
      const s = await this.openAuthToken(d.apiKey, sealed);
      if (!s) return { stop: 'the endpoint\'s signing secret cannot be decrypted (its data key is gone)' };
      secrets.push(s);
    }
    return { url: ep.url, auth: (timestamp) => ({ 'webhook-signature': signAll(secrets, d.webhookId, timestamp, d.body) }) };
  }

  /**
   * Claims a due head delivery, or null when it is no longer one. The claim also moves the
   * delivery's due time to the claim's end: the endpoint's next head is then found without
   * skipping it, and a crashed sender's claim simply falls due.
   */
  private claim(id: string): Promise<DeliveryDoc | null> {
    const now = this.clock();
    const claimUntil = now + this.timeoutMs + 5000;
    return this.read.transaction(async (tx) => {
      const cur = await tx.get<DeliveryDoc>(DELIVERIES, id);
      if (!cur || cur.status !== 'pending' || !cur.head || cur.leaseUntil > now || cur.nextAttemptAt > now) return null;
      await tx.patch(DELIVERIES, id, { leaseUntil: claimUntil, nextAttemptAt: claimUntil });
      await this.reschedule(tx, cur, () => ({ servedAt: now }), { servedAt: now });
      return cur;
    });
  }

  /** Sends the delivery once, with the target's authentication headers; null when stopping cut it short. */
  private async post(d: DeliveryDoc, target: Extract<Target, { url: string }>, timeoutMs: number): Promise<{ attempt: Attempt; blocked: boolean } | null> {
    const { url } = target;
    const timestamp = Math.floor(this.clock() / 1000);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'collab-backend-webhooks/1',
      'webhook-id': d.webhookId,
      'webhook-timestamp': String(timestamp),
      ...target.auth(timestamp),
    };
    const started = this.clock();
    const attempt: Attempt = { at: started, durationMs: 0 };
    const timeout = AbortSignal.timeout(timeoutMs);
    let blocked = false;
    try {
      attempt.httpStatus = await postWebhook(
        { url, headers, body: d.body, signal: AbortSignal.any([timeout, this.stopping.signal]) },
        this.egress,
        this.resolve,
      );
    } catch (error) {
      if (this.stopping.signal.aborted) return null;
      if (error instanceof DestinationBlockedError) {
        blocked = true;
        attempt.error = error.message;
      } else if (timeout.aborted) {
        attempt.error = `timed out after ${timeoutMs} ms`;
      } else {
        attempt.error = errorCode(error);
      }
    }
    if (blocked) {
      // Neither the time the resolution took nor when it ended: a blocked attempt tells the
      // tenant nothing about the operator's network. at = now, duration 0.
      attempt.at = this.clock();
    } else {
      attempt.durationMs = this.clock() - started;
    }
    return { attempt, blocked };
  }

  /** Settles the delivery after an attempt: succeeded, retried later, failed, or the endpoint disabled. */
  private async recordOutcome(d: DeliveryDoc, url: string, attempt: Attempt, blocked: boolean): Promise<void> {
    const attempts = [...d.attempts, attempt].slice(-MAX_ATTEMPT_LOG);
    const count = d.attempts.length + 1;
    const http = attempt.httpStatus;
    if (http !== undefined && http >= 200 && http < 300) {
      await this.settle(d, { status: 'succeeded', attempts, url, lastError: null }, () => ({
        failingSince: null,
        failingUrl: null,
        lastSuccessAt: attempt.at,
        ...CLOSED,
      }));
      return;
    }
    // A failure continues the endpoint's failing streak, or starts one (a new URL starts
    // afresh); an attempt without an answer also counts towards the breaker.
    const failing = (s: EndpointStateDoc): Partial<EndpointStateDoc> => ({
      failingSince: s.failingSince !== null && s.failingUrl === url ? s.failingSince : attempt.at,
      failingUrl: url,
      lastFailureAt: attempt.at,
      ...(blocked ? {} : this.breaker(s, url, http !== undefined)),
    });
    const lastError = http !== undefined ? `HTTP ${http}` : attempt.error!;
    if (http === 410) {
      await this.settle(d, { status: 'failed', attempts, url, lastError: 'HTTP 410 Gone: endpoint disabled' }, failing);
      return this.disable(d, `${url} answered 410 Gone`);
    }
    let state: EndpointStateDoc | null;
    // A blocked destination fails its delivery at once: retrying cannot change the answer
    // while the URL and the policy stay, and a retried head would hold its stream's later
    // events back for a day. It continues the endpoint's failing streak like any failure.
    if (blocked || count > this.schedule.length) {
      state = await this.settle(d, { status: 'failed', attempts, url, lastError: blocked ? lastError : `${lastError}; gave up after ${count} attempts` }, failing);
    } else {
      const base = this.schedule[count - 1]!;
      const delay = Math.max(0, Math.round(base * (1 + this.jitter * (2 * Math.random() - 1))));
      state = await this.settle(d, { attempts, url, lastError, nextAttemptAt: this.clock() + delay }, failing);
    }
    if (state?.breakerOpen && state.unanswered === this.breakerAfter) {
      this.log.warn({ apiKey: d.apiKey, endpoint: d.endpoint, until: state.breakerUntil }, 'webhook endpoint breaker opened: its queue is parked');
    }
    const since = state?.failingSince ?? null;
    if (this.disableAfterMs > 0 && since !== null && this.clock() - since >= this.disableAfterMs) {
      await this.disable(
        d,
        `${url} failed every attempt since ${new Date(since).toISOString()} (${duration(this.disableAfterMs)} or more without a success); last error: ${lastError}`,
      );
    }
  }

  /**
   * The breaker after a failed attempt: an answer (any HTTP status) closes it; the
   * `breakerAfter`th unanswered attempt in a row opens it, parking the endpoint for
   * `breakerBackoffMs`, doubled by each further one, at most `breakerMaxBackoffMs`. Example
   * (after 5, 30 s): the 5th timeout parks it 30 s; the probe then times out (the 6th): 60 s;
   * the 7th: 2 min; ... A probe that gets an answer closes it.
   */
  private breaker(s: EndpointStateDoc, url: string, answered: boolean): Partial<EndpointStateDoc> {
    if (answered) return CLOSED;
    const unanswered = (s.failingUrl === url ? (s.unanswered ?? 0) : 0) + 1;
    if (this.breakerAfter === 0 || unanswered < this.breakerAfter) return { unanswered };
    const park = Math.min(this.breakerMaxBackoffMs, this.breakerBackoffMs * 2 ** (unanswered - this.breakerAfter));
    return { unanswered, breakerOpen: true, breakerUntil: this.clock() + park };
  }

  /**
   * Records an attempt's outcome (`set`: a done status, or the next attempt's time) and the
   * endpoint's health (`endpoint`). A done delivery hands its queue to the next pending one of
   * its stream. Returns the endpoint's state, or null when the delivery was no longer pending.
   */
  private async settle(
    d: DeliveryDoc,
    set: Partial<DeliveryDoc>,
    endpoint?: (s: EndpointStateDoc) => Partial<EndpointStateDoc>,
  ): Promise<EndpointStateDoc | null> {
    const now = this.clock();
    const done = set.status !== undefined && set.status !== 'pending';
    return this.read.transaction(async (tx) => {
      const cur = await tx.get<DeliveryDoc>(DELIVERIES, d._id);
      if (!cur || cur.status !== 'pending') return null;
      await tx.patch(DELIVERIES, d._id, done ? { ...set, head: false, completedAt: now, leaseUntil: 0 } : { ...set, leaseUntil: 0 });
      if (done) await this.promote(tx, d);
      return this.reschedule(tx, d, endpoint, { pending: done ? -1 : 0 });
    });
  }

  /** The clear authToken (stored sealed: src/secrets/), undefined when none is set, null when it cannot be decrypted. */
  private async openAuthToken(apiKey: string, stored: string | undefined): Promise<string | undefined | null> {
    if (!stored || !this.secrets) return stored;
    try {
      return await this.secrets.openString(apiKey, stored);
    } catch (error) {
      if (error instanceof SecretUnavailableError) return null;
      throw error;
    }
  }

  /** Gives a claimed delivery back untouched (shutting down mid-send): due again at once. */
  private async release(d: DeliveryDoc | null) {
    if (!d) return;
    await this.settle(d, { nextAttemptAt: this.clock() });
  }

  /** The next pending delivery of `d`'s queue (by log position) becomes its head. */
  private async promote(tx: ReadTx, d: Pick<DeliveryDoc, 'apiKey' | 'endpoint' | 'stream'>) {
    const [next] = await tx.find<DeliveryDoc>(
      DELIVERIES,
      { apiKey: d.apiKey, endpoint: d.endpoint, stream: d.stream, status: 'pending' },
      { sort: 'position', limit: 1 },
    );
    if (next && !next.head) await tx.patch(DELIVERIES, next._id, { head: true });
  }

  /**
   * Applies `update` to the endpoint's state and sets its place in the round-robin from its
   * earliest head: every transaction that changes an endpoint's heads ends here, so `dueAt`
   * is never stale (and, on MongoDB, two such transactions conflict on this document).
   */
  private async reschedule(
    tx: ReadTx,
    ref: Pick<DeliveryDoc, 'apiKey' | 'workspaceId' | 'endpoint'>,
    update?: (s: EndpointStateDoc) => Partial<EndpointStateDoc>,
    workspace: WorkspaceChange = {},
  ): Promise<EndpointStateDoc> {
    const id = endpointStateId(ref.apiKey, ref.endpoint);
    const cur: EndpointStateDoc = (await tx.get<EndpointStateDoc>(ENDPOINT_STATE, id)) ?? {
      _id: id,
      apiKey: ref.apiKey,
      workspaceId: ref.workspaceId,
      endpoint: ref.endpoint,
      scheduled: false,
      dueAt: 0,
      servedAt: 0,
      failingSince: null,
      failingUrl: null,
      lastSuccessAt: null,
      lastFailureAt: null,
      disabledAt: null,
      disabledReason: null,
    };
    const next: EndpointStateDoc = { ...cur, ...update?.(cur) };
    const [head] = await tx.find<DeliveryDoc>(DELIVERIES, { apiKey: ref.apiKey, endpoint: ref.endpoint, head: true }, { sort: 'nextAttemptAt', limit: 1 });
    next.scheduled = head !== undefined;
    // An open breaker parks the endpoint: nothing of it is due before breakerUntil.
    if (head) next.dueAt = Math.max(head.nextAttemptAt, next.servedAt, next.breakerOpen ? (next.breakerUntil ?? 0) : 0);
    await tx.upsert(ENDPOINT_STATE, next);
    await this.rescheduleKey(tx, cur.apiKey, cur.workspaceId, workspace);
    return next;
  }

  /** Sets the key's place in its workspace's round-robin from its endpoints', then the workspace's. */
  private async rescheduleKey(tx: ReadTx, apiKey: string, workspaceId: string, change: WorkspaceChange): Promise<void> {
    const cur = await tx.get<KeyStateDoc>(KEY_STATE, apiKey);
    const next: KeyStateDoc = { _id: apiKey, workspaceId, scheduled: false, dueAt: 0, servedAt: 0, ...cur };
    if (change.servedAt !== undefined) next.servedAt = change.servedAt;
    const [first] = await tx.find<EndpointStateDoc>(ENDPOINT_STATE, { apiKey, scheduled: true }, { sort: 'dueAt', limit: 1 });
    next.scheduled = first !== undefined;
    if (first) next.dueAt = Math.max(first.dueAt, next.servedAt);
    await tx.upsert(KEY_STATE, next);
    await this.rescheduleWorkspace(tx, workspaceId, change);
  }

  /**
   * Sets the workspace's place in the round-robin across workspaces from its keys' (after
   * the key's own change, in the same transaction) and counts its pending
   * deliveries. A workspace without a document yet (new, or queued by an older version)
   * has its pending deliveries counted once, then kept by `pending` deltas.
   */
  private async rescheduleWorkspace(tx: ReadTx, workspaceId: string, change: WorkspaceChange): Promise<void> {
    const cur = await tx.get<WorkspaceStateDoc>(WORKSPACE_STATE, workspaceId);
    const pending = cur
      ? Math.max(0, cur.pending + (change.pending ?? 0))
      : await tx.count(DELIVERIES, { workspaceId, status: 'pending' });
    const next: WorkspaceStateDoc = { _id: workspaceId, scheduled: false, dueAt: 0, servedAt: 0, ...cur, pending, depthRank: -pending };
    if (change.servedAt !== undefined) next.servedAt = change.servedAt;
    const [first] = await tx.find<KeyStateDoc>(KEY_STATE, { workspaceId, scheduled: true }, { sort: 'dueAt', limit: 1 });
    next.scheduled = first !== undefined;
    if (first) next.dueAt = Math.max(first.dueAt, next.servedAt);
    await tx.upsert(WORKSPACE_STATE, next);
  }

  private async disabledReason(d: DeliveryDoc): Promise<string> {
    const s = await this.read.get<EndpointStateDoc>(ENDPOINT_STATE, endpointStateId(d.apiKey, d.endpoint));
    return s?.disabledReason ? ` (${s.disabledReason})` : '';
  }

  /**
   * Disables the endpoint with `reason` (the `DisableWebhookEndpoint` command: the follow
   * loop queues nothing more for it, until an update sets its URL again) and fails its
   * pending deliveries with that reason. The endpoint's failing streak ends here: after a new
   * URL, the next failure starts a new one.
   */
  private async disable(d: DeliveryDoc, reason: string) {
    const now = this.clock();
    const meta = { requestId: `webhook-${randomUUID()}`, actor: 'system:webhooks', time: now, workspaceId: d.workspaceId, apiKey: d.apiKey, causationId: d.eventId };
    const data = { apiKey: d.apiKey, reason };
    try {
      if (isAdvancedEndpoint(d.endpoint)) {
        const command = { type: 'DisableAdvancedWebhookEndpoint' as const, data: { ...data, endpointId: d.endpoint }, metadata: { now } };
        await this.commands.handle(advancedWebhooksDecider, advancedWebhooksStream(d.apiKey), command, meta);
      } else {
        const command = { type: 'DisableWebhookEndpoint' as const, data: { ...data, endpoint: d.endpoint as WebhookEndpoint }, metadata: { now } };
        await this.commands.handle(workspaceDecider, workspaceStream(d.workspaceId), command, meta);
      }
    } catch (error) {
      // Still enabled: the next failure tries again.
      this.log.error({ err: error, apiKey: d.apiKey, endpoint: d.endpoint }, 'could not disable a failing webhook endpoint');
      return;
    }
    this.log.warn({ apiKey: d.apiKey, endpoint: d.endpoint, reason }, 'webhook endpoint disabled');
    await this.read.transaction((tx) =>
      this.reschedule(tx, d, () => ({ disabledAt: now, disabledReason: reason, failingSince: null, failingUrl: null })),
    );
    await this.failPending(d, `Not sent: the endpoint was disabled (${reason}).`);
  }

  /**
   * Fails the endpoint's pending deliveries, a page per transaction. One with an attempt in
   * flight is left to it: that attempt records its own outcome, and a retry then finds the
   * endpoint disabled.
   */
  private async failPending(ref: Pick<DeliveryDoc, 'apiKey' | 'workspaceId' | 'endpoint'>, lastError: string) {
    const PAGE = 200;
    let after: { value: string; id: string } | undefined;
    for (;;) {
      const page = await this.read.find<DeliveryDoc>(
        DELIVERIES,
        { apiKey: ref.apiKey, endpoint: ref.endpoint, status: 'pending' },
        { sort: 'position', after, limit: PAGE },
      );
      if (page.length === 0) return;
      await this.read.transaction(async (tx) => {
        const now = this.clock();
        let failed = 0;
        for (const p of page) {
          const cur = await tx.get<DeliveryDoc>(DELIVERIES, p._id);
          if (!cur || cur.status !== 'pending' || cur.leaseUntil > now) continue;
          await tx.patch(DELIVERIES, p._id, { status: 'failed', head: false, completedAt: now, leaseUntil: 0, lastError });
          failed++;
        }
        await this.reschedule(tx, ref, undefined, { pending: -failed });
      });
      if (page.length < PAGE) return;
      const last = page[page.length - 1]!;
      after = { value: last.position, id: last._id };
    }
  }

  // ---- retention ----

  /** Deletes the succeeded and failed deliveries completed more than the retention ago; returns how many. */
  async prune(): Promise<number> {
    const before = this.clock() - this.retentionMs;
    // Pending deliveries have no completedAt: never below the cutoff.
    const n = await this.read.transaction((tx) => tx.deleteBefore(DELIVERIES, 'completedAt', before));
    if (n > 0) this.log.info({ deleted: n }, 'webhook deliveries past their retention deleted');
    return n;
  }

  // ---- upgrade ----

  /**
   * Endpoints scheduled by a version without the round-robin across workspaces and keys have
   * no key document (nor workspace document): creates them (which counts the workspace's
   * pending deliveries). Idempotent; a page of reads once done.
   */
  private async scheduleWorkspaces(): Promise<void> {
    let after: { value: number; id: string } | undefined;
    for (;;) {
      const page = await this.read.find<EndpointStateDoc>(ENDPOINT_STATE, { scheduled: true }, { sort: 'dueAt', after, limit: 500 });
      if (page.length === 0) return;
      const keys = new Map(page.map((ep) => [ep.apiKey, ep.workspaceId]));
      const known = new Set((await this.read.getMany(KEY_STATE, [...keys.keys()])).map((k) => k._id));
      for (const [apiKey, workspaceId] of keys) {
        if (known.has(apiKey)) continue;
        await this.read.transaction(async (tx) => {
          if (!(await tx.get(KEY_STATE, apiKey))) await this.rescheduleKey(tx, apiKey, workspaceId, {});
        });
      }
      if (page.length < 500) return;
      const last = page[page.length - 1]!;
      after = { value: last.dueAt, id: last._id };
    }
  }

  /**
   * Deliveries queued by a version without per-endpoint queues have no `head` and their
   * endpoints no state: marks each queue's oldest pending delivery as its head and schedules
   * the endpoints. Idempotent; nothing to do once done. Public for tests that queue a
   * delivery document by hand.
   */
  async markHeads(): Promise<void> {
    for (;;) {
      const page = await this.read.find<DeliveryDoc>(DELIVERIES, { status: 'pending', head: null }, { sort: 'position', limit: 500 });
      if (page.length === 0) return;
      await this.read.transaction(async (tx) => {
        const touched = new Map<string, DeliveryDoc>();
        for (const d of page) {
          const [first] = await tx.find<DeliveryDoc>(
            DELIVERIES,
            { apiKey: d.apiKey, endpoint: d.endpoint, stream: d.stream, status: 'pending' },
            { sort: 'position', limit: 1 },
          );
          await tx.patch(DELIVERIES, d._id, { head: first?._id === d._id });
          touched.set(endpointStateId(d.apiKey, d.endpoint), d);
        }
        for (const d of touched.values()) await this.reschedule(tx, d);
      });
    }
  }
}

function loadOf(load: Map<string, number>, id: string): number {
  return load.get(id) ?? 0;
}

/**
 * Round-robin over `queue`: the first entry that `serve` gets something from goes to the back.
 * Example: [a, b, c], a has nothing, b serves: [a, c, b], and the next call tries a, then c.
 */
async function takeTurn<T, R>(queue: T[], serve: (entry: T) => Promise<R | null>): Promise<R | null> {
  for (let i = 0; i < queue.length; i++) {
    const out = await serve(queue[i]!);
    if (out === null) continue;
    queue.push(...queue.splice(i, 1));
    return out;
  }
  return null;
}

/** What an attempt records of a network error: its code (ECONNREFUSED, ENOTFOUND...), else its message. */
function errorCode(error: unknown): string {
  const e = error as Error & { code?: unknown; cause?: { code?: unknown }; errors?: { code?: unknown }[] };
  // With several addresses Node tries each and fails with an AggregateError of their errors.
  const code = e.code ?? e.cause?.code ?? e.errors?.[0]?.code;
  return typeof code === 'string' ? code : (e.message ?? String(error));
}

/** "5 days", "36 hours", "90 minutes", "1500 ms": for disabling reasons. */
function duration(ms: number): string {
  if (ms % DAY === 0) return `${ms / DAY} day${ms === DAY ? '' : 's'}`;
  if (ms % H === 0) return `${ms / H} hour${ms === H ? '' : 's'}`;
  if (ms % MIN === 0) return `${ms / MIN} minute${ms === MIN ? '' : 's'}`;
  return `${ms} ms`;
}
