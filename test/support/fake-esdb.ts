/**
 * A fake EventStoreDB on loopback: a gRPC server speaking the part of the Streams API the
 * adapter uses (Read for streams, `$all` and `$all` subscriptions; BatchAppend), plus the
 * ServerFeatures probe the client makes before its first append and the Gossip read it makes
 * for a multi-host connection string. It is built from the client's own generated service
 * definitions and protobuf messages and the client's own @grpc/grpc-js, so what crosses the
 * wire is exactly what @eventstore/db-client sends and parses.
 *
 * It proves what does not need server semantics (calls left open, error classes, reconnection,
 * URL handling); the port contract against a real server (test/event-store.esdb.test.ts,
 * whenever EVENTSTORE_URL is set) remains the acceptance for the semantics. Where the fake
 * imitates the server it says which behaviour it imitates:
 * - a read writes with backpressure, as the server does: a reader that stops reading leaves the
 *   call open (HTTP/2 flow control) until it is cancelled;
 * - `$all` reads forwards include the event at `fromPosition`; backwards reads start before it;
 *   a subscription from a position starts after it, one from the end at the head when the
 *   request is handled; then `caughtUp`;
 * - errors as the server reports them: a gRPC status (NOT_FOUND + `exception: not-leader` and the
 *   leader's endpoint for not-leader), or for an append a `google.rpc.Status` inside
 *   BatchAppendResp with the client's detail types (Timeout, MaximumAppendSizeExceeded,
 *   WrongExpectedVersion).
 */
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import type * as Grpc from '@grpc/grpc-js';
import type * as StreamsPb from '@eventstore/db-client/generated/streams_pb.js';
import type * as SharedPb from '@eventstore/db-client/generated/shared_pb.js';

// Everything through the client's own copies (its dependency, not one of ours).
const clientRequire = createRequire(createRequire(import.meta.url).resolve('@eventstore/db-client'));
const grpc = clientRequire('@grpc/grpc-js') as typeof Grpc;
const streamsPb = clientRequire('../generated/streams_pb.js') as typeof StreamsPb;
const sharedPb = clientRequire('../generated/shared_pb.js') as typeof SharedPb;
const statusPb = clientRequire('../generated/status_pb.js') as any;
const gossipPb = clientRequire('../generated/gossip_pb.js') as any;
const featuresPb = clientRequire('../generated/serverfeatures_pb.js') as any;
const anyPb = clientRequire('google-protobuf/google/protobuf/any_pb.js') as any;
const emptyPb = clientRequire('google-protobuf/google/protobuf/empty_pb.js') as any;
const { StreamsService } = clientRequire('../generated/streams_grpc_pb.js') as { StreamsService: Grpc.ServiceDefinition };
const { ServerFeaturesService } = clientRequire('../generated/serverfeatures_grpc_pb.js') as { ServerFeaturesService: Grpc.ServiceDefinition };
const { GossipService } = clientRequire('../generated/gossip_grpc_pb.js') as { GossipService: Grpc.ServiceDefinition };

const { ReadResp } = streamsPb;
type ReadReq = StreamsPb.ReadReq;
type ReadRespT = StreamsPb.ReadResp;
type BatchAppendReq = StreamsPb.BatchAppendReq;
type BatchAppendRespT = StreamsPb.BatchAppendResp;

export const status = grpc.status;

export interface FakeEvent {
  stream: string;
  revision: number;
  id: string;
  type: string;
  data: Uint8Array;
  metadata: Uint8Array;
  /** commit = prepare: one position per event. */
  position: bigint;
}

/** How the next call of a kind fails. */
export type Failure =
  /** The whole call ends with this gRPC status (and trailing metadata), as the server ends it. */
  | { status: number; details?: string; metadata?: Record<string, string> }
  /** One append answered with an error inside BatchAppendResp (the stream stays up). */
  | { appendError: 'timeout' | 'max-append-size'; maxAppendSize?: number };

export type CallKind = 'read' | 'subscribe' | 'append' | 'features';

