/**
 * EventStoreDB event store (@eventstore/db-client), the production write side. The port was
 * shaped after this client, so the mapping is one-to-one:
 *
 * - append: `appendToStream(stream, events, { expectedRevision })`, with the port's
 *   `no_stream` / `stream_exists` / `any` / exact revision mapped to NO_STREAM / STREAM_EXISTS /
 *   ANY / BigInt(n). A WrongExpectedVersionError becomes the port's WrongExpectedRevisionError
 *   (actual -1 for a stream that does not exist). The answer carries the last revision and the
 *   log position: nothing is read back (a read after every write would double the round trips,
 *   and a failed read would report a committed append as failed).
 * - readStream: `readStream(stream, { fromRevision, maxCount })`; StreamNotFoundError is an
 *   empty stream.
 * - readAll: `readAll({ fromPosition, maxCount })` forwards from a position, system events
 *   (`$`-prefixed types and streams) excluded; the server's read includes the event at
 *   `fromPosition`, the port's `after` excludes it.
 * - Every read ends its gRPC call, also when it stops early (see `readThrough`).
 * - onAppended: this process's own appends notify at once, after the commit; other writers'
 *   through a catch-up subscription to `$all` (system events filtered out by the server) opened
 *   while someone listens. It is re-established whenever it ends, however it ends.
 *
 * Positions: `<commit>/<prepare>`, each padded to 20 digits, so string order is log order and
 * the leading digits estimate progress (rebuild ETA).
 *
 * Stream names: the service builds them as `<category>-<JSON of [apiKey, ...ids]>` (src/shared/ids.ts),
 * so ids with any characters stay apart and keys never share a stream. On top of that this
 * adapter escapes `%` and control characters (`%XX`), which EventStoreDB's stream index and
 * tooling handle poorly; the escaping is reversible and the category prefix stays as is
 * (`$ce-document` still works).
 *
 * Errors (see `translate`): every unavailable kind (unavailable, deadline exceeded, not leader,
 * cancelled by the server, server timeout, no node found by discovery) becomes
 * StoreUnavailableError (503); the client reconnects on the next call. An append larger than
 * the server accepts is INVALID_ARGUMENT (413).
 *
 * What has run where: test/esdb.client.test.ts runs this adapter and the real client against a
 * fake server on loopback (test/support/fake-esdb.ts: the client's own gRPC definitions) for
 * calls left open, error mapping and resubscription; test/event-store.esdb.test.ts runs the port
 * contract against a real EventStoreDB whenever EVENTSTORE_URL is set (`npm run
 * test:integration`), which this repository's CI does not have.
 */
import {
  ANY,
  BACKWARDS,
  END,
  EventStoreDBClient,
  ErrorType,
  FORWARDS,
  MaxAppendSizeExceededError,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  convertToCommandError,
  excludeSystemEvents,
  jsonEvent,
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  type AppendExpectedRevision,
  type Position,
  type ReadPosition,
  type ResolvedEvent,
  type StreamingRead,
} from '@eventstore/db-client';
import { EventEmitter } from 'node:events';
import { ApiError } from '../shared/errors.js';
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

/**
 * The client's error kinds that mean "the store cannot answer right now": the request may be
 * retried once the client has reconnected (it does so by itself after these).
 * - unavailable: no connection, server restarting;
 * - deadline-exceeded: the call, or the server's commit (an append's `Timeout` detail), ran out
 *   of time (the append may or may not have been committed: the caller retries, and the
 *   expected revision refuses a duplicate);
 * - not-leader: the node lost or never had leadership; the client reconnects to the leader it names;
 * - cancelled: the server cancelled the call (shutting down); a cancellation by this process
 *   never reaches here;
 * - timeout: the server's own operation timeout (gRPC ABORTED).
 *
 * Matched on the client's `type` field, never on `name`: the client's error classes keep
 * Error's name ("Error"), so a name match never fires.
 */
const UNAVAILABLE_KINDS = new Set<string>([
  ErrorType.UNAVAILABLE,
  ErrorType.DEADLINE_EXCEEDED,
  ErrorType.NOT_LEADER,
  ErrorType.CANCELLED,
  ErrorType.TIMEOUT,
]);

/**
 * The client's discovery (gossip seeds, `esdb+discover://` or several hosts) throws a plain
 * Error with only this message when no seed answers: the cluster is unreachable.
 */
const DISCOVERY_FAILED = /^Failed to discover after \d+ attempts\.$/;

/** The error to throw for a client error: the port's error, an ApiError, or the error as is (INTERNAL). */
function translate(error: unknown): unknown {
  if (error instanceof ApiError || error instanceof WrongExpectedRevisionError) return error;
  if (!(error instanceof Error)) return error;
  // Some paths rethrow the raw gRPC error (the client's server-features probe, for one):
  // converted here the same way the client converts the others.
  let converted: Error & { type?: unknown } = error;
  try {
    converted = convertToCommandError(error) as Error & { type?: unknown };
  } catch {
    // Not a gRPC error after all (a numeric `code` without `details`): keep it as it is.
  }
  if (converted instanceof MaxAppendSizeExceededError) {
    return new ApiError(
      'INVALID_ARGUMENT',
      `The events of this request are larger than the event store accepts in one append (${converted.maxAppendSize} bytes).`,
      undefined,
      413,
    );
  }
  if (typeof converted.type === 'string' && UNAVAILABLE_KINDS.has(converted.type)) return new StoreUnavailableError('event store', error);
  if (DISCOVERY_FAILED.test(error.message)) return new StoreUnavailableError('event store', error);
  return error;
}

