/**
 * EventStoreDB event store (@eventstore/db-client), the production write side. The port was
 * shaped after this client, so the mapping is one-to-one:
 *
 * - append: `appendToStream(stream, events, { expectedRevision })`, with the port's
 *   `no_stream` / `stream_exists` / `any` / exact revision mapped to NO_STREAM / STREAM_EXISTS /
 *   ANY / BigInt(n). A WrongExpectedVersionError becomes the port's WrongExpectedRevisionError
 *   (actual -1 for a stream that does not exist).
 * - readStream: `readStream(stream, { fromRevision, maxCount })`; StreamNotFoundError is an
 *   empty stream.
 * - readAll: `readAll({ fromPosition, maxCount })` forwards from a position, system events
 *   (`$`-prefixed types and streams) excluded; the server's read includes the event at
 *   `fromPosition`, the port's `after` excludes it.
 * - onAppended: a catch-up subscription to `$all` (system events filtered out by the server)
 *   from the end; every event it delivers, and its `caughtUp`, wakes the followers (projection
 *   runner, webhook deliverer), who then read from their checkpoints. It resubscribes by itself
 *   after a connection loss.
 *
 * Positions: `<commit>/<prepare>`, each padded to 20 digits, so string order is log order and
 * the leading digits estimate progress (rebuild ETA).
 *
 * Stream names: the service builds them as `<category>-<JSON of [apiKey, ...ids]>` (src/ids.ts),
 * so ids with any characters stay apart and keys never share a stream. On top of that this
 * adapter escapes `%` and control characters (`%XX`), which EventStoreDB's stream index and
 * tooling handle poorly; the escaping is reversible and the category prefix stays as is
 * (`$ce-document` still works).
 *
 * Connection loss: UnavailableError, DeadlineExceededError, NotLeaderError and transport
 * errors become StoreUnavailableError (503); the client reconnects on the next call.
 *
 * Not run in this repository's CI (no EventStoreDB here): test/event-store.esdb.test.ts runs
 * the port contract against it whenever EVENTSTORE_URL is set (`npm run test:integration`).
 */
import {
  ANY,
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  type AppendExpectedRevision,
  type Position,
  type ReadPosition,
  type ResolvedEvent,
} from '@eventstore/db-client';
import { EventEmitter } from 'node:events';
import {
  LOG_START,
  WrongExpectedRevisionError,
  type AppendResult,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type LogPosition,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
} from '../ports/event-store.js';
import { StoreUnavailableError } from './unavailable.js';

const WIDTH = 20;

export function encodeEsdbPosition(p: Position): LogPosition {
  return `${p.commit.toString().padStart(WIDTH, '0')}/${p.prepare.toString().padStart(WIDTH, '0')}`;
}

export function decodeEsdbPosition(p: LogPosition): Position | null {
  if (!p) return null;
  const m = /^(\d+)\/(\d+)$/.exec(p);
  if (!m) throw new Error(`not an EventStoreDB log position: ${JSON.stringify(p)}`);
  return { commit: BigInt(m[1]!), prepare: BigInt(m[2]!) };
}

