#!/usr/bin/env node
// `npx collab <command>`, the package's bin. In production (NODE_ENV=production, or tsx not
// installed: after `npm prune --omit=dev`, and in the image) it runs the compiled CLI in dist/
// (`npm run build`); in development it runs src/cli.ts through tsx, so the CLI is always the
// sources being worked on, built or not.
import { existsSync, readFileSync } from 'node:fs';

// better-sqlite3 13 needs Node-API 10: on an older Node it crashes the process (a segfault on
// Node 20) instead of failing. Outside production, `npx collab` then does what `npm start` and
// `npm run cli` do on such a machine: runs again under the fallback Node of
// scripts/node-runtime.mjs (fetched into .node/ once). In production (NODE_ENV=production) it
// runs under that Node only when it is in .node/ already; it never fetches one, and where
// scripts/ is not shipped or the fallback is absent it says so plainly and stops.
const engines = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node;
const [want, have] = [/\d+\.\d+/.exec(engines)[0], process.versions.node].map((v) => v.split('.').map(Number));
if (have[0] < want[0] || (have[0] === want[0] && have[1] < want[1])) {
  const runtime = new URL('../scripts/node-runtime.mjs', import.meta.url);
  // Never returns: this process ends with the one under the fallback Node (or with its message).
  if (existsSync(runtime)) {
    const nodeRuntime = await import(runtime.href);
    // In production only a fallback Node already in .node/ (nothing is fetched there).
    if (process.env.NODE_ENV !== 'production' || nodeRuntime.installedNodeBin(nodeRuntime.fallbackVersion())) await nodeRuntime.ensureSupportedNode();
  }
  process.stderr.write(`collab needs Node ${engines} (package.json engines), this is ${process.version}: install Node 22 or 24 (README, Node versions).\n`);
  process.exit(1);
}

async function tsx() {
  if (process.env.NODE_ENV === 'production' || !existsSync(new URL('../src/cli.ts', import.meta.url))) return false;
  try {
    (await import('tsx/esm/api')).register();
    return true;
  } catch (e) {
    if (e?.code === 'ERR_MODULE_NOT_FOUND') return false;
    throw e;
  }
}

const dist = new URL('../dist/src/cli.js', import.meta.url);
let cli;
if (await tsx()) cli = await import('../src/cli.ts');
else if (existsSync(dist)) cli = await import(dist.href);
else {
  process.stderr.write('collab: dist/ is missing: run `npm run build` (README, Production).\n');
  process.exit(1);
}
const code = await cli.run(process.argv.slice(2));
if (code >= 0) process.exit(code);
