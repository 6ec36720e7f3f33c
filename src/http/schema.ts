/**
 * The envelopes of semantics §1 as zod schemas, built per route from its `schema` (request
 * `data`) and `response` (answer `data`). They are what Fastify is given for the route
 * (`schema.body`, `schema.response`): the validator compiler validates with them, and
 * @fastify/swagger turns them into the OpenAPI document (src/http/openapi.ts). In tests,
 * every answer is checked against them (src/http/response-check.ts).
 */
import { z } from 'zod';
import { httpStatusOf, type StatusCode } from '../shared/errors.js';
import type { AnyRoute, AuthMode } from './route.js';
import { dryRunRefusal } from './dry-run.js';

/** A secret the answer carries once: nothing shows it again (semantics §0). */
export const shownOnce = (what: string) =>
  z.string().describe(`${what}. A secret shown only in this answer: no call shows it again.`);

/** `response` of a route whose answer has no `result.data` (documents/move). */
export const NO_DATA = z.undefined();

/**
 * The failure envelope for one HTTP status, `status` narrowed to the API statuses it stands
 * for (400: INVALID_ARGUMENT or FAILED_PRECONDITION). One schema per HTTP status, registered
 * with an id so the OpenAPI document names it once (`#/components/schemas/Failure404`)
 * instead of repeating it under every route.
 */
function failureEnvelope(http: number, statuses: readonly [StatusCode, ...StatusCode[]]) {
  return z
    .object({
      error: z.object({
        status: z.enum(statuses),
        message: z.string().describe('What went wrong, naming the field or resource.'),
        code: z.string().optional().describe('Where the hosted API shows one: `not-found` for folders/delete\'s unknown folder.'),
        details: z.unknown().optional().describe("Structured detail: the invalid fields, an oversized replay's size..."),
      }),
    })
    .meta({ id: `Failure${http}` });
}

const statusesOfHttp = new Map<number, StatusCode[]>();
for (const [status, http] of Object.entries(httpStatusOf) as Array<[StatusCode, number]>) {
  statusesOfHttp.set(http, [...(statusesOfHttp.get(http) ?? []), status]);
}
// Two INVALID_ARGUMENT answers with their own HTTP status: an oversized body (413), and an
// Idempotency-Key sent again with another body (422, src/runtime/idempotency.ts).
statusesOfHttp.set(413, ['INVALID_ARGUMENT']);
statusesOfHttp.set(422, ['INVALID_ARGUMENT']);
export const FAILURE: ReadonlyMap<number, z.ZodType> = new Map(
  [...statusesOfHttp].map(([http, statuses]) => [http, failureEnvelope(http, statuses as [StatusCode, ...StatusCode[]])]),
);

/**
 * What every route of an auth mode can answer besides success, whatever its handler does:
 * a body that does not fit (400, 413), missing or wrong credentials, rate limits (429), load
 * shedding or a store out of reach (503), a bug (500). A mutating route can also answer
 * `ABORTED` (409: a write that lost its race more often than the retry budget allows, or a
 * retry while the first request with its Idempotency-Key still runs), `ALREADY_EXISTS` (409:
 * an Idempotency-Key reused after its answer was too large to keep) and INVALID_ARGUMENT 422
 * (the key reused with another body), src/runtime/idempotency.ts.
 */
function commonErrors(auth: AuthMode, mutates: boolean): StatusCode[] {
  const out: StatusCode[] = ['INVALID_ARGUMENT', 'RESOURCE_EXHAUSTED', 'INTERNAL', 'UNAVAILABLE'];
  if (auth === 'admin' || auth === 'workspace' || auth === 'apiKey') out.push('UNAUTHENTICATED', 'PERMISSION_DENIED');
  if (mutates) out.push('ABORTED', 'ALREADY_EXISTS');
  return out;
}

