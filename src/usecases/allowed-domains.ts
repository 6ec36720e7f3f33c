/**
 * The calling key's allowed domains (`/v2/workspace/domains/add|delete|get`): the origins
 * whose browser pages may call the user-token routes. What an entry is and how it is
 * normalized: commands/allowed-domains.ts. An entry already held (add) or not held (delete)
 * is skipped and reported, never a failure.
 */
import { API_KEY_NOT_FOUND, workspaceDecider, workspaceStream } from '../../commands/workspace.js';
import { domainToRemove, normalizeDomain } from '../../commands/allowed-domains.js';
import { allowedDomainsOf } from '../../queries/allowed-domains.js';
import { BugError, invalidArgument, notFound } from '../shared/errors.js';
import type { TenantContext } from './context.js';

/** A use case of the key's own workspace: the tenant names it. */
type KeyContext = TenantContext & { readonly tenant?: { readonly workspaceId: string } | undefined };

/** Each entry in stored form, or INVALID_ARGUMENT naming the first that is none (`data.<field>[i]`). */
export function normalizeAllowedDomains(domains: readonly string[], fieldName = 'domains'): string[] {
  return domains.map((d, i) => {
    const n = normalizeDomain(d);
    if (!n.ok) {
      const field = `data.${fieldName}[${i}]`;
      throw invalidArgument(`${field} (${JSON.stringify(d)}) ${n.reason}.`, { fields: [{ field, code: 'invalid_domain' }] });
    }
    return n.entry;
  });
}

/** The distinct entries of `entries` that `changed` does not hold, in request order. */
const skipped = (entries: readonly string[], changed: readonly string[]) => [...new Set(entries)].filter((e) => !changed.includes(e));

/** The entries an allowed-domain event of this call carries (none when nothing changed). */
async function change(ctx: KeyContext, type: 'AddAllowedDomains' | 'RemoveAllowedDomains', domains: string[]): Promise<string[]> {
  const r = await ctx.execute(workspaceDecider, workspaceStream(ctx.tenant!.workspaceId), {
    type,
    data: { apiKey: ctx.apiKey, domains },
  });
  const event = r.events[0];
  if (!event) return [];
  if (event.type !== 'ApiKeyAllowedDomainsAdded' && event.type !== 'ApiKeyAllowedDomainsRemoved') {
    throw new BugError(`${type} decided ${event.type}`);
  }
  return event.data.domains;
}

/** Adds entries (an invalid one refuses the call); those held already come back as `skipped`. */
export async function addAllowedDomains(ctx: KeyContext, domains: readonly string[]) {
  const entries = normalizeAllowedDomains(domains);
  const added = await change(ctx, 'AddAllowedDomains', entries);
  return { added, skipped: skipped(entries, added) };
}

/** Removes entries, normalized as add does; those not held come back as `skipped`. */
export async function removeAllowedDomains(ctx: KeyContext, domains: readonly string[]) {
  const entries = domains.map(domainToRemove);
  const removed = await change(ctx, 'RemoveAllowedDomains', entries);
  return { removed, skipped: skipped(entries, removed) };
}

/** The key's entries in the order they were added. */
export async function listAllowedDomains(ctx: TenantContext) {
  const allowedDomains = await allowedDomainsOf(ctx.services.read, ctx.apiKey);
  // The caller's key authenticated this request; it can only be gone when it was deleted in between.
  if (!allowedDomains) throw notFound(API_KEY_NOT_FOUND);
  return allowedDomains;
}