/** Returned by a `readThrough` visitor: enough read, end the call. */
const STOP = true;

/**
 * Iterates a read and always ends its gRPC call. Leaving `for await` early (a `return`, a
 * throw) destroys only the client's wrapper stream: the gRPC call behind it stays open, unread,
 * in the client's `disposableStreams` until `dispose()`, holding one of the connection's HTTP/2
 * streams. EventStoreDB allows 100 at once, so the 101st read would wait forever (`/readyz`
 * reads the head on every probe). Worked example: `headPosition` stops at the first non-system
 * event of a 256-event page; without the cancel, 100 probes later every read hangs.
 */
async function readThrough<E>(read: StreamingRead<E>, visit: (e: E) => boolean | void): Promise<void> {
  let ended = false;
  try {
    for await (const e of read) if (visit(e) === STOP) return;
    ended = true;
  } finally {
    // After a normal end the call is over already; cancelling then would only cost a tick.
    if (!ended) await read.cancel().catch(() => undefined);
  }
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
  /** Told when the follow subscription drops and is re-established. */
  logger?: { warn(obj: unknown, msg?: string): void };
  /** First wait before resubscribing after a drop; doubles per failed attempt up to 30 s. Default 1 s. */
  resubscribeDelayMs?: number;
}

const MAX_RESUBSCRIBE_DELAY_MS = 30_000;

export class EsdbEventStore implements EventStore {
  /** Replaced by a fresh one when it is stuck on a failed server probe: see `recover`. */
  private client: EventStoreDBClient;
  private readonly emitter = new EventEmitter();
  private subscription: AllStreamSubscription | null = null;
  private listeners = 0;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  /** Newest event the subscription delivered: a resubscription continues after it. */
  private seen: Position | null = null;
  private retryDelay: number;

  constructor(
    private readonly connectionString: string,
    private readonly options: EsdbOptions = {},
  ) {
    this.client = EventStoreDBClient.connectionString(connectionString);
    this.emitter.setMaxListeners(0);
    this.retryDelay = options.resubscribeDelayMs ?? 1000;
  }

