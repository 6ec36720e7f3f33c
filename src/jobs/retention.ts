/**
 * Retention of the history and audit read models (docs/operations.md, Retention and VACUUM).
 * Both keep everything by default: history is the product. With `HISTORY_RETENTION_DAYS` or
 * `AUDIT_RETENTION_DAYS` set, this job deletes what is older than its horizon (now minus the
 * setting), in small transactions with a turn of the event loop between them, so a first run
 * over years of rows never holds the store in one long transaction:
 *
 * - history: every version in an h_ collection (projections/history.ts) that was closed
 *   before the horizon (`validTo` < horizon), read oldest first through the (open, validTo)
 *   index. Open versions are never touched (documents keep theirs in the live row anyway),
 *   so what was true at any instant from the horizon on is still there: a version valid at
 *   T >= horizon ends after T. The access questions refuse instants before the horizon
 *   (src/usecases/access.ts, historyHorizon below), so nothing answers from what was deleted;
 *   the horizon deleted up to is recorded, so a later longer setting (or none) still refuses
 *   what is gone.
 * - audit: the entries of `audit_events` in log order (their `_id` is the log position) up
 *   to the first one whose time is within the horizon, and the subject rows of the deleted
 *   positions. Deleting a prefix of the log order keeps the change feed, which reads the same
 *   rows in log order, without holes: it starts later, it never skips. Each key's last
 *   position deleted is recorded (`audit_retention`), and the feed refuses to go on from a place at or
 *   before it (queries/changes.ts), which would skip what was deleted.
 *
 * The log itself is never touched. A rebuild replays it whole and then runs this same pruning
 * on the new generation before switching (src/ops/rebuild.ts), so the rebuilt read models
 * equal the pruned ones.
 *
 * It runs in the process that applies the projections (holding the `projections` lease):
 * at start and every `everyMs` (an hour) after.
 */
import { HISTORIZED } from '../../projections/history-access.js';
import { HISTORY_PRUNED_ID, HISTORY_RETENTION, historyCollection, type HistoryPrunedDoc, type VersionDoc } from '../../projections/history.js';
import { AUDIT_EVENTS, AUDIT_RETENTION, AUDIT_SUBJECTS, type AuditEventDoc, type AuditPrunedDoc, type AuditSubjectDoc } from '../../projections/audit.js';
import type { Doc, ReadStore, ReadTx, ReadView } from '../ports/read-store.js';
import type { Config } from '../config/config.js';
import type { ProjectionRunner, RunnerLogger } from '../runtime/projection-runner.js';
import { Wakeup } from '../runtime/wakeup.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Rows deleted per transaction. */
const BATCH = 500;

/** The two settings, in days; 0 keeps everything. */
export type Retention = Pick<Config, 'historyRetentionDays' | 'auditRetentionDays'>;

/** The instant before which `days` of retention keep nothing, at `nowMs`; undefined when `days` is 0 (keep everything). */
const horizonOf = (days: number, nowMs: number): number | undefined => (days > 0 ? nowMs - days * DAY_MS : undefined);

