/**
 * The webhook outbox: one read-store document per (event, endpoint), written in the same
 * transaction that moves the deliverer's checkpoint (src/webhooks/deliverer.ts). Its `_id`
 * and `webhookId` derive from the event id, so replaying the log after a crash finds the
 * delivery already queued and never creates a second one with a new id.
 */
import type { Doc, IndexSpec, ReadView } from '../ports/read-store.js';
import type { WebhookEndpoint } from '../../commands/service-config.js';
import { decodePageToken, encodePageToken } from '../../queries/paging.js';

export const DELIVERIES = 'webhook_deliveries';
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
  endpoint: WebhookEndpoint;
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
  attempts: Attempt[];
  nextAttemptAt: number;
  /** A sender holds the delivery until then (several processes, one sender per delivery). */
  leaseUntil: number;
  createdAt: number;
  completedAt: number | null;
  lastError: string | null;
}

export const outboxIndexes: IndexSpec[] = [
  { collection: DELIVERIES, fields: ['status', 'position'] },
  { collection: DELIVERIES, fields: ['apiKey', 'position'] },
  { collection: DELIVERIES, fields: ['apiKey', 'status', 'position'] },
];

/** Attempt records kept per delivery (the schedule makes at most 8). */
export const MAX_ATTEMPT_LOG = 20;

export const deliveryView = (d: DeliveryDoc) => ({
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
