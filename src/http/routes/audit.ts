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
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id } from '../validation.js';

const millis = z.number().int().min(0).max(8.64e15);

/** An entry as `auditEntryView` (queries/audit.ts) shows it. */
const auditEntryAnswer = z.object({
  id: z.string().describe('The event id.'),
  position: z.string().describe('The event\'s position in the log (entries come in this order).'),
  type: z.string().describe('The event type (`DocumentCreated`, `AgentUpdated`...).'),
  time: millis.describe('Unix milliseconds.'),
  actor: z.string().describe('Who caused it, as `<kind>:<id>`: `apikey:<key>`, `workspace:<id>`, `system:cascade` (a deletion\'s cascade)...'),
  requestId: z.string().describe('The `x-request-id` of the request that caused it.'),
  causationId: z.string().optional().describe('The event that caused this one (an event a deletion\'s cascade wrote).'),
  stream: z.object({
    category: z.string().describe('The aggregate kind (`organization`, `document`, `agent`...).'),
    ids: z.array(z.string()).describe('The aggregate\'s ids after the API key.'),
  }),
  revision: z.number().int().describe('The event\'s revision in its stream.'),
  data: z.record(z.string(), z.unknown()).describe('The event\'s data; secrets read `"__redacted__"`.'),
});

export function auditRoutes(services: Services): AnyRoute[] {
  const events = defineRoute({
    path: '/v2/audit/events/get',
    tag: 'Audit',
    doc: {
      summary: 'Read the API key\'s event history',
      description: [
        'What the history covers:',
        '',
        '- no ids: every event of the API key;',
        '- `organizationId`: the organization\'s;',
        '- `folderId` or `documentId`, each with its `organizationId`: that folder\'s or document\'s (not both);',
        '- `agentId` alone: the agent\'s.',
        '',
        '`fromTime` and `toTime` (inclusive, Unix milliseconds) and `types` filter. Paged: `pageSize` 1 to 1000 (default 100); `result.pageToken` while more may follow, sent back with the same filters. A page scans a bounded part of the history, so with narrow filters it may hold fewer entries than asked, even none, and still carry a `pageToken`.',
        '',
        'Secrets in event data read `"__redacted__"`. Only the calling key\'s own history can be read.',
      ].join('\n'),
      example: { organizationId: 'org-123', documentId: 'doc-456', types: ['DocumentCreated'], pageSize: 50 },
    },
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
    response: z.array(auditEntryAnswer),
    paged: 'pageToken',
    async handler(data, ctx) {
      const { pageSize, pageToken, fromTime, toTime, types, ...target } = data;
      const page = await auditPage(services.read, { apiKey: ctx.apiKey, ...target }, { fromTime, toTime, types }, { pageSize, pageToken });
      return { message: 'Audit events retrieved successfully.', data: page.rows, pageToken: page.pageToken };
    },
  });
  return [events];
}
