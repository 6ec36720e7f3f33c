/**
 * Configuration from the environment, checked once at start: a bad value stops the process
 * with a message naming the variable, before anything listens.
 */
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { checkEventStoreUrl } from '../adapters/esdb-connection-string.js';
import { parseCidr } from '../adapters/egress.js';
import { hostsOf } from '../adapters/postgres-url.js';
import { parseKeyMaterial } from '../shared/envelope.js';
import { MongoUrlError, parseMongoUrl, redactMongoPassword } from '../adapters/mongo-url.js';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  eventStoreUrl?: string;
  mongodbUrl?: string;
  /** POSTGRES_URL: both ports in one PostgreSQL database, except a port EVENTSTORE_URL or MONGODB_URL names. */
  postgresUrl?: string;
  /**
   * POSTGRES_LISTEN_URL: where the process LISTENs for other processes' notices, when
   * POSTGRES_URL goes through a pooler in transaction mode (a direct connection to the server).
   * Default: POSTGRES_URL.
   */
  postgresListenUrl?: string;
  /**
   * POSTGRES_REPLICA_URLS: hot standbys of POSTGRES_URL's server that read-only requests may be
   * answered from (src/adapters/postgres-replicas.ts), one single-host URL each. Empty: none.
   */
  postgresReplicaUrls: string[];
  /** POSTGRES_REPLICA_MAX_LAG_MS: a standby further behind the primary (its replay lag, or what the primary had applied this long ago) is left out until it catches up. */
  postgresReplicaMaxLagMs: number;
  /** POSTGRES_POOL_SIZE: connections of each of a process's two PostgreSQL pools. */
  postgresPoolSize: number;
  /** LOCK_TIMEOUT_MS: PostgreSQL, the longest a statement waits for a lock another session holds; 0 turns it off. */
  lockTimeoutMs: number;
  adminToken?: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Supported database regions for API keys; the first is the default (North America). */
  regions: string[];
  /** Largest request body accepted, in bytes. */
  bodyLimit: number;
  /** How long a write waits for its projections before answering anyway. */
  readYourWritesTimeoutMs: number;
  /**
   * How long a request carrying `x-consistency-token` (or changes/get's `since`) waits for the
   * read models to reach the token's position before answering UNAVAILABLE (src/http/consistency.ts).
   */
  consistencyWaitMs: number;
  /**
   * `/v2/changes/get`'s stream (`GET /v2/changes/stream`, src/http/routes/changes-stream.ts):
   * open streams per API key (its user tokens' included) in this process; past it 429.
   */
  changesStreamMaxPerTenant: number;
  /** A comment line on every open stream this often, so proxies and clients know it lives. */
  changesStreamHeartbeatMs: number;
  /** How long a stream whose socket buffer is full may stay so before it is dropped with a final event. */
  changesStreamStallMs: number;
  /** The safety net of a stream's wake-ups: it looks for applied changes this often even without a notice. */
  changesStreamPollMs: number;
  /** Idle time after which a presence entry without an update expires. */
  presenceTtlSeconds: number;
  /** Requests per second allowed per API key (or workspace), per process; 0 turns limiting off. */
  rateLimitPerSecond: number;
  /** Requests a caller may make at once before the per-second rate applies. */
  rateLimitBurst: number;
  /**
   * A user token's own share of its API key's rate and burst, in percent: its requests take
   * from the key's bucket and from this one (src/http/rate-limits.ts).
   */
  rateLimitUserPercent: number;
  /** Failed authentications one client address may make per minute; 0 turns the limit off. */
  authFailureRatePerMinute: number;
  /** Failed authentications one client address may make at once before the per-minute rate applies. */
  authFailureBurst: number;
  /** How long an Idempotency-Key and its response are kept. */
  idempotencyTtlHours: number;
  /** Largest answer kept for an Idempotency-Key replay; above it only its status, size and hash are kept. */
  idempotencyMaxResponseBytes: number;
  /** Workspaces one client address may create per minute (`/v2/workspace/create`); 0 turns the limit off. */
  signupRatePerMinute: number;
  /** Sign-ups one client address may make at once before the per-minute rate applies. */
  signupBurst: number;
  /**
   * Fastify's `trustProxy`: whose X-Forwarded-For to believe for the client address.
   * false: nobody's (the socket's peer is the client); true: everybody's; a list of
   * addresses/CIDRs: those proxies'; a number: the nearest N hops. Plain data: the config
   * is copied to the background thread. src/http/edge.ts turns it into Fastify's option.
   */
  trustProxy: boolean | number | string[];
  /** The whole request (headers and body) must arrive within this; else 408. */
  requestTimeoutMs: number;
  /** The request's headers must arrive within this; else 408. */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** A connection with no traffic either way for this long is closed; 0: never. */
  connectionTimeoutMs: number;
  /** Connections served at once; past it new connections get 503 (a tenth more), then are dropped. */
  maxConnections: number;
  /** Lease time of the projection runner and webhook deliverer: another process takes over after it. */
  leaseTtlMs: number;
  /**
   * The safety net of cross-process notices (src/runtime/notices.ts): how often the process
   * applying projections looks for events appended by processes it was not told about, and
   * how often a process waiting on another's projections (read-your-writes) re-reads the
   * stored checkpoints. A notice missed only delays by up to these.
   */
  projectionPollMs: number;
  checkpointPollMs: number;
  /**
   * `serve` (role all) applies projections, delivers webhooks and works deletion cascades on a
   * worker thread, off the core that answers requests (docs/performance.md). false keeps them
   * on the main thread (tests, debugging).
   */
  backgroundThread: boolean;
  /** semantics §1 Limits: the folder tree is at most this many levels deep (a root folder is level 1). */
  folderMaxDepth: number;
  /**
   * A permissions/get past this (from the request's start) ends RESOURCE_EXHAUSTED; a page of
   * resources/get or users/get ends early with a pageToken (queries/cost.ts).
   */
  queryDeadlineMs: number;
  /**
   * PostgreSQL: the longest one statement may run (`SET statement_timeout` on each new
   * connection, src/adapters/postgres-common.ts); 0 turns it off. Default REQUEST_TIMEOUT_MS.
   */
  statementTimeoutMs: number;
  /**
   * PostgreSQL: the statements the service makes most (every request's change signal, a
   * read-store transaction's hot statements) are named, prepared once per connection. Off
   * behind a pooler in transaction mode that does not carry them (pgbouncer before 1.21).
   */
  postgresPreparedStatements: boolean;
  /**
   * Entries permission resolution's in-memory access index keeps per process
   * (queries/access-index.ts; memory per entry in docs/performance.md); 0 turns it off.
   * Past it the index is emptied and refilled from the store.
   */
  accessIndexEntries: number;
  /** Webhook attempts in flight at once, all endpoints together. */
  webhookConcurrency: number;
  /** Webhook attempts in flight at once to one endpoint (an API key's raw or processed URL); never more than its workspace's. */
  webhookMaxInFlightPerEndpoint: number;
  /** Webhook attempts in flight at once for one workspace, all its keys and endpoints together (docs/webhooks.md, fairness). */
  webhookMaxInFlightPerWorkspace: number;
  /** Unanswered webhook attempts in a row (timeouts, connection errors) that open an endpoint's breaker; 0 never. */
  webhookBreakerAfter: number;
  /** Timeout of an attempt to an endpoint whose breaker is open (its probe). */
  webhookBreakerTimeoutMs: number;
  /** How long an opening breaker parks its endpoint, doubled by each further unanswered probe... */
  webhookBreakerBackoffSeconds: number;
  /** ...up to this. */
  webhookBreakerMaxBackoffSeconds: number;
  /** An endpoint with no successful delivery for this many days since a failure is disabled; 0 never. */
  webhookDisableAfterDays: number;
  /** Days a succeeded or failed webhook delivery is kept (and listed) before it is deleted. */
  webhookRetentionDays: number;
  /**
   * HISTORY_RETENTION_DAYS: history versions (the h_ read models) closed more than this many
   * days ago are deleted, and access questions before that horizon are refused
   * (src/jobs/retention.ts); 0 keeps everything (the default).
   */
  historyRetentionDays: number;
  /** AUDIT_RETENTION_DAYS: audit index entries (and so the change feed's) older than this many days are deleted; 0 keeps everything. */
  auditRetentionDays: number;
  /**
   * Addresses and CIDRs webhooks may reach although the egress policy refuses their range
   * (loopback, private, link-local...: src/adapters/egress.ts). Empty by default.
   */
  webhookAllowedCidrs: string[];
  /** A fully internal deployment: webhooks may go to any address. Default false. */
  webhookAllowPrivate: boolean;
  /**
   * The master key of secrets at rest (src/secrets/), 32 bytes from SECRETS_KEY (base64 or
   * hex); unset: DATA_DIR/secrets.key, created on first start. Required when both
   * EVENTSTORE_URL and MONGODB_URL are set (processes on several hosts share no DATA_DIR).
   */
  secretsKey?: Uint8Array;
  /** When set, `GET /metrics` requires `Authorization: Bearer <token>`; unset, see `metricsOpen`. */
  metricsToken?: string;
  /**
   * Without METRICS_TOKEN: whether `GET /metrics` answers anyone (true) or nobody (false). Off
   * by default under NODE_ENV=production, where the route would tell every client the exact
   * Node version and every tenant's traffic per route; on otherwise (a developer's machine).
   * METRICS_OPEN=1 opens it on purpose (a scraper on a private network).
   */
  metricsOpen: boolean;
  /**
   * ADMIN_TOKEN unset and this true: `/v2/workspace/create` is open to anyone who reaches the
   * service. Required (OPEN_SIGNUP=1) to start that way under NODE_ENV=production.
   */
  openSignup: boolean;
  /** NODE_ENV=production. */
  production: boolean;
  /**
   * Load shedding (src/http/metrics.ts): requests are answered 503 UNAVAILABLE while the
   * event loop's mean delay over the last sample exceeds this; 0 turns the check off.
   */
  shedMaxEventLoopDelayMs: number;
  /** Shed while the V8 heap in use exceeds this many bytes; 0 (default) off. */
  shedMaxHeapUsedBytes: number;
  /** Shed while the process's resident set exceeds this many bytes; 0 (default) off. */
  shedMaxRssBytes: number;
  /** The retry-after a shed request is told, in seconds. */
  shedRetryAfterSeconds: number;
}

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

