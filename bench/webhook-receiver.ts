// The webhook endpoint of W1w: a bare node:http server on loopback that answers every delivery 204 and counts
// them. Its own process, so its CPU is measured apart from Parley's. Run as `node bench/webhook-receiver.ts`;
// prints {"port":N} once listening. GET /count answers how many deliveries it received, and how many of them
// repeated a webhook-id (a delivery sent again).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let received = 0;
let repeats = 0;
const seen = new Set<string>();

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/count') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received, repeats }));
    return;
  }
  req.resume();
  req.on('end', () => {
    received++;
    const id = req.headers['webhook-id'];
    if (typeof id === 'string') {
      if (seen.has(id)) repeats++;
      else seen.add(id);
    }
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
