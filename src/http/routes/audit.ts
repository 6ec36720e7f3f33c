/**
 * `/v2/audit/events/get` (API-key mode): the caller's own history, in log order, from the
 * audit index (projections/audit.ts, queries/audit.ts). Without ids: every event of the key;
 * `organizationId`: the organization's; with `folderId` or `documentId` (and its
 * `organizationId`): that folder's or document's; `agentId`: the agent's. `fromTime`/`toTime`
 * (inclusive, Unix milliseconds, like each entry's `time`) and `types` filter. Paged with
 * `pageSize` (1..1000, default 100) and `pageToken` (`result.pageToken` while more exist).
 * Secrets in event data read `__redacted__`. Another key's data can never be named: every
 * subject is built from the caller's API key.
 */
import { z } from 'zod';
import { auditPage } from '../../../queries/audit.js';
import type { Services } from '../../services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id } from '../validation.js';

const millis = z.number().int().min(0).max(8.64e15);

export function auditRoutes(services: Services): AnyRoute[] {
  const events = defineRoute({
    path: '/v2/audit/events/get',
    mutates: false,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id().optional(),
      folderId: id().optional(),
      documentId: id().optional(),
      agentId: id().optional(),
      fromTime: millis.optional(),
      toTime: millis.optional(),
      types: z.array(z.string().min(1).max(128)).max(100).optional(),
      pageSize: z.number().int().min(1).max(1000).default(100),
      pageToken: z.string().max(2048).optional(),
    }),
    async handler(data, ctx) {
      const { pageSize, pageToken, fromTime, toTime, types, ...target } = data;
      const page = await auditPage(services.read, { apiKey: ctx.apiKey, ...target }, { fromTime, toTime, types }, { pageSize, pageToken });
      return { message: 'Audit events retrieved successfully.', data: page.rows, pageToken: page.pageToken };
    },
  });
  return [events];
}
