/**
 * The layers' import rules, read from the import lines of the source (issue 24):
 *
 * - a use case (src/usecases/*.ts) imports nothing from src/http: the routes and the CLI
 *   call it, never the other way round;
 * - the CLI (src/cli.ts) imports no route module (src/http/routes/): what it shares with a
 *   route is a use case;
 * - a route module imports no other route module, except ./domain.js (the schemas and
 *   per-item helpers the routes share, no routes of its own) and registration: a module
 *   that lists other modules' routes as its own (domain-routes.ts lists the domain routes).
 *   src/app.ts registers route modules and is not checked here.
 *
 * Type-only imports count: `import type` from src/http in a use case fails as well.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve, dirname, relative } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const routesDir = join(root, 'src/http/routes');

/** The repository-relative files a module imports (`from '...'` with a relative path). */
function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of source.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']+)'/gms)) {
    out.push(relative(root, resolve(dirname(file), m[1]!)).replace(/\.js$/, '.ts'));
  }
  return out;
}

const tsIn = (dir: string) => readdirSync(join(root, dir)).filter((f) => f.endsWith('.ts')).map((f) => join(root, dir, f));

/** The route modules a route may import besides its own: shared helpers, and what it registers. */
const allowedRouteImports: Record<string, string[]> = {
  'src/http/routes/domain-routes.ts': tsIn('src/http/routes').map((f) => relative(root, f)),
};

test('the import reader finds what a module imports', () => {
  // Guards the rules below against a reader that finds nothing and passes everything.
  assert.ok(importsOf(join(root, 'src/cli.ts')).includes('src/usecases/workspace.ts'));
  assert.ok(importsOf(join(routesDir, 'domain-routes.ts')).includes('src/http/routes/documents.ts'));
});

test('a use case imports nothing from src/http', () => {
  const files = tsIn('src/usecases');
  assert.ok(files.length > 0, 'src/usecases has modules');
  const upward = files.flatMap((f) => importsOf(f).filter((i) => i.startsWith('src/http/')).map((i) => `${relative(root, f)} -> ${i}`));
  assert.equal(upward, []);
});

test('the CLI imports no route module', () => {
  assert.equal(importsOf(join(root, 'src/cli.ts')).filter((i) => i.startsWith('src/http/routes/')), []);
});

test('a route module imports no other route module (but ./domain.js and what it registers)', () => {
  const sideways = tsIn('src/http/routes').flatMap((f) => {
    const self = relative(root, f);
    const allowed = new Set(['src/http/routes/domain.ts', ...(allowedRouteImports[self] ?? [])]);
    return importsOf(f).filter((i) => i.startsWith('src/http/routes/') && !allowed.has(i)).map((i) => `${self} -> ${i}`);
  });
  assert.equal(sideways, []);
});

/**
 * The folders from the bottom up: a module imports only from its own folder or from folders
 * above it in this list (lower layers), never from one below. "Where does a new thing go" is
 * answered by the lowest folder whose imports it can live with (docs/architecture.md).
 */
const LAYERS = [
  'src/shared', // errors, ids, envelope encryption, eviction: imports nothing of ours
  'src/ports', // EventStore, ReadStore
  'src/adapters', // the stores behind the ports, outbound HTTP (egress), URL parsers
  'src/config', // environment variables, parsed and checked
  'src/runtime', // command handler, projection runner, leases, notices, idempotency records
  'commands', // aggregates: events, evolve, decide; domain helpers beside them
  'src/tokens', // JWT signing and verification
  'projections', // read models
  'queries', // reads over the read models
  'src/secrets', // tenants' secrets sealed at rest
  'src/presence',
  'src/webhooks', // the deliverer following the log
  'src/jobs', // the cascade worker
  'src/ops', // what the operator's CLI runs: audit, parked, rebuild
  'src/composition', // openServices: the composition root
  'src/usecases', // what a route and the CLI both do
  'src/http', // Fastify pieces: auth, limits, validation, metrics
  'src/http/routes', // one module per area of the API
  'src', // the processes: app.ts, server.ts, cli.ts, cluster.ts, background-worker.ts
];

function productionFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (rel.endsWith('.ts')) out.push(rel);
    }
  };
  for (const dir of ['src', 'commands', 'projections', 'queries']) walk(dir);
  return out;
}

test('every production folder has its place in the layer list', () => {
  const folders = new Set(productionFiles().map((f) => dirname(f)));
  assert.equal([...folders].filter((d) => !LAYERS.includes(d)), []);
});

test('no import points down the layer list (type-only imports count)', () => {
  const downward: string[] = [];
  for (const f of productionFiles()) {
    const from = LAYERS.indexOf(dirname(f));
    for (const i of importsOf(join(root, f))) {
      const to = LAYERS.indexOf(dirname(i));
      if (to > from) downward.push(`${f} -> ${i}`);
    }
  }
  assert.ok(importsOf(join(root, 'src/server.ts')).length > 3, 'the reader sees the processes\' imports');
  assert.equal(downward, []);
});

test('no import cycle between files (type-only imports count)', () => {
  const graph = new Map(productionFiles().map((f) => [f, importsOf(join(root, f))]));
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (f: string, path: string[]) => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      cycles.push([...path.slice(path.indexOf(f)), f].join(' -> '));
      return;
    }
    state.set(f, 'open');
    for (const next of graph.get(f) ?? []) visit(next, [...path, f]);
    state.set(f, 'done');
  };
  for (const f of graph.keys()) visit(f, []);
  assert.equal(cycles, []);
});

test('the cycle and layer checks see a cycle when there is one', () => {
  // A guard against a reader that finds nothing: the two modules below import each other.
  const graph = new Map([['a.ts', ['b.ts']], ['b.ts', ['a.ts']]]);
  const seen = new Set<string>();
  let cyclic = false;
  const visit = (f: string, open: Set<string>) => {
    if (open.has(f)) { cyclic = true; return; }
    if (seen.has(f)) return;
    seen.add(f);
    for (const n of graph.get(f) ?? []) visit(n, new Set([...open, f]));
  };
  visit('a.ts', new Set());
  assert.ok(cyclic);
});

test.run();
