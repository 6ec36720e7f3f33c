/**
 * The event store port: the write side's only storage. Shaped after EventStoreDB's client
 * (expected revisions, 0-based stream revisions, an ordered `$all` log) so that
 * @eventstore/db-client implements it without translation; the embedded SQLite adapter
 * implements the same contract (test/contract/event-store.contract.ts).
 */

/**
 * A position in the whole log. Opaque to callers, but totally ordered by plain string
 * comparison: adapters encode it at a fixed width (the embedded store pads its sequence
 * number; EventStoreDB pads commit and prepare positions). `LOG_START` sorts before all.
 */
export type LogPosition = string;
export const LOG_START: LogPosition = '';

export const maxPosition = (a: LogPosition, b: LogPosition) => (a >= b ? a : b);

/**
 * - `no_stream`: the stream must not exist yet;
 * - `stream_exists`: it must have at least one event;
 * - `any`: no check;
 * - a number: the revision of the stream's last event must be exactly this.
 */
export type ExpectedRevision = 'no_stream' | 'stream_exists' | 'any' | number;

/** Who caused an event and when; carried on every event for audit (architecture: Audit). */
export interface EventMetadata {
  requestId: string;
  /** `apikey:<key>`, `workspace:<id>`, `admin`, `cli`, or `system:<process>`. */
  actor: string;
  /** Milliseconds since the epoch. */
  time: number;
  workspaceId?: string;
  apiKey?: string;
  /** The event id this one was caused by, when a process reacted to an event. */
  causationId?: string;
}

export interface NewEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
}

export interface RecordedEvent {
  id: string;
  stream: string;
  /** 0-based revision of this event in its stream. */
  revision: number;
  position: LogPosition;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
}

export interface AppendResult {
  /** Revision of the last appended event. */
  nextRevision: number;
  /** Log position of the last appended event. */
  position: LogPosition;
  // No recorded events: EventStoreDB answers an append with the last revision and position
  // only, and reading the events back would cost a round trip per write (nobody used them).
}

export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly stream: string,
    readonly expected: ExpectedRevision,
    /** Revision of the stream's last event, -1 when it has none. */
    readonly actual: number,
  ) {
    super(`stream ${JSON.stringify(stream)}: expected revision ${String(expected)}, actual ${actual}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

export interface ReadStreamOptions {
  /** First revision to return (inclusive). Default 0. */
  fromRevision?: number;
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Return events strictly after this position. Default: from the start. */
  after?: LogPosition;
  maxCount?: number;
}

export interface HeldBack {
  /** Events committed but not yet visible (counted up to 10,000; `capped` past that). */
  events: number;
  capped: boolean;
  /** The oldest of them: its event time (metadata.time, ms). */
  oldestTime: number;
  /** The open transaction holding them back, when the store's role may see it (null: not visible to it). */
  blocker: { pid: number; application: string; state: string; database: string; openSeconds: number } | null;
}

export interface EventStore {
  /** Appends atomically: all of `events` or none. Throws WrongExpectedRevisionError. */
  append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult>;
  /** Events of one stream in revision order; an empty array for a stream that does not exist. */
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** Events of every stream in commit order. */
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Position of the last committed event (LOG_START when the log is empty). */
  headPosition(): Promise<LogPosition>;
  /**
   * Optional: events committed that no reader may see yet, because a transaction older than
   * theirs is still open (PostgreSQL's order: postgres-event-store.ts), with the session
   * holding them back when the store may name it. Null when there are none. Stores whose
   * committed events are visible at once have no such method.
   */
  heldBack?(): Promise<HeldBack | null>;
  /**
   * Calls `listener` after new events are committed (by this process; adapters that can see
   * other writers notify for theirs too). Followers still poll: a missed notification only
   * delays them. Returns an unsubscribe function.
   */
  onAppended(listener: (position: LogPosition) => void): () => void;
  close(): Promise<void>;
}

/**
 * An event store that forwards every call to `inner` except those in `over` (decorators:
 * src/runtime/shared-log-reads.ts, the background thread's append notices).
 */
export function decorateEventStore(inner: EventStore, over: Partial<EventStore>): EventStore {
  return {
    append: over.append ?? ((stream, events, expected) => inner.append(stream, events, expected)),
    readStream: over.readStream ?? ((stream, options) => inner.readStream(stream, options)),
    readAll: over.readAll ?? ((options) => inner.readAll(options)),
    headPosition: over.headPosition ?? (() => inner.headPosition()),
    ...(over.heldBack ?? inner.heldBack ? { heldBack: over.heldBack ?? (() => inner.heldBack!()) } : {}),
    onAppended: over.onAppended ?? ((listener) => inner.onAppended(listener)),
    close: over.close ?? (() => inner.close()),
  };
}
