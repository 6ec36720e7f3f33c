/**
 * Advanced webhooks' part of delivery (docs/webhooks.md, Advanced webhooks): which of a
 * key's endpoints an event goes to (its event filter and channels), the body (the payload,
 * base64-encoded or encrypted as the key's settings say), and the Standard Webhooks
 * signature header with every secret that signs now (the current one, and a rotated-out one
 * during its grace: `v1,<a> v1,<b>`). The deliverer (./deliverer.ts) queues, sends, retries
 * and disables through the same outbox as the basic webhooks; an advanced endpoint's outbox
 * name is its id (`ep_...`), a basic one's `raw` or `processed`.
 */
import { createCipheriv, createPublicKey, publicEncrypt, randomBytes, constants, type KeyObject } from 'node:crypto';
import type { RecordedEvent } from '../ports/event-store.js';
import { type AdvancedWebhookSettings, type AdvancedWebhooksState, type EndpointState } from '../../commands/advanced-webhooks.js';
import { processedPayload, rawPayload } from './payloads.js';
import { signPayload } from './signature.js';
import type { WebhookTrigger } from './triggers.js';

/** Advanced endpoint ids start so (generated here, never by clients); basic endpoints are `raw` and `processed`. */
export const ADVANCED_ENDPOINT_PREFIX = 'ep_';
export const isAdvancedEndpoint = (endpoint: string) => endpoint.startsWith(ADVANCED_ENDPOINT_PREFIX);

/** A new signing secret in the Standard Webhooks form: `whsec_` and the base64 of 24 random bytes (the key is those bytes). */
export const newSigningSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** The endpoints `e` goes to: the feature enabled, the endpoint not disabled, its filters (when set) naming the event's type and area. */
export function advancedTargets(state: AdvancedWebhooksState, e: RecordedEvent, area: WebhookTrigger): EndpointState[] {
  if (!state.settings?.isEnabled) return [];
  return Object.values(state.endpoints).filter(
    (ep) => !ep.disabled && (ep.filterTypes === null || ep.filterTypes.includes(e.type)) && (ep.channels === null || ep.channels.includes(area)),
  );
}

/**
 * An RSA public key from the base64 of its DER (SubjectPublicKeyInfo, or PKCS#1 RSAPublicKey),
 * without PEM armour, as the hosted docs ask; null when it is not one.
 */
export function rsaPublicKey(base64: string): KeyObject | null {
  const der = Buffer.from(base64.replace(/\s+/g, ''), 'base64');
  for (const type of ['spki', 'pkcs1'] as const) {
    try {
      const k = createPublicKey({ key: der, format: 'der', type });
      if (k.asymmetricKeyType === 'rsa') return k;
    } catch {
      // Not this encoding: try the next.
    }
  }
  return null;
}

/** AES-256-CBC under a fresh key and IV, the key wrapped with RSA-OAEP (SHA-256): the hosted `WebhookV2PayloadEncrypted`. */
function encrypt(json: string, publicKey: KeyObject) {
  const aesKey = randomBytes(32);
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-cbc', aesKey, iv);
  const encryptedData = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()]).toString('base64');
  const encryptedKey = publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, aesKey).toString('base64');
  return { encryptedData, encryptedKey, iv: iv.toString('base64') };
}

/**
 * The body of `e` for an advanced endpoint: `{ type, timestamp, data }` (Standard Webhooks),
 * with the hosted payload's `event`, `source`, `actionType` and `webhookId` beside; `data`
 * is the event as recorded, secrets redacted. `encryptData` sends it encrypted (then
 * `encodeData` is moot: the parts are base64 already), `encodeData` as `{ encodedPayload }`.
 */
export function advancedBody(e: RecordedEvent, webhookId: string, settings: AdvancedWebhookSettings): string {
  const p = processedPayload(e);
  const payload = {
    type: e.type,
    timestamp: new Date(e.metadata.time).toISOString(),
    event: e.type,
    source: p.area,
    actionType: p.action,
    webhookId,
    data: rawPayload(e),
  };
  const json = JSON.stringify(payload);
  const key = settings.encryptData ? rsaPublicKey(settings.publicKey) : null;
  if (key) return JSON.stringify(encrypt(json, key));
  if (settings.encodeData) return JSON.stringify({ encodedPayload: Buffer.from(json, 'utf8').toString('base64') });
  return json;
}

/** `webhook-signature`: one `v1,<base64>` per secret, space-separated (Standard Webhooks). */
export const signAll = (secrets: readonly string[], id: string, timestamp: number, body: string) =>
  secrets.map((s) => signPayload(s, id, timestamp, body)).join(' ');
