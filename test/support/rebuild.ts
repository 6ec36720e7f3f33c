/**
 * "The read models equal a fresh rebuild from the log": replays a data folder's events.db
 * through every projection into a fresh read store (a temp file), then compares every
 * collection the projections write with the live readmodels.db, document by document.
 *
 * Ephemeral collections that are not built from the log are left out: presence,
 * idempotency keys, the webhook outbox, and the deletion cascade's work queue (items the
 * cascade worker consumes: a rebuild queues them again, the live store has worked them off),
 * and the runners' leases (which process runs the projections and the webhook sender).
 * Checkpoints live in their own table and are compared
 * separately (every projection at the log's head on both sides).
 *
 * Of the live file, only the live read-model generation is compared (src/runtime/generations.ts).
 * The live file is opened read-only (the service may still be running on it, idle).
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteEventStore } from '../../src/adapters/sqlite-event-store.js';
import { SqliteReadStore } from '../../src/adapters/sqlite-read-store.js';
import { ProjectionRunner } from '../../src/runtime/projection-runner.js';
import { allProjections } from '../../projections/index.js';
import { SHARED_COLLECTIONS } from '../../src/ops/read-models.js';
import { ACTIVE_ID, READ_MODEL_META, parsePhysical, physicalCheckpoint } from '../../src/runtime/generations.js';
import { tempDir } from './app.js';

const EPHEMERAL = new Set([...SHARED_COLLECTIONS, READ_MODEL_META, 'cascade_work']);

export interface RebuildComparison {
  /** Collections compared, with their document counts. */
  collections: Record<string, number>;
  events: number;
  /** Human-readable differences; empty when the live read models equal the rebuild. */
  diffs: string[];
}

type Dump = Map<string, Map<string, unknown>>;

function dump(file: string): { docs: Dump; checkpoints: Map<string, string>; generation: number } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const docs: Dump = new Map();
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rm\\_%' ESCAPE '\\'").all() as Array<{ name: string }>;
    const meta = tables.some((t) => t.name === `rm_${READ_MODEL_META}`)
      ? (db.prepare(`SELECT doc FROM rm_${READ_MODEL_META} WHERE id = ?`).get(ACTIVE_ID) as { doc: string } | undefined)
      : undefined;
    const generation = meta ? (JSON.parse(meta.doc).generation as number) : 0;
    for (const { name } of tables) {
      const { generation: g, collection } = parsePhysical(name.slice(3));
      if (g !== generation || EPHEMERAL.has(collection)) continue;
      const rows = db.prepare(`SELECT id, doc FROM ${name} ORDER BY id`).all() as Array<{ id: string; doc: string }>;
      docs.set(collection, new Map(rows.map((r) => [r.id, JSON.parse(r.doc)])));
    }
    const cps = db.prepare('SELECT name, position FROM checkpoints').all() as Array<{ name: string; position: string }>;
    return { docs, checkpoints: new Map(cps.map((c) => [c.name, c.position])), generation };
  } finally {
    db.close();
  }
}

/** Canonical JSON (sorted keys), so key order never counts as a difference. */
function canon(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x,
  );
}

export async function compareWithRebuild(dataDir: string): Promise<RebuildComparison> {
  const scratch = tempDir('collab-rebuild-');
  const events = new SqliteEventStore(path.join(dataDir, 'events.db'));
  const fresh = new SqliteReadStore(path.join(scratch, 'readmodels.db'));
  try {
    const runner = new ProjectionRunner(events, fresh, allProjections);
    await runner.init();
    const n = await runner.catchUp();
    const head = await events.headPosition();
    await fresh.close();
    const live = dump(path.join(dataDir, 'readmodels.db'));
    const rebuilt = dump(path.join(scratch, 'readmodels.db'));
    const diffs: string[] = [];
    const collections: Record<string, number> = {};
    const names = new Set([...live.docs.keys(), ...rebuilt.docs.keys()]);
    for (const name of [...names].sort()) {
      const a = live.docs.get(name) ?? new Map();
      const b = rebuilt.docs.get(name) ?? new Map();
      collections[name] = b.size;
      for (const [id, doc] of a) {
        if (!b.has(id)) diffs.push(`${name}/${id}: in the live read model only: ${canon(doc).slice(0, 400)}`);
        else if (canon(doc) !== canon(b.get(id))) diffs.push(`${name}/${id}: live ${canon(doc).slice(0, 400)} != rebuilt ${canon(b.get(id)).slice(0, 400)}`);
      }
      for (const [id, doc] of b) if (!a.has(id)) diffs.push(`${name}/${id}: missing from the live read model: ${canon(doc).slice(0, 400)}`);
    }
    for (const p of allProjections) {
      const liveCheckpoint = live.checkpoints.get(physicalCheckpoint(p.name, live.generation));
      if (liveCheckpoint !== head) diffs.push(`checkpoint ${p.name}: live ${liveCheckpoint} != head ${head}`);
      if (rebuilt.checkpoints.get(p.name) !== head) diffs.push(`checkpoint ${p.name}: rebuilt ${rebuilt.checkpoints.get(p.name)} != head ${head}`);
    }
    return { collections, events: n, diffs };
  } finally {
    await fresh.close().catch(() => {});
    await events.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