/**
 * The hosted API's supported regions, as its public docs list them (Supported Regions:
 * the two multi-regions, then the single regions by continent), so a client written for it
 * sends the same identifiers here (its Europe example: `persistenceDBRegion: "eur3"`,
 * `realtimeDBRegion: "europe-west1"`). `nam5` (the United States multi-region) comes first:
 * it is the default for a production key that names none (docs/compatibility.md).
 */
const HOSTED_REGIONS = [
  'nam5', 'eur3',
  'us-west1', 'us-west2', 'us-west3', 'us-west4', 'us-central1', 'northamerica-northeast1', 'northamerica-northeast2',
  'northamerica-south1', 'us-east1', 'us-east4', 'us-east5', 'us-south1',
  'southamerica-west1', 'southamerica-east1',
  'europe-west2', 'europe-west1', 'europe-west4', 'europe-west8', 'europe-southwest1', 'europe-west9', 'europe-west12',
  'europe-west10', 'europe-west3', 'europe-north1', 'europe-north2', 'europe-central2', 'europe-west6',
  'me-central1', 'me-central2', 'me-west1',
  'asia-south1', 'asia-south2', 'asia-southeast1', 'asia-southeast2', 'asia-east2', 'asia-east1', 'asia-northeast1',
  'asia-northeast2', 'asia-northeast3',
  'australia-southeast1', 'australia-southeast2',
  'africa-south1',
];

