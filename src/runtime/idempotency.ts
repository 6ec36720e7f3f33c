/**
 * `Idempotency-Key` on a mutating route (`mutates: true`, src/http/route.ts): the first
 * request with a key runs and its response is kept (at least IDEMPOTENCY_TTL_HOURS, default
 * 24 h); a retry with the same key and the same body gets that response again without
 * running anything; the same key with another body is a client bug (422); a retry while the
 * first is still running gets 409. On a read route the header is accepted and ignored: a
 * read changes nothing when repeated, and keeping its answer (a permissions/get can be
 * megabytes) would let a small request store a large one.
 *
 * What one key stores is bounded: an answer larger than IDEMPOTENCY_MAX_RESPONSE_BYTES
 * (default 256 KiB) is not kept; only its status, size and SHA-256 are. A retry then gets
 * 409 ALREADY_EXISTS saying the request was applied and its answer cannot be replayed (the
 * client reads the current state instead). Example: a folders/add of 1000 folders with
 * 256-character ids answers over half a megabyte; its retry gets that 409 with
 * `details: { status: 200, bytes, sha256 }`, and nothing is added twice.
 *
 * Keys are scoped to the caller (API key, workspace, the operator's admin token, or, for
 * an unauthenticated call, the client address and the exact body: src/http/idempotency.ts
 * `idempotencyScope`) and the route, so two callers can use the same key. Records live in the read store as
 * ephemeral state (not events): losing them costs only the replay, never data, since batch
 * commands converge when re-sent.
 *
 * A record left "pending" by a crash is taken over after PENDING_TAKEOVER_MS: the retry
 * then runs again, which is safe for the same reason.
 */
import { createHash } from 'node:crypto';
import { ApiError, invalidArgument } from '../shared/errors.js';
import { key } from '../shared/ids.js';
import type { Doc, ReadStore } from '../ports/read-store.js';

export const IDEMPOTENCY_KEYS = 'idempotency_keys';
export const PENDING_TAKEOVER_MS = 60_000;
const KEY = /^[\x21-\x7e]{1,255}$/;

interface IdempotencyDoc extends Doc {
  bodyHash: string;
  state: 'pending' | 'done';
  status?: number;
  /** The answer, secrets redacted; absent when it was larger than the bound. */
  response?: unknown;
  /** In place of an answer over the bound: its size in bytes and SHA-256 (hex). */
  responseBytes?: number;
  responseSha256?: string;
  startedAt: number;
  expiresAt: number;
}

/** An answer that was applied but not kept: what a retry is told about it. */
interface NotKept {
  status: number;
  bytes: number;
  sha256: string;
}

export type Begin = { replay: { status: number; body: unknown } } | { notKept: NotKept } | { recordId: string };

const DEFAULT_MAX_RESPONSE_BYTES = 262_144;

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
    /** Largest answer (as JSON, secrets redacted) kept for replay. */
    readonly maxResponseBytes: number = DEFAULT_MAX_RESPONSE_BYTES,
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
        if (existing.response === undefined && existing.responseSha256 !== undefined) {
          return { notKept: { status: existing.status!, bytes: existing.responseBytes!, sha256: existing.responseSha256 } };
        }
        return { replay: { status: existing.status!, body: existing.response } };
      }
      const doc: IdempotencyDoc = { _id: id, bodyHash: hash, state: 'pending', startedAt: now, expiresAt: now + this.ttlMs };
      await tx.upsert(IDEMPOTENCY_KEYS, doc);
      return { recordId: id };
    });
  }

  async complete(recordId: string, status: number, response: unknown): Promise<void> {
    const kept = redactSecrets(response);
    const json = JSON.stringify(kept) ?? 'null';
    const bytes = Buffer.byteLength(json);
    const patch =
      bytes <= this.maxResponseBytes
        ? { state: 'done' as const, status, response: kept }
        : { state: 'done' as const, status, responseBytes: bytes, responseSha256: createHash('sha256').update(json).digest('hex') };
    await this.read.transaction(async (tx) => {
      await tx.patch(IDEMPOTENCY_KEYS, recordId, patch);
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
function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, SECRET_FIELDS.has(k) && typeof v === 'string' ? '__redacted__' : redactSecrets(v)]),
  );
}
