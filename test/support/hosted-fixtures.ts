/**
 * Runs the hosted-API fixtures (test/fixtures/hosted/<area>/<endpoint>.json) through
 * `app.inject`: each documented request example, sent as written (headers renamed), must
 * answer with the documented status, message and shape.
 *
 * A fixture file is data only (JSON, the `Fixture` type below): the endpoint, which
 * credentials it takes (`apiKey`, `workspace`, `none`), optional operator settings of the
 * workspace, and cases run in order on one fresh tenant. A case has optional `setup`
 * requests (each must answer 200), the `request` (the `data` the docs show), the expected
 * HTTP `status`, `message` (character for character; null: any), `error` status, and the
 * shape of `data` (or of `error.details`), then optional `then` reads with their own
 * expectations. `${name}` in any string is replaced: `apiKey` and `workspaceId` of the
 * tenant, and whatever a `capture` (name -> dotted path in `result.data`) kept. Where the
 * docs use an id this service cannot know (`velt_api_key_1`), the fixture says `${apiKey}`;
 * where they use an agent or group id, `setup` creates it under that id.
 *
 * Shapes (matchShape): a type name ("string", "number|null", "array"...; a trailing "?"
 * makes the field optional), `{ "$eq": value }` (deep equality), `{ "$arrayOf": shape,
 * "$minLength"?: n }`, an array of shapes (same length), a number, boolean or null literal,
 * or an object of shapes: each key present and matching; `"$only": true` allows no other
 * key, `"$absent": [keys]` forbids some, `"$values": shape` and `"$count": n` check an
 * object keyed by generated ids (`apiKeyList`).
 */
import fs from 'node:fs';
import path from 'node:path';
import * as assert from 'uvu/assert';
import type { Harness, Response, Tenant } from './app.js';
import { workspaceDecider, workspaceStream } from '../../commands/workspace.js';

type Auth = 'apiKey' | 'workspace' | 'none';

interface Expect {
  /** HTTP status. */
  status: number;
  /** `result.message` or `error.message`, character for character; null: any string. */
  message: string | null;
  /** `error.status` on a failure. */
  error?: string;
  /** Shape of `result.data` (see README). */
  data?: unknown;
  /** Shape of `error.details`. */
  details?: unknown;
}

interface Step {
  path: string;
  data: unknown;
  auth?: Auth;
  /** Values from `result.data` kept for later `${name}`: name -> dotted path. */
  capture?: Record<string, string>;
}

interface Case {
  name: string;
  /** Where in the hosted docs the request comes from, or why it is ours. */
  source: string;
  setup?: Step[];
  request: unknown;
  /** Defaults to the file's endpoint. */
  path?: string;
  auth?: Auth;
  capture?: Record<string, string>;
  expect: Expect;
  /** Reads after the request, each with its own expectation. */
  then?: Array<Step & { expect: Expect }>;
}

export interface Fixture {
  endpoint: string;
  auth: Auth;
  /** Operator settings of the tenant's workspace (production keys), applied as the CLI does. */
  workspaceSettings?: { plan?: 'free' | 'paid'; productionKeysEnabled?: boolean; maxProductionKeys?: number };
  cases: Case[];
}

export function loadFixtures(root: string, areas: string[]): Array<{ file: string; fixture: Fixture }> {
  const out: Array<{ file: string; fixture: Fixture }> = [];
  for (const area of areas) {
    const dir = path.join(root, area);
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
      out.push({ file: `${area}/${f}`, fixture: JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Fixture });
    }
  }
  return out;
}

type Vars = Record<string, string>;

/** Replaces `${name}` in every string of `v`. */
function substitute(v: unknown, vars: Vars): unknown {
  if (typeof v === 'string') {
    return v.replace(/\$\{([A-Za-z0-9_]+)\}/g, (_m, k: string) => {
      if (!Object.hasOwn(vars, k)) throw new Error(`fixture variable \${${k}} is not defined`);
      return vars[k]!;
    });
  }
  if (Array.isArray(v)) return v.map((x) => substitute(x, vars));
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x, vars)]));
  return v;
}

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/**
 * Checks `actual` against a shape (README): a type name ("string", "number|null", a trailing
 * "?" for optional), `{ "$eq": value }`, `{ "$arrayOf": shape, "$minLength"?: n }`, an array
 * of shapes (same length), an object of shapes (each key present; `"$only": true` allows no
 * other key; `"$absent": [keys]`; `"$values": shape` and `"$count": n` for objects keyed by
 * generated ids), or a number, boolean or null literal.
 */
