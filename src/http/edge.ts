/**
 * The HTTP edge, the same for the API and a worker's health server: how long a client may
 * take to send a request, how long an idle connection lives, how many connections are
 * served at once, whose X-Forwarded-For is believed, and the refusals Node's HTTP server
 * makes before any route runs (408, 431, malformed HTTP), written in the failure envelope
 * like every other answer (semantics §1).
 *
 * Example: with REQUEST_TIMEOUT_MS=30000, a client that opens a chunked body and sends a
 * byte a second forever gets, 30 s after it started (plus at most one check interval),
 * `408 {"error":{"status":"INVALID_ARGUMENT","message":"The request did not arrive in
 * time: ..."}}` and the connection is closed.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { nanoid } from 'nanoid';
import type { Config } from '../config/config.js';

type EdgeConfig = Pick<
  Config,
  'requestTimeoutMs' | 'headersTimeoutMs' | 'keepAliveTimeoutMs' | 'connectionTimeoutMs' | 'maxConnections' | 'trustProxy'
>;

/** The failure envelope for answers made outside Fastify's error handler. */
const refusalBody = (status: 'INVALID_ARGUMENT' | 'UNAVAILABLE', message: string) => ({ error: { status, message } });

/**
 * Node checks request and header deadlines on an interval (30 s by default), so a deadline
 * is met late by up to one interval. A tenth of the shorter deadline, within 25 ms..1 s,
 * keeps that lateness small against the deadline at the cost of a walk over the open
 * connections per tick.
 */
const checkIntervalMs = (c: Pick<Config, 'requestTimeoutMs' | 'headersTimeoutMs'>) =>
  Math.min(1000, Math.max(25, Math.floor(Math.min(c.requestTimeoutMs, c.headersTimeoutMs) / 10)));

/** Fastify's `trustProxy` from the config: a hop count becomes proxy-addr's hop rule. */
function trustProxyOption(tp: Config['trustProxy']) {
  // Fastify 5 treats a bare number as "trust nobody" (it cannot check the nearest peer),
  // so the hop count is written out: hop 0 is the socket's peer, 1 the address that peer
  // forwarded for, and so on. With 1 hop and `X-Forwarded-For: a, b` from peer p, p is
  // trusted and the client is b.
  if (typeof tp === 'number') return (_address: string, hop: number) => hop < tp;
  return tp;
}

/** What Node's server refused, as an HTTP status and the envelope's message. */
function refusalOf(err: NodeJS.ErrnoException, c: EdgeConfig): { http: number; message: string } {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        http: 408,
        message: `The request did not arrive in time: its headers must arrive within ${c.headersTimeoutMs} ms and the whole request, body included, within ${c.requestTimeoutMs} ms.`,
      };
    case 'HPE_HEADER_OVERFLOW':
      return { http: 431, message: `The request headers are larger than ${http.maxHeaderSize} bytes.` };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { http: 413, message: 'The chunk extensions of the request body are too large.' };
    default:
      return { http: 400, message: `The request is not valid HTTP/1.1${err.code ? ` (${err.code})` : ''}.` };
  }
}

/** A whole HTTP/1.1 answer with the envelope, for a socket Fastify never saw a request on. */
function rawRefusal(httpStatus: number, body: unknown, requestId: string): string {
  const json = JSON.stringify(body);
  return (
    `HTTP/1.1 ${httpStatus} ${http.STATUS_CODES[httpStatus] ?? 'Error'}\r\n` +
    'content-type: application/json; charset=utf-8\r\n' +
    `content-length: ${Buffer.byteLength(json)}\r\n` +
    `x-request-id: ${requestId}\r\n` +
    'connection: close\r\n\r\n' +
    json
  );
}

/**
 * The last response of each connection (installEdge records it). A request can be answered
 * before its body has arrived (a 404 for an unknown route, a 413 on a declared length), and
 * the body may then go on arriving until the request timeout: that request has had its
 * answer, so the timeout closes the connection without writing a second one.
 */
const lastResponse = new WeakMap<Socket, ServerResponse<IncomingMessage>>();

