/**
 * A read-model overlay for a dry run (issue 38): a ReadTx that reads through to the real read
 * store and keeps its own writes in memory, answering every read with them applied. The
 * projections apply a dry run's would-be events to it exactly as the runner applies real ones
 * to the store, so a query asked of the overlay answers what it would answer after the write.
 *
 * Reads over the union:
 * - `get`/`getMany`: the overlay's document (or its deletion) wins.
 * - `find`: the store is asked with the same filter, order and cursor for `limit + k` rows,
 *   k the number of documents of the collection the overlay holds. Each overlaid document
 *   hides at most one of those rows, so at least the first `limit` rows the store would give
 *   without them remain, in order; the overlay's own documents that match the filter and lie
 *   after the cursor are merged in, sorted as the store sorts (the sort field, then `_id`),
 *   and the first `limit` kept.
 * - `count`: the store's count, minus the overlaid documents that matched in the store, plus
 *   those that match in the overlay.
 * Order: null and missing first, then booleans, numbers, strings by their UTF-8 bytes, then
 * `_id` by its bytes: the order the service assumes of its stores everywhere it merges pages
 * in memory (queries/access.ts `storeOrder`): SQLite's BINARY collation, PostgreSQL's `_id`
 * (COLLATE "C") and numbers. Two cases it does not mirror on PostgreSQL: a sort on a field that
 * mixes types (jsonb ranks null < string < number < boolean; no read model does that), and a
 * sort on a string field in a database whose default collation is not "C" (jsonb compares
 * strings under it), where a merged page may order the overlay's documents differently. The
 * string sorts under a dry run are by groupId (a user's groups, whose limit binds only in a
 * race, queries/group-grants.ts) and by userId (grants' cascade work, which resolution never
 * reads). test/dry-run.overlay.test.ts checks the merge against SQLite.

 * Nothing is ever written to the store: `setCheckpoint` is a no-op, and the overlay lives as
 * long as the request that made it.
 */
import { BugError } from '../shared/errors.js';
import { applyInOrder, type Doc, type Filter, type FindOptions, type ReadTx, type ReadView, type WriteOp } from '../ports/read-store.js';

const clone = <T>(v: T): T => structuredClone(v);

/** The value at a dotted path of `doc`; undefined when missing. */
function valueAt(doc: Record<string, unknown>, path: string): unknown {
  let v: unknown = doc;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

function setAt(doc: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let o = doc;
  for (const part of parts.slice(0, -1)) {
    const next = o[part];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) o[part] = {};
    o = o[part] as Record<string, unknown>;
  }
  o[parts[parts.length - 1]!] = value;
}

function unsetAt(doc: Record<string, unknown>, path: string): void {
  const parts = path.split('.');
  let o: unknown = doc;
  for (const part of parts.slice(0, -1)) {
    if (o === null || typeof o !== 'object') return;
    o = (o as Record<string, unknown>)[part];
  }
  if (o !== null && typeof o === 'object') delete (o as Record<string, unknown>)[parts[parts.length - 1]!];
}

/** Equality on fields as the port defines it: `null` matches a missing field too. */
function matches(doc: Doc, filter: Filter): boolean {
  for (const [field, want] of Object.entries(filter)) {
    const have = valueAt(doc, field);
    if (want === null ? have !== null && have !== undefined : have !== want) return false;
  }
  return true;
}

const rank = (v: unknown): number => (v === null || v === undefined ? 0 : typeof v === 'boolean' ? 1 : typeof v === 'number' ? 2 : 3);

/** The store's order of two sort values (see the top of this file). */
function compareScalars(a: unknown, b: unknown): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 0) return 0;
  if (ra === 3) return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)));
  return a === b ? 0 : (a as number) < (b as number) ? -1 : 1;
}

const keyOf = (doc: Doc, sort: string | undefined): [unknown, string] => [sort ? valueAt(doc, sort) : doc._id, doc._id];

function compareKeys(a: [unknown, string], b: [unknown, string]): number {
  return compareScalars(a[0], b[0]) || compareScalars(a[1], b[1]);
}

