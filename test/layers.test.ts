/**
 * The layers' import rules, read from the import lines of the source (issue 24):
 *
 * - a use case (src/usecases/*.ts) imports nothing from src/http: the routes and the CLI
 *   call it, never the other way round;
 * - the CLI (src/cli.ts) imports no route module (src/http/routes/): what it shares with a
 *   route is a use case;
 * - a route module imports no other route module, except ./domain.js (the schemas and
 *   per-item helpers the routes share, no routes of its own) and registration: a module
 *   that lists other modules' routes as its own (domain-routes.ts lists the domain routes;
 *   workspace.ts lists allowed-domains.ts's `allowedDomainRoutes`). src/app.ts registers
 *   route modules and is not checked here.
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
  'src/http/routes/workspace.ts': ['src/http/routes/allowed-domains.ts'],
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

test.run();
