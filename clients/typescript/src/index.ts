/**
 * A typed client of the collaboration backend's REST API: a thin layer over openapi-fetch and
 * the types openapi-typescript generates from the service's OpenAPI document (./schema.d.ts,
 * written by `npm run openapi` in the service's repository; never edited by hand).
 *
 * What the layer adds to openapi-fetch, all of it the API's own conventions (every call a
 * POST of `{ "data": ... }`, answers in envelopes): the credential headers of each mode, the
 * `result` of a success as the return value, a failure envelope as a thrown `CollabApiError`,
 * `pages()` / `all()` that follow `result.pageToken`, consistency tokens: the last one a
 * write answered (`consistencyToken()`), and `withConsistency(token)` to send one on every call,
 * `streamChanges()`, the change stream (`GET /v2/changes/stream`, Server-Sent Events over
 * fetch streaming) as an async iterator that resumes with `Last-Event-ID`, and dry runs
 * (`{ dryRun: true }`: the `x-dry-run` header, the answer typed with its `accessChanges`).
 */
import createFetchClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths } from './schema.js';

/** The API's routes: every path the document lists with a POST operation (`/v2/...`). */
export type ApiPath = {
  [P in keyof paths]: paths[P] extends { post: { requestBody: { content: { 'application/json': { data: unknown } } } } } ? P : never;
}[keyof paths];

type Operation<P extends ApiPath> = paths[P]['post'];

/** What a route takes as `data`. */
export type RequestData<P extends ApiPath> = Operation<P>['requestBody']['content']['application/json']['data'];

/** A route's success `result`: `{ status: 'success', message, data, pageToken? }`. */
export type Result<P extends ApiPath> = Operation<P>['responses'][200]['content']['application/json']['result'];

/** A route's `result.data`. */
export type ResultData<P extends ApiPath> = Result<P> extends { data: infer D } ? D : undefined;

/**
 * A dry run's `result.accessChanges`: who would gain access, lose it, or change role
 * (`counts`, and one page of `changes`; `pageToken` while more follow).
 */
export type AccessChanges = components['schemas']['AccessChanges'];

/** One entry of `AccessChanges['changes']`. */
export type AccessChange = AccessChanges['changes'][number];

/**
 * The routes that preview under a dry run (`{ dryRun: true }`): those whose success `result`
 * the document gives an `accessChanges`. Every other mutating route refuses a dry run
 * (FAILED_PRECONDITION): it does more than record events (credentials, secrets, presence).
 */
export type DryRunPath = {
  [P in ApiPath]: 'accessChanges' extends keyof Result<P> ? P : never;
}[ApiPath];

/** A dry run's `result`: what the real call would answer now, and the `accessChanges` it would make. */
export type DryRunResult<P extends DryRunPath> = Result<P> & { accessChanges: AccessChanges };

/** The routes that take a `pageToken`: the lists that `pages()` and `all()` walk. */
export type PagedPath = {
  [P in ApiPath]: 'pageToken' extends keyof RequestData<P> ? P : never;
}[ApiPath];

/** One row of a list route's `result.data` (`unknown` where the document does not say). */
export type Row<P extends ApiPath> = ResultData<P> extends ReadonlyArray<infer R> ? R : unknown;

/** A change of `/v2/changes/get` and of the change stream. */
export type Change = NonNullable<ResultData<'/v2/changes/get'>>['changes'][number];

/** A kind of change (`types` of changes/get and of the stream). */
export type ChangeFamily = Change['family'];

/** What `streamChanges` takes. */
export interface StreamChangesOptions {
  /**
   * Start strictly after this token (a change's, a `nextToken`, a write's consistency token), or
   * `'now'` (after what the service has applied when the stream opens); from the start without it.
   */
  since?: string;
  /** Only these kinds of change. */
  types?: readonly ChangeFamily[];
  /** Ends the stream: the iterator returns. */
  signal?: AbortSignal;
  /**
   * Reconnect when the connection drops or the service ends the stream (a restart, a reader
   * too slow), going on after the last change received (`Last-Event-ID`): nothing is lost or
   * repeated. Default true.
   */
  reconnect?: boolean;
  /** Wait before a reconnection, doubled after each failed one up to 30 s. Default 1000 ms. */
  retryMs?: number;
}

/** Every `error.status` the document names (`NOT_FOUND`, `INVALID_ARGUMENT`...). */
export type ApiStatus = {
  [K in keyof components['schemas']]: components['schemas'][K] extends { error: { status: infer S extends string } } ? S : never;
}[keyof components['schemas']];

