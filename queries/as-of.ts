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
 */
import type { Doc, Filter, FindOptions, ReadView } from '../src/ports/read-store.js';
import { BugError } from '../src/shared/errors.js';
import { historyCollection, isValidAt, liveDoc, versionAt, type VersionDoc } from '../projections/history.js';
import { HISTORIZED } from '../projections/history-access.js';

/** Versions read per find while a find at T collects its rows. */
const SCAN_CHUNK = 500;

export class AsOfView implements ReadView {
  /** Version rows read beyond those returned (see the top of this file). */
  extra = 0;
  constructor(private readonly inner: ReadView, readonly atMs: number) {}

  private h(collection: string): string {
    if (!HISTORIZED.includes(collection)) throw new BugError(`${collection} has no history: an asOf question cannot read it`);
    return historyCollection(collection);
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const v = await versionAt(this.inner, this.h(collection), id, this.atMs);
    return v ? liveDoc<T>(v) : null;
  }

  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const out: T[] = [];
    for (const id of ids) {
      const d = await this.get<T>(collection, id);
      if (d) out.push(d);
    }
    return out;
  }

  async find<T extends Doc = Doc>(collection: string, filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const h = this.h(collection);
    const limit = options.limit ?? Infinity;
    const out: T[] = [];
    let after = options.after;
    while (out.length < limit) {
      const rows = await this.inner.find<VersionDoc>(h, filter, { ...(options.sort ? { sort: options.sort } : {}), ...(after ? { after } : {}), limit: SCAN_CHUNK });
      for (const v of rows) {
        if (!isValidAt(v, this.atMs)) {
          this.extra++;
          continue;
        }
        out.push(liveDoc<T>(v));
        if (out.length === limit) break;
      }
      if (rows.length < SCAN_CHUNK) break;
      const last = rows[rows.length - 1]!;
      after = { value: (options.sort ? last[options.sort] : last._id) as string, id: last._id };
    }
    return out;
  }

  async count(collection: string, filter: Filter): Promise<number> {
    return (await this.find(collection, filter)).length;
  }
}
