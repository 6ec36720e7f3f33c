/**
 * Idempotency-Key on the API's mutating routes (`config.api.mutates`), recorded and replayed
 * by three route hooks (the store and its rules: src/runtime/idempotency.ts):
 * - preValidation: the key is read, and the body hashed as sent (validation drops unknown
 *   fields, which a retry with another body must not hide). After authentication and the
 *   rate limit, whose hooks are the instance's and run first.
 * - preHandler: the first request with a key opens a record and runs; a retry gets the
 *   recorded answer (`idempotent-replayed: true`) without the handler running.
 * - onSend: the answer, success or failure, is recorded before it leaves; a server fault
 *   (5xx) releases the record instead, so the retry runs again.
 * The hooks are added to the mutating routes only (an onRoute hook), so a read pays nothing:
 * its Idempotency-Key is accepted and ignored.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Services } from '../composition/services.js';
import { ApiError, BugError } from '../shared/errors.js';
import { IdempotencyStore, bodyHash, readIdempotencyKey } from '../runtime/idempotency.js';
import { failure } from './answers.js';
import type { Caller } from './auth.js';
import { scopeOf } from './authentication.js';
import { shared } from './plugin.js';
import type {} from './route-config.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The Idempotency-Key of a mutating call, the hash of its body as sent, and its open record. */
    idempotency: { key: string; hash: string; recordId?: string } | null;
  }
}

/**
 * Whom an Idempotency-Key belongs to: two callers must never get each other's answer.
 * - API key, workspace: that credential; a user token: its user of its API key.
 * - The operator's admin token (ADMIN_TOKEN set): the operator, by a hash of the token, so
 *   a new token starts afresh.
 * - No credentials (open sign-up): the client address and the exact body. The address is
 *   the client's only directly or behind a proxy named in TRUST_PROXY, and clients behind
 *   one NAT share it; with the body in the scope, a second client's request with the same
 *   key runs as its own unless it is byte for byte the first one from the same address,
 *   which the server cannot tell from the first client retrying (and whose replay carries
 *   no secret: they read `__redacted__`). The cost: on an open call the same key with
 *   another body runs anew instead of answering 422.
 * Example: A and B behind one untrusted proxy both send `Idempotency-Key: 1` to
 * workspace/create, A with ownerEmail a@x, B with b@x: each gets its own workspace.
 */
function idempotencyScope(caller: Caller, req: FastifyRequest, adminToken: string | undefined, hash: string): string {
  if (caller.tenant || caller.workspaceId) return scopeOf(caller, req);
  if (caller.actor === 'admin' && adminToken) return `admin:${createHash('sha256').update(adminToken).digest('hex').slice(0, 16)}`;
  return `ip:${req.ip}:body:${hash}`;
}

/** A route option that may hold one hook or several, with `hook` appended. */
const withHook = <H>(current: H | H[] | undefined, hook: H): H[] => [...(current === undefined ? [] : Array.isArray(current) ? current : [current]), hook];

function hooks(services: Services, store: IdempotencyStore, path: string) {
  const readKey = async (req: FastifyRequest) => {
    // A dry run (src/http/dry-run.ts) neither reads nor stores a record: its key is ignored.
    if (req.dryRun) return;
    const key = readIdempotencyKey(req.headers['idempotency-key']);
    if (key) req.idempotency = { key, hash: bodyHash(req.body) };
  };

  const beginOrReplay = async (req: FastifyRequest, reply: FastifyReply) => {
    const idem = req.idempotency;
    if (!idem) return;
    if (!req.caller) throw new BugError(`route ${path}: idempotency ran before authentication`);
    const scope = idempotencyScope(req.caller, req, services.config.adminToken, idem.hash);
    const begun = await store.begin(scope, path, idem.key, idem.hash);
    if ('recordId' in begun) {
      idem.recordId = begun.recordId;
      return;
    }
    if ('replay' in begun) return reply.status(begun.replay.status).header('idempotent-replayed', 'true').send(begun.replay.body);
    const { status, bytes, sha256 } = begun.notKept;
    const err = new ApiError(
      'ALREADY_EXISTS',
      `The request with this Idempotency-Key was already applied (it answered ${status}), but its answer (${bytes} bytes) was larger than the ${store.maxResponseBytes} bytes kept for a replay; read the current state instead.`,
      { status, bytes, sha256 },
    );
    return reply.status(err.httpStatus).header('idempotent-replayed', 'true').send(failure(err));
  };

  const record = async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const recordId = req.idempotency?.recordId;
    if (recordId === undefined) return payload;
    // A server fault is not the request's answer: the retry runs again.
    if (reply.statusCode >= 500) await store.release(recordId);
    else if (typeof payload === 'string') await store.complete(recordId, reply.statusCode, JSON.parse(payload));
    else throw new BugError(`route ${path} answered a ${typeof payload} body, not JSON text`);
    return payload;
  };
  return { readKey, beginOrReplay, record };
}

export const idempotency = shared<{ services: Services }>('idempotency', async (app, { services }) => {
  app.decorateRequest('idempotency', null);
  const { config, read, clock } = services;
  const store = new IdempotencyStore(read, config.idempotencyTtlHours * 3_600_000, clock, config.idempotencyMaxResponseBytes);
  const sweep = setInterval(() => {
    store.sweep().catch((err) => app.log.warn({ err }, 'idempotency sweep failed'));
  }, 3_600_000);
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));

  app.addHook('onRoute', (route: RouteOptions) => {
    const api = route.config?.api;
    if (!api?.mutates) return;
    const { readKey, beginOrReplay, record } = hooks(services, store, api.path);
    route.preValidation = withHook(route.preValidation, readKey);
    route.preHandler = withHook(route.preHandler, beginOrReplay);
    route.onSend = withHook(route.onSend, record);
  });
});
