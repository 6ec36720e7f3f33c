/**
 * A route is a path, an authentication mode, a zod schema for the request's `data` and one
 * for the answer's `data`, the error statuses it can answer, and a handler that gets the
 * parsed data (typed from the schema: no casts at the edge) and returns what goes in the
 * success envelope. Everything else (auth, validation, envelopes, read-your-writes, the
 * OpenAPI document) is done once, in app.ts and src/http/schema.ts, from these.
 */
import type { z } from 'zod';
import type { StatusCode } from '../shared/errors.js';
import type { RequestContext } from './context.js';

/**
 * - `open`: no credentials (health checks);
 * - `admin`: the operator's `x-service-admin-token` when ADMIN_TOKEN is set, open otherwise;
 * - `workspace`: `x-service-workspace-id` + `x-service-workspace-auth-token`;
 * - `apiKey`: `x-service-api-key` + `x-service-auth-token`, attaching the tenant.
 */
export type AuthMode = 'open' | 'admin' | 'workspace' | 'apiKey';

export interface Success {
  message: string;
  /** Omitted from the envelope when undefined (documents/move answers without data). */
  data?: unknown;
  /** Next page's token, as `result.pageToken`; absent on the last page. */
  pageToken?: string;
  /** Further `result` fields (e.g. `nextPageToken`). */
  extra?: Record<string, unknown>;
}

/** What the OpenAPI document says of a route besides its schemas. */
export interface RouteDoc {
  /** One line: what the route does. */
  summary: string;
  /** More, in Markdown: rules a client must know (limits, batch behaviour, paging). */
  description?: string;
  /** A request `data` that the route accepts (shown in the docs page). */
  example?: Record<string, unknown>;
}

export interface RouteDef<S extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  path: string;
  /** The group the route is listed under in the OpenAPI document (`Folders`, `Users`...). */
  tag: string;
  doc: RouteDoc;
  /**
   * Whether the route changes anything (appends events, writes presence, grants, signs a
   * token). Required, so every route is classified where it is defined: only mutating
   * routes keep an Idempotency-Key's answer (src/runtime/idempotency.ts), since repeating a
   * read changes nothing and its answer can be large (a permissions/get page).
   */
  mutates: boolean;
  auth: AuthMode;
  /**
   * `true` on a user-scoped `apiKey` route: it also accepts `Authorization: Bearer <user
   * token>` in place of the API-key headers (src/http/auth.ts). The caller then acts as the
   * token's user only, and the handler must hold it to that: `ctx.actingUser()` is the user
   * (undefined under API-key headers), and src/http/acting-user.ts has the checks (`onlySelf`
   * for a list of user ids, `mayOpenDocument`). Every route without the flag refuses a
   * request whose only credential is a user token (PERMISSION_DENIED).
   */
  userToken?: true;
  schema: S;
  /**
   * The answer's `result.data`, as the service writes it (`NO_DATA` when the answer has
   * none). The source of the OpenAPI document; tests check every answer against it
   * (src/http/response-check.ts), so the two cannot drift.
   */
  response: R;
  /**
   * `pageToken`: the answer may carry `result.pageToken` (a list); `both`: it carries
   * `result.nextPageToken` too (the lists the hosted API pages that way, semantics §4a).
   */
  paged?: 'pageToken' | 'both';
  /**
   * The failure statuses this route answers besides the ones every route of its auth mode
   * can (src/http/schema.ts `commonErrors`): NOT_FOUND for an unknown organization, say.
   */
  errors?: readonly StatusCode[];
  handler: (data: z.output<S>, ctx: RequestContext) => Promise<Success>;
}

export interface AnyRoute {
  path: string;
  tag: string;
  doc: RouteDoc;
  mutates: boolean;
  auth: AuthMode;
  userToken?: true;
  schema: z.ZodType;
  response: z.ZodType;
  paged?: 'pageToken' | 'both';
  errors?: readonly StatusCode[];
  handler: (data: unknown, ctx: RequestContext) => Promise<Success>;
}

export const defineRoute = <S extends z.ZodType, R extends z.ZodType>(def: RouteDef<S, R>): AnyRoute =>
  def as unknown as AnyRoute;