/** Fastify's `clientErrorHandler`: Node's own refusals, in the envelope. */
function clientErrorHandler(c: EdgeConfig) {
  return function (this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket) {
    // A reset peer is gone: nothing to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const { http: status, message } = refusalOf(err, c);
    const requestId = nanoid(16);
    this.log.debug({ err, requestId, status }, 'client error');
    // As Node does, answer only if no answer to this socket's request has begun (else the
    // bytes would land inside it); and not at all if that request was answered already.
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    const last = lastResponse.get(socket);
    const answered = inFlight ? inFlight.headersSent : last !== undefined && last.writableEnded && !last.req.complete;
    if (socket.writable && !answered) {
      socket.write(rawRefusal(status, refusalBody('INVALID_ARGUMENT', message), requestId));
    }
    socket.destroy(err);
  };
}

/**
 * The longest path parameter routed: the JWKS path names an API key (up to 256 characters,
 * like every id; src/http/jwks.ts), with room for percent-encoding. Fastify's default is 100.
 */
export const MAX_PARAM_LENGTH = 512;

/**
 * Fastify's `frameworkErrors`: the refusals its router makes before any route or error
 * handler runs, which it would otherwise write in its own body (`{"error":"Bad Request",
 * "code":"FST_ERR_MAX_PARAM_LENGTH",...}`). Example: `GET /.well-known/jwks/<600 x "a">.json`
 * answers `414 {"error":{"status":"INVALID_ARGUMENT","message":"A path parameter is longer
 * than 512 characters."}}`.
 */
function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  let status: number;
  let message: string;
  switch (err.code) {
    case 'FST_ERR_MAX_PARAM_LENGTH':
      status = 414;
      message = `A path parameter is longer than ${MAX_PARAM_LENGTH} characters.`;
      break;
    case 'FST_ERR_BAD_URL':
      status = 400;
      message = 'The request path is not a valid URL (a malformed percent-escape).';
      break;
    default:
      // Only route constraints raise anything else, and no route has an asynchronous one.
      req.log.error({ err }, 'unexpected router error');
      void reply.header('x-request-id', req.id).status(500).send({ error: { status: 'INTERNAL', message: `Internal error (request id ${req.id}).` } });
      return;
  }
  void reply.header('x-request-id', req.id).status(status).send(refusalBody('INVALID_ARGUMENT', message));
}

/** The Fastify options of the edge; spread into `Fastify({...})`. */
export function edgeOptions(c: EdgeConfig) {
  return {
    requestTimeout: c.requestTimeoutMs,
    connectionTimeout: c.connectionTimeoutMs,
    keepAliveTimeout: c.keepAliveTimeoutMs,
    // Given at creation: Node checks headersTimeout <= requestTimeout there.
    http: { requestTimeout: c.requestTimeoutMs, headersTimeout: c.headersTimeoutMs, connectionsCheckingInterval: checkIntervalMs(c) },
    trustProxy: trustProxyOption(c.trustProxy),
    clientErrorHandler: clientErrorHandler(c),
    frameworkErrors,
  };
}

/**
 * What the edge needs on the server itself: the connection cap, and each connection's last
 * response for clientErrorHandler.
 *
 * The connection cap: Node's `maxConnections` drops a connection past it without a word, so
 * the cap is kept here instead: connections past MAX_CONNECTIONS are still accepted, up to a
 * tenth more, and each one's first request is answered 503 UNAVAILABLE with `retry-after`
 * and `connection: close`. Past that band Node drops new connections at once, so the number
 * of open sockets stays bounded whatever the clients do.
 *
 * Example: MAX_CONNECTIONS=1000. Connections 1..1000 are served; 1001..1100 get the 503;
 * the 1101st is closed by Node as it is accepted. When one of the first 1000 closes, the
 * next new connection is served again.
 */
export function installEdge(app: FastifyInstance, c: Pick<Config, 'maxConnections'>): void {
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => lastResponse.set(req.socket, res));
  const max = c.maxConnections;
  const over = new WeakSet<Socket>();
  let open = 0;
  app.server.maxConnections = max + Math.max(1, Math.ceil(max / 10));
  app.server.on('connection', (socket: Socket) => {
    open++;
    if (open > max) over.add(socket);
    socket.once('close', () => open--);
  });
  app.addHook('onRequest', (req, reply, done) => {
    if (!over.has(req.raw.socket)) return done();
    // Answered here, before the body is read; not calling done() ends the request.
    void reply
      .header('x-request-id', req.id)
      .header('connection', 'close')
      .header('retry-after', '1')
      .status(503)
      .send(refusalBody('UNAVAILABLE', `The server is at its connection limit (${max}); retry shortly.`));
  });
}
