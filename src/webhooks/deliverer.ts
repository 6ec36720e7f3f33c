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
 * 2. **Send**: picks, per (key, stream, endpoint) queue, the oldest pending delivery (so a
 *    stream's events arrive in order; a later one waits while an earlier one is retried),
 *    claims it with a short lease (several processes never send the same delivery at once),
 *    POSTs it with a 10 s timeout, and records the attempt. 2xx: succeeded. 410 Gone: failed,
 *    and the endpoint is disabled (`WebhookEndpointDisabled` on the key's workspace) until
 *    its URL is set again. Anything else: retried on the schedule with jitter, then failed.
 *
 * Neither loop is on a request's path: requests never wait for either. The follow loop
 * writes to the read store only when a batch queues deliveries (or, at most once a second,
 * to store its checkpoint), so it does not hold up the projections' transactions.
 */
import { randomUUID } from 'node:crypto';
import { Wakeup } from '../runtime/wakeup.js';
import { LOG_START, type EventStore, type LogPosition, type RecordedEvent } from '../ports/event-store.js';
import { CheckpointConflictError, type ReadStore } from '../ports/read-store.js';
import type { CommandHandler } from '../runtime/command-handler.js';
import type { RunnerLogger } from '../runtime/projection-runner.js';
import type { Lease } from '../runtime/lease.js';
import { workspaceDecider } from '../../commands/workspace.js';
import { ENDPOINT_URL_FIELD, type ServiceState, type WebhookEndpoint } from '../../commands/service-config.js';
import { API_KEYS, type ApiKeyDoc } from '../../projections/workspaces.js';
import { key } from '../ids.js';
import { workspaceStream } from '../http/routes/workspace.js';
import { DELIVERIES, MAX_ATTEMPT_LOG, WEBHOOK_CHECKPOINT, outboxIndexes, type Attempt, type DeliveryDoc } from './outbox.js';
import { processedPayload, rawPayload } from './payloads.js';
import { signPayload } from './signature.js';
import { triggerOf } from './triggers.js';
import { PARK_AFTER_ATTEMPTS, isStoreFault, park, parkedDoc } from '../runtime/parked.js';
import type { SecretStore } from '../secrets/store.js';
import { SecretUnavailableError } from '../errors.js';

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
/**
 * Delay before retry n (after failed attempt n): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h,
 * each ±20 % jitter: 8 attempts over about 27.6 hours, then the delivery is failed.
 */
export const DEFAULT_RETRY_SCHEDULE = [5 * S, 5 * MIN, 30 * MIN, 2 * H, 5 * H, 10 * H, 10 * H];
export const DEFAULT_TIMEOUT_MS = 10 * S;

export interface WebhookOptions {
  retrySchedule?: number[];
  /** Fraction of each delay added or taken at random. Default 0.2. */
  jitter?: number;
  timeoutMs?: number;
  /** Deliveries in flight at once (each to a different stream). Default 8. */
  concurrency?: number;
  /** How often to look for new events and due retries without being woken. Default 1000. */
  pollMs?: number;
  batchSize?: number;
  logger?: RunnerLogger;
  /** With several processes: follow and send only while holding this lease (src/runtime/lease.ts). */
  lease?: Lease;
  /** Opens the stored (sealed) authToken for sending (src/secrets/store.ts); without it, stored values are used as they are. */
  secrets?: Pick<SecretStore, 'openString'>;
}

const ENDPOINTS: WebhookEndpoint[] = ['raw', 'processed'];
const silent: RunnerLogger = { error() {}, warn() {}, info() {} };

interface KeyConfig {
  workspaceId: string;
  webhook: ServiceState;
}

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
  private stopping = new AbortController();
  private readonly schedule: number[];
  private readonly jitter: number;
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private readonly pollMs: number;
  private readonly batchSize: number;
  private readonly log: RunnerLogger;
  private readonly lease: Lease | undefined;
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
    this.concurrency = options.concurrency ?? 8;
    this.pollMs = options.pollMs ?? 1000;
    this.batchSize = options.batchSize ?? 500;
    this.log = options.logger ?? silent;
    this.lease = options.lease;
    this.secrets = options.secrets;
  }

  /** Whether this process delivers now (it holds the lease, or runs alone). */
  private get active(): boolean {
    return !this.lease || this.lease.held;
  }

  async init(): Promise<void> {
    await this.read.ensureIndexes(outboxIndexes);
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
      if (!cfg || !cfg.webhook.enabled) continue;
      if (cfg.webhook.triggers && !cfg.webhook.triggers.includes(area)) continue;
      for (const endpoint of ENDPOINTS) {
        const url = cfg.webhook.config[ENDPOINT_URL_FIELD[endpoint]];
        if (!url || cfg.webhook.disabledEndpoints.includes(endpoint)) continue;
        docs.push(this.newDelivery(e, apiKey, cfg.workspaceId, endpoint, url));
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
        for (const d of docs) if (!(await tx.get(DELIVERIES, d._id))) await tx.upsert(DELIVERIES, d);
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

  /** Queues one event's deliveries again, whatever the checkpoint (`collab projections retry`). */
  async requeue(e: RecordedEvent): Promise<void> {
    const docs = await this.deliveriesFor([e]);
    await this.read.transaction(async (tx) => {
      for (const d of docs) if (!(await tx.get(DELIVERIES, d._id))) await tx.upsert(DELIVERIES, d);
    });
  }

  private newDelivery(e: RecordedEvent, apiKey: string, workspaceId: string, endpoint: WebhookEndpoint, url: string): DeliveryDoc {
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
      body: JSON.stringify(endpoint === 'raw' ? rawPayload(e) : processedPayload(e)),
      status: 'pending',
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
    return k ? { workspaceId: doc.workspaceId, webhook: k.services.webhook } : null;
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
      try {
        const nextDue = await this.sendStep();
        if (nextDue !== null) wait = Math.min(wait, nextDue - this.clock());
      } catch (error) {
        this.log.error({ err: error }, 'webhook send step failed');
      }
      if (this.running) await this.send.sleep(wait);
    }
  }

  /** Starts the due deliveries; returns when the next known one falls due (ms), or null. */
  async sendStep(): Promise<number | null> {
    const now = this.clock();
    const pending = await this.read.find<DeliveryDoc>(DELIVERIES, { status: 'pending' }, { sort: 'position', limit: 1000 });
    const heads = new Set<string>();
    let nextDue: number | null = null;
    for (const d of pending) {
      const queue = key(d.apiKey, d.stream, d.endpoint);
      if (heads.has(queue)) continue;
      heads.add(queue);
      if (this.inflight.has(d._id)) continue;
      const due = Math.max(d.nextAttemptAt, d.leaseUntil);
      if (due > now) {
        nextDue = nextDue === null ? due : Math.min(nextDue, due);
        continue;
      }
      if (this.inflight.size >= this.concurrency) break;
      const p = this.attempt(d._id)
        .catch((error) => this.log.error({ err: error, delivery: d.webhookId }, 'webhook attempt failed'))
        .finally(() => {
          this.inflight.delete(d._id);
          this.send.poke();
        });
      this.inflight.set(d._id, p);
    }
    return nextDue;
  }

  private async attempt(id: string): Promise<void> {
    const now = this.clock();
    const d = await this.read.transaction(async (tx) => {
      const cur = await tx.get<DeliveryDoc>(DELIVERIES, id);
      if (!cur || cur.status !== 'pending' || cur.leaseUntil > now || cur.nextAttemptAt > now) return null;
      await tx.patch(DELIVERIES, id, { leaseUntil: now + this.timeoutMs + 5000 });
      return cur;
    });
    if (!d || !this.running) return this.release(d);
    const cfg = await this.configFor(d.apiKey);
    const url = cfg?.webhook.config[ENDPOINT_URL_FIELD[d.endpoint]];
    const stop = !cfg || !cfg.webhook.enabled
      ? 'the webhook service was turned off'
      : cfg.webhook.disabledEndpoints.includes(d.endpoint)
        ? 'the endpoint is disabled (it answered 410 Gone)'
        : !url
          ? 'the endpoint has no URL any more'
          : null;
    if (stop || !url) return this.finish(d, { status: 'failed', lastError: `Not sent: ${stop}.` });

    const authToken = await this.openAuthToken(d.apiKey, cfg!.webhook.config.authToken);
    if (authToken === null) return this.finish(d, { status: 'failed', lastError: 'Not sent: the webhook authToken cannot be decrypted (its data key is gone).' });
    const timestamp = Math.floor(this.clock() / 1000);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'collab-backend-webhooks/1',
      'webhook-id': d.webhookId,
      'webhook-timestamp': String(timestamp),
    };
    if (authToken) {
      headers.authorization = `Basic ${authToken}`;
      headers['webhook-signature'] = signPayload(authToken, d.webhookId, timestamp, d.body);
    }
    const started = this.clock();
    const attempt: Attempt = { at: started, durationMs: 0 };
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body: d.body,
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(this.timeoutMs), this.stopping.signal]),
      });
      await res.body?.cancel().catch(() => undefined);
      attempt.httpStatus = res.status;
    } catch (error) {
      if (this.stopping.signal.aborted) return this.release(d);
      const e = error as Error & { cause?: { code?: string } };
      attempt.error = e.name === 'TimeoutError' ? `timed out after ${this.timeoutMs} ms` : (e.cause?.code ?? e.message);
    }
    attempt.durationMs = this.clock() - started;
    const attempts = [...d.attempts, attempt].slice(-MAX_ATTEMPT_LOG);
    const count = d.attempts.length + 1;
    const http = attempt.httpStatus;
    if (http !== undefined && http >= 200 && http < 300) {
      return this.finish(d, { status: 'succeeded', attempts, url, lastError: null });
    }
    const lastError = http !== undefined ? `HTTP ${http}` : attempt.error!;
    if (http === 410) {
      await this.disableEndpoint(d, url);
      return this.finish(d, { status: 'failed', attempts, url, lastError: 'HTTP 410 Gone: endpoint disabled' });
    }
    if (count > this.schedule.length) {
      return this.finish(d, { status: 'failed', attempts, url, lastError: `${lastError}; gave up after ${count} attempts` });
    }
    const base = this.schedule[count - 1]!;
    const delay = Math.max(0, Math.round(base * (1 + this.jitter * (2 * Math.random() - 1))));
    await this.read.transaction((tx) =>
      tx.patch(DELIVERIES, d._id, { attempts, url, lastError, nextAttemptAt: this.clock() + delay, leaseUntil: 0 }).then(() => undefined),
    );
  }

  private async finish(d: DeliveryDoc, set: Partial<DeliveryDoc>) {
    await this.read.transaction((tx) =>
      tx.patch(DELIVERIES, d._id, { ...set, completedAt: this.clock(), leaseUntil: 0 }).then(() => undefined),
    );
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

  /** Gives a claimed delivery back untouched (shutting down mid-send). */
  private async release(d: DeliveryDoc | null) {
    if (!d) return;
    await this.read.transaction((tx) => tx.patch(DELIVERIES, d._id, { leaseUntil: 0 }).then(() => undefined));
  }

  private async disableEndpoint(d: DeliveryDoc, url: string) {
    const now = this.clock();
    try {
      await this.commands.handle(
        workspaceDecider,
        workspaceStream(d.workspaceId),
        { type: 'DisableWebhookEndpoint', data: { apiKey: d.apiKey, endpoint: d.endpoint, reason: `${url} answered 410 Gone` }, metadata: { now } },
        { requestId: `webhook-${randomUUID()}`, actor: 'system:webhooks', time: now, workspaceId: d.workspaceId, apiKey: d.apiKey, causationId: d.eventId },
      );
    } catch (error) {
      this.log.error({ err: error, apiKey: d.apiKey }, 'could not disable a webhook endpoint that answered 410');
    }
  }
}
