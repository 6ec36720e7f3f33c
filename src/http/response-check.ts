/**
 * Checks an answer against its route's declared schemas (src/http/schema.ts), so the OpenAPI
 * document cannot drift from what the service answers. On in the test runs
 * (scripts/test.mjs sets COLLAB_RESPONSE_CHECK to a file): every answer of every route in
 * every test is checked, and each mismatch is appended to that file, which fails the run.
 * Off in production (a parse per answer for nothing).
 *
 * An answer matches when it parses against the schema for its HTTP status AND carries no
 * field the schema does not declare. zod objects drop undeclared keys when parsing, so a key
 * present in the answer but absent from the parsed value is one the document does not show:
 * `{"result":{..., "data":{"id":"o1","secret":"x"}}}` against `data: { id }` reports
 * `result.data.secret is not in the schema`.
 */
import { appendFileSync } from 'node:fs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { StatusCode } from '../shared/errors.js';
import type { Answer } from './schema.js';

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function undeclared(input: unknown, parsed: unknown, path: string, out: string[]): void {
  if (out.length >= 5) return;
  if (Array.isArray(input) && Array.isArray(parsed)) {
    input.forEach((v, i) => undeclared(v, parsed[i], `${path}[${i}]`, out));
    return;
  }
  if (!isPlainObject(input) || !isPlainObject(parsed)) return;
  for (const key of Object.keys(input)) {
    // zod never copies a `__proto__` key into what it parses (records included), so an item
    // id "__proto__" (which the service keeps as a plain key, src/http/routes/domain.ts
    // `keyed`) would read as undeclared: it is checked no further.
    if (key === '__proto__') continue;
    const at = path ? `${path}.${key}` : key;
    if (!Object.prototype.hasOwnProperty.call(parsed, key)) out.push(`${at} is not in the schema`);
    else undeclared(input[key], parsed[key], at, out);
  }
}

/** What is wrong with answering `body` with HTTP `status`, given the route's `answers`, or null. */
export function checkAnswer(answers: ReadonlyMap<number, Answer>, status: number, body: unknown): string | null {
  const answer = answers.get(status);
  if (!answer) return `answered HTTP ${status}, which the route does not declare (declared: ${[...answers.keys()].join(', ')})`;
  const result = answer.schema.safeParse(body);
  if (!result.success) {
    return result.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.join('.') || 'body'}: ${i.message}`)
      .join('; ');
  }
  const given = (body as { error?: { status?: StatusCode } }).error?.status;
  if (answer.statuses && given !== undefined && !answer.statuses.includes(given)) {
    return `answered ${given}, which the route does not declare for HTTP ${status} (declared: ${answer.statuses.join(', ')})`;
  }
  const extra: string[] = [];
  undeclared(body, result.data, '', extra);
  return extra.length > 0 ? extra.join('; ') : null;
}

/** The file named by COLLAB_RESPONSE_CHECK, or undefined when checks are off. */
export const responseCheckFile = (): string | undefined => process.env.COLLAB_RESPONSE_CHECK || undefined;

/**
 * A route-level onSend hook that checks each answer and appends what is wrong to `file`
 * (one line per mismatch). The answer itself goes out unchanged: the test that made it
 * still sees exactly what a client would.
 */
export function responseCheckHook(path: string, answers: ReadonlyMap<number, Answer>, file: string) {
  return async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    let problem: string | null;
    try {
      problem = typeof payload === 'string' ? checkAnswer(answers, reply.statusCode, JSON.parse(payload)) : `answered a ${typeof payload} body, not JSON text`;
    } catch (err) {
      problem = `answered a body that is not JSON: ${(err as Error).message}`;
    }
    if (problem) appendFileSync(file, `${path} HTTP ${reply.statusCode}: ${problem}\n`);
    return payload;
  };
}