/** Reversible: `%` and control characters as `%XX`. */
export const encodeStreamName = (s: string) =>
  s.replace(/[%\u0000-\u001f\u007f]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`);
export const decodeStreamName = (s: string) => s.replace(/%([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));

function expectedOf(e: ExpectedRevision): AppendExpectedRevision {
  if (e === 'no_stream') return NO_STREAM;
  if (e === 'stream_exists') return STREAM_EXISTS;
  if (e === 'any') return ANY;
  return BigInt(e);
}

const isSystem = (r: { type: string; streamId: string }) => r.type.startsWith('$') || r.streamId.startsWith('$');

const UNAVAILABLE = new Set(['UnavailableError', 'DeadlineExceededError', 'NotLeaderError', 'CancelledError', 'TimeoutError']);

function translate(error: unknown): unknown {
  const name = (error as Error)?.name ?? '';
  const code = (error as { code?: unknown })?.code;
  if (UNAVAILABLE.has(name) || code === 14 || code === 4) return new StoreUnavailableError('event store', error);
  return error;
}

type Recorded = NonNullable<ResolvedEvent['event']> | NonNullable<AllStreamResolvedEvent['event']>;

function toRecorded(e: Recorded): RecordedEvent {
  if (!e.position) throw new Error('EventStoreDB returned an event without a log position');
  return {
    id: e.id,
    stream: decodeStreamName(e.streamId),
    revision: Number(e.revision),
    position: encodeEsdbPosition(e.position),
    type: e.type,
    data: (e.isJson ? e.data : JSON.parse(Buffer.from(e.data as Uint8Array).toString('utf8'))) as Record<string, unknown>,
    metadata: (e.metadata ?? {}) as unknown as EventMetadata,
  };
}

export interface EsdbOptions {
  /** Called when the follow subscription drops and is re-established (logs). */
  logger?: { warn(obj: unknown, msg?: string): void };
}

export class EsdbEventStore implements EventStore {
  private readonly client: EventStoreDBClient;
  private readonly emitter = new EventEmitter();
  private subscription: AllStreamSubscription | null = null;
  private listeners = 0;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    connectionString: string,
    private readonly options: EsdbOptions = {},
  ) {
    this.client = EventStoreDBClient.connectionString(connectionString);
    this.emitter.setMaxListeners(0);
  }

  async append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (this.closed) throw new Error('event store is closed');
    const name = encodeStreamName(stream);
    try {
      const result = await this.client.appendToStream(
        name,
        events.map((e) => jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: e.metadata as unknown as Record<string, unknown> })),
        { expectedRevision: expectedOf(expected) },
      );
      // The recorded events come back from the stream: revisions are the server's.
      const last = Number(result.nextExpectedRevision);
      const first = last - events.length + 1;
      const recorded = await this.readStream(stream, { fromRevision: first, maxCount: events.length });
      const position = result.position ? encodeEsdbPosition(result.position) : (recorded.at(-1)?.position ?? LOG_START);
      return { nextRevision: last, position, events: recorded };
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        const actual = error.actualVersion === NO_STREAM ? -1 : Number(error.actualVersion);
        throw new WrongExpectedRevisionError(stream, expected, actual);
      }
      throw translate(error);
    }
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const out: RecordedEvent[] = [];
    try {
      const read = this.client.readStream(encodeStreamName(stream), {
        direction: FORWARDS,
        fromRevision: options.fromRevision ? BigInt(options.fromRevision) : START,
        ...(options.maxCount !== undefined ? { maxCount: BigInt(options.maxCount) } : {}),
      });
      for await (const r of read) if (r.event) out.push(toRecorded(r.event));
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw translate(error);
    }
    return out;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const max = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    const out: RecordedEvent[] = [];
    let from = decodeEsdbPosition(options.after ?? LOG_START);
    // Everything at or before this has been returned or skipped (reads start inclusive).
    let cursor = options.after ?? LOG_START;
    // System events count against the server's maxCount: read in chunks until enough are kept.
    const chunk = Math.min(Math.max(max + 1, 64), 4096);
    try {
      for (;;) {
        let n = 0;
        let last: Position | null = null;
        for await (const r of this.client.readAll({ direction: FORWARDS, fromPosition: from ?? START, maxCount: BigInt(chunk) })) {
          n++;
          const e = r.event;
          if (!e?.position) continue;
          last = e.position;
          const at = encodeEsdbPosition(e.position);
          if (at <= cursor) continue;
          cursor = at;
          if (isSystem(e)) continue;
          out.push(toRecorded(e));
          if (out.length >= max) return out;
        }
        if (n < chunk || !last) return out;
        from = last;
      }
    } catch (error) {
      throw translate(error);
    }
  }

  async headPosition(): Promise<LogPosition> {
    try {
      let from: ReadPosition = END;
      for (;;) {
        let n = 0;
        let last: Position | null = null;
        const read = this.client.readAll({ direction: BACKWARDS, fromPosition: from, maxCount: 256n });
        for await (const r of read as AsyncIterable<AllStreamResolvedEvent>) {
          n++;
          const e: AllStreamResolvedEvent['event'] = r.event;
          if (!e?.position) continue;
          last = e.position;
          if (!isSystem(e)) return encodeEsdbPosition(e.position);
        }
        if (n < 256 || !last) return LOG_START;
        from = last;
      }
    } catch (error) {
      throw translate(error);
    }
  }

  onAppended(listener: (position: LogPosition) => void): () => void {
    this.emitter.on('appended', listener);
    if (this.listeners++ === 0) this.subscribe(null);
    return () => {
      this.emitter.off('appended', listener);
      if (--this.listeners === 0) this.unsubscribe();
    };
  }

  /** Catch-up subscription to `$all`, from `from` (or the end), re-established after errors. */
  private subscribe(from: Position | null) {
    if (this.closed || this.subscription) return;
    let seen = from;
    const sub = this.client.subscribeToAll({ fromPosition: from ?? END, filter: excludeSystemEvents() });
    this.subscription = sub;
    sub.on('data', (r: AllStreamResolvedEvent) => {
      if (!r.event?.position) return;
      seen = r.event.position;
      this.emitter.emit('appended', encodeEsdbPosition(r.event.position));
    });
    // Live: followers read from their checkpoints now and will be woken per event from here.
    sub.on('caughtUp', () => {
      if (seen) this.emitter.emit('appended', encodeEsdbPosition(seen));
    });
    sub.on('error', (error: unknown) => {
      this.options.logger?.warn({ err: error }, 'EventStoreDB subscription dropped; resubscribing');
      if (this.subscription === sub) this.subscription = null;
      void sub.unsubscribe().catch(() => undefined);
      if (this.closed || this.listeners === 0) return;
      this.retry = setTimeout(() => {
        this.retry = null;
        this.subscribe(seen);
      }, 1000);
      this.retry.unref();
    });
  }

  private unsubscribe() {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    const sub = this.subscription;
    this.subscription = null;
    void sub?.unsubscribe().catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    this.emitter.removeAllListeners();
    await this.client.dispose();
  }
}
