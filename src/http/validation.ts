/**
 * Request validation: every route's zod schema, and messages that name the field the way a
 * client wrote it: `data.users[2].email must be a valid email`.
 */
import { z } from 'zod';
import { invalidArgument } from '../shared/errors.js';
import type { EgressPolicy } from '../adapters/egress.js';

/** semantics §1: ids are non-empty strings of at most 256 characters, any characters. */
const MAX_ID = 256;
/** semantics §1: every request array other than the spec's 30-item ones holds at most 1000. */
const MAX_ITEMS = 1000;

export const id = () => z.string().min(1).max(MAX_ID);
export const ids = (max = MAX_ITEMS) => z.array(id()).min(1).max(max);
export const text = (max = 1024) => z.string().max(max);
export const email = () => z.string().max(320).pipe(z.email());
export const items = <T extends z.ZodType>(item: T, max = MAX_ITEMS) => z.array(item).min(1).max(max);

/**
 * A webhook URL: http(s), at most 2048 characters, and not naming an address the egress
 * policy refuses (`http://127.1/`, `http://[::ffff:10.0.0.1]/`, `http://localhost/`...).
 * `allowEmpty`: `''` removes the stored URL.
 */
export const webhookUrl = (policy: EgressPolicy, options: { allowEmpty?: boolean } = {}) =>
  z
    .string()
    .max(2048)
    .superRefine((s, ctx) => {
      if (s === '' && options.allowEmpty) return;
      if (!/^https?:\/\//i.test(s) || !URL.canParse(s)) {
        ctx.addIssue({ code: 'custom', message: 'must be an http(s) URL' });
        return;
      }
      const why = policy.literalRefusal(s);
      if (why) ctx.addIssue({ code: 'custom', message: `is not allowed by the destination policy: ${why}` });
    });

function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${String(p)}` : String(p);
  }
  return out || 'body';
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (!Object.prototype.hasOwnProperty.call(cur, p as string)) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

const article = (t: string) => (/^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`);

/**
 * The types a union branch expected when it refused the value for its type alone (an
 * `invalid_type` at the union's own path, or a nested union of such), else null.
 */
function typesExpected(issues: readonly z.core.$ZodIssue[], depth: number): string[] | null {
  const out: string[] = [];
  for (const i of issues) {
    if (i.path.length !== depth) return null;
    if (i.code === 'invalid_type') out.push(i.expected === 'int' ? 'integer' : String(i.expected));
    else if (i.code === 'invalid_union') {
      for (const b of i.errors) {
        const nested = typesExpected(b.map((x) => ({ ...x, path: [...i.path, ...x.path] }) as z.core.$ZodIssue), depth);
        if (nested === null) return null;
        out.push(...nested);
      }
    } else return null;
  }
  return out.length > 0 ? out : null;
}

function describe(issue: z.core.$ZodIssue, input: unknown): string {
  const field = fieldPath(issue.path);
  // A missing field fails as invalid_type, or as invalid_value for an enum: either way the
  // client's mistake is the same, so the message is too.
  if (issue.code !== 'custom' && valueAt(input, issue.path) === undefined) return `${field} is required`;
  switch (issue.code) {
    case 'invalid_type': {
      const expected = issue.expected === 'int' ? 'integer' : issue.expected;
      return `${field} must be ${article(String(expected))}`;
    }
    case 'too_big':
      if (issue.origin === 'string') return `${field} must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array') return `${field} must have at most ${issue.maximum} items`;
      return `${field} must be at most ${issue.maximum}`;
    case 'too_small':
      if (issue.origin === 'string') {
        return Number(issue.minimum) <= 1 ? `${field} must not be empty` : `${field} must be at least ${issue.minimum} characters`;
      }
      if (issue.origin === 'array') {
        return Number(issue.minimum) <= 1 ? `${field} must not be empty` : `${field} must have at least ${issue.minimum} items`;
      }
      return `${field} must be at least ${issue.minimum}`;
    case 'invalid_format':
      if (issue.format === 'email') return `${field} must be a valid email`;
      if (issue.format === 'url') return `${field} must be a valid URL`;
      return `${field} must be a valid ${issue.format}`;
    case 'invalid_value':
      return `${field} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_union': {
      // A branch's issues have paths relative to the union: put the union's path in front.
      const branches = issue.errors.map((b) => b.map((i) => ({ ...i, path: [...issue.path, ...i.path] }) as z.core.$ZodIssue));
      // Every branch refused the value's type: name the types it may have
      // (`data.x must be a string, a number or an array`).
      const types = branches.map((b) => typesExpected(b, issue.path.length));
      if (types.every((ts) => ts !== null)) {
        const all = [...new Set(types.flat() as string[])].map(article);
        return `${field} must be ${all.length > 1 ? `${all.slice(0, -1).join(', ')} or ${all[all.length - 1]}` : all[0]}`;
      }
      // Otherwise report the branch that got furthest (the value had its type), rather than
      // a bare "invalid input": `data.x must have at most 200 items`.
      const furthest = branches.find((b, i) => types[i] === null && b.length > 0) ?? branches.find((b) => b.length > 0);
      return furthest ? describe(furthest[0]!, input) : `${field} is invalid`;
    }
    case 'unrecognized_keys':
      // Only a route whose hosted counterpart refuses unknown fields is strict (agent groups).
      return `${issue.keys.map((k) => (field === 'body' ? k : `${field}.${k}`)).join(', ')} ${issue.keys.length > 1 ? 'are' : 'is'} not accepted here`;
    case 'custom':
      return issue.message.startsWith(field) ? issue.message : `${field} ${issue.message}`;
    default:
      return `${field} is invalid: ${issue.message}`;
  }
}

/**
 * Parses `body` against `{ data: schema }`. semantics §1: a body that is not an object with
 * an object `data` is INVALID_ARGUMENT, as is any field that does not fit; unknown fields are
 * dropped (forward compatibility), never stored.
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidArgument('The request body must be a JSON object with a "data" object.');
  }
  const data = (body as Record<string, unknown>).data;
  if (data === undefined) throw invalidArgument('data is required: the request body must be { "data": { ... } }.');
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw invalidArgument('data must be an object');
  const result = schema.safeParse(data);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => ({ ...i, path: ['data', ...i.path] }));
  const messages = [...new Set(issues.map((i) => describe(i as z.core.$ZodIssue, body)))];
  throw invalidArgument(
    messages.slice(0, 5).join('; ') + (messages.length > 5 ? `; and ${messages.length - 5} more` : ''),
    { fields: issues.slice(0, 20).map((i) => ({ field: fieldPath(i.path), code: i.code })) },
  );
}
