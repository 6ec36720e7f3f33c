/**
 * Per-item outcomes of a batch (semantics §1): each id once (its first occurrence), each item
 * run on its own, a refusal (ApiError) failing only its item. Used by the batch use cases
 * (organizations, folders, groups, documents, users) and re-exported to their routes by
 * src/http/routes/domain.ts.
 */
import { ApiError } from '../shared/errors.js';

export type Outcome = { success: boolean; message: string } & Record<string, unknown>;

/**
 * How a refused item reads: its message, and the fields after it. Most endpoints show the
 * refusal's own message; the documents endpoints show the hosted API's strings and a `code`
 * (see `documentFailure` in documents.ts).
 */
export type Failure = (error: ApiError) => { message: string } & Record<string, unknown>;
const ownMessage: Failure = (error) => ({ message: error.message });

/**
 * The per-item `code` of the hosted API's documents pages ("already-exists", "not-found"),
 * for any status: the status in lower case with dashes (INVALID_ARGUMENT: "invalid-argument").
 */
export const itemCode = (status: ApiError['status']) => status.toLowerCase().replace(/_/g, '-');

/**
 * Runs one item; a refusal (ApiError) becomes that item's `{ success: false, message }`
 * (plus `echo`, and what `failure` adds), anything else is a bug and fails the request.
 */
export async function item<T>(
  run: () => Promise<T>,
  ok: (r: T) => Outcome,
  echo: Record<string, unknown> = {},
  failure: Failure = ownMessage,
): Promise<Outcome> {
  try {
    return ok(await run());
  } catch (error) {
    if (error instanceof ApiError) return { success: false, ...echo, ...failure(error) };
    throw error;
  }
}

/** Items keyed by id, each id once (its first occurrence): a duplicate in one request is one item. */
export function firstById<T>(items: readonly T[], idOf: (t: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((t) => {
    const id = idOf(t);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

export const unique = (ids: readonly string[]) => [...new Set(ids)];

/**
 * A batch endpoint's items (semantics §1): each id once (its first occurrence), each run on
 * its own, an ApiError failing only that item; `{ [id]: { success, id, message } }`.
 */
export async function eachItem<T>(
  items: readonly T[],
  idOf: (t: T) => string,
  run: (t: T) => Promise<unknown>,
  message: string,
  failure: Failure = ownMessage,
): Promise<Record<string, Outcome>> {
  const results = await Promise.all(
    firstById(items, idOf).map(async (t) => {
      const id = idOf(t);
      return [id, await item(() => run(t), () => ({ success: true, id, message }), { id }, failure)] as const;
    }),
  );
  return keyed(results);
}

/** `{ [id]: outcome }`, built with own data properties (an id like "__proto__" stays a plain key). */
export function keyed(entries: ReadonlyArray<readonly [string, Outcome]>): Record<string, Outcome> {
  return Object.fromEntries(entries);
}
