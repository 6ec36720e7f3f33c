/**
 * `x-dry-run: true` on a mutating route (issue 38): the call is authenticated, validated and
 * decided exactly as the real one, and nothing is stored. The pieces:
 * - this plugin's preValidation hook (after authentication and the rate limit, before the
 *   Idempotency-Key's hooks) reads the header on the mutating routes: `true` marks the
 *   request (`req.dryRun`), any other value is INVALID_ARGUMENT, and a route that does more
 *   than append events refuses it with FAILED_PRECONDITION before anything runs;
 * - src/http/idempotency.ts ignores the Idempotency-Key of a marked request (nothing read,
 *   nothing stored);
 * - src/http/api-routes.ts runs the handler with `dryRunServices`: commands decided by
 *   src/runtime/dry-run.ts (events kept in an overlay of the streams for this request, none
 *   appended, so no webhook, no cascade, no projection, and no read-your-writes wait), and
 *   the stores' writing methods made to throw, so a route wrongly classified as previewing
 *   fails instead of writing.
 *
 * Every mutating route is in exactly one of the two lists below (test/dry-run.api.test.ts
 * checks it); a mutating route in neither refuses, so a new route is safe before it is classified.
 */
import type { FastifyRequest } from 'fastify';
import type { Services } from '../composition/services.js';
import { DryRunCommandHandler } from '../runtime/dry-run.js';
import { unstoredSealer } from '../secrets/personal.js';
import { BugError, failedPrecondition, invalidArgument } from '../shared/errors.js';
import { predictAccessChanges } from '../usecases/access-changes.js';
import { Deadline, Pacer } from '../../queries/cost.js';
import { decodePageToken, encodePageToken } from '../../queries/paging.js';
import type { Success } from './route.js';
import { shared } from './plugin.js';
import type {} from './route-config.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** `x-dry-run: true` on a mutating route that previews (src/http/dry-run.ts). */
    dryRun: boolean;
  }
}

const DRY_RUN_HEADER = 'x-dry-run';

const PAGE_TOKEN_HEADER = 'x-dry-run-page-token';
/** Changes in one answer of a dry run; the rest by sending it again with `x-dry-run-page-token`. */
export const DRY_RUN_CHANGES_PAGE = 1_000;

/** Mutating routes whose use cases only decide and append events: they preview under `x-dry-run: true`. */
export const DRY_RUN_PREVIEWS: ReadonlySet<string> = new Set([
  '/v2/organizations/add',
  '/v2/organizations/update',
  '/v2/organizations/delete',
  '/v2/organizations/access/disablestate/update',
  '/v2/organizations/folders/add',
  '/v2/organizations/folders/update',
  '/v2/organizations/folders/delete',
  '/v2/organizations/folders/access/update',
  '/v2/organizations/documents/add',
  '/v2/organizations/documents/update',
  '/v2/organizations/documents/delete',
  '/v2/organizations/documents/move',
  '/v2/organizations/documents/access/update',
  '/v2/organizations/documents/access/disablestate/update',
  '/v2/organizations/documents/migrate',
  '/v2/users/add',
  '/v2/users/update',
  '/v2/users/delete',
  '/v2/users/data/delete',
  '/v2/organizations/usergroups/add',
  '/v2/organizations/usergroups/users/add',
  '/v2/organizations/usergroups/users/delete',
  '/v2/auth/permissions/add',
  '/v2/auth/permissions/remove',
  '/v2/agents/delete',
  '/v2/agents/groups/create',
  '/v2/agents/groups/update',
  '/v2/agents/groups/delete',
  '/v2/agents/groups/add-agents',
  '/v2/agents/groups/remove-agents',
  '/v2/workspace/domains/add',
  '/v2/workspace/domains/delete',
  '/v2/workspace/apikey/update',
]);

const KEY_MATERIAL = 'it creates or destroys credentials or key material outside the event log';
const SEALED = 'it seals secrets with the API key\'s data key, which is created on first use outside the event log';

/** Mutating routes that do more than append events, with why: they refuse `x-dry-run: true`. */
export const DRY_RUN_REFUSALS: Readonly<Record<string, string>> = {
  '/v2/workspace/create': 'it creates a workspace, its credentials and key material outside the event log',
  '/v2/workspace/apikey/create': KEY_MATERIAL,
  '/v2/workspace/authtoken/reset': KEY_MATERIAL,
  '/v2/workspace/workspaceauthtoken/rotate': KEY_MATERIAL,
  '/v2/workspace/apikey/signingkey/rotate': KEY_MATERIAL,
  '/v2/workspace/apikey/delete': 'it destroys the API key\'s data keys (crypto-shredding) outside the event log',
  '/v2/auth/generate_token': 'it signs a token (key material, created on first use) and creates personal data keys',
  '/v2/agents/create': SEALED,
  '/v2/agents/update': SEALED,
  '/v2/presence/add': 'presence is written to the read store directly, not decided from the event log',
  '/v2/presence/update': 'presence is written to the read store directly, not decided from the event log',
  '/v2/presence/delete': 'presence is written to the read store directly, not decided from the event log',
  '/v2/workspace/emailconfig/update': SEALED,
  '/v2/workspace/webhookconfig/update': SEALED,
  '/v2/workspace/apikeyconfig/update': SEALED,
  '/v2/workspace/advancedwebhookconfig/update': 'advanced webhooks\' settings are previewed with their endpoints, which seal signing secrets: not yet covered',
  '/v2/workspace/advancedwebhook/endpoints/create': SEALED,
  '/v2/workspace/advancedwebhook/endpoints/update': 'advanced webhooks\' endpoints seal signing secrets: not yet covered',
  '/v2/workspace/advancedwebhook/endpoints/delete': 'advanced webhooks\' endpoints seal signing secrets: not yet covered',
  '/v2/workspace/advancedwebhook/endpoints/secret/rotate': SEALED,
  '/v2/admin/parked/retry': 'an operator\'s action on parked events applies them to the read models directly',
  '/v2/admin/parked/skip': 'an operator\'s action on parked events changes the read models directly',
};

