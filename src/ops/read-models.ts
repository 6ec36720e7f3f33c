/**
 * Which collections are read models (versioned by generation, rebuilt from the log) and which
 * are shared state written outside projections (one copy, never rebuilt). Add a collection
 * here when code other than a projection writes it.
 */
import type { ReadStore } from '../ports/read-store.js';
import type { Projection } from '../runtime/projection.js';
import { GenerationalReadStore } from '../runtime/generations.js';
import { PRESENCE } from '../presence/store.js';
import { IDEMPOTENCY_KEYS } from '../runtime/idempotency.js';
import { DELIVERIES, ENDPOINT_STATE, KEY_STATE, WORKSPACE_STATE } from '../webhooks/outbox.js';
import { LEASES } from '../runtime/lease.js';
import { SECRET_KEYS } from '../secrets/store.js';

/** SECRET_KEYS above all: the wrapped data keys cannot be rebuilt from the log (src/secrets/store.ts). */
export const SHARED_COLLECTIONS: readonly string[] = [PRESENCE, IDEMPOTENCY_KEYS, DELIVERIES, ENDPOINT_STATE, KEY_STATE, WORKSPACE_STATE, LEASES, SECRET_KEYS];

/** The read store the service uses: `base` seen through the live read-model generation. */
export function openReadModels(base: ReadStore, projections: readonly Projection[], refreshMs?: number): Promise<GenerationalReadStore> {
  if (base instanceof GenerationalReadStore) return Promise.resolve(base);
  return GenerationalReadStore.open(base, {
    shared: SHARED_COLLECTIONS,
    projectionNames: projections.map((p) => p.name),
    refreshMs,
  });
}