/** The names earlier versions of this service used; still accepted so their clients keep working. */
const LEGACY_REGIONS = ['usa', 'canada', 'europe', 'uk', 'india', 'singapore', 'japan', 'australia'];

export const DEFAULT_REGIONS = [...HOSTED_REGIONS, ...LEGACY_REGIONS];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got ${JSON.stringify(raw)}`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = raw.trim().toLowerCase();
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new ConfigError(name, `must be true or false, got ${JSON.stringify(raw)}`);
}


/**
 * MONGODB_URL: a MongoDB connection string, which `new URL()` cannot check (a replica set
 * lists several hosts: `mongodb://h1:27017,h2:27017/collab?replicaSet=rs0`). The message
 * never repeats the value: it may hold a password.
 */
function mongoUrl(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  try {
    parseMongoUrl(raw);
  } catch (error) {
    if (error instanceof MongoUrlError) throw new ConfigError(name, error.message);
    throw error;
  }
  // The driver's own parser knows its options and their values (`?w=majorty` stops the
  // start here, not at the first request). It loads only when MongoDB is configured, and a
  // client that is made but not connected opens nothing.
  const { MongoClient } = createRequire(import.meta.url)('mongodb') as typeof import('mongodb');
  try {
    new MongoClient(raw);
  } catch (error) {
    throw new ConfigError(name, `the MongoDB driver refuses it: ${redactMongoPassword((error as Error).message, raw)}`);
  }
  return raw;
}