  async append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (this.closed) throw new Error('event store is closed');
    const name = encodeStreamName(stream);
    let result: Awaited<ReturnType<EventStoreDBClient['appendToStream']>>;
    const client = this.client;
    try {
      result = await client.appendToStream(
        name,
        events.map((e) => jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: e.metadata as unknown as Record<string, unknown> })),
        { expectedRevision: expectedOf(expected) },
      );
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        const actual = error.actualVersion === NO_STREAM ? -1 : Number(error.actualVersion);
        throw new WrongExpectedRevisionError(stream, expected, actual);
      }
      if (!(error instanceof MaxAppendSizeExceededError)) void this.recover(client, error);
      throw translate(error);
    }
    // Committed from here on: nothing below may turn this into a failure.
    const last = Number(result.nextExpectedRevision);
    const position = result.position ? encodeEsdbPosition(result.position) : await this.positionOf(stream, last);
    // This process's followers learn of it now, not when the subscription gets round to it
    // (which may have started after this commit: then never).
    this.notify(position);
    return { nextRevision: last, position };
  }

  /**
   * Before its first append (and again after each reconnection) the client asks the server
   * which methods it supports, and caches the answer, also when the question failed: it only
   * clears it when it decides to reconnect, which it does not for a failed cluster discovery
   * (gossip: `esdb+discover://`, several hosts) or a probe that ran out of time. Every later
   * append then fails with that same error, however healthy the cluster is again, while reads
   * work (so readiness checks pass). Worked example: the replicas start before the cluster is
   * reachable; the first write fails "Failed to discover after 10 attempts", and so does every
   * write after it until the process restarts.
   *
   * So when an append fails, and the client's cached probe is that very failure, the client is
   * replaced by a fresh one (the next append probes again). The old one is not disposed: that
   * would cancel its calls, and a cancelled batch-append stream rejects the pending appends of
   * every client in the process (the client keeps them in one module-wide map); with no probe
   * it never opened one, and its reads finish on their own.
   */
  private async recover(client: EventStoreDBClient, error: unknown) {
    // Let the client's own error handling run first: it clears the probe when it reconnects.
    await new Promise((resolve) => setImmediate(resolve));
    if (client !== this.client || this.closed) return;
    // `capabilities` is the client's (protected) cached probe.
    const probe = (client as unknown as { capabilities: Promise<unknown> }).capabilities;
    const outcome = await probe.then(
      () => null,
      (e: unknown) => e,
    );
    if (outcome !== error || client !== this.client || this.closed) return;
    this.options.logger?.warn({ err: error }, 'EventStoreDB client kept a failed server probe; replacing the client');
    this.client = EventStoreDBClient.connectionString(this.connectionString);
    const sub = this.subscription;
    if (sub) {
      this.subscription = null;
      void sub.unsubscribe().catch(() => undefined);
      this.subscribe();
    }
  }

  /**
   * The server leaves the position out when it did not write (an append of events it already
   * has, by id): the event's own position is then read. If even that fails the append still
   * succeeded: LOG_START (a read-your-writes wait then returns at once).
   */
  private async positionOf(stream: string, revision: number): Promise<LogPosition> {
    try {
      return (await this.readStream(stream, { fromRevision: revision, maxCount: 1 })).at(-1)?.position ?? LOG_START;
    } catch (error) {
      this.options.logger?.warn({ err: error, stream }, 'EventStoreDB: position of a committed append unknown');
      return LOG_START;
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
      await readThrough(read, (r) => {
        if (r.event) out.push(toRecorded(r.event));
      });
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
        const read = this.client.readAll({ direction: FORWARDS, fromPosition: from ?? START, maxCount: BigInt(chunk) });
        await readThrough(read, (r) => {
          n++;
          const e = r.event;
          if (!e?.position) return;
          last = e.position;
          const at = encodeEsdbPosition(e.position);
          if (at <= cursor) return;
          cursor = at;
          if (isSystem(e)) return;
          out.push(toRecorded(e));
          return out.length >= max ? STOP : undefined;
        });
        if (out.length >= max || n < chunk || !last) return out;
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
        let head: LogPosition | null = null;
        const read = this.client.readAll({ direction: BACKWARDS, fromPosition: from, maxCount: 256n });
        await readThrough(read, (r: AllStreamResolvedEvent) => {
          n++;
          const e = r.event;
          if (!e?.position) return;
          last = e.position;
          if (isSystem(e)) return;
          head = encodeEsdbPosition(e.position);
          return STOP;
        });
        if (head !== null) return head;
        if (n < 256 || !last) return LOG_START;
        from = last;
      }
    } catch (error) {
      throw translate(error);
    }
  }

  onAppended(listener: (position: LogPosition) => void): () => void {
    this.emitter.on('appended', listener);
    if (this.listeners++ === 0) this.subscribe();
    let off = false;
    return () => {
      if (off) return;
      off = true;
      this.emitter.off('appended', listener);
      if (--this.listeners === 0) this.unsubscribe();
    };
  }

  /** Tells the listeners. One that throws is logged: it must not fail a committed append. */
  private notify(position: LogPosition) {
    try {
      this.emitter.emit('appended', position);
    } catch (error) {
      this.options.logger?.warn({ err: error }, 'an onAppended listener threw');
    }
  }

  private wake() {
    this.notify(this.seen ? encodeEsdbPosition(this.seen) : LOG_START);
  }

  /**
   * Catch-up subscription to `$all`, after the newest event it delivered (or from the end),
   * re-established however it ends: an error, or a server that ends the call cleanly (the
   * stream then just ends or closes, with no error to react to).
   *
   * Each subscription's confirmation wakes the followers once: they read from their
   * checkpoints, which covers whatever other writers committed before the server placed the
   * subscription (from the end, it starts where the server is when the request arrives, not
   * where it was when `onAppended` was called), and while it was down.
   */
  private subscribe() {
    if (this.closed || this.subscription || this.listeners === 0) return;
    const sub = this.client.subscribeToAll({ fromPosition: this.seen ?? END, filter: excludeSystemEvents() });
    this.subscription = sub;
    let dropped = false;
    const drop = (reason: unknown) => {
      if (dropped) return;
      dropped = true;
      // Unsubscribed on purpose (last listener gone, or closing): nothing to re-establish.
      if (this.subscription !== sub) return;
      this.subscription = null;
      void sub.unsubscribe().catch(() => undefined);
      if (this.closed || this.listeners === 0) return;
      this.options.logger?.warn({ err: reason }, 'EventStoreDB subscription dropped; resubscribing');
      const delay = this.retryDelay;
      this.retryDelay = Math.min(delay * 2, MAX_RESUBSCRIBE_DELAY_MS);
      this.retry = setTimeout(() => {
        this.retry = null;
        this.subscribe();
      }, delay);
      this.retry.unref();
    };
    sub.on('confirmation', () => {
      this.retryDelay = this.options.resubscribeDelayMs ?? 1000;
      this.wake();
    });
    sub.on('data', (r: AllStreamResolvedEvent) => {
      if (!r.event?.position) return;
      this.seen = r.event.position;
      this.notify(encodeEsdbPosition(r.event.position));
    });
    // Live: followers read from their checkpoints now and will be woken per event from here.
    sub.on('caughtUp', () => this.wake());
    sub.on('error', (error: unknown) => drop(error));
    sub.on('end', () => drop(new Error('the server ended the subscription')));
    sub.on('close', () => drop(new Error('the subscription closed')));
  }

  private unsubscribe() {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    // A later listener starts from the end again, not by replaying what nobody listened to.
    this.seen = null;
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