/** A route's failure statuses by HTTP status, in order (400 holds INVALID_ARGUMENT and FAILED_PRECONDITION). */
function errorsByHttpStatus(route: Pick<AnyRoute, 'path' | 'auth' | 'mutates' | 'errors'>): Map<number, StatusCode[]> {
  // A mutating route that does more than append refuses `x-dry-run: true` (src/http/dry-run.ts).
  const dryRun: StatusCode[] = route.mutates && dryRunRefusal(route.path) ? ['FAILED_PRECONDITION'] : [];
  const all = new Set<StatusCode>([...commonErrors(route.auth, route.mutates), ...dryRun, ...(route.errors ?? [])]);
  const out = new Map<number, StatusCode[]>([[413, ['INVALID_ARGUMENT']]]);
  if (route.mutates) out.set(422, ['INVALID_ARGUMENT']);
  for (const s of all) {
    const http = httpStatusOf[s];
    out.set(http, [...(out.get(http) ?? []), s]);
  }
  return new Map([...out].sort(([a], [b]) => a - b));
}

/** `result.accessChanges` of a dry run (src/usecases/access-changes.ts). */
const ACCESS_CHANGES = z
  .object({
    counts: z.object({ gain: z.number().int(), lose: z.number().int(), role: z.number().int() }).describe('Every change, counted: gain (denied to allowed), lose (allowed to denied), role (allowed with another accessRole).'),
    changes: z.array(
      z.object({
        resourceType: z.enum(['organization', 'folder', 'document']),
        resourceId: z.string(),
        organizationId: z.string(),
        userId: z.string(),
        change: z.enum(['gain', 'lose', 'role']),
        before: z.string().optional().describe('The accessRole before, when allowed before.'),
        after: z.string().optional().describe('The accessRole after, when allowed after.'),
        via: z
          .object({
            rule: z.string().describe('The rule of semantics §3 that decides the new answer, as permissions/explain names it.'),
            grant: z.unknown().optional().describe('The grant the new role comes from, as a permissions/explain candidate.'),
          })
          .optional()
          .describe('Why the new answer is what it is (a folder or document that still exists after the write).'),
      }),
    ).describe('One page of the changes, ordered by organization, resource type, resource id and user id.'),
    pageToken: z.string().optional().describe('Present while more changes follow: send the same request again with `x-dry-run: true` and `x-dry-run-page-token: <pageToken>`.'),
  })
  .optional()
  .describe('Present on a dry run only (`x-dry-run: true`): who would gain and who would lose access, as permissions/get answers it.')
  .meta({ id: 'AccessChanges' });

/** `{ result: { status, message, data?, pageToken?, nextPageToken? } }` for `route`. */
export function successEnvelope(route: Pick<AnyRoute, 'path' | 'mutates' | 'response' | 'paged'>) {
  const result: Record<string, z.ZodType> = {
    status: z.literal('success'),
    message: z.string(),
  };
  // A dry run's answer (x-dry-run: true, src/http/dry-run.ts) on the routes that preview.
  if (route.mutates && !dryRunRefusal(route.path)) result.accessChanges = ACCESS_CHANGES;
  if (route.response !== NO_DATA) result.data = route.response;
  if (route.paged) {
    result.pageToken = z.string().optional().describe('Present while another page may follow: send it back as `data.pageToken`.');
  }
  if (route.paged === 'both') result.nextPageToken = z.string().optional().describe('The same token as `pageToken` (the hosted API\'s name).');
  return z.object({ result: z.object(result) });
}

/** The request body: `{ data: <route schema> }`. */
export const requestEnvelope = (route: Pick<AnyRoute, 'schema'>) => z.object({ data: route.schema });

/** One answer a route can give: its schema and, for a failure, the API statuses it may carry. */
export interface Answer {
  schema: z.ZodType;
  statuses?: readonly StatusCode[];
}

/** Every answer of `route`, keyed by HTTP status. */
export function answersOf(route: AnyRoute): Map<number, Answer> {
  const out = new Map<number, Answer>([[200, { schema: successEnvelope(route) }]]);
  for (const [http, statuses] of errorsByHttpStatus(route)) out.set(http, { schema: FAILURE.get(http)!, statuses });
  return out;
}
