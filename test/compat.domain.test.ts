/**
 * The hosted API's documented examples, answered as documented (issue 14, semantics §0),
 * for organizations, folders, documents, users, user groups and auth. Each fixture under
 * test/fixtures/hosted/<area>/<endpoint>.json is ours, derived from the hosted page it names
 * (`source`): its request examples as written (headers renamed: x-velt-* is x-service-*),
 * and what we answer, as far as a client relies on it. Every example runs on a fresh tenant
 * after the fixture's `setup` (requests that build what the example assumes exists).
 *
 * How `response` is compared with the answer (`matches` below):
 * - objects have exactly the listed keys, unless the object lists `"$extra": true` (the
 *   hosted page says more fields may come, or we add one: the fixture's `differences` says);
 * - arrays have exactly the listed items, in order;
 * - `"<string>"`, `"<number>"`, `"<boolean>"`: any value of that type (ids the hosted API
 *   makes up, timestamps, tokens); `"<absent>"`: the key must not be there;
 *   `"<apiKey>"`: the tenant's API key;
 * - anything else: equal, character for character.
 * An example whose answer is one of semantics §0's deliberate differences names it in
 * `difference`; docs/compatibility.md lists them all.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness } from './support/app.js';

const AREAS = ['organizations', 'folders', 'documents', 'users', 'user-groups', 'auth'];
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'hosted');

interface Step {
  url: string;
  data: unknown;
  /**
   * Values of the answer kept for later requests: name -> dotted path in the body
   * (`result.data.migrationId`); `${name}` in a later request's strings is that value (an id
   * the service makes, which the page's example names `yourMigrationId`).
   */
  capture?: Record<string, string>;
}
interface Example {
  name: string;
  /** How this request relates to the page: as written, or derived (a variant the page implies). */
  kind: 'as written' | 'derived';
  request: { data: unknown };
  status: number;
  response: unknown;
  difference?: string;
  /** Runs after the example's request (reads that show its effect). */
  then?: Array<Step & { status?: number; response: unknown }>;
}
interface Fixture {
  source: string;
  endpoint: string;
  setup?: Step[];
  differences?: string[];
  examples: Example[];
}

/** Why `actual` does not match `expected` (see the top of this file), or null when it does. */
export function mismatch(expected: unknown, actual: unknown, ctx: { apiKey: string }, at = '$'): string | null {
  if (typeof expected === 'string' && /^<[a-zA-Z]+>$/.test(expected)) {
    switch (expected) {
      case '<string>':
      case '<number>':
      case '<boolean>':
        return typeof actual === expected.slice(1, -1) ? null : `${at}: expected ${expected}, got ${JSON.stringify(actual)}`;
      case '<apiKey>':
        return actual === ctx.apiKey ? null : `${at}: expected the tenant's API key, got ${JSON.stringify(actual)}`;
      case '<absent>':
        return actual === undefined ? null : `${at}: expected no value, got ${JSON.stringify(actual)}`;
      default:
        throw new Error(`unknown placeholder ${expected} at ${at}`);
    }
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${at}: expected an array, got ${JSON.stringify(actual)}`;
    if (actual.length !== expected.length) return `${at}: expected ${expected.length} items, got ${actual.length}: ${JSON.stringify(actual)}`;
    for (let i = 0; i < expected.length; i++) {
      const why = mismatch(expected[i], actual[i], ctx, `${at}[${i}]`);
      if (why) return why;
    }
    return null;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return `${at}: expected an object, got ${JSON.stringify(actual)}`;
    const e = expected as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    for (const [k, v] of Object.entries(e)) {
      if (k === '$extra') continue;
      const why = mismatch(v, Object.hasOwn(a, k) ? a[k] : undefined, ctx, `${at}.${k}`);
      if (why) return why;
    }
    if (e.$extra !== true) {
      const extra = Object.keys(a).filter((k) => !Object.hasOwn(e, k));
      if (extra.length > 0) return `${at}: unexpected keys ${JSON.stringify(extra)} in ${JSON.stringify(actual)}`;
    }
    return null;
  }
  return Object.is(expected, actual) ? null : `${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
}

/** `value` with every `${name}` in its strings replaced by what was captured. */
function fill(value: unknown, captured: Map<string, string>): unknown {
  if (typeof value === 'string') return value.replace(/\$\{(\w+)\}/g, (m, name: string) => captured.get(name) ?? m);
  if (Array.isArray(value)) return value.map((v) => fill(v, captured));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, captured)]));
  return value;
}