export interface FakeOptions {
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS the server announces (EventStoreDB's default is 100). */
  maxConcurrentStreams?: number;
  /** Bind to this port (a restart on the same address); 0 picks one. */
  port?: number;
}

interface LiveSubscription {
  call: Grpc.ServerWritableStream<ReadReq, ReadRespT>;
  /** Delivered so far: events at or before this are not sent again. */
  after: bigint;
  accepts: (e: FakeEvent) => boolean;
}

const enc = (s: string) => Buffer.from(s, 'utf8');

function uuidString(u: SharedPb.UUID | undefined): string {
  return u?.getString() ?? '';
}

export class FakeEventStoreDb {
  readonly log: FakeEvent[] = [];
  /** Calls made, by kind. */
  readonly calls: Record<CallKind | 'gossip', number> = { read: 0, subscribe: 0, append: 0, features: 0, gossip: 0 };
  /** Read calls (not subscriptions) that have not ended or been cancelled: server-side view. */
  openReads = 0;
  /** Most open reads at any one time. */
  peakOpenReads = 0;
  /** Subscription requests as received: where each asked to start. */
  readonly subscriptionStarts: Array<'start' | 'end' | bigint> = [];
  /** While true, subscription requests wait (as if the network were slow) until `releaseSubscriptions`. */
  holdSubscriptions = false;
  private held: Array<() => void> = [];
  private readonly live = new Set<LiveSubscription>();
  private readonly failures = new Map<CallKind, Failure[]>();
  private readonly revisions = new Map<string, number>();
  private nextPosition = 1000n;

  private constructor(
    private readonly server: Grpc.Server,
    readonly port: number,
  ) {}