/** The refusal of a mutating route that does not preview; null when it does. */
export function dryRunRefusal(path: string): string | null {
  if (DRY_RUN_PREVIEWS.has(path)) return null;
  const why = DRY_RUN_REFUSALS[path] ?? 'it is not classified for dry runs yet';
  return `${path} cannot be dry-run (x-dry-run: true): ${why}. Send it without the header to perform it.`;
}

/** `target` with the named methods replaced by ones that throw: a dry run must never reach them. */
function withoutWrites<T extends object>(target: T, what: string, methods: readonly string[]): T {
  return new Proxy(target, {
    get(t, prop) {
      if (typeof prop === 'string' && methods.includes(prop)) {
        return () => {
          throw new BugError(`a dry run reached ${what}.${prop}: its route must refuse x-dry-run (src/http/dry-run.ts)`);
        };
      }
      const value = Reflect.get(t, prop, t) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(t) : value;
    },
  });
}

/**
 * The services a dry run's handler gets: commands decided into an overlay (never appended),
 * and the read store and secret store without their writing methods.
 */
export function dryRunServices(services: Services): { services: Services; commands: DryRunCommandHandler } {
  const commands = new DryRunCommandHandler(services.commands, services.events);
  // users/add and users/update seal personal fields with the user's data key, created on
  // first use: a dry run creates none and seals with a key of its own that dies with the
  // request. Destroying keys (users/data/delete) is skipped by the use case under a dry run
  // (UseCaseContext.dryRun), so reaching shred here is a bug.
  const personalGuarded = withoutWrites(services.secrets.personal, 'secrets.personal', ['shred', 'shredAll']);
  const previewPersonal: Record<string, unknown> = { prepare: async () => undefined, sealer: async () => unstoredSealer() };
  const personal = new Proxy(personalGuarded, { get: (t, prop) => (typeof prop === 'string' && Object.hasOwn(previewPersonal, prop) ? previewPersonal[prop] : Reflect.get(t, prop, t)) });
  const secretsGuarded = withoutWrites(services.secrets, 'secrets', ['seal', 'sealer', 'shred']);
  const secrets = new Proxy(secretsGuarded, { get: (t, prop) => (prop === 'personal' ? personal : Reflect.get(t, prop, t)) });
  const read = withoutWrites(services.read, 'read', ['transaction', 'dropCollection', 'ensureIndexes']);
  return { services: { ...services, commands, secrets, read }, commands };
}

/**
 * A dry run's answer: the handler's, plus `accessChanges` (src/usecases/access-changes.ts):
 * the counts, one page of changes from the offset `x-dry-run-page-token` carries (sealed for
 * this route and body, queries/paging.ts), and `pageToken` while more follow.
 */
export async function withAccessChanges(req: FastifyRequest, services: Services, commands: DryRunCommandHandler, apiKey: string | undefined, out: Success): Promise<Success> {
  const query = { dryRun: req.routeOptions.config.api?.path, body: req.body };
  const raw = req.headers[PAGE_TOKEN_HEADER];
  const from = typeof raw === 'string' ? Number(decodePageToken(raw, query, `the ${PAGE_TOKEN_HEADER} header`)!.value) : 0;
  const pacer = new Pacer(new Deadline(services.config.queryDeadlineMs, services.clock, services.clock(), req.workSignal), 'a dry run\'s access changes');
  const page = { from, size: DRY_RUN_CHANGES_PAGE };
  const { counts, changes, total } = apiKey && commands.decided.length > 0
    ? await predictAccessChanges(services.read, apiKey, services.clock(), commands.decided, await services.events.headPosition(), pacer, page)
    : { counts: { gain: 0, lose: 0, role: 0 }, changes: [], total: 0 };
  const next = from + DRY_RUN_CHANGES_PAGE < total ? encodePageToken(query, { value: from + DRY_RUN_CHANGES_PAGE, id: '' }) : undefined;
  return { ...out, extra: { ...out.extra, accessChanges: { counts, changes, ...(next ? { pageToken: next } : {}) } } };
}

export const dryRun = shared<Record<string, unknown>>('dry-run', async (app) => {
  app.decorateRequest('dryRun', false);
  app.addHook('preValidation', async (req, reply) => {
    const api = req.routeOptions.config.api;
    const header = req.headers[DRY_RUN_HEADER];
    if (!api?.mutates || header === undefined) return;
    if (header !== 'true') throw invalidArgument(`The ${DRY_RUN_HEADER} header takes the value true (a dry run) or is left out; got ${JSON.stringify(header)}.`);
    const refusal = dryRunRefusal(api.path);
    if (refusal) throw failedPrecondition(refusal);
    req.dryRun = true;
    reply.header(DRY_RUN_HEADER, 'true');
  });
});
