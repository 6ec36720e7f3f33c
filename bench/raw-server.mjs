// The ceiling: a bare node:http server that reads the body, parses it as JSON, and answers
// the same envelope the service gives for the scenario being measured (set through
// POST /__canned { path, body }). Whatever the service does beyond this costs throughput.
import http from 'node:http';

const canned = new Map();
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let parsed;
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"status":"INVALID_ARGUMENT","message":"bad json"}}');
      return;
    }
    if (req.url === '/__canned') {
      canned.set(parsed.path, JSON.stringify(parsed.body));
      res.writeHead(204);
      res.end();
      return;
    }
    const body = canned.get(req.url) ?? '{"result":{"status":"success","message":"ok","data":null}}';
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
