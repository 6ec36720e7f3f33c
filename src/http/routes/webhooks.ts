/**
 * `/v2/workspace/webhooks/deliveries/get` (API-key mode): the key's webhook deliveries and
 * their attempts, in event order, paged (`pageSize` 1..1000, default 100; `result.pageToken`
 * while more exist). Bodies and secrets are not listed.
 */
import { z } from 'zod';
import { listDeliveries } from '../../webhooks/outbox.js';
import type { Services } from '../../services.js';
import { defineRoute, type AnyRoute } from '../route.js';

export function webhookRoutes(services: Services): AnyRoute[] {
  const deliveries = defineRoute({
    path: '/v2/workspace/webhooks/deliveries/get',
    mutates: false,
    auth: 'apiKey',
    schema: z.object({
      status: z.enum(['pending', 'succeeded', 'failed']).optional(),
      pageSize: z.number().int().min(1).max(1000).default(100),
      pageToken: z.string().max(2048).optional(),
    }),
    async handler(data, ctx) {
      const page = await listDeliveries(services.read, ctx.apiKey, data);
      return { message: 'Webhook deliveries retrieved successfully.', data: page.rows, pageToken: page.pageToken };
    },
  });
  return [deliveries];
}
