/**
 * History read models (issue 25): every access-relevant read model kept with each row's
 * validity interval, so an access question can be answered as of any past instant with the
 * same index lookups as today's (queries/as-of.ts), never a replay per request.
 *
 * `historyOf(projection)` runs a live projection's own handlers through a `VersionedTx`: what
 * the live handler writes to its collection `c` becomes versions in `h_c`. Each version is the
 * live document as it was, plus
 * - `entity`: the live `_id`;
 * - `validFrom` / `validTo`: the event times (metadata.time, ms) the version began and ended
 *   (validTo null while open), so it is valid at T when validFrom <= T < validTo;
 * - `back`: -validFrom, so "the latest version at or before T" is the first row of
 *   (entity, back) after -T: one index lookup on every store, which sort only ascending;
 * - `open`: true on the current version (what the live read model holds now);
 * - `openedBy` / `closedBy`: the event that began / ended it (type, time, metadata.actor),
 *   for the access history (queries/access-history.ts).
 * An upsert or patch closes the open version at the event's time and opens a new one; a
 * delete closes it. Mirroring the live handlers keeps the history exactly what the live read
 * model was after each event: an asOf answer is then the live answer of that moment by
 * construction (test/history.property.test.ts checks it through the API).
 *
 * Example: a grant added at t=100, replaced as viewer at t=250, revoked at t=400 leaves
 * h_grants rows [100, 250) editor and [250, 400) viewer; as of 399 it is viewer, as of 400 absent.
 *
 * Times: a version never starts before the latest one of its entity (an event stamped by a
 * process whose clock lags is taken as happening at the latest version's start); a version
 * that would last 0 ms (two changes in one millisecond) is dropped: at that instant both
 * happened, only the second is seen.
 *
 * Version ids are the live key with the start appended (`["k","a"]` -> `["k","a",100]`): they
 * sort just before the live key and after every smaller key's, so a caller's keyset cursor
 * made of live keys pages the history the same way it pages the live read model.
 *
 * Documents differ (withOpenVersions at the end of this file): their open version is the live
 * `documents` row itself, which carries `validFrom` and `openedBy`, and h_documents holds
 * only closed versions, written by the documents projection as it changes a live row. The
 * versions, their times and their ids are the same as a twin's would be.
 */
import type { Projection } from '../src/runtime/projection.js';
import { applyInOrder, type Doc, type Filter, type FindOptions, type IndexSpec, type ReadTx, type Scalar, type WriteOp } from '../src/ports/read-store.js';
import type { LogPosition, RecordedEvent } from '../src/ports/event-store.js';
import { BugError } from '../src/shared/errors.js';

export const historyCollection = (collection: string) => `h_${collection}`;

/**
 * Not written by a projection: the retention job's record of how far it deleted history
 * (src/jobs/retention.ts), one document, `HISTORY_PRUNED_ID`: versions that ended before
 * `horizon` may be gone, whatever the setting says now. In the read-model generation: a
 * rebuild prunes its new generation and records its own.
 */
export const HISTORY_RETENTION = 'history_retention';
export const HISTORY_PRUNED_ID = 'pruned';
export interface HistoryPrunedDoc extends Doc {
  horizon: number;
}

/**
 * The closed versions of a history collection in the order they ended: what the retention
 * job (src/jobs/retention.ts) deletes from, oldest first, with `{ open: false }` sorted by
 * `validTo`. One more index entry per version; without it each run would scan the table.
 */
const retentionIndex = (collection: string): IndexSpec => ({ collection: historyCollection(collection), fields: ['open', 'validTo'] });

/** The change that opened or closed a version: the event's type, time and who made it (metadata.actor). */
export interface ChangeRef {
  type: string;
  time: number;
  actor: string;
}

export interface Versioned {
  entity: string;
  validFrom: number;
  validTo: number | null;
  back: number;
  open: boolean;
  openedBy: ChangeRef;
  /** Absent while open. */
  closedBy?: ChangeRef;
}

export type VersionDoc = Doc & Versioned;

const versionId = (entity: string, from: number) => {
  if (!entity.endsWith(']')) throw new BugError(`a versioned read model is keyed with key(...): ${JSON.stringify(entity)}`);
  return `${entity.slice(0, -1)},${from}]`;
};

/** The live document a version holds. */
export function liveDoc<T extends Doc>(v: VersionDoc): T {
  const { entity, validFrom: _f, validTo: _t, back: _b, open: _o, openedBy: _ob, closedBy: _cb, ...rest } = v;
  return { ...rest, _id: entity } as unknown as T;
}