  static async start(options: FakeOptions = {}): Promise<FakeEventStoreDb> {
    const server = new grpc.Server(
      options.maxConcurrentStreams ? { 'grpc.max_concurrent_streams': options.maxConcurrentStreams } : {},
    );
    let fake!: FakeEventStoreDb;
    server.addService(StreamsService, {
      read: (call: Grpc.ServerWritableStream<ReadReq, ReadRespT>) => void fake.read(call),
      batchAppend: (call: Grpc.ServerDuplexStream<BatchAppendReq, BatchAppendRespT>) => fake.batchAppend(call),
    });
    server.addService(ServerFeaturesService, {
      getSupportedMethods: (_call: unknown, callback: Grpc.sendUnaryData<unknown>) => fake.features(callback),
    });
    server.addService(GossipService, {
      read: (_call: unknown, callback: Grpc.sendUnaryData<unknown>) => fake.gossip(callback),
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${options.port ?? 0}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    fake = new FakeEventStoreDb(server, port);
    return fake;
  }

  get url(): string {
    return `esdb://127.0.0.1:${this.port}?tls=false`;
  }

  /** The next call of `kind` fails with `failure` (queued: several calls, several failures). */
  failNext(kind: CallKind, failure: Failure) {
    const list = this.failures.get(kind) ?? [];
    list.push(failure);
    this.failures.set(kind, list);
  }

  /** Another writer's append (no client involved): live subscriptions see it. */
  appendExternal(stream: string, type: string, data: Record<string, unknown> = {}): FakeEvent {
    return this.commit(stream, [{ id: randomUUID(), type, data: enc(JSON.stringify(data)), metadata: enc('{}') }]).at(-1)!;
  }

  /** Ends every live subscription: normally (status OK, as a server going away cleanly does) or with `status`. */
  endSubscriptions(end: { status?: number; details?: string } = {}) {
    for (const sub of this.live) {
      this.live.delete(sub);
      if (end.status === undefined) sub.call.end();
      else sub.call.emit('error', { code: end.status, details: end.details ?? 'ended by the fake' });
    }
  }

  get liveSubscriptions(): number {
    return this.live.size;
  }

  releaseSubscriptions() {
    this.holdSubscriptions = false;
    const held = this.held;
    this.held = [];
    for (const go of held) go();
  }

  stop(): void {
    this.server.forceShutdown();
  }

  // --- the log ---------------------------------------------------------------------------

  private commit(stream: string, events: Array<{ id: string; type: string; data: Uint8Array; metadata: Uint8Array }>): FakeEvent[] {
    let revision = this.revisions.get(stream) ?? -1;
    const out: FakeEvent[] = [];
    for (const e of events) {
      revision += 1;
      this.nextPosition += 137n;
      const recorded: FakeEvent = { stream, revision, position: this.nextPosition, ...e };
      this.log.push(recorded);
      out.push(recorded);
    }
    this.revisions.set(stream, revision);
    for (const sub of this.live) this.deliver(sub, out);
    return out;
  }

  private takeFailure(kind: CallKind): Failure | undefined {
    const list = this.failures.get(kind);
    const f = list?.shift();
    if (list && list.length === 0) this.failures.delete(kind);
    return f;
  }

  private static serviceError(f: { status: number; details?: string; metadata?: Record<string, string> }): Partial<Grpc.StatusObject> {
    const metadata = new grpc.Metadata();
    for (const [k, v] of Object.entries(f.metadata ?? {})) metadata.set(k, v);
    return { code: f.status, details: f.details ?? 'failed by the fake', metadata };
  }

  private static readEvent(e: FakeEvent): ReadRespT {
    const rec = new ReadResp.ReadEvent.RecordedEvent();
    const id = new sharedPb.UUID();
    id.setString(e.id);
    rec.setId(id);
    const sid = new sharedPb.StreamIdentifier();
    sid.setStreamName(enc(e.stream));
    rec.setStreamIdentifier(sid);
    rec.setStreamRevision(String(e.revision));
    rec.setPreparePosition(e.position.toString());
    rec.setCommitPosition(e.position.toString());
    rec.getMetadataMap().set('type', e.type);
    rec.getMetadataMap().set('content-type', 'application/json');
    rec.getMetadataMap().set('created', '638000000000000000');
    rec.setData(e.data);
    rec.setCustomMetadata(e.metadata);
    const re = new ReadResp.ReadEvent();
    re.setEvent(rec);
    re.setCommitPosition(e.position.toString());
    const resp = new ReadResp();
    resp.setEvent(re);
    return resp;
  }

  // --- Streams.Read ----------------------------------------------------------------------

  private async read(call: Grpc.ServerWritableStream<ReadReq, ReadRespT>) {
    const o = call.request.getOptions()!;
    if (o.hasSubscription()) return this.subscribe(call, o);
    this.calls.read++;
    const failure = this.takeFailure('read');
    if (failure && 'status' in failure) {
      call.emit('error', FakeEventStoreDb.serviceError(failure));
      return;
    }
    this.openReads++;
    this.peakOpenReads = Math.max(this.peakOpenReads, this.openReads);
    try {
      const backwards = o.getReadDirection() === streamsPb.ReadReq.Options.ReadDirection.BACKWARDS;
      const count = Number(o.getCount());
      let events: FakeEvent[];
      if (o.hasStream()) {
        const so = o.getStream()!;
        const name = Buffer.from(so.getStreamIdentifier()!.getStreamName_asU8()).toString('utf8');
        if (!this.revisions.has(name)) {
          const nf = new ReadResp.StreamNotFound();
          nf.setStreamIdentifier(so.getStreamIdentifier());
          const resp = new ReadResp();
          resp.setStreamNotFound(nf);
          await this.send(call, [resp]);
          return;
        }
        events = this.log.filter((e) => e.stream === name);
        if (so.hasRevision()) {
          const r = Number(so.getRevision());
          events = backwards ? events.filter((e) => e.revision <= r) : events.filter((e) => e.revision >= r);
        }
      } else {
        const ao = o.getAll()!;
        events = this.log;
        if (ao.hasPosition()) {
          const p = BigInt(ao.getPosition()!.getCommitPosition());
          events = backwards ? events.filter((e) => e.position < p) : events.filter((e) => e.position >= p);
        } else if (ao.hasEnd() && !backwards) {
          events = [];
        }
      }
      const ordered = (backwards ? [...events].reverse() : events).slice(0, count);
      // Built as written: a reader that stops early never costs the rest.
      await this.send(call, (function* () {
        for (const e of ordered) yield FakeEventStoreDb.readEvent(e);
      })());
    } finally {
      this.openReads--;
    }
  }

  /** Writes with backpressure, then ends; resolves when the call is over (ended or cancelled). */
  private async send(call: Grpc.ServerWritableStream<ReadReq, ReadRespT>, messages: Iterable<ReadRespT>) {
    const over = new Promise<void>((resolve) => {
      call.once('cancelled', () => resolve());
      call.once('finish', () => resolve());
    });
    for (const m of messages) {
      if (call.cancelled) return over;
      if (!call.write(m)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            call.off('drain', done);
            call.off('cancelled', done);
            resolve();
          };
          call.on('drain', done);
          call.on('cancelled', done);
        });
      }
    }
    if (!call.cancelled) call.end();
    return over;
  }

