/**
 * `GET /v2/changes/stream` (issue 36; docs/guide.md, "Following changes live"; the design in
 * docs/architecture.md, "The change stream"): `/v2/changes/get`'s changes as Server-Sent
 * Events, each `id:` its change token, `event: change`, `data:` the change as changes/get
 * shows it.
 *
 * - Where it starts: strictly after `Last-Event-ID` (a reconnect's header), else after the
 *   `since` query parameter (any token changes/get takes), else from the start. Ids are the
 *   tokens changes/get answers, so a stream cut anywhere resumes with its last id and loses or
 *   repeats nothing.
 * - What it follows: the audit index (never the log), one bounded page at a time and only up
 *   to the position every read model has applied (queries/changes.ts), so it never runs ahead
 *   of a read. A stream sleeps until the projection runner's position moves
 *   (ProjectionRunner.onAdvanced: its own batches, a background thread's or another process's
 *   notices, PostgreSQL's LISTEN) or CHANGES_STREAM_POLL_MS passes, whichever is first.
 * - Who sees what: API-key headers, the key's changes (`types` filters families as in
 *   changes/get); a user token, only its user's own access and what it can open
 *   (src/usecases/change-scope.ts).
 * - Bounds: at most CHANGES_STREAM_MAX_PER_TENANT open streams per API key (user tokens
 *   included) in this process, past it 429 RESOURCE_EXHAUSTED before anything is streamed; a
 *   comment line every CHANGES_STREAM_HEARTBEAT_MS; a stream whose socket buffer is full
 *   reads nothing more until it drains, and one still full after CHANGES_STREAM_STALL_MS is
 *   ended with `event: end` (`reason: "slow-reader"`, the id to resume from). What a stream
 *   holds is one page at most beyond the socket's buffer.
 * - Its end: the client leaving frees its place at once; the app closing (fastify `close`)
 *   ends every stream with `event: end` (`reason: "shutdown"`) first, so close never waits on
 *   them; credentials that stop authenticating (checked again with every heartbeat: a user
 *   token expired, an auth token reset, a key deleted) end it with `reason:
 *   "unauthenticated"`.
 *
 * Registered beside the API's POST routes (src/http/api-routes.ts) with the same
 * `config.api`, so authentication, the rate limit and the consistency hook treat it as any
 * user-token route; CORS answers its preflight for GET (src/http/cors.ts), and the stream
 * writes the CORS headers itself (it answers outside the onSend hooks).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import { Counter, Gauge, type Registry } from 'prom-client';
import { z } from 'zod';
import { CHANGE_FAMILIES, type AuditEventDoc, type ChangeFamily } from '../../../projections/audit.js';
import { changesPage, checkNotPruned } from '../../../queries/changes.js';
import { NO_DEADLINE, Pacer, letOthersRun } from '../../../queries/cost.js';
import type { Services } from '../../composition/services.js';
import { LOG_START, type LogPosition } from '../../ports/event-store.js';
import { Wakeup } from '../../runtime/wakeup.js';
import { apiKeyScope } from '../../secrets/positions.js';
import { ApiError, BugError, invalidArgument } from '../../shared/errors.js';
import { rowsForUser } from '../../usecases/change-scope.js';
import { changeView } from '../../usecases/changes.js';
import { authenticate } from '../auth.js';
import { RequestContext } from '../context.js';
import { corsHeaders } from '../cors.js';
import { FAILURE } from '../schema.js';
import { shared } from '../plugin.js';
import type {} from '../route-config.js';

export const CHANGES_STREAM_PATH = '/v2/changes/stream';

/** Rows read per page: what a stream holds at most beyond its socket's buffer. */
const PAGE_SIZE = 100;

/** How long an ending stream's last bytes may take before its socket is closed anyway. */
const END_GRACE_MS = 1000;

/** Why the server ends a stream (the `reason` of its final `end` event). */
type EndReason = 'slow-reader' | 'shutdown' | 'error' | 'unauthenticated';

/** The open streams of one app: counted per API key, all ended when the app closes. */
export class ChangeStreams {
  private readonly perTenant = new Map<string, number>();
  private readonly streams = new Set<ChangeStream>();
  private unsubscribe: (() => void) | null = null;
  /** The app is closing: no stream opens any more. */
  private closing = false;
  /** Streams ended, by why (`client` when the reader left); counted once metrics are attached. */
  private ended: Counter<'reason'> | undefined;

  constructor(private readonly services: Pick<Services, 'projections' | 'config'>) {}