/** The version of `entity` that started last (valid now when `open`), or null: one lookup on (entity, back). */
async function latestVersion(tx: Pick<ReadTx, 'find'>, h: string, entity: string): Promise<VersionDoc | null> {
  const [row] = await tx.find<VersionDoc>(h, { entity }, { sort: 'back', limit: 1 });
  return row ?? null;
}

/** The version of `entity` valid at `atMs`, or null: one lookup on (entity, back). */
export async function versionAt(tx: Pick<ReadTx, 'find'>, h: string, entity: string, atMs: number): Promise<VersionDoc | null> {
  // Rows strictly after (back -atMs, id ''): back >= -atMs, that is validFrom <= atMs, latest first.
  const [row] = await tx.find<VersionDoc>(h, { entity }, { sort: 'back', after: { value: -atMs, id: '' }, limit: 1 });
  return row && isValidAt(row, atMs) ? row : null;
}

export const isValidAt = (v: Versioned, atMs: number) => v.validFrom <= atMs && (v.validTo === null || v.validTo > atMs);

const sameDoc = (a: Doc, b: Doc) => JSON.stringify(a) === JSON.stringify(b);

/** Rows closed per find while a deleteMany closes its matches. */
const CLOSE_CHUNK = 500;

/**
 * A ReadTx that a live projection's handlers write through (see the top of this file): its
 * mapped collections become versions at `at`; reads see the open versions (the live state);
 * everything else (cascade work queues) is the live projection's business and is ignored.
 */
class VersionedTx implements ReadTx {
  private readonly at: number;
  private readonly change: ChangeRef;
  constructor(private readonly tx: ReadTx, event: RecordedEvent, private readonly mapped: ReadonlySet<string>) {
    this.at = event.metadata.time;
    // Events from before the actor was recorded say so.
    this.change = { type: event.type, time: event.metadata.time, actor: event.metadata.actor ?? 'unknown' };
  }

  private h(collection: string): string | null {
    return this.mapped.has(collection) ? historyCollection(collection) : null;
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const h = this.h(collection);
    if (!h) return null;
    const v = await latestVersion(this.tx, h, id);
    return v?.open ? liveDoc<T>(v) : null;
  }

  async getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const out: T[] = [];
    for (const id of ids) {
      const d = await this.get<T>(collection, id);
      if (d) out.push(d);
    }
    return out;
  }

  async find<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions): Promise<T[]> {
    const h = this.h(collection);
    if (!h) return [];
    return (await this.tx.find<VersionDoc>(h, { ...filter, open: true }, options)).map((v) => liveDoc<T>(v));
  }

  async count(collection: string, filter: Filter): Promise<number> {
    const h = this.h(collection);
    return h ? this.tx.count(h, { ...filter, open: true }) : 0;
  }

  async upsert(collection: string, doc: Doc): Promise<void> {
    const h = this.h(collection);
    if (h) await this.put(h, doc, await this.latestIfAny(h, doc._id));
  }

  /**
   * latestVersion for an upsert, which mostly opens an entity's first version (every
   * documents/add): whether any version exists is a count on (entity, back), answered from
   * the index alone, where fetching the latest row costs several times more on SQLite even
   * when there is none. An entity with versions pays both.
   */
  private async latestIfAny(h: string, entity: string): Promise<VersionDoc | null> {
    return (await this.tx.count(h, { entity })) === 0 ? null : latestVersion(this.tx, h, entity);
  }

  async patch(collection: string, id: string, set?: Record<string, unknown>, unset?: string[]): Promise<boolean> {
    const h = this.h(collection);
    if (!h) return false;
    const latest = await latestVersion(this.tx, h, id);
    if (!latest?.open) return false;
    const before = liveDoc<Doc>(latest);
    const after: Doc = { ...before, ...(set ?? {}) };
    for (const f of unset ?? []) delete after[f];
    // A patch that changes nothing (a rename elsewhere in the document is still a change) opens no version.
    if (!sameDoc(before, after)) await this.put(h, after, latest);
    return true;
  }

  async delete(collection: string, id: string): Promise<boolean> {
    const h = this.h(collection);
    if (!h) return false;
    const latest = await latestVersion(this.tx, h, id);
    if (!latest?.open) return false;
    await this.close(h, latest);
    return true;
  }

  async deleteMany(collection: string, filter: Filter): Promise<number> {
    const h = this.h(collection);
    if (!h) return 0;
    let closed = 0;
    // Each pass closes what it read, so the next one finds the open rows left.
    for (;;) {
      const rows = await this.tx.find<VersionDoc>(h, { ...filter, open: true }, { limit: CLOSE_CHUNK });
      for (const v of rows) await this.close(h, v);
      closed += rows.length;
      if (rows.length < CLOSE_CHUNK) return closed;
    }
  }

  deleteBefore(): Promise<number> {
    throw new BugError('a versioned read model expires nothing: deleteBefore is for ephemeral collections');
  }

  bulk(ops: readonly WriteOp[]): Promise<void> {
    return applyInOrder(this, ops);
  }

  setCheckpoint(_name: string, _position: LogPosition): Promise<void> {
    throw new BugError('the projection runner moves checkpoints, not a projection');
  }

  /** When a change at `at` takes effect on an entity whose latest version is `latest`. */
  private from(latest: VersionDoc | null): number {
    return latest ? Math.max(this.at, latest.validFrom, latest.validTo ?? 0) : this.at;
  }

  private async put(h: string, doc: Doc, latest: VersionDoc | null): Promise<void> {
    const from = this.from(latest);
    if (latest?.open) {
      if (latest.validFrom === from) await this.tx.delete(h, latest._id);
      else await this.tx.upsert(h, this.closed(latest, from));
    }
    const v: VersionDoc = { ...doc, _id: versionId(doc._id, from), entity: doc._id, validFrom: from, validTo: null, back: -from, open: true, openedBy: this.change };
    await this.tx.upsert(h, v);
  }

  private async close(h: string, v: VersionDoc): Promise<void> {
    const to = Math.max(this.at, v.validFrom);
    if (to === v.validFrom) await this.tx.delete(h, v._id);
    else await this.tx.upsert(h, this.closed(v, to));
  }

  /**
   * `v` ended at `to`. `v` is the stored row, read in this transaction, so writing it back
   * whole is what a patch would write without the store reading the row again (a patch is a
   * read and a write; on PostgreSQL, two round trips). The spread keeps the row's key order
   * and appends closedBy, as a patch does.
   */
  private closed(v: VersionDoc, to: number): VersionDoc {
    return { ...v, open: false, validTo: to, closedBy: this.change };
  }
}

