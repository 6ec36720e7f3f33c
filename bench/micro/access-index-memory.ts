// `node --expose-gc --import tsx bench/micro/access-index-memory.ts`: the access index's
// (queries/access-index.ts) memory per entry, for its docs/performance.md budget: the heap held
// by an index filled with DOCS document targets (spread over FOLDERS folders 10 deep, as
// read through a store that parses a fresh document per read, as the real ones do), then with
// as many absent grant lookups (one user asking about each document; GRANTS=present: present
// ones), and organizations asked about once each.
import type { Doc, ReadView } from '../../src/ports/read-store.js';
import { AccessIndex } from '../../queries/access-index.js';
import { DOCUMENTS } from '../../projections/documents.js';
import { FOLDERS } from '../../projections/folders.js';
import { GRANTS } from '../../projections/grants.js';

const DOCS = Number(process.env.DOCS ?? 1_000_000);
const FOLDER_COUNT = Number(process.env.FOLDERS ?? 1000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const parsed = (d: object) => JSON.parse(JSON.stringify(d)) as Doc;
const folderDoc = (i: number) => {
  const chain = Array.from({ length: 9 }, (_, k) => `folder-${(i + k) % FOLDER_COUNT}`);
  return { _id: `f${i}`, apiKey: 'k', organizationId: 'o', folderId: `folder-${i}`, folderName: `F ${i}`, parentFolderId: chain[8], ancestors: chain, accessType: null, effectiveAccessType: 'organizationPrivate', seq: '1', createdAt: 0 };
};
const grants = process.env.GRANTS === 'present';
const store: ReadView = {
  async get<T extends Doc>(): Promise<T | null> {
    return parsed({ _id: 'o', apiKey: 'k', organizationId: 'o', organizationName: 'o', disabled: false, seq: '1', createdAt: 0 }) as T;
  },
  async getMany<T extends Doc>(collection: string, ids: readonly string[]): Promise<T[]> {
    const last = (k: string) => (JSON.parse(k) as string[]).at(-1)!;
    if (collection === FOLDERS) return ids.map((k) => parsed(folderDoc(Number(last(k).slice(7))))) as T[];
    if (collection === DOCUMENTS) {
      return ids.map((k) => {
        const id = last(k);
        return parsed({ _id: k, apiKey: 'k', organizationId: 'o', documentId: id, documentName: `Doc ${id}`, folderId: `folder-${Number(id.slice(3)) % FOLDER_COUNT}`, accessType: null, disabled: false, seq: '1', createdAt: 0 });
      }) as T[];
    }
    if (collection === GRANTS && grants) {
      return ids.map((k) => {
        const [, , userId, resourceType, resourceId] = JSON.parse(k) as string[];
        return parsed({ _id: k, apiKey: 'k', organizationId: 'o', userId, resourceType, resourceId, accessRole: 'viewer', expiresAt: null });
      }) as T[];
    }
    return [];
  },
  async find() {
    return [];
  },
  async count() {
    return 0;
  },
};

const index = new AccessIndex({ readEpoch: () => 1 }, Number.MAX_SAFE_INTEGER);
const org = (await index.organization('k', 'o'))!;
await org.organization(store);
const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};
// Fresh id strings per batch, as each request's are: the index keeps them as its keys.
const batch = (i: number) => Array.from({ length: Math.min(1000, DOCS - i) }, (_, j) => `doc${i + j}`);
const h0 = heap();
for (let i = 0; i < DOCS; i += 1000) await org.documentTargets(store, batch(i));
const h1 = heap();
const entries1 = index.size;
for (let i = 0; i < DOCS; i += 1000) await org.userGrants(store, 'user-1', batch(i).map((id) => ['document', id] as const));
const h2 = heap();
// Organizations asked about once each: the containers alone (ORGANIZATION_WEIGHT).
const orgs = new AccessIndex({ readEpoch: () => 1 }, Number.MAX_SAFE_INTEGER);
const h3 = heap();
for (let i = 0; i < 100_000; i++) await (await orgs.organization('k', `org-${i}`))!.organization(store);
const h4 = heap();
const mib = (b: number) => (b / 1_048_576).toFixed(0);
console.log(`100000 organizations asked about once: ${((h4 - h3) / 100_000).toFixed(0)} bytes each, ${((h4 - h3) / orgs.size).toFixed(0)} bytes per entry`);
console.log(`${DOCS} document targets (${FOLDER_COUNT} folders): ${mib(h1 - h0)} MiB, ${((h1 - h0) / entries1).toFixed(0)} bytes per entry`);
console.log(`${DOCS} grant lookups (${grants ? 'present' : 'absent'}): ${mib(h2 - h1)} MiB, ${((h2 - h1) / (index.size - entries1)).toFixed(0)} bytes per entry`);
