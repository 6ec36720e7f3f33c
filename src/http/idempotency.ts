/**
 * `Idempotency-Key` on any POST: the first request with a key runs and its response is
 * kept (at least IDEMPOTENCY_TTL_HOURS, default 24 h); a retry with the same key and the same
 * body gets that response again without running anything; the same key with another body
 * is a client bug (422); a retry while the first is still running gets 409.
 *
 * Keys are scoped to the caller (API key or workspace) and the route, so two tenants can
 * use the same key. Records live in the read store as ephemeral state (not events): losing
 * them costs only the replay, never data, since batch commands converge when re-sent.
 *
 * A record left "pending" by a crash is taken over after PENDING_TAKEOVER_MS: the retry
 * then runs again, which is safe for the same reason.
 */
import { createHash } from 'node:crypto';
import { ApiError, invalidArgument } from '../errors.js';
import { key } from '../ids.js';
import type { Doc, ReadStore } from '../ports/read-store.js';

export const IDEMPOTENCY_KEYS = 'idempotency_keys';
export const PENDING_TAKEOVER_MS = 60_000;
const KEY = /^[\x21-\x7e]{1,255}$/;

interface IdempotencyDoc extends Doc {
  bodyHash: string;
  state: 'pending' | 'done';
  status?: number;
  response?: unknown;
  startedAt: number;
  expiresAt: number;
}

export type Begin = { replay: { status: number; body: unknown } } | { recordId: string };

export function readIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !KEY.test(header)) {
    throw invalidArgument('The Idempotency-Key header must be 1 to 255 visible ASCII characters.');
  }
  return header;
}

export const bodyHash = (body: unknown) => createHash('sha256').update(JSON.stringify(body) ?? '').digest('hex');

export class IdempotencyStore {
  constructor(
    private readonly read: ReadStore,
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  async begin(scope: string, route: string, idemKey: string, hash: string): Promise<Begin> {
    const id = key(scope, route, idemKey);
    const now = this.clock();
    return this.read.transaction(async (tx) => {
      const existing = await tx.get<IdempotencyDoc>(IDEMPOTENCY_KEYS, id);
      const live =
        existing &&
        existing.expiresAt > now &&
        !(existing.state === 'pending' && now - existing.startedAt > PENDING_TAKEOVER_MS);
      if (live) {
        if (existing.bodyHash !== hash) {
          throw new ApiError('INVALID_ARGUMENT', 'This Idempotency-Key was used with a different request body.', undefined, 422);
        }
        if (existing.state === 'pending') {
          throw new ApiError('ABORTED', 'A request with this Idempotency-Key is still in progress.', undefined, 409);
        }
        return { replay: { status: existing.status!, body: existing.response } };
      }
      const doc: IdempotencyDoc = { _id: id, bodyHash: hash, state: 'pending', startedAt: now, expiresAt: now + this.ttlMs };
      await tx.upsert(IDEMPOTENCY_KEYS, doc);
      return { recordId: id };
    });
  }

  async complete(recordId: string, status: number, response: unknown): Promise<void> {
    await this.read.transaction(async (tx) => {
      await tx.patch(IDEMPOTENCY_KEYS, recordId, { state: 'done', status, response: redactSecrets(response) });
    });
  }

  /** A response that must not be replayed (a 5xx): the next retry runs again. */
  async release(recordId: string): Promise<void> {
    await this.read.transaction(async (tx) => {
      await tx.delete(IDEMPOTENCY_KEYS, recordId);
    });
  }

  async sweep(): Promise<number> {
    const now = this.clock();
    return this.read.transaction((tx) => tx.deleteBefore(IDEMPOTENCY_KEYS, 'expiresAt', now));
  }
}

const SECRET_FIELDS = new Set(['authToken', 'token']);

/**
 * Secrets are shown once: a replayed response carries `__redacted__` in their place (the
 * client that lost the first answer resets the token). Example: a replayed
 * apikey/create answers `{ apiKey: "k…", authToken: "__redacted__" }`.
 */
export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, SECRET_FIELDS.has(k) && typeof v === 'string' ? '__redacted__' : redactSecrets(v)]),
  );
}
