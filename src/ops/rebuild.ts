/**
 * `collab projections rebuild` and `collab projections status`.
 *
 * Rebuild replays the whole log into a fresh read-model generation (src/runtime/generations.ts)
 * while the running service keeps answering from the live one, then switches in one small
 * transaction:
 *
 * 1. Take the `rebuild` lease (one rebuild at a time). Drop every read-model collection of a
 *    generation other than the live one (the one the last rebuild replaced, or a crashed
 *    attempt's), and reset the target generation's checkpoints.
 * 2. Replay the log into generation live+1 in batches, printing progress (events/s, position,
 *    ETA); on a store that takes concurrent writers each projection lane is written on a
 *    handle of its own (ProjectionRunnerOptions.lanes). The fresh tables are filled with their
 *    indexes in place: an index is also what refuses a row it cannot hold (a document nested
 *    too deep for SQLite's JSON), so that the event is parked as it was live; an index built
 *    after the fill would instead fail the whole rebuild on that row.
 *    With a history or audit retention set, prune the new generation as the live one is
 *    pruned (src/jobs/retention.ts).
 * 3. Switch, in one read-store transaction: read the live generation's checkpoints; apply the
 *    few events the service appended since the replay caught up, so that every new checkpoint
 *    is at or past every live one (read-your-writes never goes back); touch the live
 *    checkpoints (a compare-and-set to their own value, so a live batch committing at the same
 *    moment conflicts with the switch instead of being lost); point `read_model_meta/active` at
 *    the new generation. If too many events arrived meanwhile, catch up again and retry.
 * 4. Running services see the switch within a second (their queries) or at their next batch
 *    (their projections, whose checkpoint compare-and-set then reloads the new generation's
 *    checkpoints). The replaced generation stays until the next rebuild drops it.
 *
 * Projections share collections (`api_keys` is written by two, the cascade work queue by
 * three), so the unit of a rebuild is the whole generation: naming one projection rebuilds
 * the generation it belongs to.
 */
import { LOG_START, type EventStore, type HeldBack, type LogPosition } from '../ports/event-store.js';
import { describeHeldBack } from '../runtime/held-back.js';
import { CheckpointConflictError } from '../ports/read-store.js';
import { forkLanes, ProjectionRunner, type RunnerLogger } from '../runtime/projection-runner.js';
import type { Projection } from '../runtime/projection.js';
import { Lease, LEASES, type LeaseDoc } from '../runtime/lease.js';
import { countParked } from './parked.js';
import { pruneReadModels, type Retention } from '../jobs/retention.js';
import { PARKED, type ParkedDoc } from '../runtime/parked.js';
import {
  ACTIVE_ID,
  READ_MODEL_META,
  parsePhysical,
  physicalCheckpoint,
  physicalCollection,
  type ActiveGenerationDoc,
  type GenerationalReadStore,
} from '../runtime/generations.js';

export class RebuildError extends Error {}

export interface RebuildProgress {
  generation: number;
  events: number;
  position: LogPosition;
  head: LogPosition;
  eventsPerSecond: number;
  /** 0..1, estimated from positions; null when the adapter's positions give no estimate. */
  fraction: number | null;
  etaSeconds: number | null;
}

export interface RebuildResult {
  from: number;
  to: number;
  events: number;
  position: LogPosition;
  seconds: number;
  dropped: string[];
}

export interface RebuildOptions {
  batchSize?: number;
  progressEveryMs?: number;
  onProgress?: (p: RebuildProgress) => void;
  /** Test hook: runs after the replay caught up, before the switch. */
  beforeSwitch?: () => Promise<void>;
  clock?: () => number;
  /** Where events the replay parks are reported (src/runtime/parked.ts). */
  logger?: RunnerLogger;
  /**
   * HISTORY_RETENTION_DAYS / AUDIT_RETENTION_DAYS: the replay restores every version and audit
   * entry the log holds, so the new generation is pruned as the live one is
   * (src/jobs/retention.ts) before the switch; the rebuilt read models then equal the pruned ones.
   */
  retention?: Retention;
}

interface Stores {
  events: EventStore;
  generations: GenerationalReadStore;
  projections: readonly Projection[];
}

/** Positions are fixed-width numbers in both adapters; their leading digits estimate progress. */
const positionNumber = (p: LogPosition): number => Number(/^\d+/.exec(p)?.[0] ?? 0);

const SWITCH_MAX_EVENTS = 5000;

class Behind extends Error {}