export class ReadOverlay implements ReadTx {
  /** Per collection, the documents written (null: deleted). */
  private readonly written = new Map<string, Map<string, Doc | null>>();

  constructor(private readonly base: ReadView) {}

  private of(collection: string): Map<string, Doc | null> {
    let m = this.written.get(collection);
    if (!m) this.written.set(collection, (m = new Map()));
    return m;
  }

  /** The collections the overlay wrote, with the ids written in each (deleted ones included). */
  writtenIds(): ReadonlyMap<string, ReadonlySet<string>> {
    return new Map([...this.written].map(([c, m]) => [c, new Set(m.keys())]));
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const m = this.written.get(collection);
    if (m?.has(id)) {
      const d = m.get(id)!;
      return d ? (clone(d) as T) : null;
    }
    return this.base.get<T>(collection, id);
  }

  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const m = this.written.get(collection);
    const fromBase = await this.base.getMany<T>(collection, m ? ids.filter((id) => !m.has(id)) : ids);
    if (!m) return fromBase;
    const byId = new Map(fromBase.map((d) => [d._id, d]));
    const out: T[] = [];
    for (const id of ids) {
      const d = m.has(id) ? (m.get(id) ? (clone(m.get(id)) as T) : null) : byId.get(id) ?? null;
      if (d) out.push(d);
    }
    return out;
  }

  async find<T extends Doc = Doc>(collection: string, filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const m = this.written.get(collection);
    if (!m || m.size === 0) return this.base.find<T>(collection, filter, options);
    const limit = options.limit;
    const baseRows = await this.base.find<T>(collection, filter, { ...options, ...(limit !== undefined ? { limit: limit + m.size } : {}) });
    const after = options.after ? ([options.after.value, options.after.id] as [unknown, string]) : null;
    const rows: T[] = baseRows.filter((d) => !m.has(d._id));
    for (const d of m.values()) {
      if (!d || !matches(d, filter)) continue;
      if (after && compareKeys(keyOf(d, options.sort), after) <= 0) continue;
      rows.push(clone(d) as T);
    }
    rows.sort((a, b) => compareKeys(keyOf(a, options.sort), keyOf(b, options.sort)));
    return limit !== undefined ? rows.slice(0, limit) : rows;
  }

  async count(collection: string, filter: Filter): Promise<number> {
    const m = this.written.get(collection);
    let n = await this.base.count(collection, filter);
    if (!m) return n;
    const ids = [...m.keys()];
    for (const d of await this.base.getMany(collection, ids)) if (matches(d, filter)) n--;
    for (const d of m.values()) if (d && matches(d, filter)) n++;
    return n;
  }

  async upsert(collection: string, doc: Doc): Promise<void> {
    this.of(collection).set(doc._id, clone(doc));
  }

  async patch(collection: string, id: string, set?: Record<string, unknown>, unset?: string[]): Promise<boolean> {
    // A copy: the store's documents may be frozen (its read cache shares them).
    const found = await this.get(collection, id);
    if (!found) return false;
    const doc = clone(found);
    for (const [path, value] of Object.entries(set ?? {})) setAt(doc, path, clone(value));
    for (const path of unset ?? []) unsetAt(doc, path);
    this.of(collection).set(id, doc);
    return true;
  }

  async delete(collection: string, id: string): Promise<boolean> {
    const existed = (await this.get(collection, id)) !== null;
    this.of(collection).set(id, null);
    return existed;
  }

  async deleteMany(collection: string, filter: Filter): Promise<number> {
    const gone = await this.find(collection, filter);
    for (const d of gone) this.of(collection).set(d._id, null);
    return gone.length;
  }

  deleteBefore(collection: string): Promise<number> {
    throw new BugError(`a dry run's overlay does not sweep ${collection}: no projection does`);
  }

  bulk(ops: readonly WriteOp[]): Promise<void> {
    return applyInOrder(this, ops);
  }

  async setCheckpoint(): Promise<void> {}
}
