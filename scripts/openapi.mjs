#!/usr/bin/env node
// npm run openapi: writes the TypeScript client's generated files from the service's route
// schemas: clients/typescript/openapi.json (the document `GET /openapi.json` serves) and
// clients/typescript/src/schema.d.ts (openapi-typescript's types of it). Both are committed;
// test/client.e2e.test.ts fails when they differ from what this would write now.
//
// The work is in scripts/openapi-generate.ts, which imports the service's TypeScript sources:
// it runs through tsx, under a supported Node (the sources need better-sqlite3 13), with the
// devDependencies installed (openapi-typescript, tsx).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureSupportedNode, root } from './node-runtime.mjs';
import { ensureDeps } from './ensure-deps.mjs';

await ensureSupportedNode();
ensureDeps({ dev: true });
const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'scripts', 'openapi-generate.ts')], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