export async function rebuildReadModels(s: Stores, options: RebuildOptions = {}): Promise<RebuildResult> {
  const clock = options.clock ?? Date.now;
  const gens = s.generations;
  const base = gens.base;
  const lease = new Lease(base, 'rebuild', { ttlMs: 60_000 });
  if (!(await lease.tryAcquire())) {
    const cur = await Lease.read(base, 'rebuild');
    throw new RebuildError(`another rebuild is running (${cur?.holder ?? 'unknown'}, lease until ${new Date(cur?.expiresAt ?? 0).toISOString()})`);
  }
  lease.start();
  const started = clock();
  try {
    const from = await gens.refresh();
    const to = from + 1;

    // 1. Drop every other generation's read models; reset the target's checkpoints.
    const dropped: string[] = [];
    for (const name of await base.listCollections()) {
      if (gens.isShared(name)) continue;
      if (parsePhysical(name).generation !== from) {
        await base.dropCollection(name);
        dropped.push(name);
      }
    }
    for (const p of s.projections) {
      const name = physicalCheckpoint(p.name, to);
      const cur = await base.getCheckpoint(name);
      if (cur !== null && cur !== LOG_START) await base.transaction((tx) => tx.setCheckpoint(name, LOG_START, cur));
    }

    // 2. Replay, the lanes on handles of their own (PostgreSQL).
    const target = gens.at(to);
    const lanes = forkLanes(target, s.projections);
    try {
      const runner = new ProjectionRunner(s.events, target, s.projections, { batchSize: options.batchSize ?? 1000, logger: options.logger, clock, lanes: lanes.stores });
      await runner.init();
      return await replayAndSwitch(s, runner, { from, to, started, clock, dropped }, options);
    } finally {
      for (const f of lanes.forks) await f.close();
    }
  } finally {
    await lease.stop();
  }
}

interface Attempt {
  from: number;
  to: number;
  started: number;
  clock: () => number;
  dropped: string[];
}

async function replayAndSwitch(s: Stores, runner: ProjectionRunner, { from, to, started, clock, dropped }: Attempt, options: RebuildOptions): Promise<RebuildResult> {
  const target = s.generations.at(to);
  const startPos = positionNumber(runner.position);
  let total = 0;
  let lastReport = 0;
  const report = async (force: boolean) => {
    const now = clock();
    if (!options.onProgress || (!force && now - lastReport < (options.progressEveryMs ?? 1000))) return;
    lastReport = now;
    const head = await s.events.headPosition();
    const seconds = Math.max(0.001, (now - started) / 1000);
    const rate = total / seconds;
    const done = positionNumber(runner.position) - startPos;
    const all = positionNumber(head) - startPos;
    const fraction = all > 0 ? Math.min(1, done / all) : head === runner.position ? 1 : null;
    const etaSeconds = fraction !== null && fraction > 0 ? (seconds * (1 - fraction)) / fraction : null;
    options.onProgress({ generation: to, events: total, position: runner.position, head, eventsPerSecond: rate, fraction, etaSeconds });
  };
  await runner.catchUp((n) => {
    total += n;
    void report(false);
  });
  await report(true);
  if (options.retention) await pruneReadModels(target, options.retention, clock());
  await options.beforeSwitch?.();

  // 3. Switch.
  let position: LogPosition = LOG_START;
  for (let attempt = 0; ; attempt++) {
    total += await runner.catchUp();
    try {
      const r = await switchTo(s, from, to, clock);
      position = r.position;
      total += r.applied;
      break;
    } catch (error) {
      if (attempt >= 50 || !(error instanceof Behind || error instanceof CheckpointConflictError)) throw error;
    }
  }
  await s.generations.refresh();
  return { from, to, events: total, position, seconds: (clock() - started) / 1000, dropped };
}

async function switchTo(s: Stores, from: number, to: number, clock: () => number): Promise<{ position: LogPosition; applied: number }> {
  const gens = s.generations;
  const base = gens.base;
  const target = gens.at(to);
  return target.transactionRaw(async (tx, raw) => {
    const meta = await raw.get<ActiveGenerationDoc>(READ_MODEL_META, ACTIVE_ID);
    if ((meta?.generation ?? 0) !== from) {
      throw new RebuildError(`the live generation changed to ${meta?.generation} during the rebuild (another rebuild switched first)`);
    }
    const live = new Map<string, LogPosition | null>();
    const mine = new Map<string, LogPosition | null>();
    let T: LogPosition = LOG_START;
    for (const p of s.projections) {
      const l = await base.getCheckpoint(physicalCheckpoint(p.name, from));
      const m = await base.getCheckpoint(physicalCheckpoint(p.name, to));
      live.set(p.name, l);
      mine.set(p.name, m);
      for (const x of [l, m]) if (x !== null && x > T) T = x;
    }
    let lowest: LogPosition | null = null;
    for (const m of mine.values()) if (lowest === null || (m ?? LOG_START) < lowest) lowest = m ?? LOG_START;
    let applied = 0;
    if (lowest !== null && lowest < T) {
      // The service appended (and applied, in the live generation) a few events since the replay
      // caught up: apply them here too, so the new generation is at or past the live one.
      const batch = (await s.events.readAll({ after: lowest, maxCount: SWITCH_MAX_EVENTS })).filter((e) => e.position <= T);
      if (batch.length === 0 || batch[batch.length - 1]!.position < T) throw new Behind();
      for (const p of s.projections) {
        const seen = mine.get(p.name) ?? LOG_START;
        for (const e of batch) if (e.position > seen && p.handles.has(e.type)) await p.apply(e, tx);
      }
      applied = batch.length;
    }
    for (const p of s.projections) {
      const m = mine.get(p.name) ?? null;
      if (m !== T) await tx.setCheckpoint(p.name, T, m);
      const l = live.get(p.name) ?? null;
      // A compare-and-set to its own value: a live batch committing now conflicts with the switch.
      if (l !== null) await raw.setCheckpoint(physicalCheckpoint(p.name, from), l, l);
    }
    // What the webhook follower and the cascade parked is not rebuilt from the log (the
    // replay parks again only what projections cannot apply): it moves to the new generation.
    for (const follower of ['webhooks', 'cascade']) {
      for (const d of await raw.find<ParkedDoc>(physicalCollection(PARKED, from), { follower }, { limit: 100_000 })) await tx.upsert(PARKED, d);
    }
    const doc: ActiveGenerationDoc = { _id: ACTIVE_ID, generation: to, previous: from, switchedAt: clock(), position: T };
    await raw.upsert(READ_MODEL_META, doc);
    return { position: T, applied };
  });
}

