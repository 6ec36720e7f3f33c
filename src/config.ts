/**
 * Configuration from the environment, checked once at start: a bad value stops the process
 * with a message naming the variable, before anything listens.
 */
import path from 'node:path';
import { parseKeyMaterial } from './secrets/envelope.js';

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
  /**
   * The master key of secrets at rest (src/secrets/), 32 bytes from SECRETS_KEY (base64 or
   * hex); unset: DATA_DIR/secrets.key, created on first start. Required when both
   * EVENTSTORE_URL and MONGODB_URL are set (processes on several hosts share no DATA_DIR).
   */
  secretsKey?: Uint8Array;
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

function secretsKey(env: Env, external: boolean): Uint8Array | undefined {
  const raw = env.SECRETS_KEY;
  if (raw === undefined || raw === '') {
    if (external) {
      throw new ConfigError('SECRETS_KEY', 'is required when EVENTSTORE_URL and MONGODB_URL are both set (every process must share one master key); generate one with `openssl rand -base64 32`');
    }
    return undefined;
  }
  const bytes = parseKeyMaterial(raw);
  // The value itself is never echoed: it is (meant to be) a secret.
  if (!bytes) throw new ConfigError('SECRETS_KEY', `must be 32 bytes in base64 or 64 hex digits (got ${raw.trim().length} characters); generate one with \`openssl rand -base64 32\``);
  return bytes;
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
  const eventStoreUrl = url(env, 'EVENTSTORE_URL', ['esdb', 'esdb+discover', 'kurrentdb', 'kurrentdb+discover']);
  const mongodbUrl = url(env, 'MONGODB_URL', ['mongodb', 'mongodb+srv']);
  const key = secretsKey(env, eventStoreUrl !== undefined && mongodbUrl !== undefined);
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host,
    dataDir: path.resolve(env.DATA_DIR || './data'),
    eventStoreUrl,
    mongodbUrl,
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
    ...(key ? { secretsKey: key } : {}),
  };
}
