/**
 * Cross-process notices: what lets several processes on one store answer a write as fast as
 * one process does.
 *
 * A write is answered once the read models show it (read-your-writes), and with `serve
 * --workers N` or `--role api` + `--role worker` the process that appended is not the one that
 * applies. Without notices the applier finds the append at its next poll of the log
 * (`PROJECTION_POLL_MS`) and the API process finds the applied batch at its next poll of the
 * checkpoints (`CHECKPOINT_POLL_MS`), so every write waited for a poll. Two notices close both
 * gaps:
 *
 * - `appended`: an API process appended; the applier (projections, webhooks, cascades) wakes;
 * - `applied(position)`: the applier's projections passed `position`; API processes answer
 *   the requests waiting for it (`position` null: something moved, re-read the checkpoints).
 *
 * Transports, each a `NoticeChannel`:
 *
 * - `clusterChannel`: a `serve --workers` child sends to its primary, which relays to its other
 *   children (`relayNotice`, src/cluster.ts). Exact, one host's cluster only.
 * - `dataDirChannel`: processes started separately on one DATA_DIR (SQLite): a change of
 *   `events.db-wal` means some process appended, of `readmodels.db-wal` that some process
 *   committed read-model rows (fs.watch, inotify on Linux). A hint: it fires for this process's
 *   own writes too and says nothing of positions; a listener only re-reads.
 * - a store adapter's own: an event store whose `onAppended` hears other writers (EventStoreDB's
 *   subscription; a PostgreSQL LISTEN) wakes the applier with no channel; a read store's
 *   `onCheckpointMoved` wakes the API processes (src/ports/read-store.ts).
 *
 * Polling stays as the safety net: a lost notice (a child restarting, a filesystem without
 * inotify) only delays a write by a poll interval. Sending is coalesced: one message per turn
 * of the event loop however many appends or batches, so a write storm does not flood the IPC.
 */
import cluster from 'node:cluster';
import fs from 'node:fs';
import path from 'node:path';
import { LOG_START, decorateEventStore, maxPosition, type EventStore, type LogPosition } from '../ports/event-store.js';
import type { RunnerLogger } from './projection-runner.js';
import { SqliteEventStore } from '../adapters/sqlite-event-store.js';

/** The IPC message of a notice, child -> primary -> the other children. */
export const NOTICE_MESSAGE = 'collab:notice';
export type NoticeMessage = { type: typeof NOTICE_MESSAGE; kind: 'appended' } | { type: typeof NOTICE_MESSAGE; kind: 'applied'; position: LogPosition };

export const isNoticeMessage = (m: unknown): m is NoticeMessage =>
  typeof m === 'object' && m !== null && (m as { type?: unknown }).type === NOTICE_MESSAGE;

export interface NoticeChannel {
  /** This process appended events (coalesced). */
  appended(): void;
  /** This process's projections passed `position` (coalesced: the furthest is sent). */
  applied(position: LogPosition): void;
  /** Another process appended. */
  onAppended(listener: () => void): () => void;
  /** Another process's projections passed `position` (null: moved, position unknown). */
  onApplied(listener: (position: LogPosition | null) => void): () => void;
  close(): void;
}

/** Listener sets and the once-per-turn sending that every channel shares. */
export abstract class BaseChannel implements NoticeChannel {
  protected readonly appendedListeners = new Set<() => void>();
  protected readonly appliedListeners = new Set<(position: LogPosition | null) => void>();
  private appendPending = false;
  private appliedPending: LogPosition | null = null;

  protected abstract send(m: NoticeMessage): void;

  appended(): void {
    if (this.appendPending) return;
    this.appendPending = true;
    setImmediate(() => {
      this.appendPending = false;
      this.send({ type: NOTICE_MESSAGE, kind: 'appended' });
    });
  }

