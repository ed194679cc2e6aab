// The HTTP tool of W1t: a bare node:http server on loopback that answers every tool call with a small JSON
// result. Its own process, so its CPU is measured apart from Parley's and the load generator's.
// Run as `node bench/tool-server.ts`; prints {"port":N} once listening. GET /calls answers how many calls it
// answered and how many of them repeated an Idempotency-Key (a call Parley retried).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let calls = 0;
let repeats = 0;
// Parley's key is <turn_id>:<call_id>; W1t's turns each make one call, so a key seen twice is a retry.
const seen = new Set<string>();

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/calls') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ calls, repeats }));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    calls++;
    const key = req.headers['idempotency-key'];
    if (typeof key === 'string') {
      if (seen.has(key)) repeats++;
      else seen.add(key);
    }
    // Echoes the model's input, as a lookup tool would answer with what it found for it.
    const input = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input?: unknown }).input;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: input ?? null }));
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
