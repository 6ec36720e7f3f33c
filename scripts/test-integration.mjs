#!/usr/bin/env node
// npm run test:integration: the port contract suites against every adapter whose store is
// reachable: the embedded ones always, EventStoreDB when EVENTSTORE_URL is set, MongoDB when
// MONGODB_URL is set. Says plainly which production stores were not tested.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const missing = [
  ['EVENTSTORE_URL', 'EventStoreDB event store'],
  ['MONGODB_URL', 'MongoDB read store'],
].filter(([v]) => !process.env[v]);
for (const [v, what] of missing) {
  process.stdout.write(`${v} is not set: the ${what} contract is SKIPPED (only the embedded adapters run).\n`);
}
if (missing.length === 0) process.stdout.write('EVENTSTORE_URL and MONGODB_URL set: running the contracts against EventStoreDB and MongoDB too.\n');
const child = spawn(process.execPath, [path.join(root, 'scripts', 'test.mjs'), '(event-store|read-store)\\.[a-z]+\\.test\\.ts$'], { cwd: root, stdio: 'inherit' });
child.on('close', (code) => process.exit(code ?? 1));
