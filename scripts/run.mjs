#!/usr/bin/env node
// The README's commands, so that each works on a fresh clone with nothing else done:
//
//   node scripts/run.mjs start [serve args]  npm start: the compiled service (dist/), built
//                                            first when dist/ is missing or stale
//   node scripts/run.mjs test                npm test: type-check, then every test suite
//   node scripts/run.mjs dev <file.ts> [...] npm run cli / bench: a TypeScript file through tsx
//
// Each first makes sure of a supported Node (scripts/node-runtime.mjs: on an older one it runs
// again under the fallback Node, outside production) and of the dependencies
// (scripts/ensure-deps.mjs). Node built-ins only until then.
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { ensureSupportedNode, relay, root } from './node-runtime.mjs';
import { ensureDeps } from './ensure-deps.mjs';
import { ensureBuild } from './build.mjs';
import { ensureTestPrereqs } from './test-prereqs.mjs';

const [task, ...rest] = process.argv.slice(2);

switch (task) {
  case 'start': {
    await ensureSupportedNode();
    ensureDeps();
    ensureBuild();
    // In this process: the service's own SIGTERM/SIGINT handling applies as with `node dist/src/server.js`.
    const { main } = await import(pathToFileURL(path.join(root, 'dist', 'src', 'server.js')).href);
    await main(rest);
    break;
  }
  case 'test': {
    await ensureSupportedNode();
    ensureDeps({ dev: true });
    // The whole suite needs PostgreSQL's server, Chromium and `ip netns`: installed here where
    // possible, or one message now rather than failed suites twenty minutes later.
    if (rest.length === 0) {
      const why = ensureTestPrereqs();
      if (why) {
        process.stderr.write(why);
        process.exit(1);
      }
    }
    const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', root], { cwd: root, stdio: 'inherit' });
    if (tsc.status !== 0) process.exit(tsc.status ?? 1);
    relay(process.execPath, [path.join(root, 'scripts', 'test.mjs'), ...rest]);
    break;
  }
  case 'dev': {
    await ensureSupportedNode();
    ensureDeps({ dev: true });
    if (!rest[0]) {
      process.stderr.write('usage: node scripts/run.mjs dev <file.ts> [args]\n');
      process.exit(2);
    }
    relay(process.execPath, ['--import', 'tsx', path.resolve(root, rest[0]), ...rest.slice(1)]);
    break;
  }
  default:
    process.stderr.write('usage: node scripts/run.mjs start|test|dev <file.ts> [args]\n');
    process.exit(2);
}
