/**
 * Access questions as of a past instant (issue 25): the read models as they were at `atMs`,
 * read from their history twins (projections/history.ts) through the same ReadView port the
 * live read models answer. Resolution (queries/permissions.ts) and the access queries
 * (queries/access.ts) read through a ReadView and take the instant grants are judged at, so
 * the very same code answers "now" with the live store and the clock, and "then" with an
 * AsOfView and `asOf`: there is no second set of rules to drift.
 *
 * Cost: a `get` is one lookup on (entity, back), a `getMany` one per key (what a getMany
 * costs the live store per key); a `find` or `count` walks the same index as the live read
 * model's, over every version of the matching rows, and keeps those valid at `atMs`: beside
 * the rows it returns it reads the versions of those keys that ended before or started after
 * (a user who joined and left a group ten times has ten rows there). The read budget of the
 * paged queries (queries/access.ts ReadMeter) counts the rows a find returns, as it does
 * live; the versions passed over are counted in `extra` only, bounded by how often those
 * very keys changed, never by the organization's size.
 *
 * Documents (OPEN_IN_LIVE) keep their open versions in the live rows and only the closed ones
 * in h_documents (projections/history.ts, withOpenVersions). A `get` reads the live row
 * first: when its version began at or before `atMs` it is the answer (no closed version can
 * cover `atMs` then: they all ended before it began); otherwise the closed version valid at
 * `atMs`, as for the others. A `find` walks both, the live rows whose version began at or
 * before `atMs` and the closed versions valid at `atMs`, and merges them in the order a single
 * walk would give: sort field, then live key (a version's id sorts with its live key, see
 * versionId), compared as the stores compare (storeOrder: UTF-8 bytes, not JavaScript's
 * UTF-16 units). No document has both a live row and a closed version valid at one instant,
 * so the merge never holds a key twice, and the caller's keyset cursor (live keys) goes on
 * from any page whichever walk its last row came from.
 */
import type { Doc, Filter, FindOptions, ReadView, Scalar } from '../src/ports/read-store.js';
import { BugError } from '../src/shared/errors.js';
import { hasOpenVersion, historyCollection, isValidAt, liveDoc, liveOf, versionAt, type VersionDoc } from '../projections/history.js';
import { HISTORIZED, OPEN_IN_LIVE } from '../projections/history-access.js';
import { storeOrder } from './access.js';

/** Versions read per find while a find at T collects its rows. */
const SCAN_CHUNK = 500;

/** Store order of two sort values of one field: strings by UTF-8 bytes, the rest (numbers) by value. */
function compareValues(a: Scalar, b: Scalar): number {
  if (typeof a === 'string' && typeof b === 'string') return storeOrder(a, b);
  return a === b ? 0 : (a as number) < (b as number) ? -1 : 1;
}

/**
 * The rows of one walk (a collection, a filter, the caller's order and cursor) that are valid at
 * the instant, as live documents, read SCAN_CHUNK at a time; `keep` says which are (null: passed over).
 */
class Walk {
  private rows: Doc[] = [];
  private at = 0;
  /** What peek answered, until taken. */
  private head: Doc | null = null;
  private after: FindOptions['after'];
  private done = false;
  constructor(
    private readonly view: AsOfView,
    private readonly read: ReadView,
    private readonly collection: string,
    private readonly filter: Filter,
    private readonly sort: string | undefined,
    after: FindOptions['after'],
    private readonly keep: (row: Doc) => Doc | null,
  ) {
    this.after = after;
  }

  /** The next row valid at the instant, without taking it; null at the end. */
  async peek(): Promise<Doc | null> {
    if (this.head) return this.head;
    for (;;) {
      while (this.at < this.rows.length) {
        const kept = this.keep(this.rows[this.at++]!);
        if (kept) return (this.head = kept);
        this.view.extra++;
      }
      if (this.done) return null;
      const rows = await this.read.find<Doc>(this.collection, this.filter, { ...(this.sort ? { sort: this.sort } : {}), ...(this.after ? { after: this.after } : {}), limit: SCAN_CHUNK });
      if (rows.length < SCAN_CHUNK) this.done = true;
      const last = rows[rows.length - 1];
      if (last) this.after = { value: (this.sort ? last[this.sort] : last._id) as Scalar, id: last._id };
      this.rows = rows;
      this.at = 0;
    }
  }

  /** Takes the row peek answered. */
  take(): void {
    this.head = null;
  }
}

export class AsOfView implements ReadView {
  /** Version rows read beyond those returned (see the top of this file). */
  extra = 0;
  constructor(private readonly inner: ReadView, readonly atMs: number) {}

  private h(collection: string): string {
    if (!HISTORIZED.includes(collection)) throw new BugError(`${collection} has no history: an asOf question cannot read it`);
    return historyCollection(collection);
  }

  /** Live row `row` as of the instant: itself when its open version had begun, else null (it began later, or the row has its open version in h_: written before the upgrade). */
  private liveAt<T extends Doc>(row: Doc | null): T | null {
    return row && hasOpenVersion(row) && row.validFrom <= this.atMs ? liveOf<T>(row) : null;
  }

  private async closedAt<T extends Doc>(h: string, id: string): Promise<T | null> {
    const v = await versionAt(this.inner, h, id, this.atMs);
    return v ? liveDoc<T>(v) : null;
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const h = this.h(collection);
    if (OPEN_IN_LIVE.has(collection)) {
      const live = this.liveAt<T>(await this.inner.get(collection, id));
      if (live) return live;
    }
    return this.closedAt<T>(h, id);
  }

  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const h = this.h(collection);
    const out: T[] = [];
    if (OPEN_IN_LIVE.has(collection)) {
      const rows = new Map((await this.inner.getMany(collection, ids)).map((r) => [r._id, r]));
      for (const id of ids) {
        const d = this.liveAt<T>(rows.get(id) ?? null) ?? (await this.closedAt<T>(h, id));
        if (d) out.push(d);
      }
      return out;
    }
    for (const id of ids) {
      const d = await this.closedAt<T>(h, id);
      if (d) out.push(d);
    }
    return out;
  }

  async find<T extends Doc = Doc>(collection: string, filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const h = this.h(collection);
    const limit = options.limit ?? Infinity;
    const { sort, after } = options;
    const closed = new Walk(this, this.inner, h, filter, sort, after, (v) => (isValidAt(v as VersionDoc, this.atMs) ? liveDoc(v as VersionDoc) : null));
    const out: T[] = [];
    if (!OPEN_IN_LIVE.has(collection)) {
      while (out.length < limit) {
        const d = await closed.peek();
        if (!d) break;
        out.push(d as T);
        closed.take();
      }
      return out;
    }
    const live = new Walk(this, this.inner, collection, filter, sort, after, (row) => this.liveAt(row));
    // (sort value, live key): the order one walk of both would give.
    const order = (a: Doc, b: Doc) => (sort ? compareValues(a[sort] as Scalar, b[sort] as Scalar) : 0) || storeOrder(a._id, b._id);
    while (out.length < limit) {
      const l = await live.peek();
      const c = await closed.peek();
      if (!l && !c) break;
      if (l && (!c || order(l, c) < 0)) {
        out.push(l as T);
        live.take();
      } else {
        out.push(c as T);
        closed.take();
      }
    }
    return out;
  }

  async count(collection: string, filter: Filter): Promise<number> {
    return (await this.find(collection, filter)).length;
  }
}
