/**
 * The operator's routes (admin token), what `collab projections status | parked | retry |
 * skip` do from a shell, for the console's operations view (docs/console.md):
 * - `/v2/admin/projections/get`: the read-model generation, each projection's checkpoint
 *   and lag, the leases, the parked count;
 * - `/v2/admin/parked/get`: parked events (with `all`, skipped ones too);
 * - `/v2/admin/parked/retry`, `/v2/admin/parked/skip`: src/ops/parked.ts says when each suits.
 *
 * These read across tenants (a parked record names its API key and the error), so they need an
 * admin token even where `workspace/create` is open: without ADMIN_TOKEN they answer
 * FAILED_PRECONDITION.
 */
import { z } from 'zod';
import type { Services } from '../../composition/services.js';
import { ParkedError, listParked, skipParked } from '../../ops/parked.js';
import { retryParkedEvent } from '../../usecases/parked.js';
import { projectionsStatus } from '../../ops/rebuild.js';
import { WEBHOOK_CHECKPOINT } from '../../webhooks/outbox.js';
import { allProjections } from '../../../projections/index.js';
import type { ParkedDoc } from '../../runtime/parked.js';
import { failedPrecondition, notFound } from '../../shared/errors.js';
import { defineRoute, type AnyRoute } from '../route.js';

const lagRow = z.object({
  name: z.string(),
  checkpoint: z.string().nullable().describe('The last log position applied; null before the first.'),
  lag: z.number().int().describe('Events in the log after the checkpoint (counted up to 10,000).'),
  lagCapped: z.boolean().describe('True when the lag is more than the count reached.'),
});

const statusAnswer = z.object({
  generation: z.number().int(),
  previous: z.number().int().nullable(),
  switchedAt: z.number().nullable(),
  head: z.string().describe('The log\'s last position.'),
  projections: z.array(lagRow),
  webhooks: lagRow,
  leases: z.array(z.object({ name: z.string(), holder: z.string(), expiresAt: z.number(), held: z.boolean() })),
  parked: z.number().int(),
  heldBack: z
    .object({
      events: z.number().int(),
      capped: z.boolean(),
      oldestTime: z.number().describe('The oldest held-back event\'s time, ms.'),
      blocker: z
        .object({ pid: z.number().int(), application: z.string(), state: z.string(), database: z.string(), openSeconds: z.number() })
        .nullable()
        .describe('The open transaction holding them back; null when the role may not see it (pg_read_all_stats).'),
    })
    .nullable()
    .describe('Events committed that readers cannot see yet because an older transaction is still open (PostgreSQL); null when none.'),
});

const parkedRow = z.object({
  id: z.string().describe('The handle retry and skip take.'),
  follower: z.string().describe('The projection, `webhooks` or `cascade` that could not apply the event.'),
  position: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  stream: z.string(),
  apiKey: z.string().nullable(),
  error: z.string(),
  attempts: z.number().int(),
  parkedAt: z.number(),
  status: z.enum(['parked', 'skipped']),
  skippedAt: z.number().optional(),
});

const rowOf = (d: ParkedDoc): z.infer<typeof parkedRow> => ({
  id: d._id,
  follower: d.follower,
  position: String(d.position),
  eventId: d.eventId,
  eventType: d.eventType,
  stream: d.stream,
  apiKey: d.apiKey,
  error: d.error,
  attempts: d.attempts,
  parkedAt: d.parkedAt,
  status: d.status,
  ...(d.skippedAt !== undefined ? { skippedAt: d.skippedAt } : {}),
});

const id = z.object({ id: z.string().min(1).max(1024).describe('A parked record\'s `id` (from parked/get).') });

/** A ParkedError is the operator's to read: an unknown id is NOT_FOUND, a retry that failed again FAILED_PRECONDITION. */
function asApiError(err: unknown): never {
  if (err instanceof ParkedError) throw /^no parked event/.test(err.message) ? notFound(err.message) : failedPrecondition(err.message);
  throw err;
}

export function operationsRoutes(services: Services): AnyRoute[] {
  const operatorOnly = () => {
    if (!services.config.adminToken) throw failedPrecondition('The operator routes need ADMIN_TOKEN set on the service (docs/configuration.md).');
  };
  const common = { tag: 'Operations', auth: 'admin' as const, errors: ['FAILED_PRECONDITION'] as const };
  const status = defineRoute({
    ...common,
    path: '/v2/admin/projections/get',
    doc: { summary: 'Read-model status: generation, projection checkpoints and lag, leases, parked count', description: 'What `collab projections status --json` prints. Needs `x-service-admin-token`; without ADMIN_TOKEN on the service, FAILED_PRECONDITION.' },
    mutates: false,
    schema: z.object({}),
    response: statusAnswer,
    async handler() {
      operatorOnly();
      const st = await projectionsStatus({ events: services.events, generations: services.generations, projections: allProjections, webhookCheckpoint: WEBHOOK_CHECKPOINT });
      return { message: 'Projection status retrieved successfully.', data: { ...st, head: String(st.head), projections: st.projections.map((p) => ({ ...p, checkpoint: p.checkpoint === null ? null : String(p.checkpoint) })), webhooks: { ...st.webhooks, checkpoint: st.webhooks.checkpoint === null ? null : String(st.webhooks.checkpoint) } } };
    },
  });
  const parked = defineRoute({
    ...common,
    path: '/v2/admin/parked/get',
    doc: { summary: 'List parked events', description: 'In log order, at most 10,000; with `all: true`, skipped ones too. What `collab projections parked --json` prints. Needs `x-service-admin-token`.' },
    mutates: false,
    schema: z.object({ all: z.boolean().optional() }),
    response: z.array(parkedRow),
    async handler(data) {
      operatorOnly();
      return { message: 'Parked events retrieved successfully.', data: (await listParked(services.read, { all: data.all === true })).map(rowOf) };
    },
  });
  const retry = defineRoute({
    ...common,
    path: '/v2/admin/parked/retry',
    doc: { summary: 'Apply a parked event again', description: 'The event is applied to its follower now; on success its record goes. Failing again is FAILED_PRECONDITION with the new error (the record keeps it); an unknown id NOT_FOUND. docs/operations.md says when retry suits and when a rebuild does.' },
    mutates: true,
    schema: id,
    response: parkedRow,
    errors: ['FAILED_PRECONDITION', 'NOT_FOUND'],
    async handler(data) {
      operatorOnly();
      const doc = await retryParkedEvent(services, data.id).catch(asApiError);
      return { message: 'Parked event applied again.', data: rowOf(doc) };
    },
  });
  const skip = defineRoute({
    ...common,
    path: '/v2/admin/parked/skip',
    doc: { summary: 'Skip a parked event', description: 'The record stays, marked skipped: it no longer counts as parked. An unknown id is NOT_FOUND.' },
    mutates: true,
    schema: id,
    response: parkedRow,
    errors: ['FAILED_PRECONDITION', 'NOT_FOUND'],
    async handler(data) {
      operatorOnly();
      return { message: 'Parked event skipped.', data: rowOf(await skipParked(services.read, data.id, services.clock()).catch(asApiError)) };
    },
  });
  return [status, parked, retry, skip];
}
