/**
 * What of an event's data may be shown outside the write side: the same redaction for the
 * audit index (projections/audit.ts) and webhook payloads (src/webhooks/payloads.ts), so the
 * two never disagree on what a secret is. A module of its own so that a projection does not
 * load the webhook sender to redact.
 */
import { isSealed } from '../src/shared/envelope.js';
import { redactAgentConfig, REDACTED, type AgentConfig } from './agent-config.js';

/** Field names that hold secrets wherever they appear in event data. */
const SECRET_FIELD = /^(authToken|token|secret|password|apiSecret|clientSecret|accessToken|refreshToken|privateKey|tokenHash|authTokenHash)$/;

/**
 * A copy with every secret field's value replaced, and every sealed value (a secret, or a
 * user's personal field sealed with their key: docs/privacy.md) too, so neither the audit
 * index nor a webhook endpoint keeps ciphertext whose key a deletion destroys. A plain loop:
 * this runs for every event the audit index and webhooks see.
 */
function redactDeep(v: unknown): unknown {
  if (isSealed(v)) return REDACTED;
  if (Array.isArray(v)) return v.map(redactDeep);
  if (v === null || typeof v !== 'object') return v;
  const src = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(src)) {
    const x = src[k];
    const value = SECRET_FIELD.test(k) && x ? REDACTED : redactDeep(x);
    // Keys may come from clients: `__proto__` must stay an own property, as fromEntries made it.
    if (k === '__proto__') Object.defineProperty(out, k, { value, enumerable: true, writable: true, configurable: true });
    else out[k] = value;
  }
  return out;
}

export function redactEventData(type: string, data: Record<string, unknown>): Record<string, unknown> {
  const withAgent = data.config && (type === 'AgentCreated' || type === 'AgentUpdated')
    ? { ...data, config: redactAgentConfig(data.config as AgentConfig) }
    : data;
  return redactDeep(withAgent) as Record<string, unknown>;
}
