/**
 * `/v2/changes/get` (API-key mode; issue 36): the key's changes in log order strictly after
 * `since`, paged by change tokens (src/usecases/changes.ts). `since` may be a write's
 * consistency token (its last change), a change's `token`, or a previous `nextToken`; the
 * call first waits for the read models to reach it, as any read with that token in
 * `x-consistency-token` does (src/http/consistency.ts).
 */
import { z } from 'zod';
import { CHANGE_FAMILIES } from '../../../projections/audit.js';
import { LOG_START } from '../../ports/event-store.js';
import { apiKeyScope } from '../../secrets/positions.js';
import { getChanges } from '../../usecases/changes.js';
import { waitForPosition } from '../consistency.js';
import { defineRoute, type AnyRoute } from '../route.js';

const millis = z.number().int().min(0).max(8.64e15);

const change = z.object({
  token: z.string().describe('This change\'s token: as `since`, the changes after it; as `x-consistency-token`, a read that sees it.'),
  type: z.string().describe('The event type (`DocumentAdded`, `GrantAdded`, `UserProfileUpdated`...).'),
  family: z.enum(CHANGE_FAMILIES).describe('What kind of thing changed (the `types` filter): a grant on a document is a `grant`.'),
  time: millis.describe('Unix milliseconds.'),
  actor: z.string().describe('Who made it, as `<kind>:<id>`: `apikey:<key>`, `user:<id>` (a user token), `system:cascade`...'),
  organizationId: z.string().optional().describe('The organization it happened in, when any.'),
  resourceType: z.string().optional().describe('What it is about: `organization`, `folder`, `document`, `migration`, `user`, `group`, `agent`, `agentGroup`, `webhook`; for a grant, the resource granted.'),
  resourceId: z.string().optional().describe('That resource\'s id.'),
  data: z.record(z.string(), z.unknown()).describe(
    'The event\'s data. Secrets read `"__redacted__"`. A user\'s `name`, `email` and `initial` are shown while the user\'s data exists, and never once it was deleted (users/data/delete).',
  ),
});

export function changeRoutes(): AnyRoute[] {
  const get = defineRoute({
    path: '/v2/changes/get',
    tag: 'Changes',
    doc: {
      summary: 'Read the API key\'s changes in log order, after a token',
      description: [
        'The changes of the calling key, oldest first, strictly after `since`: a write\'s `x-consistency-token` (its last change), a change\'s `token`, or a previous `nextToken`; from the start without it.',
        '',
        '`types` keeps only those kinds of change (`family`): `apiKey`, `organization`, `folder`, `document`, `migration`, `user`, `grant`, `group`, `agent`, `webhook`. A grant on a folder or document, a user\'s or a group\'s, is a `grant`.',
        '',
        'Paged: `pageSize` 1 to 1000 (default 100); send `nextToken` back as `since` (with the same `types`) for the next page. A page with no changes means none are applied yet after `since`: keep its `nextToken` and ask again later. Pages never skip nor repeat a change, however writes run meanwhile.',
        '',
        'With `since`, the call first waits (at most CONSISTENCY_WAIT_MS) for the read models to reach it: 503 UNAVAILABLE after that. A token of another key or deployment, or changed: 400 INVALID_ARGUMENT.',
        '',
        'A server with a limited audit (`AUDIT_RETENTION_DAYS`) deletes older changes: going on from before the key\'s last change deleted (an old token, or no `since` once any went) is 400 INVALID_ARGUMENT saying so, never a page that skips them.',
      ].join('\n'),
      example: { types: ['grant', 'document'], pageSize: 50 },
    },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({
      since: z.string().min(1).max(1024).optional(),
      pageSize: z.number().int().min(1).max(1000).default(100),
      types: z.array(z.enum(CHANGE_FAMILIES)).min(1).max(CHANGE_FAMILIES.length).optional(),
    }),
    response: z.object({
      changes: z.array(change),
      nextToken: z.string().describe('Where the next page starts: send it as `since`.'),
    }),
    async handler(data, ctx) {
      let since = LOG_START;
      if (data.since !== undefined) {
        since = ctx.services.secrets.positions.open(apiKeyScope(ctx.apiKey), data.since, 'data.since');
        await waitForPosition(ctx.services, since, 'data.since');
      }
      const page = await getChanges(ctx, { since, pageSize: data.pageSize, types: data.types });
      return { message: 'Changes retrieved successfully.', data: page };
    },
  });
  return [get];
}
