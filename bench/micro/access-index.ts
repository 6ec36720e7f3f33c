// `node scripts/run.mjs dev bench/micro/access-index.ts`: CPU per permissions/get resolution
// (perm1's question: 1 user x 10 documents 10 folders deep, a viewer grant on the 3rd folder)
// in one process over the embedded store, as a request makes it (beginRequest, then
// resolvePermissions), A without the access index (ACCESS_INDEX_ENTRIES=0) and B with it
// (queries/access-index.ts), each on a store of its own seeded alike, in alternating rounds.
// CPU time (process.cpuUsage), not wall time: other processes' load does not count.
// BEGIN_REQUEST=0: no beginRequest between resolutions, so the read cache's check for other
// processes' commits (SQLite's data_version) runs once instead of once per resolution: what
// that check costs is the difference.
import { harness, type Harness } from '../../test/support/app.js';
import { resolvePermissions } from '../../queries/permissions.js';
import { accessIndexOf } from '../../queries/access-index.js';

const DOCS = Number(process.env.DOCS ?? 2000);

async function seeded(env: Record<string, string>) {
  const h: Harness = await harness(env);
  const t = await h.tenant();
  const post = (url: string, data: unknown) => h.ok(url, data, t.headers);
  const org = 'big';
  await post('/v2/organizations/add', { organizations: [{ organizationId: org, organizationName: org }] });
  for (let d = 1; d <= 10; d++) {
    await post('/v2/organizations/folders/add', {
      organizationId: org,
      folders: [{ folderId: `f${d}`, ...(d > 1 ? { parentFolderId: `f${d - 1}` } : {}), ...(d === 4 ? { accessType: 'organizationPrivate' } : {}) }],
    });
  }
  const docIds = Array.from({ length: DOCS }, (_, i) => `d${i}`);
  for (let i = 0; i < docIds.length; i += 500) {
    await post('/v2/organizations/documents/add', { organizationId: org, folderId: 'f10', documents: docIds.slice(i, i + 500).map((documentId) => ({ documentId })) });
  }
  await post('/v2/users/add', { organizationId: org, folderId: 'f3', users: [{ userId: 'u3', name: 'U3', accessRole: 'viewer' }] });
  const q = { organizationId: org, userIds: ['u3'], documentIds: docIds.slice(0, 10) };
  const read = h.services.read;
  const perRequest = process.env.BEGIN_REQUEST !== '0';
  const once = () => {
    if (perRequest) read.beginRequest();
    return resolvePermissions(read, t.apiKey, 0, q);
  };
  return { h, once };
}

const a = await seeded({ ACCESS_INDEX_ENTRIES: '0' });
const b = await seeded({});
if (accessIndexOf(a.h.services.read) || !accessIndexOf(b.h.services.read)) throw new Error('A must run without the index, B with it');
const answer = JSON.stringify(await a.once());
if (JSON.stringify(await b.once()) !== answer) throw new Error('A and B answer differently');

const N = Number(process.env.N ?? 5000);
async function round(once: () => Promise<unknown>): Promise<number> {
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) await once();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / N;
}
for (let i = 0; i < 2; i++) {
  await round(a.once);
  await round(b.once);
}
const rounds = Number(process.env.ROUNDS ?? 6);
const out = { a: [] as number[], b: [] as number[] };
for (let i = 0; i < rounds; i++) {
  out.a.push(await round(a.once));
  out.b.push(await round(b.once));
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
console.log(`CPU us per resolution, ${rounds} alternating rounds of ${N}`);
console.log(`A store:  ${out.a.map((x) => x.toFixed(1)).join(', ')} (median ${median(out.a).toFixed(1)})`);
console.log(`B index:  ${out.b.map((x) => x.toFixed(1)).join(', ')} (median ${median(out.b).toFixed(1)})`);
await a.h.close();
await b.h.close();
