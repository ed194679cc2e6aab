// The Redis client behind shared rate-limit counters (cluster mode only, so a single process never loads
// ioredis for it).
import { Redis } from 'ioredis';

/**
 * A Redis client for rate-limit counters only. ioredis defaults suit a client that must not lose
 * commands (10 s connect timeout, 20 retries, commands queued while disconnected); here each command
 * sits in a request's path, so a down or stuck Redis must fail it within a fraction of a second instead
 * (the plugin README recommends low connectTimeout and maxRetriesPerRequest). The caller owns the
 * client and quits it when the app closes; both families may share it.
 */
export function rateLimitRedis(url: string, onError: (err: Error) => void = () => {}): Redis {
  const client = new Redis(url, {
    connectionName: 'parley-rate-limit',
    connectTimeout: 500,
    // A Lua INCR on a healthy Redis answers in about a millisecond; a frozen one costs each request this much.
    commandTimeout: 250,
    maxRetriesPerRequest: 1,
    // While disconnected, fail at once rather than queueing the request behind a reconnect.
    enableOfflineQueue: false,
    // Keep reconnecting in the background, at most every 2 s, so shared limits return with Redis.
    retryStrategy: (times) => Math.min(times * 100, 2_000),
  });
  // ioredis prints every failed reconnect to stderr unless 'error' has a listener.
  client.on('error', onError);
  return client;
}
