/**
 * The console (issue 26, docs/console.md): `GET /console` serves the page and its built
 * assets from the repository's console/dist/ (committed; `npm run build:console` rebuilds it
 * and test/console.build.test.ts holds the committed files to a rebuild). Nothing here runs a
 * bundler: production serves the files as they are.
 *
 * Every answer carries the console's Content-Security-Policy: scripts and styles from this
 * origin only (no inline script, no eval), API calls to this origin only, and no framing by
 * any site (`frame-ancestors 'none'`, with X-Frame-Options for older browsers). The page holds
 * the credentials; a frame or a foreign script would be a way to them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** The policy of every console answer (docs/console.md, "Safety"). */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The files of console/dist/ the page loads, with their content types. */
const ASSETS: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

/**
 * console/dist/ of the package this module runs from: the nearest folder above it with a
 * package.json. That is the repository for src/http/ under tsx, /app for dist/src/http/ in
 * the image (the Dockerfile copies console/dist/ there), and the repository again for a
 * build compiled elsewhere inside it (test/build.test.ts compiles into .tmp/).
 */
export function consoleDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'console', 'dist');
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${here}: cannot find the console's files`);
  }
}

function secure(reply: FastifyReply, type: string): FastifyReply {
  return reply
    .header('content-type', type)
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache');
}

/**
 * Adds `GET /console`, `/console/<asset>` and `/favicon.ico` (a redirect to the icon). The files are read once, here: a
 * missing build is a loud error at start, not a blank page later.
 */
export function installConsole(app: FastifyInstance, dir = consoleDir()): void {
  const files = new Map<string, Buffer>();
  for (const name of Object.keys(ASSETS)) {
    const file = path.join(dir, name);
    if (!fs.existsSync(file)) throw new Error(`The console's ${file} is missing: run \`npm run build:console\` (docs/console.md).`);
    files.set(name, fs.readFileSync(file));
  }
  const serve = (name: string) => async (_req: unknown, reply: FastifyReply) => secure(reply, ASSETS[name]!).send(files.get(name));
  // `/console/` as well: the app ignores a trailing slash. The page names its assets by
  // absolute path, so both URLs load them.
  app.get('/console', { schema: { hide: true } }, serve('index.html'));
  for (const name of Object.keys(ASSETS)) app.get(`/console/${name}`, { schema: { hide: true } }, serve(name));
  // A browser asks for /favicon.ico by itself (on the API's own answers too): the console's
  // icon, where it lives, rather than a 404 in every devtools console.
  app.get('/favicon.ico', { schema: { hide: true } }, async (_req, reply) => reply.header('cache-control', 'public, max-age=86400').redirect('/console/favicon.svg', 301));
}