  /** `collab_change_streams_open` and `collab_change_streams_ended_total{reason}` in `registry`. */
  attachMetrics(registry: Registry): void {
    const streams = this;
    new Gauge({
      name: 'collab_change_streams_open',
      help: 'Change streams (GET /v2/changes/stream) open in this process.',
      registers: [registry],
      collect() {
        this.set(streams.open);
      },
    });
    this.ended = new Counter({
      name: 'collab_change_streams_ended_total',
      help: 'Change streams ended, by reason: client (the reader left), slow-reader, shutdown, unauthenticated, error.',
      labelNames: ['reason'] as const,
      registers: [registry],
    });
  }

  /** Streams open now, all API keys together. */
  get open(): number {
    return this.streams.size;
  }

  /** Streams open now for `apiKey`. */
  openFor(apiKey: string): number {
    return this.perTenant.get(apiKey) ?? 0;
  }

  /** Counts a new stream of `apiKey`, or RESOURCE_EXHAUSTED past the bound. */
  reserve(apiKey: string): void {
    if (this.closing) throw new ApiError('UNAVAILABLE', 'The server is shutting down: open the stream again on another (or once it is back), with Last-Event-ID.');
    const max = this.services.config.changesStreamMaxPerTenant;
    const n = this.openFor(apiKey);
    if (n >= max) {
      throw new ApiError(
        'RESOURCE_EXHAUSTED',
        `This API key has ${n} change streams open on this server, the most it may (CHANGES_STREAM_MAX_PER_TENANT = ${max}): close one, or read /v2/changes/get instead.`,
      );
    }
    this.perTenant.set(apiKey, n + 1);
  }

  /** Gives back a place `reserve` took. */
  release(apiKey: string): void {
    const n = this.openFor(apiKey) - 1;
    if (n > 0) this.perTenant.set(apiKey, n);
    else this.perTenant.delete(apiKey);
  }

  add(s: ChangeStream): void {
    this.streams.add(s);
    // Opened while closeAll ran (its headers were on their way): ended like the others.
    if (this.closing) void s.end('shutdown');
    // One listener for all streams, only while some are open: every move pokes each stream.
    this.unsubscribe ??= this.services.projections.onAdvanced(() => {
      for (const t of this.streams) t.poke();
    });
  }

  remove(s: ChangeStream): void {
    if (!this.streams.delete(s)) return;
    this.ended?.inc({ reason: s.endReason ?? 'client' });
    if (this.streams.size === 0) {
      this.unsubscribe?.();
      this.unsubscribe = null;
    }
  }

  /** Ends every stream (the app closes) and resolves once their sockets are closed. */
  async closeAll(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.streams].map((s) => s.end('shutdown')));
  }
}

