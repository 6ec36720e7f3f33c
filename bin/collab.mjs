#!/usr/bin/env node
// `npx collab <command>`: runs src/cli.ts through tsx's loader (no build step).
import { register } from 'tsx/esm/api';

register();
const { run } = await import('../src/cli.ts');
const code = await run(process.argv.slice(2));
if (code >= 0) process.exit(code);
