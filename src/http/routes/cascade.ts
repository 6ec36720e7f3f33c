/**
 * The deletion cascade: a process reacting to FolderDeleted / OrganizationDeleted that
 * appends the per-item events (DocumentDeleted, GrantRevoked, UserGroupDeleted), so the
 * audit trail shows each removal and the write side of every document agrees with the read
 * side. Reads never wait for it: the projections drop everything under a deleted folder or
 * organization on the deletion event itself.
 *
 * It runs after the response (folders/delete answers "deletion initiated" at once), with
 * the request's id and an actor of `system:cascade`. `settleCascades` lets tests and a
 * graceful shutdown wait for it.
 */
import type { EventMetadata } from '../../ports/event-store.js';
import type { Services } from '../../services.js';
import type { RequestContext } from '../context.js';

const pending = new WeakMap<Services, Set<Promise<void>>>();

export function startCascade(ctx: RequestContext, work: (services: Services, metadata: EventMetadata) => Promise<void>): void {
  const services = ctx.services;
  const metadata: EventMetadata = { ...ctx.metadata(), actor: 'system:cascade' };
  const set = pending.get(services) ?? new Set();
  pending.set(services, set);
  const p: Promise<void> = new Promise<void>((r) => setImmediate(r))
    .then(() => work(services, metadata))
    .catch((err: unknown) => ctx.log.error({ err }, 'deletion cascade failed; reads are unaffected'))
    .finally(() => set.delete(p));
  set.add(p);
}

export async function settleCascades(services: Services): Promise<void> {
  const set = pending.get(services);
  while (set && set.size > 0) await Promise.all([...set]);
}

/** Runs `fn` over `items`, `width` at a time (one group commit per slice). */
export async function inSlices<T>(items: readonly T[], width: number, fn: (t: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(fn));
}
