// `node scripts/run.mjs dev bench/micro/access-index-service.ts`: the whole service's CPU per
// permissions/get (perm1's question: 1 user x 10 documents 10 folders deep) without the access
// index (A, ACCESS_INDEX_ENTRIES=0) and with it (B), two compiled services (dist/, as the bench
// runs them; `node scripts/build.mjs` first) seeded alike, loaded in alternating rounds by
// autocannon (50 connections). CPU per request is the service process's (every thread)
// user + system time from /proc over the round, divided by the requests it answered, so other
// processes' load on the machine moves it far less than requests per second.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SECONDS = Number(process.env.SECONDS ?? 3);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const DOCS = Number(process.env.DOCS ?? 2000);

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

async function service(env: Record<string, string>) {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-index-ab-'));
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'dist', 'src', 'server.js')], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'error', RATE_LIMIT_PER_SECOND: '0', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 400 && !(await fetch(`${url}/healthz`).then((r) => r.ok, () => false)); i++) await new Promise((r) => setTimeout(r, 50));
  let headers: Record<string, string> = {};
  const call = async (route: string, data: unknown) => {
    const r = await fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ data }) });
    const body = (await r.json()) as any;
    if (r.status !== 200) throw new Error(`${route} -> ${r.status} ${JSON.stringify(body).slice(0, 300)}`);
    return body;
  };
  const ws = await call('/v2/workspace/create', { ownerEmail: 'ab@example.com' });
  const [apiKey, key] = Object.entries(ws.result.data.apiKeyList)[0] as [string, { authToken: string }];
  headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  await call('/v2/organizations/add', { organizations: [{ organizationId: 'big', organizationName: 'big' }] });
  for (let d = 1; d <= 10; d++) {
    await call('/v2/organizations/folders/add', {
      organizationId: 'big',
      folders: [{ folderId: `f${d}`, ...(d > 1 ? { parentFolderId: `f${d - 1}` } : {}), ...(d === 4 ? { accessType: 'organizationPrivate' } : {}) }],
    });
  }
  for (let i = 0; i < DOCS; i += 1000) {
    await call('/v2/organizations/documents/add', { organizationId: 'big', folderId: 'f10', documents: Array.from({ length: 1000 }, (_, j) => ({ documentId: `d${i + j}` })) });
  }
  await call('/v2/users/add', { organizationId: 'big', folderId: 'f3', users: [{ userId: 'u3', name: 'U3', accessRole: 'viewer' }] });
  const body = JSON.stringify({ data: { organizationId: 'big', userIds: ['u3'], documentIds: Array.from({ length: 10 }, (_, i) => `d${i}`) } });
  const answer = JSON.stringify((await call('/v2/auth/permissions/get', JSON.parse(body).data)).result);
  const cpuTicks = () => {
    const f = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(f[11]) + Number(f[12]);
  };
  return { url, child, headers, body, answer, cpuTicks, dataDir };
}

type Svc = Awaited<ReturnType<typeof service>>;
const TICK_US = 1e6 / 100;
async function round(s: Svc, seconds: number) {
  const c0 = s.cpuTicks();
  const r = await autocannon({ url: `${s.url}/v2/auth/permissions/get`, method: 'POST', connections: 50, duration: seconds, headers: { 'content-type': 'application/json', ...s.headers }, body: s.body });
  const ticks = s.cpuTicks() - c0;
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx answers, ${r.errors} errors`);
  return { rps: r.requests.average, cpuUs: (ticks * TICK_US) / r.requests.total };
}

/** Waits (at most 60 s) until the service is idle: its background thread done projecting the seed. */
async function settled(s: Svc) {
  for (let i = 0; i < 120; i++) {
    const c0 = s.cpuTicks();
    await new Promise((r) => setTimeout(r, 500));
    if (s.cpuTicks() - c0 <= 2) return;
  }
}

const a = await service({ ACCESS_INDEX_ENTRIES: '0' });
const b = await service({});
await settled(a);
await settled(b);
if (a.answer !== b.answer) throw new Error('A and B answer differently');
await round(a, 1);
await round(b, 1);
const out: Record<'a' | 'b', Array<{ rps: number; cpuUs: number }>> = { a: [], b: [] };
for (let i = 0; i < ROUNDS; i++) {
  // Alternating which goes first, so a drift in the machine's load falls on both.
  const order: Array<'a' | 'b'> = i % 2 ? ['b', 'a'] : ['a', 'b'];
  for (const k of order) out[k].push(await round(k === 'a' ? a : b, SECONDS));
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
console.log(`permissions/get 1 x 10, ${ROUNDS} alternating rounds of ${SECONDS} s, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
for (const [k, name] of [['a', 'A store'], ['b', 'B index']] as const) {
  const xs = out[k];
  console.log(`${name}: CPU us/request ${xs.map((x) => x.cpuUs.toFixed(0)).join(', ')} (median ${median(xs.map((x) => x.cpuUs)).toFixed(0)}); req/s ${xs.map((x) => x.rps.toFixed(0)).join(', ')}`);
}
for (const s of [a, b]) {
  s.child.kill('SIGTERM');
  await new Promise((r) => s.child.once('exit', r));
  fs.rmSync(s.dataDir, { recursive: true, force: true });
}
