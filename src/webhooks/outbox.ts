/**
 * The webhook outbox: one read-store document per (event, endpoint), written in the same
 * transaction that moves the deliverer's checkpoint (src/webhooks/deliverer.ts). Its `_id`
 * and `webhookId` derive from the event id, so replaying the log after a crash finds the
 * delivery already queued and never creates a second one with a new id.
 *
 * Beside it, one document per endpoint (an API key's raw or processed URL slot, or one of
 * its advanced endpoints, named by its `ep_...` id: src/webhooks/advanced.ts) in
 * `webhook_endpoints`: when the sender next has work there (its place in the round-robin)
 * and the endpoint's failing streak. The sender finds work through these documents and the
 * indexes below, endpoint by endpoint, so one endpoint's backlog never costs another
 * endpoint a read.
 *
 * Above those, one document per API key (`webhook_keys`) and one per workspace
 * (`webhook_workspaces`): the sender's round-robin across workspaces, then across a
 * workspace's keys, then across a key's endpoints (src/webhooks/deliverer.ts, "Fairness");
 * and the workspace's count of pending deliveries (its queue depth, for /metrics).
 */
import type { Doc, IndexSpec, ReadView } from '../ports/read-store.js';
import { key } from '../shared/ids.js';
import { decodePageToken, encodePageToken } from '../../queries/paging.js';

export const DELIVERIES = 'webhook_deliveries';
export const ENDPOINT_STATE = 'webhook_endpoints';
export const KEY_STATE = 'webhook_keys';
export const WORKSPACE_STATE = 'webhook_workspaces';
export const WEBHOOK_CHECKPOINT = 'webhooks';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface Attempt {
  /** Milliseconds. */
  at: number;
  durationMs: number;
  /** HTTP status of the receiver's answer; absent when there was none. */
  httpStatus?: number;
  error?: string;
}

export interface DeliveryDoc extends Doc {
  apiKey: string;
  workspaceId: string;
  webhookId: string;
  /** `raw` or `processed` (the basic webhook's URLs), or an advanced endpoint's id (`ep_...`). */
  endpoint: string;
  eventId: string;
  eventType: string;
  stream: string;
  /** Log position of the event: the delivery order within a stream and endpoint. */
  position: string;
  /** The URL of the last attempt (the endpoint's current URL is used for each attempt). */
  url: string;
  /** The exact bytes every attempt sends. */
  body: string;
  status: DeliveryStatus;
  /**
   * The oldest pending delivery of its (key, endpoint, stream) queue: the only one of the
   * queue the sender may attempt (per-stream order). Set when queued into an empty queue, or
   * when the delivery before it succeeds or fails; false once it is done.
   * Absent on deliveries queued by versions before it (init() sets it).
   */
  head: boolean;
  attempts: Attempt[];
  /** When the next attempt is due; while an attempt runs, when its claim lapses. */
  nextAttemptAt: number;
  /** A sender holds the delivery until then (several processes, one sender per delivery). */
  leaseUntil: number;
  createdAt: number;
  completedAt: number | null;
  lastError: string | null;
}

/** One per (API key, endpoint): the sender's schedule and the endpoint's health. */
export interface EndpointStateDoc extends Doc {
  apiKey: string;
  workspaceId: string;
  endpoint: string;
  /** Some queue of this endpoint has a pending head delivery. */
  scheduled: boolean;
  /**
   * The round-robin key (meaningful while scheduled): the later of the earliest due head
   * and `servedAt`. The sender serves scheduled endpoints in ascending `dueAt`, so an
   * endpoint it has just served goes behind every endpoint that has been waiting since
   * before. Example: A has 1000 heads due since 10:00 and was served at 10:05; B's one
   * delivery is due at 10:03. A's key is 10:05, B's 10:03: B is served first.
   */
  dueAt: number;
  /** When the sender last claimed a delivery here. */
  servedAt: number;
  /** First failed attempt since the last success (the current failing streak), or null. */
  failingSince: number | null;
  /** The URL the streak is about: a new URL starts a new streak. */
  failingUrl: string | null;
  lastSuccessAt: number | null;
  lastFailureAt: number | null;
  /** Set when the deliverer disables the endpoint (410 Gone, or failing for too long). */
  disabledAt: number | null;
  disabledReason: string | null;
  /**
   * Attempts in a row that got no answer (timed out, or the connection failed) to
   * `failingUrl`; any HTTP answer resets it. Absent on documents of older versions: 0.
   */
  unanswered?: number;
  /**
   * The circuit breaker: open once `unanswered` reaches the deliverer's `breakerAfter`,
   * closed by the next HTTP answer. While open, the endpoint is parked until `breakerUntil`
   * (its `dueAt` is never earlier), then half-open: one probe at a time, with the short
   * timeout. Absent on older documents: closed.
   */
  breakerOpen?: boolean;
  breakerUntil?: number;
}

/** One per API key that ever had a delivery: its place in the round-robin across its workspace's keys. */
export interface KeyStateDoc extends Doc {
  workspaceId: string;
  /** Some endpoint of the key is scheduled. */
  scheduled: boolean;
  /** The later of its endpoints' earliest `dueAt` and `servedAt` (as for endpoints). */
  dueAt: number;
  /** When the sender last claimed a delivery of this key. */
  servedAt: number;
}

