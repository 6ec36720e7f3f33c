/**
 * Credential checks for the two authentication modes (semantics §2). Both compare hashes in
 * constant time, and both do the same work whether or not the id exists, so timing tells a
 * caller nothing about which ids are real.
 */
import { hashSecret, secretMatches } from '../src/shared/ids.js';
import type { ReadView } from '../src/ports/read-store.js';
import { API_KEYS, WORKSPACES, type ApiKeyDoc, type WorkspaceDoc } from '../projections/workspaces.js';

const DUMMY_HASH = hashSecret('no such credential');

/**
 * Tokens that matched, per credential document object. The read store's cache hands out the
 * same frozen object until a commit changes the document (a token reset or revocation makes
 * a new object), so a token found here matched this very, unchangeable document: hashing it
 * again would give the same answer. Only frozen documents are remembered (a store that hands
 * out mutable copies hashes every time); only matches are remembered, so a set never holds
 * more than the document's own tokens. Saves the SHA-256 per request (about 4 us).
 */
const matched = new WeakMap<object, Set<string>>();
const remember = (doc: object, token: string) => {
  if (!Object.isFrozen(doc)) return;
  const set = matched.get(doc);
  if (set) set.add(token);
  else matched.set(doc, new Set([token]));
};

export async function verifyWorkspace(read: ReadView, workspaceId: string, token: string): Promise<WorkspaceDoc | null> {
  const ws = await read.get<WorkspaceDoc>(WORKSPACES, workspaceId);
  if (ws && matched.get(ws)?.has(token)) return ws;
  const ok = secretMatches(token, ws?.authTokenHash ?? DUMMY_HASH);
  if (ws && ok) remember(ws, token);
  return ws && ok ? ws : null;
}

export async function verifyApiKey(read: ReadView, apiKey: string, token: string): Promise<ApiKeyDoc | null> {
  const key = await read.get<ApiKeyDoc>(API_KEYS, apiKey);
  if (key && matched.get(key)?.has(token)) return key;
  const hashes = key && key.tokens.length > 0 ? key.tokens.map((t) => t.hash) : [DUMMY_HASH];
  // Check every token (no early exit): the time taken does not depend on which one matched.
  let ok = false;
  for (const h of hashes) ok = secretMatches(token, h) || ok;
  if (key && key.tokens.length > 0 && ok) {
    remember(key, token);
    return key;
  }
  return null;
}

export async function apiKeyOfWorkspace(read: ReadView, workspaceId: string, apiKey: string): Promise<ApiKeyDoc | null> {
  const key = await read.get<ApiKeyDoc>(API_KEYS, apiKey);
  return key && key.workspaceId === workspaceId ? key : null;
}
