// The framework ceiling: a bare Fastify server, default options (its own JSON body parser, no
// logger, no hooks, no schema), one POST route per measured path answering the same envelope
// bytes the raw node:http ceiling answers (set through POST /__canned { path, body }). Between
// raw-server.mjs and the service, it tells how much of the gap is Fastify's and how much ours.
// Routes cannot be added once Fastify listens, so the measured paths come in ROUTES (comma
// separated); the envelope of each can still change at any time through /__canned.
import Fastify from 'fastify';

const FALLBACK = '{"result":{"status":"success","message":"ok","data":null}}';
const canned = new Map();
const app = Fastify();

app.post('/__canned', async (req, reply) => {
  canned.set(req.body.path, JSON.stringify(req.body.body));
  return reply.code(204).send();
});
for (const url of (process.env.ROUTES ?? '').split(',').filter(Boolean)) {
  app.post(url, async (_req, reply) => {
    // A string with the content type set goes out as it is: no serializer, like the raw server.
    return reply.header('content-type', 'application/json; charset=utf-8').send(canned.get(url) ?? FALLBACK);
  });
}

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.send?.('ready');
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