  private subscribe(call: Grpc.ServerWritableStream<ReadReq, ReadRespT>, o: StreamsPb.ReadReq.Options) {
    this.calls.subscribe++;
    const go = () => {
      if (call.cancelled) return;
      const failure = this.takeFailure('subscribe');
      if (failure && 'status' in failure) {
        call.emit('error', FakeEventStoreDb.serviceError(failure));
        return;
      }
      const ao = o.getAll()!;
      const start: 'start' | 'end' | bigint = ao.hasPosition() ? BigInt(ao.getPosition()!.getCommitPosition()) : ao.hasEnd() ? 'end' : 'start';
      this.subscriptionStarts.push(start);
      const head = this.log.at(-1)?.position ?? 0n;
      // excludeSystemEvents() is an event-type regex filter; the fake applies whatever regex it gets.
      const regex = o.hasFilter() ? o.getFilter()!.getEventType()?.getRegex() : undefined;
      const accepts = (e: FakeEvent) => (regex ? new RegExp(regex).test(e.type) : true);
      const sub: LiveSubscription = { call, after: start === 'end' ? head : start === 'start' ? -1n : start, accepts };
      const confirmation = new ReadResp.SubscriptionConfirmation();
      confirmation.setSubscriptionId(randomUUID());
      const first = new ReadResp();
      first.setConfirmation(confirmation);
      call.write(first);
      this.deliver(sub, this.log);
      const caughtUp = new ReadResp();
      caughtUp.setCaughtUp(new ReadResp.CaughtUp());
      call.write(caughtUp);
      this.live.add(sub);
      call.once('cancelled', () => this.live.delete(sub));
    };
    if (this.holdSubscriptions) this.held.push(go);
    else go();
  }

  private deliver(sub: LiveSubscription, events: FakeEvent[]) {
    for (const e of events) {
      if (e.position <= sub.after) continue;
      sub.after = e.position;
      if (sub.accepts(e)) sub.call.write(FakeEventStoreDb.readEvent(e));
    }
  }

  // --- Streams.BatchAppend -----------------------------------------------------------------

  private batchAppend(call: Grpc.ServerDuplexStream<BatchAppendReq, BatchAppendRespT>) {
    const pending = new Map<string, { options?: StreamsPb.BatchAppendReq.Options; messages: StreamsPb.BatchAppendReq.ProposedMessage[] }>();
    call.on('data', (req: BatchAppendReq) => {
      const key = uuidString(req.getCorrelationId());
      const p = pending.get(key) ?? { messages: [] };
      if (req.hasOptions()) p.options = req.getOptions();
      p.messages.push(...req.getProposedMessagesList());
      pending.set(key, p);
      if (!req.getIsFinal()) return;
      pending.delete(key);
      this.calls.append++;
      const failure = this.takeFailure('append');
      if (failure && 'status' in failure) {
        call.emit('error', FakeEventStoreDb.serviceError(failure));
        return;
      }
      call.write(this.appendOne(req.getCorrelationId()!, p.options!, p.messages, failure));
    });
    call.on('end', () => call.end());
  }

