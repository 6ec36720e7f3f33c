#!/usr/bin/env node
// The container's health check (Dockerfile HEALTHCHECK, docker-compose.yml healthcheck):
// exits 0 when GET http://127.0.0.1:$PORT<path> answers 200 within 2 s, else 1.
//   node scripts/healthcheck.mjs            /healthz: the process serves (liveness)
//   node scripts/healthcheck.mjs /readyz    the stores are open and the projections caught up
const path = process.argv[2] ?? '/healthz';
const port = process.env.PORT || '8080';
try {
  const r = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2000) });
  process.exit(r.status === 200 ? 0 : 1);
} catch {
  process.exit(1);
}
