/**
 * The TypeScript client (clients/typescript/): its committed OpenAPI document and generated
 * types are what `npm run openapi` would write now, and the package's own `npm test` passes
 * (it type-checks the client and its tests, then runs them against the service started as a
 * child process: clients/typescript/test/). The client's tests live in the package only.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CLIENT_DIR, DOCUMENT_FILE, TYPES_FILE, generate } from '../scripts/openapi-generate.js';

const G = suite('TypeScript client: generated files, and the package\'s own tests');

G('clients/typescript/openapi.json and src/schema.d.ts are what the service generates now', async () => {
  const want = await generate();
  const stale = 'is stale: run `npm run openapi` and commit the result';
  assert.ok(fs.readFileSync(DOCUMENT_FILE, 'utf8') === want.document, `${path.relative(process.cwd(), DOCUMENT_FILE)} ${stale}`);
  assert.ok(fs.readFileSync(TYPES_FILE, 'utf8') === want.types, `${path.relative(process.cwd(), TYPES_FILE)} ${stale}`);
});

G('clients/typescript/package-lock.json is committed and in step with its package.json (npm ci, as its README installs it, leaves no untracked file)', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(CLIENT_DIR, 'package.json'), 'utf8'));
  const lock = JSON.parse(fs.readFileSync(path.join(CLIENT_DIR, 'package-lock.json'), 'utf8'));
  const root = lock.packages[''];
  assert.is(lock.name, pkg.name);
  assert.equal(root.dependencies, pkg.dependencies);
  assert.equal(root.devDependencies, pkg.devDependencies);
  for (const name of Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })) assert.ok(lock.packages[`node_modules/${name}`], `${name} is locked`);
  const tracked = spawnSync('git', ['ls-files', '--error-unmatch', 'package-lock.json'], { cwd: CLIENT_DIR, encoding: 'utf8' });
  assert.is(tracked.status, 0, 'clients/typescript/package-lock.json is tracked');
});

G('npm test in clients/typescript passes: the client type-checks and works against a running service', () => {
  const r = spawnSync('npm', ['test'], { cwd: CLIENT_DIR, encoding: 'utf8' });
  assert.is(r.status, 0, `npm test in clients/typescript failed:\n${r.stdout}${r.stderr}`);
  // Its suites ran and passed (uvu's summary), so a test file that stopped loading shows.
  assert.match(r.stdout.replace(/\x1b\[[0-9;]*m/g, ''), /Passed:\s+[1-9]/);
});

G.run();