/**
 * The history twin of `live`, for its `collections`: the same handlers through a VersionedTx,
 * its indexes on the history collections, and (entity, back) for version lookups. The
 * handlers' own listings of the current state (a folder's children on a move, a deletion's
 * cascade) filter `open` on those same indexes, passing over the closed versions of the keys
 * they list: rare writes, where an index led by `open` would cost every write (documents/add
 * ran at about half the live rate with them, about two thirds without).
 */
export function historyOf(live: Projection, collections: readonly string[]): Projection {
  const mapped = new Set(collections);
  const indexes: IndexSpec[] = [];
  for (const c of collections) indexes.push({ collection: historyCollection(c), fields: ['entity', 'back'] }, retentionIndex(c));
  for (const spec of live.indexes) {
    if (!mapped.has(spec.collection)) continue;
    const collection = historyCollection(spec.collection);
    indexes.push({ collection, fields: spec.fields });
  }
  return {
    name: `history.${live.name}`,
    indexes,
    handles: live.handles,
    apply: (event, tx) => live.apply(event, new VersionedTx(tx, event, mapped)),
  };
}

/**
 * The version fields of a live row whose collection keeps its open version in the live row
 * (`withOpenVersions` below): when that version began and the change that began it.
 */
export interface OpenVersion {
  validFrom: number;
  openedBy: ChangeRef;
}

/**
 * Whether a live row carries its open version. A row written before the open version moved
 * into the live row (an existing database) carries none: its open version is still the
 * `open` row of h_ (see "Upgrade" in withOpenVersions).
 */
export const hasOpenVersion = (row: Doc): row is Doc & OpenVersion => typeof row.validFrom === 'number';

/** The live document a live row holds: the version fields stripped, as every answer must have them. */
export function liveOf<T extends Doc>(row: Doc): T {
  const { validFrom: _f, openedBy: _o, ...rest } = row;
  return rest as T;
}

/** The version a live row's open version would be as an h_ row (what the access history reads), or null when the row carries none. */
export function openVersionOf(row: Doc): VersionDoc | null {
  if (!hasOpenVersion(row)) return null;
  const { validFrom, openedBy, ...doc } = row;
  return { ...doc, _id: versionId(row._id, validFrom), entity: row._id, validFrom, validTo: null, back: -validFrom, open: true, openedBy };
}

