// A free TCP port for a server a test, the bench or `npm run cluster` is about to start.
import { createServer } from 'node:net';

/** A TCP port that was free a moment ago (listen on 0, read it, close); another process may take it since. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('no port assigned'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}
