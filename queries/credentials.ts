/**
 * Credential checks for the two authentication modes (semantics §2). Both compare hashes in
 * constant time, and both do the same work whether or not the id exists, so timing tells a
 * caller nothing about which ids are real.
 */
import { hashSecret, secretMatches } from '../src/ids.js';
import type { ReadView } from '../src/ports/read-store.js';
import { API_KEYS, WORKSPACES, type ApiKeyDoc, type TokenMeta, type WorkspaceDoc } from '../projections/workspaces.js';

const DUMMY_HASH = hashSecret('no such credential');

export async function verifyWorkspace(read: ReadView, workspaceId: string, token: string): Promise<WorkspaceDoc | null> {
  const ws = await read.get<WorkspaceDoc>(WORKSPACES, workspaceId);
  const ok = secretMatches(token, ws?.authTokenHash ?? DUMMY_HASH);
  return ws && ok ? ws : null;
}

export async function verifyApiKey(read: ReadView, apiKey: string, token: string): Promise<ApiKeyDoc | null> {
  const key = await read.get<ApiKeyDoc>(API_KEYS, apiKey);
  const hashes = key && key.tokens.length > 0 ? key.tokens.map((t) => t.hash) : [DUMMY_HASH];
  // Check every token (no early exit): the time taken does not depend on which one matched.
  let ok = false;
  for (const h of hashes) ok = secretMatches(token, h) || ok;
  return key && key.tokens.length > 0 && ok ? key : null;
}

export async function apiKeyOfWorkspace(read: ReadView, workspaceId: string, apiKey: string): Promise<ApiKeyDoc | null> {
  const key = await read.get<ApiKeyDoc>(API_KEYS, apiKey);
  return key && key.workspaceId === workspaceId ? key : null;
}

/** Token metadata for listing: never the hash, never the secret. */
export const tokenMetadata = (tokens: TokenMeta[]) =>
  tokens.map((t) => ({ tokenId: t.tokenId, createdAt: t.createdAt }));