/**
 * EVENTSTORE_URL: an EventStoreDB connection string as the client reads it, one host or a
 * cluster's seeds (`esdb://a:2113,b:2113,c:2113?tls=false`): src/adapters/esdb-connection-string.ts.
 */
function eventStoreUrlOf(env: Env): string | undefined {
  const raw = env.EVENTSTORE_URL;
  if (raw === undefined || raw === '') return undefined;
  const checked = checkEventStoreUrl(raw);
  if ('problem' in checked) throw new ConfigError('EVENTSTORE_URL', checked.problem);
  return raw;
}

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY: unset/false, true, a hop count, or a comma list of proxy addresses, CIDRs
 * or proxy-addr's names (loopback, linklocal, uniquelocal). Example: `10.0.0.0/8,loopback`
 * believes X-Forwarded-For only when the socket's peer is in 10/8 or on loopback.
 */
function trustProxy(env: Env): Config['trustProxy'] {
  const name = 'TRUST_PROXY';
  const raw = (env[name] ?? '').trim();
  if (raw === '' || raw.toLowerCase() === 'false' || raw === '0') return false;
  if (raw.toLowerCase() === 'true') return true;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > 100) throw new ConfigError(name, `a hop count must be between 0 and 100, got ${hops}`);
    return hops;
  }
  const entries = raw.split(',').map((e) => e.trim());
  for (const entry of entries) {
    if (PROXY_NAMES.includes(entry)) continue;
    const [address, prefix, ...rest] = entry.split('/');
    const family = net.isIP(address ?? '');
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || rest.length > 0) {
      throw new ConfigError(
        name,
        `must be true, false, a hop count, or a comma-separated list of addresses, CIDRs (10.0.0.0/8) or ${PROXY_NAMES.join('/')}; ${JSON.stringify(entry)} is none of these`,
      );
    }
  }
  return entries;
}

/** WEBHOOK_ALLOWED_CIDRS: `10.0.0.0/8, 127.0.0.1, fd00::/8`; each entry an address or address/prefix. */
function cidrs(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  const entries = raw.split(',').map((e) => e.trim()).filter((e) => e !== '');
  if (entries.length > 1000) throw new ConfigError(name, `must list at most 1000 entries, got ${entries.length}`);
  for (const e of entries) {
    if (!parseCidr(e)) {
      throw new ConfigError(name, `must be a comma-separated list of IP addresses or CIDRs (e.g. 10.0.0.0/8, 127.0.0.1, fd00::/8), got ${JSON.stringify(e)}`);
    }
  }
  return entries;
}

/**
 * POSTGRES_URL: a PostgreSQL connection string as node-postgres reads it
 * (`postgres://user:password@host:5432/collab?sslmode=verify-full&sslrootcert=/etc/ca.pem`).
 * Its own parser checks it here, TLS files included (it reads them), so a typo stops the start;
 * the message never repeats the value, which may hold a password.
 */
function postgresUrlOf(env: Env, name: 'POSTGRES_URL' | 'POSTGRES_LISTEN_URL' = 'POSTGRES_URL'): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  return checkedPostgresUrl(raw, name);
}

