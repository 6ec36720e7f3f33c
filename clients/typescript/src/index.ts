/**
 * A typed client of the collaboration backend's REST API: a thin layer over openapi-fetch and
 * the types openapi-typescript generates from the service's OpenAPI document (./schema.d.ts,
 * written by `npm run openapi` in the service's repository; never edited by hand).
 *
 * What the layer adds to openapi-fetch, all of it the API's own conventions (every call a
 * POST of `{ "data": ... }`, answers in envelopes): the credential headers of each mode, the
 * `result` of a success as the return value, a failure envelope as a thrown `CollabApiError`,
 * `pages()` / `all()` that follow `result.pageToken`, and consistency tokens: the last one a
 * write answered (`consistencyToken()`), and `withConsistency(token)` to send one on every call.
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

/** The routes that take a `pageToken`: the lists that `pages()` and `all()` walk. */
export type PagedPath = {
  [P in ApiPath]: 'pageToken' extends keyof RequestData<P> ? P : never;
}[ApiPath];

/** One row of a list route's `result.data` (`unknown` where the document does not say). */
export type Row<P extends ApiPath> = ResultData<P> extends ReadonlyArray<infer R> ? R : unknown;

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
}

/** `data` may be left out when the route requires none of its fields. */
type CallArgs<P extends ApiPath> = {} extends RequestData<P>
  ? [data?: RequestData<P>, options?: CallOptions]
  : [data: RequestData<P>, options?: CallOptions];

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
  /** The underlying openapi-fetch client (no envelope handling), for what the layer does not cover. */
  readonly raw: Client<paths>;
}

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

  async function send(path: string, data: unknown, callOptions: CallOptions = {}): Promise<unknown> {
    const headers: Record<string, string> = { ...callOptions.headers };
    if (callOptions.idempotencyKey !== undefined) headers['idempotency-key'] = callOptions.idempotencyKey;
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
    return body.result;
  }

  const client: CollabClient = {
    raw,
    call<P extends ApiPath>(path: P, ...args: CallArgs<P>): Promise<Result<P>> {
      const [data, callOptions] = args;
      return send(path, data, callOptions) as Promise<Result<P>>;
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
  };
  return client;
}
