/**
 * Generated identifiers and secrets, and the safe composition of client ids into stream
 * names and document keys.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { customAlphabet } from 'nanoid';

const ALNUM = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 20 alphanumerics: 119 bits. */
export const newId = customAlphabet(ALNUM, 20);
/** 48 alphanumerics: 285 bits, far past guessing. */
export const newSecret = customAlphabet(ALNUM, 48);

/**
 * Client ids may hold any character (semantics §1). Composing them with JSON keeps every
 * composition unambiguous: `key('a"b', 'c')` and `key('a', '"b", "c')` differ, and no id can
 * reach into another's key, stream or tenant.
 */
export const key = (...parts: string[]): string => JSON.stringify(parts);

/** `<category>-<json parts>`: the category prefix keeps EventStoreDB's `$ce-` streams usable. */
export const streamName = (category: string, ...parts: string[]): string => `${category}-${key(...parts)}`;

/**
 * Secrets are high-entropy random strings, so a plain SHA-256 is the right hash: a slow
 * password hash would buy nothing against 285 bits and cost every request.
 */
export const hashSecret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(presented: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(presented), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
