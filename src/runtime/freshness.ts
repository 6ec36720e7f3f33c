/**
 * Causal freshness for in-process read caches.
 *
 * A cache in front of a store that other processes also write (several service processes, a
 * rebuild, the CLI) must re-validate against the store before it serves a read that may
 * depend on what another process acknowledged. Such a dependency can only reach this process
 * through a message from outside: an HTTP request. So each request, as it starts, calls
 * `newReadContext()`, and a cache re-validates (one cheap check) on its next read when the
 * context moved. Commits made by this process are tracked by the caches themselves.
 */
let context = 0;

/** A request starts: reads from now on must see everything committed before this call. */
export function newReadContext(): void {
  context++;
}

/** The current read context; a cache validated in an older one must check again. */
export function readContext(): number {
  return context;
}
