/**
 * Opaque page tokens (semantics §4, §4a): base64url JSON of `{ q, after }`, where `q` is a
 * hash of the query's filters (tenant included) and `after` the keyset cursor of the last
 * row served. A token that does not decode, or that was made by another query, is
 * INVALID_ARGUMENT: it can never move a cursor into someone else's rows.
 */
import { createHash } from 'node:crypto';
import { invalidArgument } from '../src/errors.js';
import type { Scalar } from '../src/ports/read-store.js';

export interface Cursor {
  value: Scalar;
  id: string;
}

const queryHash = (query: unknown) => createHash('sha256').update(JSON.stringify(query)).digest('base64url').slice(0, 22);

export function encodePageToken(query: unknown, after: Cursor): string {
  return Buffer.from(JSON.stringify({ q: queryHash(query), after }), 'utf8').toString('base64url');
}

export function decodePageToken(token: string | undefined, query: unknown, field = 'data.pageToken'): Cursor | undefined {
  if (token === undefined) return undefined;
  const bad = () => invalidArgument(`${field} is not a valid page token for this query.`);
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(token)) throw bad();
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  const p = parsed as { q?: unknown; after?: { value?: unknown; id?: unknown } } | null;
  const value = p?.after?.value;
  if (
    !p ||
    typeof p !== 'object' ||
    p.q !== queryHash(query) ||
    typeof p.after?.id !== 'string' ||
    !(typeof value === 'string' || typeof value === 'number')
  ) {
    throw bad();
  }
  return { value, id: p.after.id };
}

export const DEFAULT_PAGE_SIZE = 1000;
export const MAX_PAGE_SIZE = 1000;
