// A real HTTP proxy on loopback in front of a listening app, for client tests: it records every request and,
// as the test's plan says for each one, forwards it, answers it itself (a 503 with Retry-After), drops the
// connection before answering, or forwards an event stream and cuts the connection after its n-th event.
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  method: string;
  /** Path and query. */
  url: string;
  headers: IncomingHttpHeaders;
}

export type ProxyAction =
  | { kind: 'forward' }
  | { kind: 'answer'; status: number; headers: Record<string, string>; body: unknown }
  | { kind: 'drop' }
  | { kind: 'cut-after-events'; events: number };

/** Decides what happens to a request; `index` counts the requests of the proxy from 0. */
export type ProxyPlan = (request: ProxiedRequest, index: number) => ProxyAction;

export interface Proxy {
  url: string;
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

export const forward: ProxyAction = { kind: 'forward' };

/** Starts a proxy to `upstream` (an http://host:port origin). */
export async function startProxy(upstream: string, plan: ProxyPlan): Promise<Proxy> {
  const target = new URL(upstream);
  const requests: ProxiedRequest[] = [];
  const server = createServer((req, res) => {
    const seen: ProxiedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers };
    const action = plan(seen, requests.length);
    requests.push(seen);
    if (action.kind === 'drop') {
      req.socket.destroy();
      return;
    }
    if (action.kind === 'answer') {
      req.resume();
      res.writeHead(action.status, { 'content-type': 'application/json', ...action.headers });
      res.end(JSON.stringify(action.body));
      return;
    }
    const up = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
      },
      (upRes) => {
        const headers = { ...upRes.headers };
        delete headers['content-length'];
        delete headers['transfer-encoding'];
        delete headers.connection;
        res.writeHead(upRes.statusCode ?? 502, headers);
        if (action.kind === 'forward' || upRes.statusCode !== 200) {
          upRes.pipe(res);
          return;
        }
        // Forward whole events until the n-th one is out, then cut the client's connection mid-stream.
        let pending = '';
        let told = 0;
        upRes.setEncoding('utf8');
        upRes.on('data', (chunk: string) => {
          if (told >= action.events) return;
          pending += chunk;
          let out = '';
          let end = pending.indexOf('\n\n');
          while (end >= 0 && told < action.events) {
            const block = pending.slice(0, end + 2);
            pending = pending.slice(end + 2);
            out += block;
            if (/^event:/m.test(block)) told++;
            end = pending.indexOf('\n\n');
          }
          if (told < action.events) {
            if (out) res.write(out);
            return;
          }
          // end(), not destroy(): what was written still arrives, then the unfinished body stops short.
          res.write(out, () => {
            req.socket.end();
            upRes.destroy();
          });
        });
      },
    );
    up.on('error', () => req.socket.destroy());
    req.pipe(up);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
