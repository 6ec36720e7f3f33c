/**
 * Configuration from the environment, checked once at start: a bad value stops the process
 * with a message naming the variable, before anything listens.
 */
import path from 'node:path';
import { parseCidr } from './webhooks/egress.js';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  eventStoreUrl?: string;
  mongodbUrl?: string;
  adminToken?: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Supported database regions for API keys; the first is the default (North America). */
  regions: string[];
  /** Largest request body accepted, in bytes. */
  bodyLimit: number;
  /** How long a write waits for its projections before answering anyway. */
  readYourWritesTimeoutMs: number;
  /** Idle time after which a presence entry without an update expires. */
  presenceTtlSeconds: number;
  /** Requests per second allowed per API key (or workspace), per process; 0 turns limiting off. */
  rateLimitPerSecond: number;
  /** Requests a caller may make at once before the per-second rate applies. */
  rateLimitBurst: number;
  /** How long an Idempotency-Key and its response are kept. */
  idempotencyTtlHours: number;
  /** Lease time of the projection runner and webhook deliverer: another process takes over after it. */
  leaseTtlMs: number;
  /**
   * `serve` (role all) applies projections, delivers webhooks and works deletion cascades on a
   * worker thread, off the core that answers requests (docs/performance.md). false keeps them
   * on the main thread (tests, debugging).
   */
  backgroundThread: boolean;
  /** semantics §1 Limits: the folder tree is at most this many levels deep (a root folder is level 1). */
  folderMaxDepth: number;
  /** Webhook attempts in flight at once, all endpoints together. */
  webhookConcurrency: number;
  /** Webhook attempts in flight at once to one endpoint (an API key's raw or processed URL). */
  webhookMaxInFlightPerEndpoint: number;
  /** An endpoint with no successful delivery for this many days since a failure is disabled; 0 never. */
  webhookDisableAfterDays: number;
  /** Days a succeeded or failed webhook delivery is kept (and listed) before it is deleted. */
  webhookRetentionDays: number;
  /**
   * Addresses and CIDRs webhooks may reach although the egress policy refuses their range
   * (loopback, private, link-local...: src/webhooks/egress.ts). Empty by default.
   */
  webhookAllowedCidrs: string[];
  /** A fully internal deployment: webhooks may go to any address. Default false. */
  webhookAllowPrivate: boolean;
}

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

export const DEFAULT_REGIONS = ['usa', 'canada', 'europe', 'uk', 'india', 'singapore', 'japan', 'australia'];

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

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be a URL (${protocols.join(', ')}), got ${JSON.stringify(raw)}`);
  }
  if (!protocols.includes(parsed.protocol.replace(/:$/, ''))) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw;
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

export function loadConfig(env: Env = process.env): Config {
  const logLevel = (env.LOG_LEVEL || 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(env.LOG_LEVEL)}`);
  }
  const host = env.HOST || '0.0.0.0';
  const adminToken = env.ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('ADMIN_TOKEN', 'must be at least 16 characters');
  }
  const regions = env.REGIONS
    ? env.REGIONS.split(',').map((r) => r.trim())
    : DEFAULT_REGIONS;
  if (regions.length === 0 || regions.some((r) => !/^[a-z0-9-]{1,64}$/.test(r))) {
    throw new ConfigError('REGIONS', 'must be a comma-separated list of region names (a-z, 0-9, -)');
  }
  const rateLimitPerSecond = integer(env, 'RATE_LIMIT_PER_SECOND', 0, 0, 1_000_000);
  const webhookConcurrency = integer(env, 'WEBHOOK_CONCURRENCY', 16, 1, 1000);
  const webhookMaxInFlightPerEndpoint = integer(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT', 4, 1, 100);
  if (webhookMaxInFlightPerEndpoint > webhookConcurrency) {
    throw new ConfigError('WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT', `must not exceed WEBHOOK_CONCURRENCY (${webhookConcurrency}), got ${webhookMaxInFlightPerEndpoint}`);
  }
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host,
    dataDir: path.resolve(env.DATA_DIR || './data'),
    eventStoreUrl: url(env, 'EVENTSTORE_URL', ['esdb', 'esdb+discover', 'kurrentdb', 'kurrentdb+discover']),
    mongodbUrl: url(env, 'MONGODB_URL', ['mongodb', 'mongodb+srv']),
    adminToken,
    logLevel,
    regions,
    bodyLimit: integer(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024, 100 * 1_048_576),
    readYourWritesTimeoutMs: integer(env, 'READ_YOUR_WRITES_TIMEOUT_MS', 5000, 0, 60_000),
    presenceTtlSeconds: integer(env, 'PRESENCE_TTL_SECONDS', 60, 1, 86_400),
    rateLimitPerSecond,
    rateLimitBurst: integer(env, 'RATE_LIMIT_BURST', Math.max(1, rateLimitPerSecond * 2), 1, 10_000_000),
    idempotencyTtlHours: integer(env, 'IDEMPOTENCY_TTL_HOURS', 24, 24, 24 * 30),
    leaseTtlMs: integer(env, 'LEASE_TTL_MS', 10_000, 300, 600_000),
    backgroundThread: boolean(env, 'BACKGROUND_THREAD', true),
    folderMaxDepth: integer(env, 'FOLDER_MAX_DEPTH', 100, 1, 1000),
    webhookConcurrency,
    webhookMaxInFlightPerEndpoint,
    webhookDisableAfterDays: integer(env, 'WEBHOOK_DISABLE_AFTER_DAYS', 5, 0, 365),
    webhookRetentionDays: integer(env, 'WEBHOOK_RETENTION_DAYS', 7, 1, 3650),
    webhookAllowedCidrs: cidrs(env, 'WEBHOOK_ALLOWED_CIDRS'),
    webhookAllowPrivate: boolean(env, 'WEBHOOK_ALLOW_PRIVATE', false),
  };
}