/** One SSE field block; `data` is JSON, which has no newline. */
const sseEvent = (event: string, data: unknown, id?: string) => `${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

export interface StreamOptions {
  services: Services;
  ctx: RequestContext;
  /** Where the events go: the response (a Writable with its backpressure, in tests). */
  res: Pick<ServerResponse, 'write' | 'end' | 'destroy' | 'destroyed' | 'writableNeedDrain' | 'once' | 'off'>;
  apiKey: string;
  userId: string | undefined;
  families: readonly ChangeFamily[] | undefined;
  cursor: LogPosition;
  /** The id to resume from if the stream ends before sending any event (the request's own). */
  lastId: string | undefined;
  log: FastifyRequest['log'];
  /**
   * Checks the request's credentials again (with every heartbeat): false, or an ApiError,
   * ends the stream (`unauthenticated`); any other failure (the store out of reach) is no verdict.
   */
  reauthenticate?: () => Promise<boolean>;
}

export class ChangeStream {
  private readonly wakeup = new Wakeup();
  private closed = false;
  private cursor: LogPosition;
  private lastId: string | undefined;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly done: Promise<void>;
  private markDone!: () => void;
  private readonly scope: string;
  private readonly pacer = new Pacer(NO_DEADLINE);
  /** Why the server ended the stream; undefined while open, or when the reader left. */
  endReason: EndReason | undefined;

  constructor(private readonly o: StreamOptions) {
    this.cursor = o.cursor;
    this.lastId = o.lastId;
    this.scope = apiKeyScope(o.apiKey);
    this.done = new Promise((resolve) => (this.markDone = resolve));
    this.heartbeat = setInterval(() => {
      // A full buffer gets nothing more; the stall timer decides its fate.
      if (!this.closed && !o.res.destroyed && !o.res.writableNeedDrain) o.res.write(': heartbeat\n\n');
      void this.checkCredentials();
    }, o.services.config.changesStreamHeartbeatMs);
    this.heartbeat.unref();
    o.res.once('close', () => this.closedBySocket());
  }

  poke(): void {
    this.wakeup.poke();
  }

  private checking = false;

  /** Ends the stream once its credentials stop authenticating (see `reauthenticate`). */
  private async checkCredentials(): Promise<void> {
    const check = this.o.reauthenticate;
    if (!check || this.checking || this.closed) return;
    this.checking = true;
    let valid = true;
    try {
      valid = await check();
    } catch (error) {
      valid = !(error instanceof ApiError);
      if (valid) this.o.log.warn({ err: error }, 'change stream: credentials not checked (kept open)');
    } finally {
      this.checking = false;
    }
    if (!valid) void this.end('unauthenticated');
  }

  private closedBySocket(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    this.wakeup.poke();
    this.markDone();
  }

  /**
   * Ends the stream from the server's side: a final `end` event saying why and where to
   * resume, then the socket; resolves once it is closed (at most END_GRACE_MS later).
   */
  end(reason: EndReason): Promise<void> {
    if (this.closed) return this.done;
    this.closed = true;
    this.endReason = reason;
    this.wakeup.poke();
    const message = {
      'slow-reader': `The stream was ended: its reader fell behind (its socket stayed full for ${this.o.services.config.changesStreamStallMs} ms, CHANGES_STREAM_STALL_MS).`,
      shutdown: 'The stream was ended: the server is shutting down.',
      error: 'The stream was ended by an error of the server.',
      unauthenticated: 'The stream was ended: its credentials no longer authenticate (a user token expired, an auth token reset, a key deleted).',
    }[reason];
    const resume = reason === 'unauthenticated'
      ? 'Open it again with valid credentials (a new user token), with Last-Event-ID set to lastEventId.'
      : this.lastId === undefined ? 'Reconnect with the same request to go on.' : 'Reconnect with the header Last-Event-ID set to lastEventId to go on where this stream stopped.';
    const { res } = this.o;
    if (!res.destroyed) {
      res.end(sseEvent('end', { reason, message: `${message} ${resume}`, ...(this.lastId !== undefined ? { lastEventId: this.lastId } : {}) }));
      setTimeout(() => res.destroy(), END_GRACE_MS).unref();
    }
    return this.done;
  }

  /** Resolves true once the socket buffer drains, false after CHANGES_STREAM_STALL_MS or on close. */
  private drained(): Promise<boolean> {
    const { res } = this.o;
    return new Promise((resolve) => {
      const finish = (ok: boolean) => {
        clearTimeout(timer);
        res.off('drain', onDrain);
        res.off('close', onClose);
        resolve(ok);
      };
      const onDrain = () => finish(true);
      const onClose = () => finish(false);
      const timer = setTimeout(() => finish(false), this.o.services.config.changesStreamStallMs);
      res.once('drain', onDrain);
      res.once('close', onClose);
    });
  }

  /** Follows the feed until the stream closes. */
  async run(): Promise<void> {
    const { services, res } = this.o;
    const { projections, read, config } = services;
    try {
      while (!this.closed) {
        if (res.writableNeedDrain) {
          if (await this.drained()) continue;
          // Its last bytes go if the reader reads within END_GRACE_MS; it resumes from its own last id anyway.
          if (!this.closed) void this.end('slow-reader');
          break;
        }
        this.wakeup.take();
        const bound = projections.position;
        if (bound <= this.cursor) {
          await this.wakeup.sleep(config.changesStreamPollMs);
          continue;
        }
        // Another process's commits are visible to this read (as a request's are).
        read.beginRequest();
        const page = await changesPage(read, this.o.apiKey, { after: this.cursor, bound, pageSize: PAGE_SIZE, families: this.o.families, pacer: this.pacer });
        const rows: AuditEventDoc[] = this.o.userId === undefined ? page.rows : await rowsForUser(read, this.o.apiKey, this.o.userId, services.clock(), page.rows, this.pacer, services.config.historyRetentionDays);
        let full = false;
        for (const row of rows) {
          if (this.closed) return;
          const change = await changeView(this.o.ctx, this.scope, row);
          // The socket may have gone while the change was read.
          if (this.closed || res.destroyed) return;
          res.write(sseEvent('change', change, change.token));
          this.lastId = change.token;
          this.cursor = row.position;
          // The reader is behind: stop here, go on from this row once the buffer drains.
          if (res.writableNeedDrain) {
            full = true;
            break;
          }
        }
        if (!full) this.cursor = page.next;
        await letOthersRun();
      }
    } catch (err) {
      this.o.log.error({ err }, 'change stream failed');
      void this.end('error');
    }
  }
}

/** The query parameters: `since` (a token) and `types` (families, repeated or comma-separated). */
function parseQuery(query: unknown): { since?: string; types?: ChangeFamily[] } {
  const q = (query ?? {}) as Record<string, unknown>;
  const out: { since?: string; types?: ChangeFamily[] } = {};
  if (q.since !== undefined) {
    if (typeof q.since !== 'string' || q.since.length === 0 || q.since.length > 1024) throw invalidArgument('since must be one change or consistency token (1 to 1024 characters).');
    out.since = q.since;
  }
  if (q.types !== undefined) {
    const given = (Array.isArray(q.types) ? q.types : [q.types]).flatMap((t) => (typeof t === 'string' ? t.split(',') : [t]));
    const known = new Set<string>(CHANGE_FAMILIES);
    const bad = given.filter((t) => typeof t !== 'string' || !known.has(t));
    if (given.length === 0 || bad.length > 0) {
      throw invalidArgument(`types must list families of change among ${CHANGE_FAMILIES.map((f) => JSON.stringify(f)).join(', ')}, separated by commas${bad.length ? `; got ${bad.map((b) => JSON.stringify(b)).join(', ')}` : ''}.`);
    }
    out.types = [...new Set(given as ChangeFamily[])];
  }
  return out;
}

/** One header's value; a repeated one is malformed. */
function singleHeader(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw invalidArgument(`The ${name} header is given more than once.`);
  return v;
}

const json = (description: string, schema: z.ZodType) => ({ description, content: { 'application/json': { schema } } });

/** The OpenAPI description of the route (src/http/openapi.ts documents the POST routes from their records). */
const streamSchema = {
  tags: ['Changes'],
  summary: 'Follow the API key\'s changes live, as Server-Sent Events',
  description: [
    'The changes `/v2/changes/get` pages, as they are applied, as `text/event-stream`: each change is an event with `id:` its change token, `event: change` and `data:` the change as changes/get shows it (one line of JSON).',
    '',
    'Starts strictly after the `Last-Event-ID` header (a reconnect), else after `since` (any token changes/get takes: a change\'s, a `nextToken`, a write\'s `x-consistency-token`; or `now`, what is applied when it opens), else from the start: resumed with its last id, a stream loses and repeats nothing. On a server with a limited audit (`AUDIT_RETENTION_DAYS`), a place before the key\'s last change deleted is refused (400 INVALID_ARGUMENT) rather than skip them.',
    '',
    'A comment line (`: heartbeat`) comes every CHANGES_STREAM_HEARTBEAT_MS. The server may end a stream with `event: end`, `data: { reason, message, lastEventId? }`: `slow-reader` (the socket stayed full for CHANGES_STREAM_STALL_MS), `shutdown`, `error`, `unauthenticated` (the credentials, checked again with every heartbeat, no longer authenticate: an expired user token, say); reconnect with `Last-Event-ID: <lastEventId>`.',
    '',
    'With a user token (`Authorization: Bearer`, browsers read it with `fetch` streaming), only the changes to the user\'s own access (grants and revocations of the user or of its groups, its group memberships, its organization memberships, its profile) and to the documents, folders and organizations it can open, or could when the change was made (so a deletion or a revocation that closes one shows). An expiry is no event: `GrantAdded` carries `expiresAt`.',
    '',
    `At most CHANGES_STREAM_MAX_PER_TENANT streams per API key (its user tokens included) on one server: past it, 429 RESOURCE_EXHAUSTED before any event. Refusals (400, 401, 403, 429) are JSON envelopes like every answer.`,
  ].join('\n'),
  operationId: 'changesStream',
  security: [{ apiKey: [], authToken: [] }, { userToken: [] }] as Array<Record<string, string[]>>,
  querystring: z.object({
    since: z.string().min(1).max(1024).optional().describe('Start strictly after this token; `now`: after what the read models hold now (the stream\'s first block is then an `id:` alone, its place). `Last-Event-ID` wins over it.'),
    types: z.string().optional().describe('Families of change to keep, separated by commas (`grant,document`); all when absent. API-key callers and user tokens alike.'),
  }),
  headers: z.object({
    'last-event-id': z.string().max(1024).optional().describe('The id of the last event received: the stream starts strictly after it (what an EventSource sends on reconnecting).'),
  }),
  response: {
    200: { description: 'The stream', content: { 'text/event-stream': { schema: z.string().describe('`id: <token>`, `event: change`, `data: <change JSON>`, a blank line; `: heartbeat` comment lines; a final `event: end` when the server ends it.') } } },
    400: json('INVALID_ARGUMENT: a token of another caller or changed, an unknown family', FAILURE.get(400)!),
    401: json('UNAUTHENTICATED: missing credentials, an invalid user token', FAILURE.get(401)!),
    403: json('PERMISSION_DENIED: wrong credentials', FAILURE.get(403)!),
    429: json('RESOURCE_EXHAUSTED: the rate limit, or CHANGES_STREAM_MAX_PER_TENANT streams open already', FAILURE.get(429)!),
    500: json('INTERNAL', FAILURE.get(500)!),
    503: json('UNAVAILABLE: overloaded, or shutting down', FAILURE.get(503)!),
  },
};

declare module 'fastify' {
  interface FastifyInstance {
    /** The open change streams (src/http/routes/changes-stream.ts). */
    changeStreams: ChangeStreams;
  }
}

async function handler(streams: ChangeStreams, services: Services, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const caller = req.caller;
  if (!caller?.tenant) throw new BugError(`route ${CHANGES_STREAM_PATH} ran without its authentication hook`);
  const apiKey = caller.tenant.apiKey;
  const query = parseQuery(req.query);
  const lastEventId = singleHeader(req, 'last-event-id');
  let cursor = LOG_START;
  // `since=now`: what the read models hold now is behind; its place is the stream's first id.
  const fromNow = lastEventId === undefined && query.since === 'now';
  if (lastEventId !== undefined) cursor = services.secrets.positions.open(apiKeyScope(apiKey), lastEventId, 'The Last-Event-ID header');
  else if (fromNow) cursor = services.projections.position;
  else if (query.since !== undefined) cursor = services.secrets.positions.open(apiKeyScope(apiKey), query.since, 'since');
  // A place the audit retention has deleted changes after would resume over a gap: refused.
  if (!fromNow) await checkNotPruned(services.read, apiKey, cursor, lastEventId !== undefined ? 'the Last-Event-ID header' : 'since');
  streams.reserve(apiKey);
  let stream: ChangeStream;
  try {
    const headers = {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      'x-request-id': req.id,
      ...(caller.userId !== undefined ? await corsHeaders(services, req) : {}),
    };
    reply.hijack();
    const res = reply.raw;
    // A write racing the peer's reset fails on a destroyed socket: the close ends the stream.
    res.on('error', (err) => req.log.debug({ err }, 'change stream socket error'));
    res.writeHead(200, headers);
    // The first bytes at once: the client knows the stream is open, a proxy starts passing it.
    // From `now`, an id alone (no event): a reconnection before the first change goes on from there.
    const startId = fromNow ? services.secrets.positions.seal(apiKeyScope(apiKey), cursor) : undefined;
    res.write(startId !== undefined ? `: stream open\nid: ${startId}\n\n` : ': stream open\n\n');
    const ctx = new RequestContext(services, req.id, services.clock(), req.log, caller.actor, caller.tenant, undefined, caller.userId);
    const reauthenticate = async () => {
      // Other processes' commits (a reset on another host) are visible to the check.
      services.read.beginRequest();
      const again = await authenticate(req, 'apiKey', services, { userToken: true, userTokenPaths: [] });
      return again.tenant?.apiKey === apiKey && again.userId === caller.userId;
    };
    stream = new ChangeStream({ services, ctx, res, apiKey, userId: caller.userId, families: query.types, cursor, lastId: lastEventId ?? startId ?? query.since, log: req.log, reauthenticate });
  } catch (error) {
    streams.release(apiKey);
    throw error;
  }
  streams.add(stream);
  reply.raw.once('close', () => {
    streams.remove(stream);
    streams.release(apiKey);
  });
  void stream.run();
}

/**
 * Registers the stream route; after the hooks it needs (authentication, rate limit, CORS).
 * `streams`: the app's open streams (src/app.ts decorates the root instance with them, where
 * tests and operators can count them).
 */
export const changesStream = shared<{ services: Services; streams: ChangeStreams }>('changes-stream', async (app, { services, streams }) => {
  streams.attachMetrics(app.appMetrics.registry);
  // Before the server closes: it would wait for these connections, which never end by themselves.
  app.addHook('preClose', async () => streams.closeAll());
  app.get(CHANGES_STREAM_PATH, {
    schema: streamSchema,
    exposeHeadRoute: false,
    config: { api: { path: CHANGES_STREAM_PATH, auth: 'apiKey', userToken: true, mutates: false } },
    handler: (req, reply) => handler(streams, services, req, reply),
  });
});
