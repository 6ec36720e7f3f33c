/**
 * Every request's AbortSignal (issue 33): aborted when the client goes away before its
 * answer is written, or when REQUEST_TIMEOUT_MS has passed since the request arrived. Node's
 * own request timeout only bounds how long the request takes to *arrive*; once a handler
 * runs, nothing stopped it, so a call that outlived its client went on using a core for
 * minutes. The route's RequestContext carries the signal (src/http/api-routes.ts), the query
 * deadline checks it between store reads (queries/cost.ts Deadline), and the work ends there.
 *
 * Example: REQUEST_TIMEOUT_MS=30000 and an access/history call still computing at 30 s:
 * the signal aborts with a DeadlineExceededError naming the request timeout; the query stops
 * at its next check and the client gets RESOURCE_EXHAUSTED with that message. A client that
 * closes its socket at 2 s aborts it with ClientGoneError: the work stops at the next check
 * and nothing is written (there is nobody to read it).
 */
import type { FastifyRequest } from 'fastify';
import { ClientGoneError, DeadlineExceededError } from '../../queries/cost.js';
import { shared } from './plugin.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Aborted when the client leaves or the request timeout passes (src/http/cancel.ts).
     * Fastify's own `signal` only follows the request stream's close, which app.inject
     * emits as soon as the body is read, and knows nothing of the timeout.
     */
    workSignal: AbortSignal;
  }
}

export const requestCancel = shared<{ requestTimeoutMs: number }>('request-cancel', async (app, { requestTimeoutMs }) => {
  app.decorateRequest('workSignal', null as unknown as AbortSignal);
  app.addHook('onRequest', (req: FastifyRequest, reply, done) => {
    const controller = new AbortController();
    req.workSignal = controller.signal;
    const timer = setTimeout(() => {
      controller.abort(new DeadlineExceededError(requestTimeoutMs, 'The request', 'the request timeout (REQUEST_TIMEOUT_MS)', 'ask for less per call, or go on from the last page token'));
    }, requestTimeoutMs);
    // A timer per request must not keep a stopping process alive.
    timer.unref();
    const gone = () => {
      clearTimeout(timer);
      // Closed before the answer was written: the client left (a socket closed mid-request).
      if (!reply.raw.writableFinished) controller.abort(new ClientGoneError());
    };
    reply.raw.once('close', gone);
    reply.raw.once('finish', () => clearTimeout(timer));
    // A request stream destroyed under the handler (the peer reset it; app.inject's `signal`).
    req.raw.once('error', () => controller.abort(new ClientGoneError()));
    req.raw.once('aborted', () => controller.abort(new ClientGoneError()));
    done();
  });
});
