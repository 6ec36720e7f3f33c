/**
 * API tests go through `app.inject` on a real app over real embedded stores in a temp
 * directory. `harness()` gives a poster that returns status and parsed body, and
 * `tenant()` creates a workspace with a testing key and returns its API-key headers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import * as assert from 'uvu/assert';
import { loadConfig, type Config } from '../../src/config/config.js';
import { openServices, type Services } from '../../src/composition/services.js';
import { buildApp } from '../../src/app.js';

export interface Response {
  status: number;
  body: any;
  headers: Record<string, unknown>;
}

export interface Harness {
  app: FastifyInstance;
  services: Services;
  dataDir: string;
  /** The stores' settings the service was opened with (DATA_DIR, and POSTGRES_URL and SECRETS_KEY on PostgreSQL): a CLI spawned with them works on the same stores. */
  storeEnv: Record<string, string>;
  post(url: string, data: unknown, headers?: Record<string, string>): Promise<Response>;
  /** Posts, fails the test unless the answer is 200 (naming the route and the answer), and returns `body.result`. */
  ok(url: string, data: unknown, headers?: Record<string, string>): Promise<any>;
  /** Posts a raw body (a string) as given. */
  raw(url: string, payload: string, headers?: Record<string, string>): Promise<Response>;
  /** A fresh workspace; returns workspace-mode headers, the testing key's headers and ids. */
  tenant(): Promise<Tenant>;
  close(): Promise<void>;
}

export interface Tenant {
  workspaceId: string;
  apiKey: string;
  workspaceHeaders: Record<string, string>;
  headers: Record<string, string>;
}

/** POSTGRES_URL on a fresh database of the run's server, and the master key every external store needs. */
export async function postgresEnv(): Promise<Record<string, string>> {
  const { freshDatabase } = await import('./postgres.js');
  return { POSTGRES_URL: await freshDatabase('h'), SECRETS_KEY: randomBytes(32).toString('base64') };
}

/** The access questions that take `asOf` (issue 25). */
const AS_OF_ROUTES = new Set(['/v2/auth/permissions/get', '/v2/auth/permissions/explain', '/v2/auth/resources/get', '/v2/auth/users/get']);

/**
 * TEST_AS_OF=now (scripts/test.mjs's as-of pass): each access question is asked as of the
 * service clock's reading, so the same suites check the history read models answer as the
 * live ones (queries/as-of.ts). A question that names its own asOf is left as it is.
 */
function asOfNow(url: string, data: unknown, clock: () => number): unknown {
  if (process.env.TEST_AS_OF !== 'now' || !AS_OF_ROUTES.has(url) || typeof data !== 'object' || data === null || 'asOf' in data) return data;
  return { ...data, asOf: clock() };
}

export function tempDir(prefix = 'collab-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * `follow: false`: nothing applies the projections unless the test calls
 * `services.projections.catchUp()` (read models that lag behind the log, as on a loaded host
 * once READ_YOUR_WRITES_TIMEOUT_MS passed); give READ_YOUR_WRITES_TIMEOUT_MS=0 with it, or
 * every write waits that long.
 */
export async function harness(env: Record<string, string> = {}, options: { clock?: () => number; follow?: boolean; retentionEveryMs?: number } = {}): Promise<Harness> {
  const dataDir = env.DATA_DIR ?? tempDir();
  // TEST_STORE=postgres (scripts/test.mjs's second pass): the same suites on a real PostgreSQL
  // server, each harness on a database of its own (test/support/postgres.ts).
  const stores = process.env.TEST_STORE === 'postgres' && !env.POSTGRES_URL ? await postgresEnv() : {};
  // TEST_ACCESS_INDEX=off (scripts/test.mjs's index-off pass): permission resolution reads the
  // store without the access index (queries/access-index.ts), so the resolution suites check both paths.
  const index = process.env.TEST_ACCESS_INDEX === 'off' ? { ACCESS_INDEX_ENTRIES: '0' } : {};
  // Suites create many workspaces from one address (app.inject's 127.0.0.1): the sign-up
  // limit is off here unless a test sets it (test/edge.test.ts does).
  const config: Config = loadConfig({ LOG_LEVEL: 'silent', SIGNUP_RATE_PER_MINUTE: '0', ...stores, ...index, ...env, DATA_DIR: dataDir });
  // BACKGROUND_THREAD=true in `env` (or TEST_BACKGROUND_THREAD=1 for a whole run) puts the
  // background work on its worker thread as serve does; a test clock stays in-thread.
  const thread = !options.clock && (env.BACKGROUND_THREAD === 'true' || process.env.TEST_BACKGROUND_THREAD === '1');
  const services = await openServices(config, {
    clock: options.clock,
    thread,
    ...(options.follow === false ? { follow: false } : {}),
    ...(options.retentionEveryMs !== undefined ? { retentionEveryMs: options.retentionEveryMs } : {}),
  });
  const app = await buildApp(services, { logger: false });
  await app.ready();
  const parse = (res: { statusCode: number; body: string; headers: Record<string, unknown> }): Response => {
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      body = res.body;
    }
    return { status: res.statusCode, body, headers: res.headers };
  };
  const h: Harness = {
    app,
    services,
    dataDir,
    storeEnv: { ...stores, DATA_DIR: dataDir, ...(env.POSTGRES_URL ? { POSTGRES_URL: env.POSTGRES_URL } : {}), ...(env.SECRETS_KEY ? { SECRETS_KEY: env.SECRETS_KEY } : {}) },
    async post(url, data, headers = {}) {
      const res = await app.inject({ method: 'POST', url, payload: { data: asOfNow(url, data, services.clock) }, headers });
      return parse(res);
    },
    async ok(url, data, headers = {}) {
      const r = await h.post(url, data, headers);
      assert.is(r.status, 200, `${url} ${JSON.stringify(data)}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.result;
    },
    async raw(url, payload, headers = {}) {
      const res = await app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...headers } });
      return parse(res);
    },
    async tenant() {
      const res = await h.post(
        '/v2/workspace/create',
        { ownerEmail: 'owner@example.com' },
        env.ADMIN_TOKEN ? { 'x-service-admin-token': env.ADMIN_TOKEN } : {},
      );
      if (res.status !== 200) throw new Error(`workspace/create failed: ${JSON.stringify(res.body)}`);
      const d = res.body.result.data;
      const [apiKey, key] = Object.entries(d.apiKeyList)[0] as [string, { authToken: string }];
      return {
        workspaceId: d.id,
        apiKey,
        workspaceHeaders: { 'x-service-workspace-id': d.id, 'x-service-workspace-auth-token': d.authToken },
        headers: { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken },
      };
    },
    async close() {
      await app.close();
      await services.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return h;
}