  applied(position: LogPosition): void {
    const first = this.appliedPending === null;
    this.appliedPending = maxPosition(this.appliedPending ?? LOG_START, position);
    if (!first) return;
    setImmediate(() => {
      const at = this.appliedPending!;
      this.appliedPending = null;
      this.send({ type: NOTICE_MESSAGE, kind: 'applied', position: at });
    });
  }

  onAppended(listener: () => void): () => void {
    this.appendedListeners.add(listener);
    return () => this.appendedListeners.delete(listener);
  }

  onApplied(listener: (position: LogPosition | null) => void): () => void {
    this.appliedListeners.add(listener);
    return () => this.appliedListeners.delete(listener);
  }

  protected emitAppended() {
    for (const l of this.appendedListeners) l();
  }

  protected emitApplied(position: LogPosition | null) {
    for (const l of this.appliedListeners) l(position);
  }

  abstract close(): void;
}

/** A `serve --workers` child's channel: through the primary, which relays to the other children. */
class ClusterChannel extends BaseChannel {
  private readonly onMessage = (m: unknown) => {
    if (!isNoticeMessage(m)) return;
    if (m.kind === 'appended') this.emitAppended();
    else this.emitApplied(typeof m.position === 'string' ? m.position : null);
  };

  constructor() {
    super();
    process.on('message', this.onMessage);
  }

  protected send(m: NoticeMessage) {
    // A child whose primary is gone is ending anyway; a notice is only ever a hint.
    if (process.connected) process.send?.(m, undefined, undefined, () => {});
  }

  close() {
    process.off('message', this.onMessage);
  }
}

/**
 * Set by the primary in its children's environment: `1` when the cluster has its background
 * process, so every notice a child needs comes from a sibling through the primary.
 */
export const CLUSTER_RELAY_ENV = 'COLLAB_CLUSTER_RELAY';

/** The relay through the primary, for a child of a cluster that has its background process. */
function clusterChannel(): NoticeChannel | null {
  return cluster.isWorker && process.env[CLUSTER_RELAY_ENV] === '1' ? new ClusterChannel() : null;
}

/**
 * The primary's side: a notice from one child goes to the others that want it (appends to the
 * background process, applied positions to the API processes).
 */
export function relayNotice(m: NoticeMessage, to: Iterable<{ role: 'api' | 'worker'; send: (m: NoticeMessage) => void }>): void {
  const role = m.kind === 'appended' ? 'worker' : 'api';
  for (const child of to) if (child.role === role) child.send(m);
}

/** Files in DATA_DIR whose times a process touches after it appended / applied (dataDirChannel). */
const APPENDED_FILE = 'notice-appended';
const APPLIED_FILE = 'notice-applied';

/**
 * Processes on one DATA_DIR, started separately (SQLite): a process that appended touches
 * `notice-appended`, one that applied touches `notice-applied`, after the commit; the others
 * watch the directory (inotify on Linux) and wake. The directory rather than the files, so a
 * file removed and created again is still seen.
 *
 * The write-ahead logs are watched too, as an earlier hint and for writers that announce
 * nothing (a `collab` CLI command). Not as the signal itself: a change of `events.db-wal` is
 * seen while SQLite is still writing the commit, before it is visible to readers (the WAL
 * index in the -shm file, memory-mapped, changes without a notice), so a follower woken by it
 * alone could read too early and go back to sleep until its poll. (It did, in one try of two.)
 */
class DataDirChannel extends BaseChannel {
  private readonly watcher: fs.FSWatcher;
  private readonly files: { appended: string; applied: string };

  constructor(dir: string, logger: RunnerLogger) {
    super();
    this.files = { appended: path.join(dir, APPENDED_FILE), applied: path.join(dir, APPLIED_FILE) };
    for (const f of Object.values(this.files)) fs.closeSync(fs.openSync(f, 'a'));
    this.watcher = fs.watch(dir, { persistent: false }, (_event, filename) => {
      if (filename === APPENDED_FILE || filename === 'events.db-wal') this.emitAppended();
      else if (filename === APPLIED_FILE || filename === 'readmodels.db-wal') this.emitApplied(null);
    });
    this.watcher.on('error', (err) => {
      logger.warn({ err, dir }, "cannot watch DATA_DIR for other processes' writes; polling only");
      this.watcher.close();
    });
  }