/** One per workspace that ever had a delivery: its place in the sender's round-robin across workspaces. */
export interface WorkspaceStateDoc extends Doc {
  /** Some endpoint of the workspace is scheduled. */
  scheduled: boolean;
  /**
   * The round-robin key across workspaces (meaningful while scheduled): the later of its
   * keys' earliest `dueAt` and `servedAt`, as for endpoints. A workspace just served
   * goes behind every workspace waiting since before.
   */
  dueAt: number;
  /** When the sender last claimed a delivery of this workspace. */
  servedAt: number;
  /** Pending deliveries of the workspace (its queue depth), kept by every transaction that queues or completes one. */
  pending: number;
  /** -pending: the port sorts ascending only, and /metrics lists the deepest queues first. */
  depthRank: number;
}

export const endpointStateId = (apiKey: string, endpoint: string) => key(apiKey, endpoint);

export const outboxIndexes: IndexSpec[] = [
  { collection: DELIVERIES, fields: ['status', 'position'] },
  { collection: DELIVERIES, fields: ['apiKey', 'position'] },
  { collection: DELIVERIES, fields: ['apiKey', 'status', 'position'] },
  // An endpoint's due heads, earliest first (the sender's per-endpoint lookup).
  { collection: DELIVERIES, fields: ['apiKey', 'endpoint', 'head', 'nextAttemptAt'] },
  // A queue's oldest pending delivery (who becomes head); an endpoint's pending ones (disabling).
  { collection: DELIVERIES, fields: ['apiKey', 'endpoint', 'stream', 'status', 'position'] },
  { collection: DELIVERIES, fields: ['apiKey', 'endpoint', 'status', 'position'] },
  // The retention sweep (deleteBefore): pending deliveries have none and are never swept.
  { collection: DELIVERIES, fields: ['completedAt'] },
  // Endpoints with work, in round-robin order.
  { collection: ENDPOINT_STATE, fields: ['scheduled', 'dueAt'] },
  // A key's endpoints with work, in round-robin order (the sender, and the key's own place).
  { collection: ENDPOINT_STATE, fields: ['apiKey', 'scheduled', 'dueAt'] },
  // A workspace's keys with work, in round-robin order (the sender, and the workspace's own place).
  { collection: KEY_STATE, fields: ['workspaceId', 'scheduled', 'dueAt'] },
  // Open breakers, all and per workspace (/metrics).
  { collection: ENDPOINT_STATE, fields: ['breakerOpen'] },
  { collection: ENDPOINT_STATE, fields: ['workspaceId', 'breakerOpen'] },
  // A workspace's pending deliveries (its queue depth, counted once on upgrade).
  { collection: DELIVERIES, fields: ['workspaceId', 'status'] },
  // Workspaces with work, in round-robin order; the deepest queues (/metrics).
  { collection: WORKSPACE_STATE, fields: ['scheduled', 'dueAt'] },
  { collection: WORKSPACE_STATE, fields: ['depthRank'] },
];

/** Workspaces /metrics names, at most: the deepest queues, and as many with an open breaker. */
export const METRIC_WORKSPACES = 10;

/**
 * The workspaces worth a labelled series: the METRIC_WORKSPACES deepest queues and the
 * workspaces of up to METRIC_WORKSPACES open breakers, each with its pending deliveries and
 * open breakers; and the open breakers of all workspaces. At most 2 x METRIC_WORKSPACES
 * workspaces, whatever the number of tenants: the label's cardinality stays bounded.
 */
export async function webhookHealth(read: ReadView) {
  const [deepest, tripped, breakersOpen] = await Promise.all([
    read.find<WorkspaceStateDoc>(WORKSPACE_STATE, {}, { sort: 'depthRank', limit: METRIC_WORKSPACES }),
    read.find<EndpointStateDoc>(ENDPOINT_STATE, { breakerOpen: true }, { limit: METRIC_WORKSPACES }),
    read.count(ENDPOINT_STATE, { breakerOpen: true }),
  ]);
  const ids = [...new Set([...deepest.filter((w) => w.pending > 0).map((w) => w._id), ...tripped.map((ep) => ep.workspaceId)])];
  const docs = new Map((await read.getMany<WorkspaceStateDoc>(WORKSPACE_STATE, ids)).map((w) => [w._id, w]));
  const workspaces = await Promise.all(
    ids.map(async (id) => ({ workspaceId: id, pending: docs.get(id)?.pending ?? 0, breakersOpen: await read.count(ENDPOINT_STATE, { workspaceId: id, breakerOpen: true }) })),
  );
  return { breakersOpen, workspaces };
}

/** Attempt records kept per delivery (the schedule makes at most 8). */
export const MAX_ATTEMPT_LOG = 20;

const deliveryView = (d: DeliveryDoc) => ({
  id: d.webhookId,
  eventId: d.eventId,
  eventType: d.eventType,
  endpoint: d.endpoint,
  url: d.url,
  status: d.status,
  attemptCount: d.attempts.length,
  attempts: d.attempts,
  nextAttemptAt: d.status === 'pending' ? d.nextAttemptAt : null,
  createdAt: d.createdAt,
  completedAt: d.completedAt,
  lastError: d.lastError,
});

/** A page of a key's deliveries in event order; `pageToken` when more exist. */
export async function listDeliveries(
  read: ReadView,
  apiKey: string,
  options: { status?: DeliveryStatus; pageSize: number; pageToken?: string },
) {
  const filter: Record<string, string> = { apiKey };
  if (options.status) filter.status = options.status;
  const query = { q: 'webhook-deliveries', ...filter };
  const after = decodePageToken(options.pageToken, query);
  const rows = await read.find<DeliveryDoc>(DELIVERIES, filter, { sort: 'position', after, limit: options.pageSize + 1 });
  const page = rows.slice(0, options.pageSize);
  const last = page.at(-1);
  const more = rows.length > options.pageSize && last;
  return {
    rows: page.map(deliveryView),
    pageToken: more ? encodePageToken(query, { value: last.position, id: last._id }) : undefined,
  };
}