export interface OpenVersionOptions {
  /**
   * A field every live row has and every deleteMany filter of the projection leads an index
   * to (the documents' `seq`): a deleteMany pages its rows by it to close their versions.
   */
  pageBy: string;
  /**
   * Whether `event` is the first event of its entity ever, so that the entity can have no
   * version yet, open or closed: its upsert then needs no read (see OpenVersionTx.upsert).
   */
  first: (event: RecordedEvent) => boolean;
}

/**
 * The ReadTx a live projection writes through when its collection keeps the open version in
 * the live row (withOpenVersions): writes to that collection pass through with the version
 * fields set, and a replaced, patched or deleted live row first becomes a closed version in
 * h_. Reads and every other collection pass through untouched.
 *
 * Times are those of VersionedTx (the top of this file). A live row's version is the latest
 * of its entity (every closed one ended at or before it began), so the start of the next one
 * is max(event time, the row's validFrom) without reading h_; only an upsert with no live
 * row has to look at h_ for the latest closed version (see upsert).
 */
class OpenVersionTx implements ReadTx {
  private readonly at: number;
  private readonly change: ChangeRef;
  private readonly h: string;
  private readonly first: boolean;
  constructor(private readonly tx: ReadTx, event: RecordedEvent, private readonly c: string, private readonly options: OpenVersionOptions) {
    this.at = event.metadata.time;
    this.change = { type: event.type, time: event.metadata.time, actor: event.metadata.actor ?? 'unknown' };
    this.h = historyCollection(c);
    this.first = options.first(event);
  }

  get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    return this.tx.get<T>(collection, id);
  }
  getMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    return this.tx.getMany<T>(collection, ids);
  }
  find<T extends Doc = Doc>(collection: string, filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.tx.find<T>(collection, filter, options);
  }
  count(collection: string, filter: Filter): Promise<number> {
    return this.tx.count(collection, filter);
  }

  /**
   * The first event of an entity (a DocumentAdded at revision 0 of its document's stream)
   * writes the live row and nothing else: no read at all, which on PostgreSQL keeps the row in
   * the batch's buffered INSERT instead of a round trip per document. The clamp (a version
   * never starts before the latest one of its entity) needs no read there: an entity with no
   * earlier event has no version to clamp to.
   * Any other upsert reads the live row; with none there, the latest closed version decides
   * the start. Example: d added at t=100 (revision 0: live row from 100, no read), deleted at
   * 300 (h_ gets [100, 300)), added again at 250 by a host whose clock lags (revision 2:
   * no live row, the latest version ended at 300, so the new one opens at 300, not 250).
   */
  async upsert(collection: string, doc: Doc): Promise<void> {
    if (collection !== this.c) return this.tx.upsert(collection, doc);
    let from = this.at;
    if (!this.first) {
      const current = await this.tx.get(this.c, doc._id);
      from = current ? await this.close(current) : await this.afterClosed(doc._id);
    }
    await this.tx.upsert(this.c, this.opened(doc, from));
  }

  async patch(collection: string, id: string, set?: Record<string, unknown>, unset?: string[]): Promise<boolean> {
    if (collection !== this.c) return this.tx.patch(collection, id, set, unset);
    const current = await this.tx.get(this.c, id);
    if (!current) return false;
    const before = liveOf<Doc>(current);
    const after: Doc = { ...before, ...(set ?? {}) };
    for (const f of unset ?? []) delete after[f];
    // A patch that changes nothing opens no version (as VersionedTx.patch), and the live row stays as it is.
    if (!sameDoc(before, after)) await this.tx.upsert(this.c, this.opened(after, await this.close(current)));
    return true;
  }

  async delete(collection: string, id: string): Promise<boolean> {
    if (collection !== this.c) return this.tx.delete(collection, id);
    const current = await this.tx.get(this.c, id);
    if (!current) return false;
    await this.close(current);
    return this.tx.delete(this.c, id);
  }

  /** Every matching live row's version is closed first (read a page at a time in `pageBy` order), then the rows go in one deleteMany. */
  async deleteMany(collection: string, filter: Filter): Promise<number> {
    if (collection !== this.c) return this.tx.deleteMany(collection, filter);
    const sort = this.options.pageBy;
    let after: { value: Scalar; id: string } | undefined;
    for (;;) {
      const rows = await this.tx.find(this.c, filter, { sort, ...(after ? { after } : {}), limit: CLOSE_CHUNK });
      for (const row of rows) await this.close(row);
      if (rows.length < CLOSE_CHUNK) break;
      const last = rows[rows.length - 1]!;
      after = { value: last[sort] as Scalar, id: last._id };
    }
    return this.tx.deleteMany(this.c, filter);
  }

  deleteBefore(collection: string, field: string, value: number): Promise<number> {
    if (collection === this.c) throw new BugError('a versioned read model expires nothing: deleteBefore is for ephemeral collections');
    return this.tx.deleteBefore(collection, field, value);
  }

  bulk(ops: readonly WriteOp[]): Promise<void> {
    return ops.some((op) => op.collection === this.c) ? applyInOrder(this, ops) : this.tx.bulk(ops);
  }

  setCheckpoint(name: string, position: LogPosition, expected: LogPosition | null): Promise<void> {
    return this.tx.setCheckpoint(name, position, expected);
  }

  /**
   * The live row `doc` holding a version open from `from`. The document handed to upsert is
   * the wrapper's from then on (as it is the store's: the PostgreSQL store buffers the very
   * object), so the fields are set on it rather than on a copy: a spread adding two keys
   * costs an added document measurably (docs/performance.md, the V8 spread pathology).
   */
  private opened(doc: Doc, from: number): Doc {
    doc.validFrom = from;
    doc.openedBy = this.change;
    return doc;
  }

  /**
   * Ends the open version of live row `row` at this event and answers when the next one may
   * begin: the row's own version (written to h_ unless it would last 0 ms), or, for a row
   * written before the open version moved into the live row, h_'s open row (the upgrade: the
   * entity takes the new shape with this very change).
   */
  private async close(row: Doc): Promise<number> {
    if (hasOpenVersion(row)) {
      const to = Math.max(this.at, row.validFrom);
      if (to > row.validFrom) await this.tx.upsert(this.h, this.closedFrom(row, to));
      return to;
    }
    return this.afterClosed(row._id);
  }

  /**
   * When a version of `entity` may begin, h_ holding all of its versions: after the latest.
   * One still open there (a database from before the open version moved into the live row)
   * is closed now, as VersionedTx closed it.
   */
  private async afterClosed(entity: string): Promise<number> {
    const latest = await latestVersion(this.tx, this.h, entity);
    if (!latest) return this.at;
    if (!latest.open) return Math.max(this.at, latest.validFrom, latest.validTo ?? 0);
    const to = Math.max(this.at, latest.validFrom);
    if (to === latest.validFrom) await this.tx.delete(this.h, latest._id);
    else await this.tx.upsert(this.h, { ...latest, open: false, validTo: to, closedBy: this.change });
    return to;
  }

  /** The closed version live row `row` held until `to`: the row h_ keeps, keyed and shaped as VersionedTx's. */
  private closedFrom(row: Doc & OpenVersion, to: number): VersionDoc {
    const { validFrom, openedBy, ...doc } = row;
    return { ...doc, _id: versionId(row._id, validFrom), entity: row._id, validFrom, validTo: to, back: -validFrom, open: false, openedBy, closedBy: this.change };
  }
}

