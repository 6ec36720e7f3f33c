/**
 * A route is a path, an authentication mode, a zod schema for `data`, and a handler that
 * gets the parsed data (typed from the schema: no casts at the edge) and returns what goes in
 * the success envelope. Everything else (auth, validation, envelopes, read-your-writes) is
 * done once, here and in app.ts.
 */
import type { z } from 'zod';
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

export interface RouteDef<S extends z.ZodType = z.ZodType> {
  path: string;
  /**
   * Whether the route changes anything (appends events, writes presence, grants, signs a
   * token). Required, so every route is classified where it is defined: only mutating
   * routes keep an Idempotency-Key's answer (src/http/idempotency.ts), since repeating a
   * read changes nothing and its answer can be large (a permissions/get page).
   */
  mutates: boolean;
  auth: AuthMode;
  schema: S;
  /** Writes wait for read models before answering (read-your-writes). Default true. */
  handler: (data: z.output<S>, ctx: RequestContext) => Promise<Success>;
  /**
   * Optional: writes the handler's `data` exactly as `JSON.stringify` would, only faster (a
   * hot read with a fixed row shape). Used when the answer has no `extra`.
   */
  dataJson?: (data: any) => string;
}

export interface AnyRoute {
  path: string;
  mutates: boolean;
  auth: AuthMode;
  schema: z.ZodType;
  handler: (data: unknown, ctx: RequestContext) => Promise<Success>;
  dataJson?: (data: unknown) => string;
}

export const defineRoute = <S extends z.ZodType>(def: RouteDef<S>): AnyRoute => def as unknown as AnyRoute;
