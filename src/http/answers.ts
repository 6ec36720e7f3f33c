/**
 * How the API reads a request and writes its answer, for every route: one JSON body parser,
 * the validator (zod, semantics §1's messages), the serializer, and the failure envelope for
 * anything thrown (the error handler) or unrouted (the not-found handler).
 *
 * Every response is an envelope (semantics §1): success `{ result: { status, message,
 * data } }`, failure `{ error: { status, message, details? } }` with the canonical HTTP
 * status. Nothing, however malformed, gets a stack trace back.
 */
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { ApiError, BugError, invalidArgument } from '../shared/errors.js';
import { InvalidUserTokenError } from './auth.js';
import { MAX_JSON_DEPTH, jsonDepth } from './json-depth.js';
import { RateLimitedError } from './rate-limit.js';
import type { Success } from './route.js';
import { parseBody } from './validation.js';
import { shared } from './plugin.js';
import { ClientGoneError } from '../../queries/cost.js';

export function failure(error: ApiError) {
  return {
    error: {
      status: error.status,
      ...error.extra,
      message: error.message,
      ...(error.details !== undefined ? { details: error.details } : {}),
    },
  };
}

/** The success envelope (semantics §1). */
export function envelope(out: Success) {
  return {
    result: {
      status: 'success',
      message: out.message,
      ...(out.data !== undefined ? { data: out.data } : {}),
      ...(out.pageToken !== undefined ? { pageToken: out.pageToken } : {}),
      ...out.extra,
    },
  };
}

/** Maps anything thrown to an ApiError: our own as they are, Fastify's by their code. */
function toApiError(err: unknown, bodyLimit: number): { error: ApiError; internal: boolean } {
  if (err instanceof ApiError) return { error: err, internal: false };
  const e = err as { code?: string; statusCode?: number; message?: string };
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        error: new ApiError('INVALID_ARGUMENT', `The request body is larger than ${bodyLimit} bytes.`, undefined, 413),
        internal: false,
      };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { error: new ApiError('INVALID_ARGUMENT', 'The request body is not valid JSON.'), internal: false };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { error: new ApiError('INVALID_ARGUMENT', 'The request body is empty; send { "data": { ... } }.'), internal: false };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { error: new ApiError('INVALID_ARGUMENT', e.message ?? 'Invalid request body.'), internal: false };
  }
  if (err instanceof SyntaxError || (e.statusCode === 400 && typeof e.message === 'string')) {
    return { error: new ApiError('INVALID_ARGUMENT', `The request body is not valid JSON: ${e.message}`), internal: false };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { error: new ApiError('INVALID_ARGUMENT', e.message ?? 'Bad request.', undefined, e.statusCode), internal: false };
  }
  return { error: new ApiError('INTERNAL', 'Internal error.'), internal: true };
}

/**
 * Any content type is read as JSON: `curl -d` without a header still works, and there is one
 * parser (with Fastify's prototype-poisoning protection) for every body. The nesting depth is
 * checked on the raw text first (src/http/json-depth.ts), so no deeper value is ever parsed,
 * validated or stored.
 */
function readBodiesAsJson(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  // Named functions here and below: bench/stage-budget.ts attributes a CPU profile's samples
  // to the request's stages by function name.
  app.addContentTypeParser('*', { parseAs: 'string' }, function parseJsonBody(req, body, done) {
    const text = body as string;
    if (jsonDepth(text) > MAX_JSON_DEPTH) {
      done(invalidArgument(`The request body is nested deeper than ${MAX_JSON_DEPTH} levels (JSON nesting depth is limited to ${MAX_JSON_DEPTH}).`), undefined);
      return;
    }
    parseJson(req, text, done);
  });
}

/**
 * Fastify validates each route's body with the zod schema it was given (src/http/schema.ts
 * `requestEnvelope`, `{ data: <the route's schema> }`), through parseBody so the messages are
 * semantics §1's (`data.users[2].email must be a valid email`), and the handler gets the
 * parsed value. Answers are written with JSON.stringify: byte for byte what they were before
 * the schemas, which document them (tests check answers against them, response-check.ts);
 * docs/performance.md "Answers serialized from their schemas?" has why not fast-json-stringify.
 */
function validateWithZod(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, url, httpPart }) => {
    // A GET route's path parameters (the JWKS): checked by the route itself, which answers
    // NOT_FOUND for a name that fits no key rather than INVALID_ARGUMENT.
    if (httpPart === 'params') return (params: unknown) => ({ value: params });
    // The API routes' header schema (x-consistency-token) documents the header; the
    // consistency hook reads and checks it (src/http/consistency.ts).
    if (httpPart === 'headers') return (headers: unknown) => ({ value: headers });
    // The change stream's query (GET): documented by its schema, checked by the route itself
    // (src/http/routes/changes-stream.ts), which names the parameter as semantics §1 does.
    if (httpPart === 'querystring') return (query: unknown) => ({ value: query });
    const data = (schema as Partial<z.ZodObject>).shape?.data as z.ZodType | undefined;
    if (!data) throw new BugError(`route ${url} has a body schema that is not a request envelope`);
    return function validateBody(body: unknown) {
      try {
        return { value: { data: parseBody(data, body) } };
      } catch (error) {
        return { error: error as Error };
      }
    };
  });
  app.setSerializerCompiler(() => function serializeAnswer(data) {
    return JSON.stringify(data);
  });
}

/** Registers the body parser, validator, serializer and the failure answers on the instance. */
export const answers = shared<{ bodyLimit: number }>('answers', async (app, { bodyLimit }) => {
  readBodiesAsJson(app);
  validateWithZod(app);
  app.setErrorHandler((err, req, reply) => {
    // The client left before its answer (src/http/cancel.ts): nobody reads one, none is written.
    if (err instanceof ClientGoneError) {
      reply.hijack();
      reply.raw.destroy();
      return;
    }
    const { error, internal } = toApiError(err, bodyLimit);
    if (internal) req.log.error({ err }, 'internal error');
    if (error instanceof RateLimitedError) void reply.header('retry-after', String(error.retryAfterSeconds));
    if (error instanceof InvalidUserTokenError) void reply.header('www-authenticate', error.challenge);
    const body = failure(internal ? new ApiError('INTERNAL', `Internal error (request id ${req.id}).`) : error);
    void reply.status(error.httpStatus).send(body);
  });
  app.setNotFoundHandler((req, reply) => {
    const err = new ApiError('NOT_FOUND', `No route ${req.method} ${req.url.split('?')[0]}.`);
    void reply.status(404).send(failure(err));
  });
});
