/**
 * The service as a real child process (npm start's entry point), for tests that need a real
 * socket, a kill -9 or a signal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Extra `serve` arguments for the suites that opt in (server.process, concurrency.processes):
 * `TEST_SERVE_ARGS='--workers 2'` runs them against a cluster instead of one process.
 */
export const SERVE_ARGS = (process.env.TEST_SERVE_ARGS ?? '').split(/\s+/).filter(Boolean);

export interface Service {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function startService(env: Record<string, string>, script = 'src/server.ts', args: string[] = []): Promise<Service> {
  const port = env.PORT ?? String(await freePort());
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], {
    cwd: ROOT,
    // The suites create many workspaces from 127.0.0.1: no sign-up limit unless `env` sets one.
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', SIGNUP_RATE_PER_MINUTE: '0', ...env, PORT: port },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, url: `http://127.0.0.1:${port}`, output: () => out, exited };
}

/** Polls GET /healthz until 200 or the process exits. */
export async function waitHealthy(s: Service, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let done = false;
  void s.exited.then(() => (done = true));
  while (Date.now() < deadline && !done) {
    try {
      const r = await fetch(`${s.url}/healthz`);
      if (r.status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`service did not become healthy: ${s.output()}`);
}

export async function post(s: Service, route: string, data: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(`${s.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ data }),
  });
  return { status: r.status, body: (await r.json()) as any };
}

/**
 * One request on a connection of its own (no keep-alive pool), so `serve --workers N`'s cluster
 * hands each one out anew; `requestId` names it in the service's log (servedBy). Answers its
 * consistency token too (undefined when the answer has none).
 */
export function fresh(s: Service, route: string, data: unknown, headers: Record<string, string>, requestId: string) {
  const body = JSON.stringify({ data });
  return new Promise<{ status: number; body: any; token: string | undefined }>((resolve, reject) => {
    const req = http.request(`${s.url}${route}`, {
      method: 'POST',
      agent: false,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        const token = res.headers['x-consistency-token'];
        resolve({ status: res.statusCode!, body: JSON.parse(text), token: typeof token === 'string' ? token : undefined });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The service's JSON log lines so far (pino's), skipping one still being written. */
export function logLines(s: Service): Array<Record<string, any>> {
  const lines = [];
  for (const line of s.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line));
    } catch {
      /* a line still being written */
    }
  }
  return lines;
}

/** The pid that completed each named request, waiting (up to 10 s) for the log lines to arrive. */
export async function servedBy(s: Service, ids: string[]): Promise<Map<string, number>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const pids = new Map<string, number>();
    for (const l of logLines(s)) if (l.msg === 'request completed' && ids.includes(l.reqId)) pids.set(l.reqId, l.pid);
    if (pids.size === ids.length || Date.now() > deadline) return pids;
    await new Promise((r) => setTimeout(r, 50));
  }
}
