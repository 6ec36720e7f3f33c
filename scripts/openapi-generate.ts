/**
 * The TypeScript client's generated files (clients/typescript/): the OpenAPI document the
 * service serves at `GET /openapi.json`, and the types openapi-typescript writes from it.
 * `npm run openapi` (scripts/openapi.mjs) runs this file through tsx to write both;
 * test/client.e2e.test.ts calls `generate()` to check that the committed files are current.
 *
 * The app is built over embedded stores in a temporary DATA_DIR and never listens: the
 * document is read with `app.inject`. The configuration is the defaults (not this process's
 * environment), so a developer's BODY_LIMIT, say, does not end up in the committed document.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { COMMENT_HEADER, astToString } from 'openapi-typescript';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { openServices } from '../src/composition/services.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CLIENT_DIR = path.join(root, 'clients', 'typescript');
export const DOCUMENT_FILE = path.join(CLIENT_DIR, 'openapi.json');
export const TYPES_FILE = path.join(CLIENT_DIR, 'src', 'schema.d.ts');

/** The OpenAPI document as `GET /openapi.json` answers it, with the default configuration. */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-openapi-'));
  try {
    const services = await openServices(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir }));
    try {
      const app = await buildApp(services, { logger: false });
      try {
        const res = await app.inject({ method: 'GET', url: '/openapi.json' });
        if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}: ${res.body.slice(0, 500)}`);
        return JSON.parse(res.body) as Record<string, unknown>;
      } finally {
        await app.close();
      }
    } finally {
      await services.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The contents of clients/typescript/openapi.json and src/schema.d.ts, as they should be. */
export async function generate(): Promise<{ document: string; types: string }> {
  const doc = await openApiDocument();
  const nodes = await openapiTS(doc as unknown as Parameters<typeof openapiTS>[0], { silent: true });
  return {
    document: `${JSON.stringify(doc, null, 2)}\n`,
    types: `${COMMENT_HEADER}${astToString(nodes)}`,
  };
}

const isEntry = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isEntry) {
  const { document, types } = await generate();
  fs.writeFileSync(DOCUMENT_FILE, document);
  fs.writeFileSync(TYPES_FILE, types);
  process.stdout.write(`wrote ${path.relative(root, DOCUMENT_FILE)} and ${path.relative(root, TYPES_FILE)}\n`);
}
