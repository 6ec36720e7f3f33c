/**
 * The `streams` scenario of bench/run.ts: the change stream's fan-out. `streams` change streams
 * (`GET /v2/changes/stream`) of one API key are opened on a service of their own, each on a
 * connection of its own; the service's memory is read before and after (RSS, /proc), and
 * `writes` documents/add calls of one document are made one after another, each timed (its
 * own latency, request to answer) and followed to its arrival at the last of the streams
 * (request to the moment the slowest stream got its event). What it reports: memory per open
 * stream, the write's latency and the delay to the last stream at p50 and p99, and whether
 * every stream got every write once, in order.
 *
 * The service must allow that many streams and connections (CHANGES_STREAM_MAX_PER_TENANT,
 * MAX_CONNECTIONS) and sign-up from loopback.
 */
import fs from 'node:fs';
import http from 'node:http';

interface Quantiles {
  p50: number;
  p99: number;
  max: number;
}

export interface FanoutFigures {
  streams: number;
  writes: number;
  /** Service RSS growth with every stream open and caught up, per stream (KiB). */
  kibPerStream: number;
  write: Quantiles;
  lastStream: Quantiles;
  /** Every stream received every write exactly once, in write order. */
  complete: boolean;
}

function quantiles(ms: number[]): Quantiles {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))]! * 10) / 10;
  return { p50: at(0.5), p99: at(0.99), max: Math.round(s[s.length - 1]! * 10) / 10 };
}

const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

async function post(url: string, route: string, data: unknown, headers: Record<string, string> = {}): Promise<any> {
  const r = await fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ data }) });
  const body = (await r.json()) as any;
  if (r.status !== 200) throw new Error(`${route}: ${r.status} ${JSON.stringify(body)}`);
  return body.result;
}

export async function streamFanout(url: string, servicePid: number, streams: number, writes: number): Promise<FanoutFigures> {
  const ws = await post(url, '/v2/workspace/create', { ownerEmail: 'fanout@example.com' });
  const [apiKey, key] = Object.entries(ws.data.apiKeyList)[0] as [string, { authToken: string }];
  const headers = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
  await post(url, '/v2/organizations/add', { organizations: [{ organizationId: 'fan' }] }, headers);

  // Per write: how many streams got it, and when the last one did.
  const seen = new Map<string, { count: number; last: number; done?: () => void }>();
  const order: string[][] = [];
  const requests: http.ClientRequest[] = [];
  const before = rssKiB(servicePid);
  await Promise.all(
    Array.from({ length: streams }, (_, i) => new Promise<void>((resolve, reject) => {
      const got: string[] = (order[i] = []);
      const req = http.get(`${url}/v2/changes/stream?types=document`, { agent: false, headers });
      requests.push(req);
      req.on('error', reject);
      req.on('response', (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream ${i}: ${res.statusCode}`));
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          if (buffer === '' && chunk.startsWith(': stream open')) resolve();
          buffer += chunk;
          let at: number;
          while ((at = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, at);
            buffer = buffer.slice(at + 2);
            const id = /"resourceId":"(fan-\d+)"/.exec(block)?.[1];
            if (!id) continue;
            const now = performance.now();
            got.push(id);
            const s = seen.get(id) ?? { count: 0, last: 0 };
            s.count++;
            s.last = now;
            seen.set(id, s);
            if (s.count === streams) s.done?.();
          }
        });
        res.on('error', () => {});
      });
    })),
  );
  const writeMs: number[] = [];
  const lastMs: number[] = [];
  let memoryAfter = 0;
  try {
    for (let w = 0; w < writes; w++) {
      const id = `fan-${w}`;
      const all = new Promise<void>((resolve) => {
        const s = seen.get(id) ?? { count: 0, last: 0 };
        seen.set(id, s);
        if (s.count === streams) resolve();
        else s.done = resolve;
      });
      const t0 = performance.now();
      await post(url, '/v2/organizations/documents/add', { organizationId: 'fan', documents: [{ documentId: id }] }, headers);
      writeMs.push(performance.now() - t0);
      const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000).unref());
      if ((await Promise.race([all, timeout])) === 'timeout') throw new Error(`${id} reached ${seen.get(id)!.count} of ${streams} streams in 30 s`);
      lastMs.push(seen.get(id)!.last - t0);
      // With every stream open and caught up after the first write.
      if (w === 0) memoryAfter = rssKiB(servicePid);
    }
  } finally {
    for (const r of requests) r.destroy();
  }
  const want = Array.from({ length: writes }, (_, w) => `fan-${w}`);
  const complete = order.every((got) => got.length === writes && got.every((id, k) => id === want[k]));
  return {
    streams,
    writes,
    kibPerStream: Math.round(((memoryAfter - before) / streams) * 10) / 10,
    write: quantiles(writeMs),
    lastStream: quantiles(lastMs),
    complete,
  };
}
