/**
 * The service as a real child process (npm start's entry point), for tests that need a real
 * socket, a kill -9 or a signal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
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