/**
 * `live` keeping its collection `collection`'s open versions in the live rows themselves:
 * each live row carries `validFrom` and `openedBy` (stripped from every answer: queries build
 * theirs field by field, AsOfView through liveOf), and h_<collection> holds only the closed
 * versions, written by `live` itself as it replaces, patches or deletes a live row. So adding
 * an entity writes one row, not two (docs/performance-history.md, "History: open versions in
 * the live row").
 *
 * Why the live projection writes them and not a twin of its own: the runner applies a batch
 * projection by projection, so a twin applying event k would see the live row as it is after
 * the whole batch, not as event k found it; and a projection catching up alone, or an event
 * parked for one projection, would part the two. Only the live projection sees the row it
 * changes as it was.
 *
 * Upgrade: a database written before this holds, per entity, a live row without version
 * fields and an `open` row in h_. Readers take either shape per entity (AsOfView,
 * the access history: a live row counts as a version only with its `validFrom`, an h_ row
 * when valid at T, open ones included), and the first change of such an entity closes its h_
 * open row and gives the live row its fields. No entity ever has both, so nothing counts twice,
 * and no rebuild or migration has to run first (a rebuild writes the new shape throughout).
 */
export function withOpenVersions(live: Projection, collection: string, options: OpenVersionOptions): Projection {
  const h = historyCollection(collection);
  const mirrored = live.indexes.filter((spec) => spec.collection === collection).map((spec): IndexSpec => ({ collection: h, fields: spec.fields }));
  return {
    name: live.name,
    indexes: [...live.indexes, { collection: h, fields: ['entity', 'back'] }, retentionIndex(collection), ...mirrored],
    handles: live.handles,
    apply: (event, tx) => live.apply(event, new OpenVersionTx(tx, event, collection, options)),
  };
}
