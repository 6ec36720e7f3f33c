/**
 * The `stream` scenario of bench/run.ts: the change stream's fan-out. `streams` open
 * `GET /v2/changes/stream` connections of one API key (the service's per-key bound raised to
 * allow them), then writes one at a time, each an organization of its own, and for each write
 * the delay from its request to its change's arrival at every stream, the last one included,
 * beside the write's own latency (its answer, read-your-writes included). Memory per stream is
 * the service's resident set after the streams opened, less before, over their count.
 */
import http from 'node:http';
import fs from 'node:fs';

interface Delays {
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

export interface FanoutFigures {
  streams: number;
  /** The service's resident set grown per open stream, KiB. */
  kibPerStream: number;
  /** Request to answer, ms. */
  write: Delays;
  /** Request to arrival at the last of the streams, ms. */
  lastArrival: Delays;
  /** Request to arrival, every stream's every change, ms. */
  arrival: Delays;
}

function delays(ms: number[]): Delays {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))]! * 10) / 10;
  return { samples: s.length, p50: at(0.5), p99: at(0.99), max: at(1) };
}

const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

export async function streamFanout(url: string, pid: number, headers: Record<string, string>, streams: number, writes: number): Promise<FanoutFigures> {
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  /** For each write's marker, the arrival times seen so far, and who waits for the last. */
  const arrivals = new Map<string, number[]>();
  const waiting = new Map<string, () => void>();
  const requests: http.ClientRequest[] = [];
  const before = rssKiB(pid);
  let open = 0;
  await new Promise<void>((resolve, reject) => {
    for (let i = 0; i < streams; i++) {
      const req = http.get(`${url}/v2/changes/stream`, { agent, headers: { ...headers, accept: 'text/event-stream' } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream ${i}: HTTP ${res.statusCode}`));
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const marker = /"(fanout-\d+)"/.exec(event)?.[1];
            if (!marker) continue;
            const seen = arrivals.get(marker);
            if (!seen) continue;
            seen.push(performance.now());
            if (seen.length === streams) waiting.get(marker)?.();
          }
        });
        if (++open === streams) resolve();
      });
      req.on('error', reject);
      requests.push(req);
    }
  });
  const kibPerStream = (rssKiB(pid) - before) / streams;

  const writeMs: number[] = [];
  const lastMs: number[] = [];
  const allMs: number[] = [];
  try {
    for (let w = 0; w < writes; w++) {
      const marker = `fanout-${w}`;
      arrivals.set(marker, []);
      const all = new Promise<void>((resolve) => waiting.set(marker, resolve));
      const t0 = performance.now();
      const r = await fetch(`${url}/v2/organizations/add`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ data: { organizations: [{ organizationId: marker, organizationName: marker }] } }),
      });
      if (!r.ok) throw new Error(`write ${w}: HTTP ${r.status} ${await r.text()}`);
      writeMs.push(performance.now() - t0);
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([all, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`write ${w} reached ${arrivals.get(marker)?.length ?? 0} of ${streams} streams in 60 s`)), 60_000)))]);
      } finally {
        clearTimeout(timer);
      }
      const seen = arrivals.get(marker)!;
      lastMs.push(Math.max(...seen) - t0);
      for (const at of seen) allMs.push(at - t0);
      arrivals.delete(marker);
      waiting.delete(marker);
    }
  } finally {
    for (const req of requests) req.destroy();
    agent.destroy();
  }
  return { streams, kibPerStream: Math.round(kibPerStream * 10) / 10, write: delays(writeMs), lastArrival: delays(lastMs), arrival: delays(allMs) };
}
