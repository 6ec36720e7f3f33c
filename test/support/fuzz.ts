/**
 * Hostile bodies for a route, generated from its own schema's field names (test/fuzz.test.ts,
 * test/reliability.fuzz.test.ts): wrong types, nulls, huge and unicode strings, nesting,
 * operator objects, prototype keys, long arrays.
 */
import fc from 'fast-check';
import type { z } from 'zod';

const nasty = (): fc.Arbitrary<unknown> =>
  fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.string(),
      fc.string({ unit: 'grapheme', maxLength: 50 }),
      fc.constantFrom('', ' ', 'root', 'null', '\u0000', '$gt', '__proto__', '../../etc/passwd', "'; DROP TABLE events; --", '😀'.repeat(100)),
      fc.constant('x'.repeat(5000)),
      fc.integer(),
      fc.double(),
      fc.constantFrom(0, -1, 1e308, Number.MAX_SAFE_INTEGER, 1001, 30, 31),
      fc.boolean(),
      fc.constant(null),
      fc.constant({ $gt: '' }),
      fc.constant({ $ne: null }),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 4 }),
      fc.constant(Array.from({ length: 10_000 }, (_, i) => `id-${i}`)),
    ),
  })).value;

/** Field names of a route's `data` schema (top level, and one level into arrays of objects). */
function fieldsOf(schema: z.ZodType): { top: string[]; nested: Record<string, string[]> } {
  const shape = (s: unknown): Record<string, z.ZodType> | undefined => {
    let cur: any = s;
    for (let i = 0; i < 5 && cur; i++) {
      if (cur.shape) return cur.shape;
      cur = cur.def?.innerType ?? cur.def?.in ?? cur.def?.schema ?? cur.def?.element;
    }
    return undefined;
  };
  const top = shape(schema) ?? {};
  const nested: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(top)) {
    const inner = shape(v);
    if (inner) nested[k] = Object.keys(inner);
  }
  return { top: Object.keys(top), nested };
}

export function bodyFor(schema: z.ZodType, ids: fc.Arbitrary<string>): fc.Arbitrary<unknown> {
  const { top, nested } = fieldsOf(schema);
  const fieldValue = (name: string): fc.Arbitrary<unknown> => {
    const sub = nested[name];
    const plausible = sub
      ? fc.array(fc.record(Object.fromEntries(sub.map((f) => [f, fc.oneof(ids, nasty())])), { requiredKeys: [] }), { minLength: 1, maxLength: 3 })
      : fc.oneof(ids, fc.array(ids, { minLength: 1, maxLength: 3 }));
    return fc.oneof(plausible, nasty());
  };
  const data = fc.record(Object.fromEntries(top.map((f) => [f, fieldValue(f)])), { requiredKeys: [] });
  return fc.oneof(
    { weight: 6, arbitrary: data.map((d) => ({ data: d })) },
    { weight: 1, arbitrary: nasty().map((d) => ({ data: d })) },
    { weight: 1, arbitrary: nasty() },
  );
}

