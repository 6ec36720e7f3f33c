/**
 * `/v2/workspace/webhooks/deliveries/get` (API-key mode): the key's webhook deliveries and
 * their attempts, in event order, paged (`pageSize` 1..1000, default 100; `result.pageToken`
 * while more exist). Bodies and secrets are not listed.
 */
import { z } from 'zod';
import { listDeliveries } from '../../webhooks/outbox.js';
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';

const deliveryStatus = z.enum(['pending', 'succeeded', 'failed']);

/** A row as `deliveryView` (src/webhooks/outbox.ts) shows it. */
const deliveryAnswer = z.object({
  id: z.string().describe('The delivery\'s webhook id (sent to the receiver with the payload).'),
  eventId: z.string().describe('The event delivered.'),
  eventType: z.string(),
  endpoint: z.string().describe('Which of the configured URLs (`raw`: `rawNotificationUrl`, `processed`: `processedNotificationUrl`), or the id (`ep_...`) of an advanced webhook endpoint.'),
  url: z.string().describe('The URL of the last attempt.'),
  status: deliveryStatus,
  attemptCount: z.number().int(),
  attempts: z.array(
    z.object({
      at: z.number().describe('Unix milliseconds.'),
      durationMs: z.number(),
      httpStatus: z.number().int().optional().describe('The receiver\'s HTTP status; absent when it did not answer.'),
      error: z.string().optional(),
    }),
  ),
  nextAttemptAt: z.number().nullable().describe('Unix milliseconds; `null` once the delivery succeeded or failed.'),
  createdAt: z.number(),
  completedAt: z.number().nullable(),
  lastError: z.string().nullable(),
});

export function webhookRoutes(services: Services): AnyRoute[] {
  const deliveries = defineRoute({
    path: '/v2/workspace/webhooks/deliveries/get',
    tag: 'Webhooks',
    doc: {
      summary: 'List the API key\'s webhook deliveries and their attempts',
      description:
        'In event order, optionally only those of one `status`. Paged: `pageSize` 1 to 1000 (default 100); `result.pageToken` while more exist, sent back as `data.pageToken`. Payload bodies and secrets are not listed.',
      example: { status: 'failed', pageSize: 50 },
    },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({
      status: deliveryStatus.optional(),
      pageSize: z.number().int().min(1).max(1000).default(100),
      pageToken: z.string().max(2048).optional(),
    }),
    response: z.array(deliveryAnswer),
    paged: 'pageToken',
    async handler(data, ctx) {
      const page = await listDeliveries(services.read, ctx.apiKey, data);
      return { message: 'Webhook deliveries retrieved successfully.', data: page.rows, pageToken: page.pageToken };
    },
  });
  return [deliveries];
}