  private appendOne(
    correlation: SharedPb.UUID,
    options: StreamsPb.BatchAppendReq.Options,
    messages: StreamsPb.BatchAppendReq.ProposedMessage[],
    failure: Failure | undefined,
  ): BatchAppendRespT {
    const resp = new streamsPb.BatchAppendResp();
    resp.setCorrelationId(correlation);
    resp.setStreamIdentifier(options.getStreamIdentifier());
    const stream = Buffer.from(options.getStreamIdentifier()!.getStreamName_asU8()).toString('utf8');
    const error = (code: number, message: string, typeName: string, detail: { serializeBinary(): Uint8Array }) => {
      const s = new statusPb.Status();
      s.setCode(code);
      s.setMessage(message);
      const any = new anyPb.Any();
      any.pack(detail.serializeBinary(), typeName);
      s.setDetails(any);
      resp.setError(s);
      return resp;
    };
    if (failure && 'appendError' in failure) {
      if (failure.appendError === 'timeout') return error(grpc.status.DEADLINE_EXCEEDED, 'timeout', 'event_store.client.Timeout', new sharedPb.Timeout());
      const max = new sharedPb.MaximumAppendSizeExceeded();
      max.setMaxappendsize(failure.maxAppendSize ?? 1_048_576);
      return error(grpc.status.INVALID_ARGUMENT, 'maximum append size exceeded', 'event_store.client.MaximumAppendSizeExceeded', max);
    }
    const current = this.revisions.get(stream);
    const ok = options.hasAny()
      ? true
      : options.hasNoStream()
        ? current === undefined
        : options.hasStreamExists()
          ? current !== undefined
          : current === Number(options.getStreamPosition());
    if (!ok) {
      const w = new sharedPb.WrongExpectedVersion();
      if (current === undefined) w.setCurrentNoStream(new emptyPb.Empty());
      else w.setCurrentStreamRevision(String(current));
      if (options.hasStreamPosition()) w.setExpectedStreamPosition(options.getStreamPosition());
      else if (options.hasNoStream()) w.setExpectedNoStream(new emptyPb.Empty());
      else if (options.hasStreamExists()) w.setExpectedStreamExists(new emptyPb.Empty());
      else w.setExpectedAny(new emptyPb.Empty());
      return error(grpc.status.FAILED_PRECONDITION, 'wrong expected version', 'event_store.client.WrongExpectedVersion', w);
    }
    const recorded = this.commit(
      stream,
      messages.map((m) => ({
        id: uuidString(m.getId()),
        type: m.getMetadataMap().get('type') ?? '',
        data: m.getData_asU8(),
        metadata: m.getCustomMetadata_asU8(),
      })),
    );
    const success = new streamsPb.BatchAppendResp.Success();
    success.setCurrentRevision(String(recorded.at(-1)!.revision));
    const position = new sharedPb.AllStreamPosition();
    position.setCommitPosition(recorded.at(-1)!.position.toString());
    position.setPreparePosition(recorded.at(-1)!.position.toString());
    success.setPosition(position);
    resp.setSuccess(success);
    return resp;
  }

  // --- ServerFeatures and Gossip -------------------------------------------------------------

  private features(callback: Grpc.sendUnaryData<unknown>) {
    this.calls.features++;
    const failure = this.takeFailure('features');
    if (failure && 'status' in failure) return callback(FakeEventStoreDb.serviceError(failure));
    const method = new featuresPb.SupportedMethod();
    method.setServiceName('event_store.client.streams.streams');
    method.setMethodName('batchappend');
    const methods = new featuresPb.SupportedMethods();
    methods.setMethodsList([method]);
    methods.setEventStoreServerVersion('24.10.0');
    callback(null, methods);
  }

  private gossip(callback: Grpc.sendUnaryData<unknown>) {
    this.calls.gossip++;
    const endpoint = new gossipPb.EndPoint();
    endpoint.setAddress('127.0.0.1');
    endpoint.setPort(this.port);
    const id = new sharedPb.UUID();
    id.setString(randomUUID());
    const member = new gossipPb.MemberInfo();
    member.setInstanceId(id);
    member.setTimeStamp('0');
    member.setState(gossipPb.MemberInfo.VNodeState.LEADER);
    member.setIsAlive(true);
    member.setHttpEndPoint(endpoint);
    const info = new gossipPb.ClusterInfo();
    info.setMembersList([member]);
    callback(null, info);
  }
}
