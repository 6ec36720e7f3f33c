/**
 * The request id: a client's x-request-id is kept when it is sane, so its logs and ours line
 * up; otherwise a fresh one. Every answer carries it, set once as the request arrives, so
 * the error and not-found handlers, the hooks and the routes never set it themselves.
 *
 * Example: `x-request-id: trace-42` comes back as `x-request-id: trace-42`; `x-request-id:
 * <200 characters>` or one with a space gets a fresh 16-character id instead.
 */
import type { IncomingMessage } from 'node:http';
import { nanoid } from 'nanoid';
import { shared } from './plugin.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify's `genReqId`. */
export function genReqId(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : nanoid(16);
}

/**
 * The header, from an onRequest hook: the first stage every routed request passes, the
 * unmatched ones included. A callback hook, not an async one: it runs on every request. The
 * router's own refusals (src/http/edge.ts `frameworkErrors`) come before any hook and set it
 * there.
 */
export const requestIdHeader = shared('request-id', async (app) => {
  app.addHook('onRequest', (req, reply, done) => {
    void reply.header('x-request-id', req.id);
    done();
  });
});