/**
 * The credentials a client sends on every call:
 * - API-key mode (organizations, documents, users, permissions... most routes);
 * - workspace mode (API keys and their tokens: `/v2/workspace/apikey/...`);
 * - the operator's admin token (`/v2/workspace/create`, when the service sets ADMIN_TOKEN);
 * - a user token (`/v2/auth/generate_token`), sent as `Authorization: Bearer`, for a front
 *   end acting as its own user on the user-scoped routes only (`permissions/get`,
 *   `resources/get`, `permissions/explain`, presence): the API key never reaches a browser.
 * Without credentials only the open routes answer (and `/v2/workspace/create` when the
 * service has no ADMIN_TOKEN).
 */
export type Credentials =
  | { apiKey: string; authToken: string }
  | { workspaceId: string; workspaceAuthToken: string }
  | { adminToken: string }
  | { userToken: string };

export interface ClientOptions {
  /** Where the service listens, e.g. `http://localhost:8080`. */
  baseUrl: string;
  credentials?: Credentials;
  /** Headers sent on every call besides the credentials (an `x-request-id`, say). */
  headers?: Record<string, string>;
  /** Another fetch (tests, proxies); the global one by default. */
  fetch?: (input: Request) => Promise<Response>;
  /**
   * Sent as `x-consistency-token` on every call: each is answered only once the service's read
   * models include the write that answered the token (`withConsistency` sets it).
   */
  consistencyToken?: string;
}

export interface CallOptions {
  /**
   * Sent as `Idempotency-Key` on a mutating call: a retry with the same key and body gets the
   * first answer back instead of applying the change again (secrets in it redacted).
   */
  idempotencyKey?: string;
  /** Headers for this call only. */
  headers?: Record<string, string>;
  /** Sent as `x-consistency-token` on this call only (in place of the client's own). */
  consistencyToken?: string;
  signal?: AbortSignal;
  /**
   * `true`: a dry run (`x-dry-run: true`), on a route that previews (`DryRunPath`): the call is
   * decided as the real one and nothing is stored; see `DryRunOptions`.
   */
  dryRun?: false;
}

/**
 * A dry run (`x-dry-run: true`): the call is authenticated, validated and decided exactly as
 * the real one, and nothing is stored (no event, no webhook; an `idempotencyKey` is ignored).
 * It answers what the real call would answer now, plus `accessChanges`; a refusal the real
 * call would meet is thrown as a `CollabApiError` the same way.
 */
export interface DryRunOptions extends Omit<CallOptions, 'dryRun'> {
  dryRun: true;
  /**
   * A previous answer's `accessChanges.pageToken` (sent as `x-dry-run-page-token`), with the
   * same route and `data`: the next page of `accessChanges.changes`.
   */
  dryRunPageToken?: string;
}

/** `data` may be left out when the route requires none of its fields. */
type CallArgs<P extends ApiPath> = {} extends RequestData<P>
  ? [data?: RequestData<P>, options?: CallOptions]
  : [data: RequestData<P>, options?: CallOptions];

/** `call`'s arguments for a dry run: the options are required. */
type DryRunCallArgs<P extends DryRunPath> = {} extends RequestData<P>
  ? [data: RequestData<P> | undefined, options: DryRunOptions]
  : [data: RequestData<P>, options: DryRunOptions];

/** `call`'s arguments with `dryRun` a boolean known only at run time (a `--dry-run` flag, say). */
type MaybeDryRunCallArgs<P extends DryRunPath> = {} extends RequestData<P>
  ? [data: RequestData<P> | undefined, options: Omit<DryRunOptions, 'dryRun'> & { dryRun: boolean }]
  : [data: RequestData<P>, options: Omit<DryRunOptions, 'dryRun'> & { dryRun: boolean }];

/** A failure answer of the service: its error envelope, with the HTTP status and request id. */
export class CollabApiError extends Error {
  override readonly name = 'CollabApiError';
  /** The API status (`NOT_FOUND`, `PERMISSION_DENIED`...). */
  readonly status: ApiStatus;
  /** The HTTP status it came with (404, 403...). */
  readonly httpStatus: number;
  /** Structured detail where the service gives some (the invalid fields...). */
  readonly details: unknown;
  /** A short code where the hosted API shows one (`not-found`). */
  readonly code: string | undefined;
  /** The answer's `x-request-id`: quote it to the operator, it is in the service's logs. */
  readonly requestId: string | undefined;
  /** The route called. */
  readonly path: string;

