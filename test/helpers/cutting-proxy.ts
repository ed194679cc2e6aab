// A real TCP proxy on loopback between a browser and the app, which cuts the first event stream right after
// its first `message.delta` event, as a dropped mobile connection would; every other connection is relayed
// untouched. It records each request line it relays, so a test can see the resume request go through.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface CuttingProxy {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Whether a stream has been cut. */
  readonly cut: boolean;
  /** The request lines relayed (`GET /demo HTTP/1.1`, …). */
  readonly requests: readonly string[];
  close(): Promise<void>;
}

// A frame of the stream, never text of the widget's own module (which names the event, not the line).
const DELTA = '\nevent: message.delta\n';

export async function startCuttingProxy(upstreamPort: number): Promise<CuttingProxy> {
  let cut = false;
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(upstreamPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', () => sockets.delete(client) && upstream.destroy());
    upstream.on('close', () => sockets.delete(upstream) && client.destroy());
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('data', (bytes: Buffer) => {
      for (const line of bytes.toString('latin1').match(/^[A-Z]+ \/\S* HTTP\/1\.1(?=\r?$)/gm) ?? [])
        requests.push(line);
      upstream.write(bytes);
    });
    let seen = '';
    upstream.on('data', (bytes: Buffer) => {
      if (cut) return void client.write(bytes);
      // The event stream's text, to find the end of its first delta (it may straddle reads).
      const before = seen.length;
      seen += bytes.toString('latin1');
      const start = seen.indexOf(DELTA);
      const end = start < 0 ? -1 : seen.indexOf('\n\n', start);
      if (end < 0) return void client.write(bytes);
      cut = true;
      // Up to the delta's blank line and no further: the browser holds exactly one delta, then the line dies.
      client.write(bytes.subarray(0, end + 2 - before), () => drop());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('the proxy has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    get cut() {
      return cut;
    },
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
