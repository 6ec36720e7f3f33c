/**
 * Index columns of PostgreSQL read-model tables: each field an index names, kept beside the
 * document in a text column of its own that the writer fills, so that indexes and queries
 * read a plain column instead of parsing the document.
 *
 * Why: an index over `((doc->'apiKey')::jsonb)` parses the whole `json` document once per
 * expression, and compares jsonb values; an audit row's four indexes are eleven such
 * expressions. Most of the server's time per written row went there
 * (docs/performance-history.md, "Index columns").
 *
 * A table gets its columns when `ensureIndexes` creates it: one per distinct field of the
 * specs it is given for that table, named `"k:<field>"`. The set never changes afterwards,
 * so every process and every release that writes the table agrees on it by reading the
 * table's own columns (`readShape`). A table that existed before, or that a write created
 * first, has none and keeps its expression indexes; so does a later spec with a field the
 * table has no column for. `collab projections rebuild` writes fresh tables, with columns.
 *
 * The text of a value orders and compares as jsonb orders the same value (null < strings <
 * numbers < booleans < arrays < objects), so queries answer as they did over the expressions:
 * - absent: SQL NULL, as `doc->'f'` of a document without the field;
 * - null (and what JSON.stringify writes as null: NaN, Infinity): `0`;
 * - a string: `1` then the string as stored (encodeString), in byte order (COLLATE "C"), as
 *   SQLite and MongoDB order strings and as jsonb does in a database of the C locale, which
 *   `initdb --locale=C` makes (in another locale jsonb compares strings by that locale);
 * - a number: `2` then its IEEE 754 bits made order-preserving (positive: the sign bit set;
 *   negative: every bit flipped), in hex: 16 characters. Example: 1 is `2bff0000000000000`,
 *   -1 is `2400fffffffffffff`, and `240...` < `2bf...` as -1 < 1;
 * - a boolean: `30` or `31`;
 * - an array or an object: `4` or `5` then its JSON. Equal values have equal texts; their
 *   order among themselves is not jsonb's, and no query sorts on one (filters take scalars).
 */
import { fieldPath } from '../ports/read-store.js';
import { encodeJson, encodeString } from './postgres-common.js';

/** A table's index columns: field -> quoted column name, in the table's column order. Empty for a table without. */
export type Shape = ReadonlyMap<string, string>;

export const PLAIN: Shape = new Map();

/** The column prefix: no field name holds a colon (fieldPath), so no document field collides. */
const PREFIX = 'k:';

/** `"k:<field>"`, or null when the name would pass PostgreSQL's 63 bytes (the field is then read from the document). */
export function columnName(field: string): string | null {
  const name = PREFIX + fieldPath(field);
  return name.length <= 63 ? `"${name}"` : null;
}

/** The shape of a table whose column names (pg_attribute) are `names`: the `k:` ones. */
export function shapeOf(names: readonly string[]): Shape {
  const shape = new Map<string, string>();
  for (const name of names) if (name.startsWith(PREFIX)) shape.set(name.slice(PREFIX.length), `"${name}"`);
  return shape;
}

const bits = new DataView(new ArrayBuffer(8));

/** A finite number's order-preserving text (see the header). */
function orderedNumber(n: number): string {
  bits.setFloat64(0, n === 0 ? 0 : n); // -0 is 0, as JSON.stringify writes it
  let hi = bits.getUint32(0);
  let lo = bits.getUint32(4);
  if (hi >>> 31) {
    hi = ~hi >>> 0;
    lo = ~lo >>> 0;
  } else hi = (hi | 0x80000000) >>> 0;
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/**
 * The column text of `value`, a document's field as JSON.stringify would write it (see the
 * header). `encoded`: strings are already as stored (a document read back from its text).
 */
export function columnText(value: unknown, encoded = false): string | null {
  if (value === undefined) return null;
  if (value === null) return '0';
  switch (typeof value) {
    case 'string':
      return '1' + (encoded ? value : encodeString(value));
    case 'number':
      return Number.isFinite(value) ? '2' + orderedNumber(value) : '0';
    case 'boolean':
      return value ? '31' : '30';
    case 'object':
      return (Array.isArray(value) ? '4' : '5') + (encoded ? JSON.stringify(value) : encodeJson(value));
    default:
      // Functions and symbols: JSON.stringify leaves the field out.
      return null;
  }
}

/** `v` as JSON.stringify writes it: after its toJSON when it has one (a Date: its string). */
const asWritten = (v: unknown): unknown =>
  v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function' ? (v as { toJSON(): unknown }).toJSON() : v;

/** What `doc->'a'->'b'` finds: a field of an object only (not of an array), each step as JSON.stringify writes it. */
function at(doc: unknown, path: readonly string[]): unknown {
  let v = asWritten(doc);
  for (const p of path) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = asWritten((v as Record<string, unknown>)[p]);
  }
  return v;
}

const paths = new Map<string, readonly string[]>();
const pathOf = (field: string) => {
  let p = paths.get(field);
  if (!p) paths.set(field, (p = fieldPath(field).split('.')));
  return p;
};

/** The column texts of `doc` for `shape`, in its order. */
export function columnValues(doc: unknown, shape: Shape, encoded = false): Array<string | null> {
  const out: Array<string | null> = [];
  for (const field of shape.keys()) out.push(columnText(at(doc, pathOf(field)), encoded));
  return out;
}
