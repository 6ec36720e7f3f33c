#!/usr/bin/env node
// `npm run lint`: the habits `npm test` keeps, checked by hand: eslint (import cycles,
// duplicate imports, unused code, functions over 80 lines: eslint.config.mjs) over the whole
// repository, then knip
// (unused files, exports, types and dependencies: knip.jsonc). Prints each tool's findings and
// how long it took; exits non-zero when either finds anything, warnings included.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureSupportedNode, root } from './node-runtime.mjs';
import { ensureDeps } from './ensure-deps.mjs';

// eslint 10 needs a newer Node than 20: on an older one this runs again under the fallback
// Node, as npm test does (README, Node versions).
await ensureSupportedNode();
ensureDeps({ dev: true });

const tools = [
  { name: 'eslint', args: [path.join(root, 'node_modules', 'eslint', 'bin', 'eslint.js'), '--max-warnings', '0', '.'] },
  { name: 'knip', args: [path.join(root, 'node_modules', 'knip', 'bin', 'knip.js'), '--no-progress'] },
];

let failed = 0;
for (const tool of tools) {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, tool.args, { cwd: root, stdio: 'inherit' });
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  const ok = r.status === 0;
  if (!ok) failed++;
  console.log(`${tool.name}: ${ok ? 'clean' : r.error ? `did not run (${r.error.message})` : `findings (exit ${r.status ?? r.signal})`} in ${seconds} s`);
}
process.exit(failed === 0 ? 0 : 1);
