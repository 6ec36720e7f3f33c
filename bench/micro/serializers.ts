// `node scripts/run.mjs dev bench/micro/serializers.ts`: the two hot answers written three
// ways: JSON.stringify (what the service uses), fast-json-stringify compiled from the route's
// declared answer schema (src/http/schema.ts, as Fastify would compile it). Checks first that
// each writes the same bytes. docs/performance.md records the result and the choice.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fjs from 'fast-json-stringify';
import { z } from 'zod';
import { allRoutes } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { openServices } from '../../src/composition/services.js';
import { successEnvelope } from '../../src/http/schema.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-serializers-'));
const services = await openServices(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }));
const routes = allRoutes(services);

function time(f: () => string, n = 100_000): number {
  for (let i = 0; i < n / 10; i++) f();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) f();
  return ((performance.now() - t0) * 1000) / n;
}

const permissions = {
  result: {
    status: 'success',
    message: 'Permissions retrieved successfully.',
    data: {
      u1: {
        organization: { o1: { accessRole: 'editor' } },
        documents: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`d${i}`, { accessRole: 'editor', accessType: 'public' }])),
      },
    },
  },
};
const rows = Array.from({ length: 100 }, (_, i) => ({ id: `doc-${i}`, documentName: `Document ${i}`, disabled: false, accessType: 'public' as const, ...(i % 2 ? {} : { folderId: 'f1' }) }));
const documents = { result: { status: 'success', message: 'Documents retrieved successfully.', data: rows } };

const cases: Array<[string, unknown, (() => string) | undefined]> = [
  ['/v2/auth/permissions/get', permissions, undefined],
  ['/v2/organizations/documents/get', documents, undefined],
];
for (const [routePath, answer, hand] of cases) {
  const route = routes.find((r) => r.path === routePath)!;
  const compiled = fjs(z.toJSONSchema(successEnvelope(route), { io: 'output', target: 'draft-7', unrepresentable: 'any' }) as object);
  const expected = JSON.stringify(answer);
  const writers: Array<[string, () => string]> = [
    ['JSON.stringify', () => JSON.stringify(answer)],
    ['fast-json-stringify (from the schema)', () => compiled(answer)],
    ...(hand ? [['hand-written rows', hand] as [string, () => string]] : []),
  ];
  console.log(routePath);
  for (const [name, write] of writers) {
    const same = write() === expected;
    console.log(`  ${name.padEnd(38)} ${same ? `${time(write).toFixed(2)} us per answer` : 'writes other bytes: not compared'}`);
  }
}
await services.close();
fs.rmSync(dir, { recursive: true, force: true });
