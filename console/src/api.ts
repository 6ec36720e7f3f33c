/**
 * The console's credentials and its clients. Every call goes through the typed client of
 * clients/typescript (bundled from its sources), to this page's own origin.
 *
 * Where credentials live (docs/console.md, "Safety"):
 * - the API key and its auth token: this tab's sessionStorage, so a reload keeps the session
 *   and closing the tab ends it; never a URL, a cookie or localStorage;
 * - the workspace credentials and the operator's admin token: this module's memory only, so
 *   they are gone on reload and never written anywhere another tab or a later visit can read.
 */
import { CollabApiError, createClient, type CollabClient } from '../../clients/typescript/src/index.js';

export type { AccessChange, AccessChanges, Change, CollabClient } from '../../clients/typescript/src/index.js';

const KEY = 'collab-console-credentials';

export interface ApiKeyCredentials {
  apiKey: string;
  authToken: string;
}

let operatorClient: CollabClient | null = null;
let workspaceClient: CollabClient | null = null;

const base = () => window.location.origin;

export function signIn(credentials: ApiKeyCredentials): CollabClient {
  sessionStorage.setItem(KEY, JSON.stringify(credentials));
  return createClient({ baseUrl: base(), credentials });
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
  operatorClient = null;
  workspaceClient = null;
}

/** The API-key client of this tab's session, or null before sign-in. */
export function apiClient(): CollabClient | null {
  const raw = sessionStorage.getItem(KEY);
  if (!raw) return null;
  try {
    const c = JSON.parse(raw) as Partial<ApiKeyCredentials>;
    if (typeof c.apiKey !== 'string' || typeof c.authToken !== 'string') return null;
    return createClient({ baseUrl: base(), credentials: { apiKey: c.apiKey, authToken: c.authToken } });
  } catch {
    return null;
  }
}

/** The signed-in API key (shown in the header and needed by the workspace routes). */
export function currentApiKey(): string | null {
  const raw = sessionStorage.getItem(KEY);
  if (!raw) return null;
  try {
    const key = (JSON.parse(raw) as Partial<ApiKeyCredentials>).apiKey;
    return typeof key === 'string' ? key : null;
  } catch {
    return null;
  }
}

export function unlockOperator(adminToken: string): CollabClient {
  operatorClient = createClient({ baseUrl: base(), credentials: { adminToken } });
  return operatorClient;
}

export const operator = (): CollabClient | null => operatorClient;

export function lockOperator(): void {
  operatorClient = null;
}

export function unlockWorkspace(workspaceId: string, workspaceAuthToken: string): CollabClient {
  workspaceClient = createClient({ baseUrl: base(), credentials: { workspaceId, workspaceAuthToken } });
  return workspaceClient;
}

export const workspace = (): CollabClient | null => workspaceClient;

/** What a failed call says to the person: the failure envelope's status and message. */
export function messageOf(err: unknown): string {
  if (err instanceof CollabApiError) return `${err.status}: ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * The per-item outcomes of a batch write (`{ [id]: { success, message } }`) that failed: a
 * batch answers 200 even when one item was refused.
 */
export function failedItems(data: unknown): string[] {
  if (typeof data !== 'object' || data === null) return [];
  const out: string[] = [];
  for (const [id, outcome] of Object.entries(data as Record<string, unknown>)) {
    const o = outcome as { success?: unknown; message?: unknown };
    if (o && o.success === false) out.push(`${id}: ${typeof o.message === 'string' ? o.message : 'refused'}`);
  }
  return out;
}