export interface Pruned {
  history: number;
  audit: number;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Deletes, a batch per transaction, the rows `pick` chooses among the first BATCH that `page`
 * reads; stops once a batch deletes fewer than it read (the rest is within the horizon).
 * `record` runs in each batch's transaction with the rows it deletes.
 */
async function inBatches(
  read: ReadStore,
  collection: string,
  page: (tx: ReadTx) => Promise<Doc[]>,
  pick: (rows: Doc[]) => Doc[],
  record?: (tx: ReadTx, deleted: Doc[]) => Promise<void>,
): Promise<number> {
  let total = 0;
  for (;;) {
    const { deleted, full } = await read.transaction(async (tx) => {
      const rows = await page(tx);
      const old = pick(rows);
      if (old.length > 0) await tx.bulk(old.map((r) => ({ op: 'delete' as const, collection, id: r._id })));
      if (old.length > 0) await record?.(tx, old);
      return { deleted: old.length, full: rows.length === BATCH && old.length === rows.length };
    });
    total += deleted;
    if (!full) return total;
    await nextTurn();
  }
}

/**
 * The instant before which access questions are refused, and why: the setting's horizon, or
 * a later one this job deleted up to under an earlier, shorter setting (recorded with the
 * deletes: a longer setting brings nothing back until a rebuild). Undefined: nothing is or
 * was deleted. One read of one document.
 */
export async function historyHorizon(read: ReadView, days: number, nowMs: number): Promise<{ at: number; why: string } | undefined> {
  const set = horizonOf(days, nowMs);
  const pruned = await read.get<HistoryPrunedDoc>(HISTORY_RETENTION, HISTORY_PRUNED_ID);
  if (pruned && (set === undefined || pruned.horizon > set)) {
    return {
      at: pruned.horizon,
      why: `versions that ended before it were deleted under an earlier HISTORY_RETENTION_DAYS (now ${days === 0 ? 'unset' : days}); ` +
        'collab projections rebuild --all restores what the setting keeps',
    };
  }
  return set === undefined ? undefined : { at: set, why: `HISTORY_RETENTION_DAYS keeps ${days} day${days === 1 ? '' : 's'}` };
}

/** Deletes the history versions closed before `horizon`; returns how many. */
async function pruneHistory(read: ReadStore, horizon: number): Promise<number> {
  let total = 0;
  for (const c of HISTORIZED) {
    const h = historyCollection(c);
    total += await inBatches(
      read,
      h,
      (tx) => tx.find<VersionDoc>(h, { open: false }, { sort: 'validTo', limit: BATCH }),
      (rows) => {
        // Sorted by validTo: the old ones are a prefix.
        const i = rows.findIndex((r) => !((r as VersionDoc).validTo! < horizon));
        return i < 0 ? rows : rows.slice(0, i);
      },
      // Refused from now on whatever the setting becomes (historyHorizon), with the deletes.
      async (tx) => {
        const cur = await tx.get<HistoryPrunedDoc>(HISTORY_RETENTION, HISTORY_PRUNED_ID);
        if (!cur || cur.horizon < horizon) await tx.upsert(HISTORY_RETENTION, { _id: HISTORY_PRUNED_ID, horizon } satisfies HistoryPrunedDoc);
      },
    );
  }
  return total;
}

/** Deletes the audit entries before `horizon` (a prefix of the log order, see the top) and their subject rows; returns the entries deleted. */
async function pruneAudit(read: ReadStore, horizon: number): Promise<number> {
  const events = await inBatches(
    read,
    AUDIT_EVENTS,
    // The `_id` is the log position: the default order is the log's.
    (tx) => tx.find<AuditEventDoc>(AUDIT_EVENTS, {}, { limit: BATCH }),
    (rows) => {
      const i = rows.findIndex((r) => (r as AuditEventDoc).time >= horizon);
      return i < 0 ? rows : rows.slice(0, i);
    },
    // What the change feed checks a client's place against (queries/changes.ts): with the
    // deletes, so it never says less was deleted than was.
    async (tx, deleted) => {
      const last = new Map<string, AuditEventDoc>();
      for (const r of deleted as AuditEventDoc[]) last.set(r.apiKey, r);
      for (const [apiKey, r] of last) await tx.upsert(AUDIT_RETENTION, { _id: apiKey, through: r.position, time: r.time } satisfies AuditPrunedDoc);
    },
  );
  // Subject rows before the first entry kept belong to deleted entries (read in the same
  // transaction, so an entry committed meanwhile with its rows is either seen or has none yet).
  await inBatches(
    read,
    AUDIT_SUBJECTS,
    async (tx) => {
      const rows = await tx.find<AuditSubjectDoc>(AUDIT_SUBJECTS, {}, { sort: 'position', limit: BATCH });
      const [first] = await tx.find<AuditEventDoc>(AUDIT_EVENTS, {}, { limit: 1 });
      return first ? rows.filter((r) => r.position < first.position) : rows;
    },
    // `page` already kept only the old ones; a short page ends it.
    (rows) => rows,
  );
  return events;
}

/** Both prunings as `retention` sets them, at `nowMs`. */
export async function pruneReadModels(read: ReadStore, retention: Retention, nowMs: number): Promise<Pruned> {
  const history = horizonOf(retention.historyRetentionDays, nowMs);
  const audit = horizonOf(retention.auditRetentionDays, nowMs);
  return {
    history: history === undefined ? 0 : await pruneHistory(read, history),
    audit: audit === undefined ? 0 : await pruneAudit(read, audit),
  };
}

/** The periodic job: prunes at start and every `everyMs` while this process applies the projections. */
export class RetentionJob {
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly wakeup = new Wakeup();

  constructor(
    private readonly read: ReadStore,
    private readonly retention: Retention,
    private readonly projections: Pick<ProjectionRunner, 'applying'>,
    private readonly clock: () => number,
    private readonly log: RunnerLogger,
    private readonly everyMs = 60 * 60 * 1000,
  ) {}

  /** Whether either setting deletes anything. */
  get enabled(): boolean {
    return this.retention.historyRetentionDays > 0 || this.retention.auditRetentionDays > 0;
  }

  start(): void {
    if (this.running || !this.enabled) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeup.poke();
    await this.loop;
  }

  /** One pruning now, whoever applies the projections (tests, the CLI). */
  async prune(): Promise<Pruned> {
    const pruned = await pruneReadModels(this.read, this.retention, this.clock());
    if (pruned.history > 0 || pruned.audit > 0) this.log.info({ historyVersions: pruned.history, auditEntries: pruned.audit }, 'history and audit past their retention deleted');
    return pruned;
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.wakeup.take();
      // The lease holder prunes; another process would only repeat its deletes. One without
      // the lease (yet: it is taken just after start) looks again shortly.
      if (!this.projections.applying) {
        if (this.running) await this.wakeup.sleep(Math.min(this.everyMs, 10_000));
        continue;
      }
      await this.prune().catch((error: unknown) => this.log.error({ err: error }, 'history and audit retention failed; trying again at the next run'));
      if (this.running) await this.wakeup.sleep(this.everyMs);
    }
  }
}