interface ProjectionStatus {
  name: string;
  checkpoint: LogPosition | null;
  /** Events in the log after the checkpoint (counted up to 10,000; `lagCapped` past that). */
  lag: number;
  lagCapped: boolean;
}

export interface Status {
  generation: number;
  previous: number | null;
  switchedAt: number | null;
  head: LogPosition;
  projections: ProjectionStatus[];
  webhooks: ProjectionStatus;
  leases: Array<{ name: string; holder: string; expiresAt: number; held: boolean }>;
  /** Events a follower passed over (collab projections parked). */
  parked: number;
  /** Events committed that readers cannot see yet, and who holds them back (EventStore.heldBack). */
  heldBack: HeldBack | null;
}

const LAG_CAP = 10_000;

async function lagOf(events: EventStore, name: string, checkpoint: LogPosition | null): Promise<ProjectionStatus> {
  const after = await events.readAll({ after: checkpoint ?? LOG_START, maxCount: LAG_CAP + 1 });
  return { name, checkpoint, lag: Math.min(after.length, LAG_CAP), lagCapped: after.length > LAG_CAP };
}

export async function projectionsStatus(s: Stores & { webhookCheckpoint: string }, now = Date.now()): Promise<Status> {
  const gens = s.generations;
  const generation = await gens.refresh();
  const meta = await gens.base.get<ActiveGenerationDoc>(READ_MODEL_META, ACTIVE_ID);
  const projections: ProjectionStatus[] = [];
  for (const p of s.projections) projections.push(await lagOf(s.events, p.name, await gens.getCheckpoint(p.name)));
  const webhooks = await lagOf(s.events, s.webhookCheckpoint, await gens.getCheckpoint(s.webhookCheckpoint));
  const leases = [];
  for (const name of ['projections', 'webhooks', 'rebuild']) {
    const d = await gens.base.get<LeaseDoc>(LEASES, name);
    if (d) leases.push({ name, holder: d.holder, expiresAt: d.expiresAt, held: d.expiresAt > now });
  }
  return {
    generation,
    previous: meta?.previous ?? null,
    switchedAt: meta?.switchedAt ?? null,
    head: await s.events.headPosition(),
    projections,
    webhooks,
    leases,
    parked: await countParked(gens),
    heldBack: (await s.events.heldBack?.()) ?? null,
  };
}

/**
 * Rows as columns as wide as their widest cell, two spaces apart: a log position is 20 digits
 * on SQLite and up to 39 on PostgreSQL, a lease holder as long as its host name.
 */
function columns(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]! + 2))).join(''));
}

export function formatStatus(st: Status, now = Date.now()): string {
  const lag = (p: ProjectionStatus) => `${p.lagCapped ? '>' : ''}${p.lag}`;
  const lines = [
    `read models: generation ${st.generation}${st.switchedAt ? ` (since ${new Date(st.switchedAt).toISOString()}, replaced ${st.previous})` : ''}`,
    `log head: ${st.head || '(empty)'}`,
    '',
    ...columns([
      ['projection', 'checkpoint', 'lag (events)'],
      ...[...st.projections, st.webhooks].map((p) => [p.name, p.checkpoint || '(start)', lag(p)]),
    ]),
  ];
  lines.push('', st.parked === 0 ? 'parked events: none' : `parked events: ${st.parked} (collab projections parked)`);
  if (st.heldBack) lines.push('', `held back: ${describeHeldBack(st.heldBack, now)}`);
  if (st.leases.length) {
    lines.push(
      '',
      ...columns([
        ['lease', 'holder', 'until'],
        ...st.leases.map((l) => [l.name, l.holder, `${new Date(l.expiresAt).toISOString()}${l.held ? '' : ' (free)'}`]),
      ]),
    );
  }
  return lines.join('\n');
}

export function formatProgress(p: RebuildProgress): string {
  const pct = p.fraction === null ? '' : ` ${(p.fraction * 100).toFixed(1)}%`;
  const eta = p.etaSeconds === null ? '' : `, ETA ${Math.ceil(p.etaSeconds)} s`;
  return `rebuild generation ${p.generation}: ${p.events} events, ${Math.round(p.eventsPerSecond)} events/s, position ${p.position || '(start)'} of ${p.head || '(empty)'}${pct}${eta}`;
}