/** Keeps the values a step's `capture` names from its answer's body. */
function keep(step: Step, body: unknown, captured: Map<string, string>) {
  for (const [name, at] of Object.entries(step.capture ?? {})) {
    const v = at.split('.').reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), body);
    assert.type(v, 'string', `capture ${name} at ${at}`);
    captured.set(name, v as string);
  }
}

function fixtures(): Array<[string, Fixture]> {
  const out: Array<[string, Fixture]> = [];
  for (const area of AREAS) {
    for (const file of fs.readdirSync(path.join(ROOT, area)).filter((f) => f.endsWith('.json')).sort()) {
      out.push([`${area}/${file}`, JSON.parse(fs.readFileSync(path.join(ROOT, area, file), 'utf8')) as Fixture]);
    }
  }
  return out;
}

const all = fixtures();
let h: Harness;

const Matcher = suite('fixture matcher');
Matcher('exact keys, $extra, placeholders, order', () => {
  const ctx = { apiKey: 'k' };
  assert.is(mismatch({ a: 1 }, { a: 1 }, ctx), null);
  assert.match(mismatch({ a: 1 }, { a: 1, b: 2 }, ctx)!, /unexpected keys \["b"\]/);
  assert.is(mismatch({ a: 1, $extra: true }, { a: 1, b: 2 }, ctx), null);
  assert.match(mismatch({ a: 'Added Successfully' }, { a: 'Added successfully' }, ctx)!, /\$\.a/);
  assert.is(mismatch({ t: '<number>', k: '<apiKey>', n: '<absent>' }, { t: 1, k: 'k' }, ctx), null);
  assert.match(mismatch({ n: '<absent>' }, { n: 'x' }, ctx)!, /expected no value/);
  assert.match(mismatch([1, 2], [2, 1], ctx)!, /\$\[0\]/);
  assert.match(mismatch({ a: '<string>' }, {}, ctx)!, /expected <string>/);
});
Matcher.run();

const Shape = suite('fixtures are well formed');
Shape('every fixture names its page, endpoint and at least one example as written', () => {
  assert.ok(all.length >= 25, `${all.length} fixtures`);
  for (const [file, f] of all) {
    assert.match(f.source, /^rest-apis\/v2\/.+\.mdx$/, file);
    assert.match(f.endpoint, /^\/v2\//, file);
    assert.ok(f.examples.some((e) => e.kind === 'as written'), `${file} has an example as written`);
    for (const e of f.examples) assert.ok(e.kind === 'as written' || e.kind === 'derived', `${file}: ${e.name}`);
  }
});
Shape.run();

const Compat = suite('hosted examples');
Compat.before(async () => {
  h = await harness();
});
Compat.after(async () => {
  await h.close();
});
for (const [file, fixture] of all) {
  for (const example of fixture.examples) {
    Compat(`${file} ${fixture.endpoint}, ${example.kind}: ${example.name}`, async () => {
      const tenant = await h.tenant();
      const captured = new Map<string, string>();
      for (const step of fixture.setup ?? []) {
        const r = await h.post(step.url, fill(step.data, captured), tenant.headers);
        assert.is(r.status, 200, `setup ${step.url}: ${JSON.stringify(r.body)}`);
        keep(step, r.body, captured);
      }
      const res = await h.app.inject({ method: 'POST', url: fixture.endpoint, payload: fill(example.request, captured) as object, headers: tenant.headers });
      const body = JSON.parse(res.body);
      assert.is(res.statusCode, example.status, JSON.stringify(body));
      const why = mismatch(example.response, body, { apiKey: tenant.apiKey });
      assert.is(why, null, why ?? '');
      for (const step of example.then ?? []) {
        const r = await h.post(step.url, fill(step.data, captured), tenant.headers);
        assert.is(r.status, step.status ?? 200, `${step.url}: ${JSON.stringify(r.body)}`);
        const w = mismatch(step.response, r.body, { apiKey: tenant.apiKey });
        assert.is(w, null, `then ${step.url}: ${w}`);
      }
    });
  }
}
Compat.run();
