/**
 * Reads of the allowed domains (commands/allowed-domains.ts): an API key's list, and the two
 * origin checks of src/http/cors.ts. Both look up the origin's few candidate entries
 * (`originCandidates`) by key or index, never scan a list.
 */
import type { ReadView } from '../src/ports/read-store.js';
import { ALLOWED_DOMAINS, API_KEYS, type ApiKeyDoc } from '../projections/workspaces.js';

/** The key's entries in the order they were added; null when the key does not exist. */
export async function allowedDomainsOf(read: ReadView, apiKey: string): Promise<string[] | null> {
  const key = await read.get<ApiKeyDoc>(API_KEYS, apiKey);
  return key ? key.settings.allowedDomains : null;
}

/**
 * A key's entries as a set, per key document object. The read store's cache hands out the
 * same frozen object until a commit changes the document (an added or removed domain makes
 * a new one), so the set built for it stays right; a store that hands out fresh copies
 * builds it each time (at most MAX_DOMAINS_PER_KEY entries).
 */
const sets = new WeakMap<ApiKeyDoc, ReadonlySet<string>>();
function entriesOf(key: ApiKeyDoc): ReadonlySet<string> {
  let set = sets.get(key);
  if (!set) {
    set = new Set(key.settings.allowedDomains);
    if (Object.isFrozen(key)) sets.set(key, set);
  }
  return set;
}

/** Whether `apiKey` holds one of `candidates` (an origin's, from `originCandidates`). */
export async function keyAdmits(read: ReadView, apiKey: string, candidates: readonly string[]): Promise<boolean> {
  const key = await read.get<ApiKeyDoc>(API_KEYS, apiKey);
  if (!key) return false;
  const set = entriesOf(key);
  return candidates.some((c) => set.has(c));
}

/**
 * Whether any key holds one of `candidates`: one indexed lookup (`domain`, limit 1) per
 * candidate until one is found; `originCandidates` gives at most 2 x (1 + MAX_WILDCARD_LABELS).
 */
export async function someKeyAdmits(read: ReadView, candidates: readonly string[]): Promise<boolean> {
  for (const domain of candidates) {
    if ((await read.find(ALLOWED_DOMAINS, { domain }, { limit: 1 })).length > 0) return true;
  }
  return false;
}
