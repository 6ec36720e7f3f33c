/**
 * An open-loop load at a fixed rate, for latency at a steady load (bench/run.ts, perm1rate).
 *
 * Why not autocannon: with a rate set it lets each connection send its share of a second back
 * to back at the second's start and then waits, so at 1,000 requests/s the service sees bursts
 * of hundreds and the latencies measured are mostly the burst's queue, not the service's.
 * Here request i is due at start + i / rate, spread evenly over the second, and goes out on
 * the first free keep-alive connection at the next tick of a 1 ms timer.
 *
 * Two latencies per request:
 * - `p50`/`p99`...: from when it was sent to its answer's last byte;
 * - `lateP99`: from when it was DUE to when it was sent. A stall in the service holds the
 *   connections, so requests due during it go out late: this shows it, where a measure from
 *   the send alone would hide it (coordinated omission). It also holds the timer's own
 *   lateness (up to a millisecond or more on a loaded machine), which is why it is reported
 *   apart rather than added to every request: on these machines it would drown what the
 *   service does.
 */
import http from 'node:http';

export interface SteadyResult {
  /** Requests completed per second over the run. */
  achievedRate: number;
  sent: number;
  non2xx: number;
  errors: number;
  /** Milliseconds from each request's send to its answer's last byte. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Milliseconds from due to sent, 99th percentile: stalls (and the timer's lateness). */
  lateP99: number;
}

export async function steadyLoad(opts: {
  url: string;
  path: string;
  body: string;
  headers: Record<string, string>;
  rate: number;
  seconds: number;
  /** Keep-alive connections available; more are not opened. */
  connections: number;
}): Promise<SteadyResult> {
  const target = new URL(opts.path, opts.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const headers = { ...opts.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(opts.body)) };
  const total = Math.round(opts.rate * opts.seconds);
  const latencies = new Float64Array(total);
  const late = new Float64Array(total);
  let done = 0;
  let non2xx = 0;
  let errors = 0;
  const start = performance.now();

  const send = (i: number, due: number) =>
    new Promise<void>((resolve) => {
      const sent = performance.now();
      late[i] = sent - due;
      const req = http.request(target, { method: 'POST', agent, headers }, (res) => {
        if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode >= 300) non2xx++;
        res.on('data', () => {});
        res.on('end', () => {
          latencies[i] = performance.now() - sent;
          done++;
          resolve();
        });
      });
      req.on('error', () => {
        latencies[i] = performance.now() - sent;
        errors++;
        done++;
        resolve();
      });
      req.end(opts.body);
    });

  const inFlight: Array<Promise<void>> = [];
  let next = 0;
  await new Promise<void>((resolve) => {
    // A timer every millisecond sends what has come due since the last one: at 1,000/s about
    // one request per tick, never a second's worth at once.
    const tick = () => {
      const now = performance.now();
      while (next < total && start + (next * 1000) / opts.rate <= now) {
        inFlight.push(send(next, start + (next * 1000) / opts.rate));
        next++;
      }
      if (next < total) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  await Promise.all(inFlight);
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  const sorted = Array.from(latencies).sort((a, b) => a - b);
  const q = (p: number, xs = sorted) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
  const lateSorted = Array.from(late).sort((a, b) => a - b);
  return {
    achievedRate: done / elapsed,
    sent: total,
    non2xx,
    errors,
    p50: q(0.5),
    p90: q(0.9),
    p99: q(0.99),
    max: sorted[sorted.length - 1]!,
    lateP99: q(0.99, lateSorted),
  };
}