  protected send(m: NoticeMessage) {
    const now = new Date();
    // A notice is a hint: a failure (the directory gone) costs the others a poll, nothing more.
    fs.utimes(m.kind === 'appended' ? this.files.appended : this.files.applied, now, now, () => {});
  }

  close() {
    this.watcher.close();
  }
}

/** The DATA_DIR channel, or null (and polling only) where the system cannot watch it. */
export function dataDirChannel(dir: string, logger: RunnerLogger): NoticeChannel | null {
  try {
    return new DataDirChannel(dir, logger);
  } catch (err) {
    logger.warn({ err, dir }, "cannot watch DATA_DIR for other processes' writes; polling only");
    return null;
  }
}

/**
 * The event store as the process's followers see it: its appends are announced on the
 * channels, and (with `hear`) other processes' appends heard on them reach `onAppended`'s
 * listeners (the projection runner, the webhook deliverer, the cascade worker).
 */
export function withNotices(events: EventStore, channels: readonly NoticeChannel[], hear = true): EventStore {
  if (channels.length === 0) return events;
  return decorateEventStore(events, {
    async append(stream, newEvents, expected) {
      const result = await events.append(stream, newEvents, expected);
      for (const c of channels) c.appended();
      return result;
    },
    onAppended(listener) {
      const offs = [events.onAppended(listener), ...(hear ? channels.map((c) => c.onAppended(() => listener(LOG_START))) : [])];
      return () => {
        for (const off of offs) off();
      };
    },
  });
}

/**
 * A `serve` process's notices, by role: an `api` process announces its appends and listens for
 * applied positions; a `worker` listens for appends and announces what it applied. Role `all`
 * has none: its background thread is told by its own process (src/runtime/background.ts).
 *
 * Which channel: the primary's relay in a cluster that has its background process (exact, and
 * every process it concerns is in it); otherwise, on the embedded store, the DATA_DIR watch
 * (the other side is a separate process: `--role api --workers N` beside a `--role worker`).
 * Both at once would only wake every process twice.
 *
 * Wiring, in the order `serve` calls it: `decorate` as openServices' `decorateEvents` (after
 * the stores opened: it picks the DATA_DIR channel only for an embedded log), `onApplied` as its
 * `onApplied`, then `attach` with the services (an API process hears applied positions), `close` at the end.
 */
export function processNotices(role: 'api' | 'worker' | 'all', dataDir: string, logger: RunnerLogger) {
  const shared = role === 'all' ? null : clusterChannel();
  let channels: NoticeChannel[] = [];
  let watch: NoticeChannel | null = null;
  const closeWatch = () => {
    watch?.close();
    watch = null;
  };
  return {
    decorate(events: EventStore): EventStore {
      if (role === 'all') return events;
      // openServices may open the stores again (a busy fresh DATA_DIR): start over each time.
      closeWatch();
      if (!shared && events instanceof SqliteEventStore) watch = dataDirChannel(dataDir, logger);
      channels = [shared, watch].filter((c): c is NoticeChannel => c !== null);
      // Only a worker follows the log for work; an API process's runner only observes.
      return withNotices(events, channels, role === 'worker');
    },
    onApplied(position: LogPosition): void {
      if (role === 'worker') for (const c of channels) c.applied(position);
    },
    attach(services: { projections: { observed(p: LogPosition): void; checkpointsMoved(): void } }): void {
      if (role !== 'api') return;
      for (const c of [shared, watch]) {
        c?.onApplied((position) => (position === null ? services.projections.checkpointsMoved() : services.projections.observed(position)));
      }
    },
    close(): void {
      shared?.close();
      closeWatch();
    },
  };
}