/** `raw` checked as POSTGRES_URL is (see above); errors name `name`, never the value. */
function checkedPostgresUrl(raw: string, name: string): string {
  if (!/^postgres(ql)?:\/\/[^\s]*$/i.test(raw)) {
    throw new ConfigError(name, 'must be a connection string postgres://user:password@host:5432/database (TLS: ?sslmode=verify-full&sslrootcert=/path/ca.pem)');
  }
  const { parse } = createRequire(import.meta.url)('pg-connection-string') as { parse(s: string): { host?: string | null; database?: string | null } };
  // Several hosts (host1:5432,host2:5432, failover by URL: src/adapters/postgres-hosts.ts):
  // each is checked as a URL of its own.
  let each: string[];
  try {
    each = hostsOf(raw)?.urls ?? [raw];
  } catch (error) {
    throw new ConfigError(name, (error as Error).message);
  }
  for (const one of each) {
    let parsed: { host?: string | null; database?: string | null };
    try {
      parsed = parse(one);
    } catch (error) {
      const text = (error as Error).message.split(one).join(`<${name}>`);
      throw new ConfigError(name, `node-postgres refuses it: ${text.slice(0, 300)}`);
    }
    if (!parsed.host) throw new ConfigError(name, 'names no host (postgres://user:password@host:5432/database)');
    if (!parsed.database) throw new ConfigError(name, 'names no database (postgres://user:password@host:5432/database)');
  }
  return raw;
}

/**
 * POSTGRES_REPLICA_URLS: hot standbys for reads, separated by commas or spaces, one host each
 * (a standby is one server: several hosts in one URL are refused, since a comma separates the
 * list). Only beside POSTGRES_URL holding the read models. Messages never repeat a value.
 */
function replicaUrlsOf(env: Env, postgresUrl: string | undefined, mongodbUrl: string | undefined): string[] {
  const raw = env.POSTGRES_REPLICA_URLS?.trim();
  if (!raw) return [];
  const name = 'POSTGRES_REPLICA_URLS';
  if (!postgresUrl || mongodbUrl) throw new ConfigError(name, 'needs POSTGRES_URL holding the read models (and no MONGODB_URL): the replicas are standbys of that server');
  const urls = raw.split(/[\s,]+/).filter((u) => u !== '');
  urls.forEach((url, i) => {
    const which = `${name} (entry ${i + 1} of ${urls.length})`;
    if (!/^postgres(ql)?:\/\/[^\s,]*$/i.test(url)) throw new ConfigError(which, 'must be a connection string postgres://user:password@host:5432/database, one per standby');
    checkedPostgresUrl(url, which);
  });
  if (new Set(urls).size !== urls.length) throw new ConfigError(name, 'names the same standby twice');
  return urls;
}

function secretsKey(env: Env, external: boolean): Uint8Array | undefined {
  const raw = env.SECRETS_KEY;
  if (raw === undefined || raw === '') {
    if (external) {
      throw new ConfigError('SECRETS_KEY', 'is required when both stores are external (POSTGRES_URL, or EVENTSTORE_URL and MONGODB_URL: every process must share one master key); generate one with `openssl rand -base64 32`');
    }
    return undefined;
  }
  const bytes = parseKeyMaterial(raw);
  // The value itself is never echoed: it is (meant to be) a secret.
  if (!bytes) throw new ConfigError('SECRETS_KEY', `must be 32 bytes in base64 or 64 hex digits (got ${raw.trim().length} characters); generate one with \`openssl rand -base64 32\``);
  return bytes;
}

/**
 * What only a server start requires (the CLI runs on the same configuration without it): under
 * NODE_ENV=production, an admin token or OPEN_SIGNUP=1, so that open sign-up is never what a
 * production deployment gets by leaving a variable out.
 */
export function checkServing(config: Config): void {
  if (config.production && config.adminToken === undefined && !config.openSignup) {
    throw new ConfigError(
      'ADMIN_TOKEN',
      'is required to serve with NODE_ENV=production: without it anyone who reaches the service can create workspaces. Set ADMIN_TOKEN (16+ characters, e.g. `openssl rand -hex 24`), or OPEN_SIGNUP=1 to serve open sign-up on purpose',
    );
  }
}