  constructor(init: { status: ApiStatus; httpStatus: number; message: string; details?: unknown; code?: string; requestId?: string; path: string }) {
    super(init.message);
    this.status = init.status;
    this.httpStatus = init.httpStatus;
    this.details = init.details;
    this.code = init.code;
    this.requestId = init.requestId;
    this.path = init.path;
  }
}

export interface CollabClient {
  /**
   * Calls `path` with `data`; returns the answer's `result` (`{ status, message, data, ... }`)
   * or throws a `CollabApiError`. Network failures are thrown as fetch throws them.
   */
  call<P extends ApiPath>(path: P, ...args: CallArgs<P>): Promise<Result<P>>;
  /**
   * A dry run of `path` (`{ dryRun: true }`, routes that preview only: `DryRunPath`): the
   * `result` the real call would answer now, with `accessChanges`, and nothing stored. Later
   * pages of the changes: the same call with `dryRunPageToken: result.accessChanges.pageToken`.
   * A route that does not preview answers FAILED_PRECONDITION, thrown as a `CollabApiError`.
   */
  call<P extends DryRunPath>(path: P, ...args: DryRunCallArgs<P>): Promise<DryRunResult<P>>;
  /** `dryRun` decided at run time: `accessChanges` is there when it was a dry run. */
  call<P extends DryRunPath>(path: P, ...args: MaybeDryRunCallArgs<P>): Promise<Result<P>>;
  /**
   * The pages of a list: calls `path` with `data`, then again with each answer's
   * `result.pageToken` until an answer carries none, yielding each page's `result`.
   */
  pages<P extends PagedPath>(path: P, data: RequestData<P>, options?: Omit<CallOptions, 'idempotencyKey'>): AsyncGenerator<Result<P>, void, undefined>;
  /** Every row of a list whose `result.data` is an array, all pages together. */
  all<P extends PagedPath>(path: P, data: RequestData<P>, options?: Omit<CallOptions, 'idempotencyKey'>): Promise<Row<P>[]>;
  /** The same service with other credentials (after `workspace/create`, say). */
  withCredentials(credentials: Credentials | undefined): CollabClient;
  /**
   * The same service and credentials, sending `token` as `x-consistency-token` on every call
   * (undefined: none): each call is answered only once the read models include the write that
   * answered the token, on whichever host serves it. The service waits a bounded time
   * (its CONSISTENCY_WAIT_MS), then answers UNAVAILABLE (a `CollabApiError`): retry. A token
   * of other credentials' API key or workspace, or another deployment's, is INVALID_ARGUMENT.
   * Example: `const reader = client.withConsistency(writer.consistencyToken())`.
   */
  withConsistency(token: string | undefined): CollabClient;
  /**
   * The `x-consistency-token` of the most recent answer that carried one (every successful
   * write does), from this client's calls; undefined before any. Opaque: pass it to
   * `withConsistency`, or to `/v2/changes/get` as `since`.
   */
  consistencyToken(): string | undefined;
  /**
   * The change stream (`GET /v2/changes/stream`): the changes `/v2/changes/get` pages, as they
   * are applied, for as long as the caller iterates. With API-key credentials the key's changes;
   * with a user token only its user's own access and what it can open (a front end closes a
   * document when a change ends its access). Each change's `token` is its place: pass the last
   * one as `since` to go on later. A refusal (429 past the service's open streams per key, an
   * invalid token, 401) is thrown as a `CollabApiError`; a dropped stream is resumed (see
   * `reconnect`). Example:
   * `for await (const change of client.streamChanges({ types: ['grant'] })) console.log(change.type);`
   */
  streamChanges(options?: StreamChangesOptions): AsyncGenerator<Change, void, undefined>;
  /** The underlying openapi-fetch client (no envelope handling), for what the layer does not cover. */
  readonly raw: Client<paths>;
}