export function matchShape(actual: unknown, shape: unknown, at: string): void {
  if (typeof shape === 'string') {
    const optional = shape.endsWith('?');
    const types = (optional ? shape.slice(0, -1) : shape).split('|');
    if (optional && actual === undefined) return;
    assert.ok(types.includes(typeOf(actual)), `${at}: expected ${shape}, got ${JSON.stringify(actual)}`);
    return;
  }
  if (shape === null || typeof shape !== 'object') {
    assert.is(actual, shape, `${at}: expected ${JSON.stringify(shape)}`);
    return;
  }
  if (Array.isArray(shape)) {
    assert.ok(Array.isArray(actual), `${at}: expected an array, got ${JSON.stringify(actual)}`);
    assert.is((actual as unknown[]).length, shape.length, `${at}: length`);
    shape.forEach((s, i) => matchShape((actual as unknown[])[i], s, `${at}[${i}]`));
    return;
  }
  const s = shape as Record<string, unknown>;
  if (Object.hasOwn(s, '$eq')) {
    assert.equal(actual, s.$eq, `${at}: expected ${JSON.stringify(s.$eq)}, got ${JSON.stringify(actual)}`);
    return;
  }
  if (Object.hasOwn(s, '$arrayOf')) {
    assert.ok(Array.isArray(actual), `${at}: expected an array, got ${JSON.stringify(actual)}`);
    const items = actual as unknown[];
    if (typeof s.$minLength === 'number') assert.ok(items.length >= s.$minLength, `${at}: at least ${s.$minLength} items, got ${items.length}`);
    items.forEach((x, i) => matchShape(x, s.$arrayOf, `${at}[${i}]`));
    return;
  }
  assert.is(typeOf(actual), 'object', `${at}: expected an object, got ${JSON.stringify(actual)}`);
  const obj = actual as Record<string, unknown>;
  const keys = Object.keys(s).filter((k) => !k.startsWith('$'));
  for (const k of keys) {
    const sub = s[k];
    if (!(typeof sub === 'string' && sub.endsWith('?'))) assert.ok(Object.hasOwn(obj, k), `${at}.${k}: missing in ${JSON.stringify(obj)}`);
    matchShape(obj[k], sub, `${at}.${k}`);
  }
  if (s.$only === true) {
    const extra = Object.keys(obj).filter((k) => !keys.includes(k));
    assert.equal(extra, [], `${at}: unexpected fields ${extra.join(', ')}`);
  }
  for (const k of (s.$absent as string[] | undefined) ?? []) assert.not.ok(Object.hasOwn(obj, k), `${at}.${k}: must be absent`);
  if (typeof s.$count === 'number') assert.is(Object.keys(obj).length, s.$count, `${at}: number of entries`);
  if (s.$values !== undefined) for (const [k, v] of Object.entries(obj)) matchShape(v, s.$values, `${at}.${k}`);
}

function at(obj: unknown, dotted: string): unknown {
  let cur = obj;
  for (const p of dotted.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = /^\d+$/.test(p) && Array.isArray(cur) ? cur[Number(p)] : (cur as Record<string, unknown>)[p];
  }
  return cur;
}

function check(res: Response, expect: Expect, where: string): void {
  const body = res.body as { result?: { status: string; message: string; data?: unknown }; error?: { status: string; message: string; details?: unknown } };
  assert.is(res.status, expect.status, `${where}: HTTP status; body ${JSON.stringify(body)}`);
  if (expect.status === 200) {
    assert.is(body.result?.status, 'success', `${where}: result.status`);
    if (expect.message !== null) assert.is(body.result?.message, expect.message, `${where}: message`);
    else assert.type(body.result?.message, 'string');
    if (expect.data !== undefined) matchShape(body.result?.data, expect.data, `${where}: data`);
  } else {
    assert.ok(body.error, `${where}: failure envelope`);
    if (expect.error) assert.is(body.error!.status, expect.error, `${where}: error.status`);
    if (expect.message !== null) assert.is(body.error!.message, expect.message, `${where}: error.message`);
    else assert.type(body.error!.message, 'string');
    if (expect.details !== undefined) matchShape(body.error!.details, expect.details, `${where}: error.details`);
  }
}

function headersFor(auth: Auth, t: Tenant): Record<string, string> {
  if (auth === 'apiKey') return t.headers;
  if (auth === 'workspace') return t.workspaceHeaders;
  return {};
}

/** Runs one fixture file's cases in order, on a fresh tenant. */
export async function runFixture(h: Harness, fixture: Fixture, file: string): Promise<number> {
  const t = await h.tenant();
  if (fixture.workspaceSettings) {
    const r = await h.services.commands.handle(
      workspaceDecider,
      workspaceStream(t.workspaceId),
      { type: 'ChangeWorkspaceSettings', data: fixture.workspaceSettings, metadata: { now: Date.now() } },
      { requestId: 'fixture', actor: 'cli', time: Date.now(), workspaceId: t.workspaceId },
    );
    if (r.position) await h.services.projections.waitFor(r.position, 5000);
  }
  const vars: Vars = { apiKey: t.apiKey, workspaceId: t.workspaceId };
  const send = (p: string, data: unknown, auth: Auth) => h.post(p, substitute(data, vars), headersFor(auth, t));
  const keep = (res: Response, capture: Record<string, string> | undefined, where: string) => {
    for (const [name, p] of Object.entries(capture ?? {})) {
      const v = at(res.body?.result?.data, p);
      assert.type(v, 'string', `${where}: capture ${name} from data.${p}`);
      vars[name] = v as string;
    }
  };
  let checked = 0;
  for (const c of fixture.cases) {
    const where = `${file} "${c.name}"`;
    for (const [i, step] of (c.setup ?? []).entries()) {
      const res = await send(step.path, step.data, step.auth ?? fixture.auth);
      assert.is(res.status, 200, `${where} setup ${i} (${step.path}): ${JSON.stringify(res.body)}`);
      keep(res, step.capture, `${where} setup ${i}`);
    }
    const res = await send(c.path ?? fixture.endpoint, c.request, c.auth ?? fixture.auth);
    check(res, substitute(c.expect, vars) as Expect, where);
    keep(res, c.capture, where);
    checked++;
    for (const [i, step] of (c.then ?? []).entries()) {
      const after = await send(step.path, step.data, step.auth ?? fixture.auth);
      check(after, substitute(step.expect, vars) as Expect, `${where} then ${i} (${step.path})`);
      keep(after, step.capture, `${where} then ${i}`);
      checked++;
    }
  }
  return checked;
}