function logLevelOf(env: Env): Config['logLevel'] {
  const logLevel = (env.LOG_LEVEL || 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(env.LOG_LEVEL)}`);
  }
  return logLevel;
}

function adminTokenOf(env: Env): string | undefined {
  const adminToken = env.ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('ADMIN_TOKEN', 'must be at least 16 characters');
  }
  return adminToken;
}

function regionsOf(env: Env): string[] {
  const regions = env.REGIONS
    ? env.REGIONS.split(',').map((r) => r.trim())
    : DEFAULT_REGIONS;
  if (regions.length === 0 || regions.some((r) => !/^[a-z0-9-]{1,64}$/.test(r))) {
    throw new ConfigError('REGIONS', 'must be a comma-separated list of region names (a-z, 0-9, -)');
  }
  return regions;
}

function webhookLimits(env: Env) {
  const webhookConcurrency = integer(env, 'WEBHOOK_CONCURRENCY', 16, 1, 1000);
  const webhookMaxInFlightPerEndpoint = integer(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT', 4, 1, 100);
  if (webhookMaxInFlightPerEndpoint > webhookConcurrency) {
    throw new ConfigError('WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT', `must not exceed WEBHOOK_CONCURRENCY (${webhookConcurrency}), got ${webhookMaxInFlightPerEndpoint}`);
  }
  // Well below the pool by default, so that one workspace's hanging endpoints leave most
  // slots to the others; never above it (a smaller pool lowers the default with it).
  const webhookMaxInFlightPerWorkspace = integer(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE', Math.min(4, webhookConcurrency), 1, 1000);
  if (webhookMaxInFlightPerWorkspace > webhookConcurrency) {
    throw new ConfigError('WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE', `must not exceed WEBHOOK_CONCURRENCY (${webhookConcurrency}), got ${webhookMaxInFlightPerWorkspace}`);
  }
  const webhookBreakerBackoffSeconds = integer(env, 'WEBHOOK_BREAKER_BACKOFF_SECONDS', 30, 1, 86_400);
  const webhookBreakerMaxBackoffSeconds = integer(env, 'WEBHOOK_BREAKER_MAX_BACKOFF_SECONDS', Math.max(3600, webhookBreakerBackoffSeconds), 1, 7 * 86_400);
  if (webhookBreakerMaxBackoffSeconds < webhookBreakerBackoffSeconds) {
    throw new ConfigError('WEBHOOK_BREAKER_MAX_BACKOFF_SECONDS', `must be at least WEBHOOK_BREAKER_BACKOFF_SECONDS (${webhookBreakerBackoffSeconds}), got ${webhookBreakerMaxBackoffSeconds}`);
  }
  return {
    webhookConcurrency,
    webhookMaxInFlightPerEndpoint,
    webhookMaxInFlightPerWorkspace,
    webhookBreakerAfter: integer(env, 'WEBHOOK_BREAKER_AFTER', 5, 0, 1000),
    webhookBreakerTimeoutMs: integer(env, 'WEBHOOK_BREAKER_TIMEOUT_MS', 2000, 100, 10_000),
    webhookBreakerBackoffSeconds,
    webhookBreakerMaxBackoffSeconds,
  };
}

/** The request, header and idle-socket timeouts, each checked against the others. */
/**
 * The change stream's bounds. A heartbeat must come before the connection's idle timeout
 * (CONNECTION_TIMEOUT_MS) closes a quiet stream.
 */
function changesStream(env: Env, connectionTimeoutMs: number) {
  const changesStreamHeartbeatMs = integer(env, 'CHANGES_STREAM_HEARTBEAT_MS', 15_000, 100, 3_600_000);
  if (connectionTimeoutMs !== 0 && changesStreamHeartbeatMs >= connectionTimeoutMs) {
    throw new ConfigError('CHANGES_STREAM_HEARTBEAT_MS', `must be less than CONNECTION_TIMEOUT_MS (${connectionTimeoutMs}), got ${changesStreamHeartbeatMs}: a quiet stream would be closed as idle`);
  }
  return {
    changesStreamMaxPerTenant: integer(env, 'CHANGES_STREAM_MAX_PER_TENANT', 100, 1, 100_000),
    changesStreamHeartbeatMs,
    changesStreamStallMs: integer(env, 'CHANGES_STREAM_STALL_MS', 30_000, 10, 3_600_000),
    changesStreamPollMs: integer(env, 'CHANGES_STREAM_POLL_MS', 1000, 10, 600_000),
  };
}

function timeouts(env: Env) {
  const readYourWritesTimeoutMs = integer(env, 'READ_YOUR_WRITES_TIMEOUT_MS', 5000, 0, 60_000);
  const requestTimeoutMs = integer(env, 'REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  // Node refuses a headers timeout longer than the request timeout, so the default follows it.
  const headersTimeoutMs = integer(env, 'HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), 100, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('HEADERS_TIMEOUT_MS', `must be at most REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${headersTimeoutMs}`);
  }
  // The idle-socket timeout must not beat the request timeout (a slow client then gets the
  // 408 envelope, not a bare close) nor a write waiting for its read models.
  const connectionTimeoutMs = integer(env, 'CONNECTION_TIMEOUT_MS', Math.max(2 * requestTimeoutMs, readYourWritesTimeoutMs + 30_000), 0, 3_600_000);
  if (connectionTimeoutMs !== 0 && connectionTimeoutMs <= Math.max(requestTimeoutMs, readYourWritesTimeoutMs)) {
    throw new ConfigError(
      'CONNECTION_TIMEOUT_MS',
      `must be 0 (off) or more than REQUEST_TIMEOUT_MS (${requestTimeoutMs}) and READ_YOUR_WRITES_TIMEOUT_MS (${readYourWritesTimeoutMs}), got ${connectionTimeoutMs}`,
    );
  }
  return { readYourWritesTimeoutMs, requestTimeoutMs, headersTimeoutMs, connectionTimeoutMs };
}

function metricsTokenOf(env: Env): string | undefined {
  const metricsToken = env.METRICS_TOKEN || undefined;
  if (metricsToken !== undefined && (metricsToken.length < 16 || metricsToken.length > 1024 || !/^[\x21-\x7e]+$/.test(metricsToken))) {
    throw new ConfigError('METRICS_TOKEN', 'must be 16 to 1024 printable characters without spaces (it is sent as a bearer token)');
  }
  return metricsToken;
}

/**
 * The variables checked in the order they always were (the first bad one is the one named),
 * then the configuration as one table of `integer(env, NAME, default, min, max)` rows.
 */
export function loadConfig(env: Env = process.env): Config {
  const logLevel = logLevelOf(env);
  const adminToken = adminTokenOf(env);
  const production = env.NODE_ENV === 'production';
  const openSignup = boolean(env, 'OPEN_SIGNUP', false);
  // Without ADMIN_TOKEN anyone who reaches the service creates workspaces. The quick start is
  // meant for the machine it runs on, so it listens on loopback unless HOST says otherwise;
  // a production server has to choose (checkServing): an admin token, or open sign-up by name.
  const host = env.HOST || (adminToken === undefined ? '127.0.0.1' : '0.0.0.0');
  const regions = regionsOf(env);
  const rateLimitPerSecond = integer(env, 'RATE_LIMIT_PER_SECOND', 0, 0, 1_000_000);
  const webhooks = webhookLimits(env);
  const { readYourWritesTimeoutMs, requestTimeoutMs, headersTimeoutMs, connectionTimeoutMs } = timeouts(env);
  const metricsToken = metricsTokenOf(env);
  const metricsOpen = boolean(env, 'METRICS_OPEN', !production);
  const eventStoreUrl = eventStoreUrlOf(env);
  const mongodbUrl = mongoUrl(env, 'MONGODB_URL');
  const postgresUrl = postgresUrlOf(env);
  const key = secretsKey(env, (eventStoreUrl ?? postgresUrl) !== undefined && (mongodbUrl ?? postgresUrl) !== undefined);
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host,
    dataDir: path.resolve(env.DATA_DIR || './data'),
    eventStoreUrl,
    mongodbUrl,
    ...(postgresUrl ? { postgresUrl } : {}),
    ...(postgresUrl && env.POSTGRES_LISTEN_URL ? { postgresListenUrl: postgresUrlOf(env, 'POSTGRES_LISTEN_URL') } : {}),
    postgresReplicaUrls: replicaUrlsOf(env, postgresUrl, mongodbUrl),
    postgresReplicaMaxLagMs: integer(env, 'POSTGRES_REPLICA_MAX_LAG_MS', 5000, 100, 3_600_000),
    adminToken,
    logLevel,
    regions,
    bodyLimit: integer(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024, 100 * 1_048_576),
    readYourWritesTimeoutMs,
    presenceTtlSeconds: integer(env, 'PRESENCE_TTL_SECONDS', 60, 1, 86_400),
    rateLimitPerSecond,
    rateLimitBurst: integer(env, 'RATE_LIMIT_BURST', Math.max(1, rateLimitPerSecond * 2), 1, 10_000_000),
    rateLimitUserPercent: integer(env, 'RATE_LIMIT_USER_PERCENT', 10, 1, 100),
    authFailureRatePerMinute: integer(env, 'AUTH_FAILURE_RATE_PER_MINUTE', 30, 0, 1_000_000),
    authFailureBurst: integer(env, 'AUTH_FAILURE_BURST', 20, 1, 1_000_000),
    idempotencyTtlHours: integer(env, 'IDEMPOTENCY_TTL_HOURS', 24, 24, 24 * 30),
    idempotencyMaxResponseBytes: integer(env, 'IDEMPOTENCY_MAX_RESPONSE_BYTES', 262_144, 0, 100 * 1_048_576),
    signupRatePerMinute: integer(env, 'SIGNUP_RATE_PER_MINUTE', 10, 0, 1_000_000),
    signupBurst: integer(env, 'SIGNUP_BURST', 5, 1, 1_000_000),
    trustProxy: trustProxy(env),
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs: integer(env, 'KEEP_ALIVE_TIMEOUT_MS', 72_000, 1000, 3_600_000),
    connectionTimeoutMs,
    maxConnections: integer(env, 'MAX_CONNECTIONS', 1000, 1, 1_000_000),
    leaseTtlMs: integer(env, 'LEASE_TTL_MS', 10_000, 300, 600_000),
    projectionPollMs: integer(env, 'PROJECTION_POLL_MS', 500, 10, 600_000),
    checkpointPollMs: integer(env, 'CHECKPOINT_POLL_MS', 20, 5, 600_000),
    backgroundThread: boolean(env, 'BACKGROUND_THREAD', true),
    folderMaxDepth: integer(env, 'FOLDER_MAX_DEPTH', 100, 1, 1000),
    queryDeadlineMs: integer(env, 'QUERY_DEADLINE_MS', 5000, 1, 600_000),
    consistencyWaitMs: integer(env, 'CONSISTENCY_WAIT_MS', 5000, 0, 60_000),
    ...changesStream(env, connectionTimeoutMs),
    statementTimeoutMs: integer(env, 'STATEMENT_TIMEOUT_MS', requestTimeoutMs, 0, 3_600_000),
    postgresPreparedStatements: boolean(env, 'POSTGRES_PREPARED_STATEMENTS', true),
    postgresPoolSize: integer(env, 'POSTGRES_POOL_SIZE', 10, 1, 1000),
    lockTimeoutMs: integer(env, 'LOCK_TIMEOUT_MS', 10_000, 0, 3_600_000),
    accessIndexEntries: integer(env, 'ACCESS_INDEX_ENTRIES', 500_000, 0, 100_000_000),
    ...webhooks,
    webhookDisableAfterDays: integer(env, 'WEBHOOK_DISABLE_AFTER_DAYS', 5, 0, 365),
    webhookRetentionDays: integer(env, 'WEBHOOK_RETENTION_DAYS', 7, 1, 3650),
    // 0 (the default): history is the product, nothing is deleted. At most 100 years.
    historyRetentionDays: integer(env, 'HISTORY_RETENTION_DAYS', 0, 0, 36_500),
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 0, 0, 36_500),
    webhookAllowedCidrs: cidrs(env, 'WEBHOOK_ALLOWED_CIDRS'),
    webhookAllowPrivate: boolean(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    ...(key ? { secretsKey: key } : {}),
    ...(metricsToken ? { metricsToken } : {}),
    metricsOpen,
    openSignup,
    production,
    shedMaxEventLoopDelayMs: integer(env, 'SHED_MAX_EVENT_LOOP_DELAY_MS', 0, 0, 600_000),
    shedMaxHeapUsedBytes: integer(env, 'SHED_MAX_HEAP_USED_BYTES', 0, 0, Number.MAX_SAFE_INTEGER),
    shedMaxRssBytes: integer(env, 'SHED_MAX_RSS_BYTES', 0, 0, Number.MAX_SAFE_INTEGER),
    shedRetryAfterSeconds: integer(env, 'SHED_RETRY_AFTER_SECONDS', 10, 1, 3600),
  };
}
