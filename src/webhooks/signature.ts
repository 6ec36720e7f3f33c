/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the signed content is
 * `${webhook-id}.${webhook-timestamp}.${body}`, the signature `v1,<base64 HMAC-SHA256>`.
 *
 * The key is the webhook `authToken` the API key configured (the same secret the receiver
 * gets as `Authorization: Basic <authToken>`). A token written the Standard Webhooks way,
 * `whsec_<base64>`, is used as those base64-decoded bytes, so the reference libraries
 * verify our requests as they are; any other token is used as its UTF-8 bytes.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

function signingKey(authToken: string): Buffer {
  if (authToken.startsWith('whsec_')) {
    const raw = Buffer.from(authToken.slice('whsec_'.length), 'base64');
    if (raw.length > 0) return raw;
  }
  return Buffer.from(authToken, 'utf8');
}

export function signPayload(authToken: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', signingKey(authToken)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/**
 * Receiver side (tests, docs/webhooks.md): true when one of the space-separated signatures
 * in `header` matches, compared in constant time, and the timestamp is within `toleranceS`.
 */
export function verifySignature(
  authToken: string,
  headers: { id: string; timestamp: string; signature: string },
  body: string,
  nowS = Math.floor(Date.now() / 1000),
  toleranceS = 300,
): boolean {
  const ts = Number(headers.timestamp);
  if (!Number.isInteger(ts) || Math.abs(nowS - ts) > toleranceS) return false;
  const expected = Buffer.from(signPayload(authToken, headers.id, ts, body));
  return headers.signature.split(' ').some((s) => {
    const given = Buffer.from(s);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