/** One Server-Sent Events block (the text between blank lines) as its fields. */
function sseFields(block: string): { id?: string; event: string; data?: string } {
  const out: { id?: string; event: string; data?: string } = { event: 'message' };
  for (const line of block.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    const at = line.indexOf(':');
    const field = at < 0 ? line : line.slice(0, at);
    const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
    if (field === 'id') out.id = value;
    else if (field === 'event') out.event = value;
    else if (field === 'data') out.data = out.data === undefined ? value : `${out.data}\n${value}`;
  }
  return out;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

function credentialHeaders(credentials: Credentials | undefined): Record<string, string> {
  if (!credentials) return {};
  if ('apiKey' in credentials) return { 'x-service-api-key': credentials.apiKey, 'x-service-auth-token': credentials.authToken };
  if ('workspaceId' in credentials) {
    return { 'x-service-workspace-id': credentials.workspaceId, 'x-service-workspace-auth-token': credentials.workspaceAuthToken };
  }
  if ('userToken' in credentials) return { authorization: `Bearer ${credentials.userToken}` };
  return { 'x-service-admin-token': credentials.adminToken };
}

/** For an answer without an error envelope (a proxy's page): the API status of its HTTP status. */
function statusOfHttp(http: number): ApiStatus {
  const byHttp: Record<number, ApiStatus> = {
    401: 'UNAUTHENTICATED',
    403: 'PERMISSION_DENIED',
    404: 'NOT_FOUND',
    409: 'ABORTED',
    429: 'RESOURCE_EXHAUSTED',
    503: 'UNAVAILABLE',
  };
  return byHttp[http] ?? (http >= 500 || http < 400 ? 'INTERNAL' : 'INVALID_ARGUMENT');
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function errorOf(path: string, response: Response, body: unknown): CollabApiError {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const error = isObject(body) && isObject(body.error) ? body.error : undefined;
  if (error && typeof error.status === 'string' && typeof error.message === 'string') {
    return new CollabApiError({
      status: error.status as ApiStatus,
      httpStatus: response.status,
      message: error.message,
      details: error.details,
      code: typeof error.code === 'string' ? error.code : undefined,
      requestId,
      path,
    });
  }
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return new CollabApiError({
    status: statusOfHttp(response.status),
    httpStatus: response.status,
    message: `HTTP ${response.status} without the API's envelope: ${String(text).slice(0, 200)}`,
    requestId,
    path,
  });
}

/**
 * openapi-fetch's POST, as this layer calls it. Its own signature infers the request body
 * from one literal path at a time; `call` is generic over every path and gives callers those
 * types itself (RequestData / Result), so the body goes through untyped here.
 */
type UntypedPost = (
  path: string,
  init: { body: { data: unknown }; headers: Record<string, string>; signal?: AbortSignal },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

export function createClient(options: ClientOptions): CollabClient {
  const raw = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, ...credentialHeaders(options.credentials) },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const post = raw.POST as unknown as UntypedPost;
  let lastToken: string | undefined;

  async function send(path: string, data: unknown, callOptions: CallOptions | (Omit<DryRunOptions, 'dryRun'> & { dryRun?: boolean }) = {}): Promise<unknown> {
    const headers: Record<string, string> = { ...callOptions.headers };
    if (callOptions.idempotencyKey !== undefined) headers['idempotency-key'] = callOptions.idempotencyKey;
    const dryRun = callOptions.dryRun === true;
    if (dryRun) {
      headers['x-dry-run'] = 'true';
      if ('dryRunPageToken' in callOptions && callOptions.dryRunPageToken !== undefined) headers['x-dry-run-page-token'] = callOptions.dryRunPageToken;
    }
    const consistency = callOptions.consistencyToken ?? options.consistencyToken;
    if (consistency !== undefined) headers['x-consistency-token'] = consistency;
    const { data: body, error, response } = await post(path, {
      body: { data: data ?? {} },
      headers,
      ...(callOptions.signal ? { signal: callOptions.signal } : {}),
    });
    const token = response.headers.get('x-consistency-token');
    if (token) lastToken = token;
    if (!response.ok) throw errorOf(path, response, error);
    if (!isObject(body) || !isObject(body.result)) throw errorOf(path, response, body);
    if (dryRun && !isObject(body.result.accessChanges)) {
      // A service from before dry runs ignores the header: the call was performed, not previewed.
      throw new Error(`${path}: asked for a dry run (x-dry-run: true), the service answered without accessChanges: it may not support dry runs, and the call may have been applied`);
    }
    return body.result;
  }

  const client: CollabClient = {
    raw,
    call(path: ApiPath, data?: unknown, callOptions?: CallOptions | (Omit<DryRunOptions, 'dryRun'> & { dryRun?: boolean })): Promise<never> {
      return send(path, data, callOptions) as Promise<never>;
    },
    async *pages<P extends PagedPath>(path: P, data: RequestData<P>, callOptions?: Omit<CallOptions, 'idempotencyKey'>) {
      let pageToken: string | undefined;
      do {
        const request = pageToken === undefined ? data : { ...data, pageToken };
        const result = (await send(path, request, callOptions)) as Result<P>;
        yield result;
        const next = (result as { pageToken?: unknown }).pageToken;
        pageToken = typeof next === 'string' && next !== '' ? next : undefined;
      } while (pageToken !== undefined);
    },
    async all<P extends PagedPath>(path: P, data: RequestData<P>, callOptions?: Omit<CallOptions, 'idempotencyKey'>): Promise<Row<P>[]> {
      const rows: Row<P>[] = [];
      for await (const page of client.pages(path, data, callOptions)) {
        const pageData = (page as { data?: unknown }).data;
        if (!Array.isArray(pageData)) throw new TypeError(`${path}: result.data is not an array; use pages() for this route`);
        rows.push(...(pageData as Row<P>[]));
      }
      return rows;
    },
    withCredentials(credentials) {
      return createClient({ ...options, credentials });
    },
    withConsistency(token) {
      const { consistencyToken: _previous, ...rest } = options;
      return createClient(token === undefined ? rest : { ...rest, consistencyToken: token });
    },
    consistencyToken() {
      return lastToken;
    },
    async *streamChanges(streamOptions: StreamChangesOptions = {}) {
      const { signal, reconnect = true, retryMs = 1000 } = streamOptions;
      const doFetch = options.fetch ?? ((request: Request) => fetch(request));
      const base = options.baseUrl.replace(/\/+$/, '');
      let last = streamOptions.since;
      let resumed = false;
      let wait = retryMs;
      while (!signal?.aborted) {
        const query = new URLSearchParams();
        if (last !== undefined && !resumed) query.set('since', last);
        if (streamOptions.types?.length) query.set('types', streamOptions.types.join(','));
        const headers: Record<string, string> = { ...options.headers, ...credentialHeaders(options.credentials), accept: 'text/event-stream' };
        if (resumed && last !== undefined) headers['last-event-id'] = last;
        const path = '/v2/changes/stream';
        let response: Response;
        try {
          const search = query.toString();
          response = await doFetch(new Request(`${base}${path}${search ? `?${search}` : ''}`, { headers, ...(signal ? { signal } : {}) }));
        } catch (error) {
          if (signal?.aborted) return;
          if (!reconnect) throw error;
          await sleep(wait, signal);
          wait = Math.min(30_000, wait * 2);
          continue;
        }
        if (!response.ok || !response.body) {
          let body: unknown;
          try {
            body = await response.json();
          } catch {
            body = undefined;
          }
          const error = errorOf(path, response, body);
          // Shutting down or overloaded: come back later; any other refusal is the caller's to see.
          if (!reconnect || response.status !== 503) throw error;
          await sleep(wait, signal);
          wait = Math.min(30_000, wait * 2);
          continue;
        }
        wait = retryMs;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        let endedBy: string | undefined;
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer += value;
            let at: number;
            while ((at = buffer.search(/\r?\n\r?\n/)) >= 0) {
              const block = buffer.slice(0, at);
              buffer = buffer.slice(at).replace(/^\r?\n\r?\n/, '');
              const e = sseFields(block);
              if (e.data === undefined) {
                // An id alone (a stream from `now`): its place, to go on from after a reconnection.
                if (e.id !== undefined) {
                  last = e.id;
                  resumed = true;
                }
                continue;
              }
              if (e.event === 'change') {
                const change = JSON.parse(e.data) as Change;
                last = e.id ?? change.token;
                resumed = true;
                yield change;
              } else if (e.event === 'end') {
                const end = JSON.parse(e.data) as { reason?: string; lastEventId?: string };
                endedBy = end.reason;
                if (end.lastEventId !== undefined) {
                  last = end.lastEventId;
                  resumed = true;
                }
              }
            }
          }
        } catch (error) {
          if (signal?.aborted) return;
          if (!reconnect) throw error;
        } finally {
          // Also when the caller stops iterating: the connection closes, its place on the service is freed.
          await reader.cancel().catch(() => {});
        }
        if (signal?.aborted || !reconnect) return;
        // The service restarting: give it a moment; a reader it found too slow goes on at once.
        if (endedBy !== 'slow-reader') await sleep(wait, signal);
      }
    },
  };
  return client;
}
