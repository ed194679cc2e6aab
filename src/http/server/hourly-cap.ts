// A cap across every client: at most `limit` uses an hour of one named thing (the demo's conversations, its
// sends), counted in clock-hour windows, in this process or in Redis so that the cap holds across a cluster.
// Beyond it, 429 `rate_limited` with Retry-After (the end of the window). When Redis cannot count, the process
// counts alone, so the cap still holds per process.
import type { Redis } from 'ioredis';
import { AppError } from '../../errors.ts';
import { RATE_LIMIT_NAMESPACE } from './rate-limit.ts';

const HOUR_MS = 3_600_000;

export interface HourlyCapOptions {
  /** What is counted, for the key and the refusal's context (`demo_conversations`). */
  name: string;
  limit: number;
  /** Shared counters (rateLimitRedis); unset, this process counts alone. */
  redis?: Redis;
  now?: () => number;
}

export class HourlyCap {
  readonly #o: HourlyCapOptions;
  readonly #now: () => number;
  #window = -1;
  #used = 0;

  constructor(options: HourlyCapOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Counts one use; throws 429 `rate_limited` when it is beyond the hour's `limit`. */
  async take(): Promise<void> {
    const now = this.#now();
    const window = Math.floor(now / HOUR_MS);
    const used = await this.#count(window);
    if (used <= this.#o.limit) return;
    const retryAfter = Math.max(1, Math.ceil(((window + 1) * HOUR_MS - now) / 1000));
    throw new AppError('rate_limited', this.#message(), {
      context: {
        limit: this.#o.limit,
        window_seconds: 3600,
        retry_after_seconds: retryAfter,
        cap: this.#o.name,
      },
      headers: { 'retry-after': String(retryAfter) },
    });
  }

  #message(): string {
    return `The ${this.#o.name.replaceAll('_', ' ')} of every client together are at their cap of ${this.#o.limit} an hour; retry after the time in Retry-After.`;
  }

  /** This window's count with this use in it. */
  async #count(window: number): Promise<number> {
    const { redis } = this.#o;
    if (redis) {
      const key = `${RATE_LIMIT_NAMESPACE}cap:${this.#o.name}:${window}`;
      try {
        const [[err, used] = [null, 0]] = (await redis.multi().incr(key).pexpire(key, HOUR_MS).exec()) ?? [];
        if (!err) return Number(used);
      } catch {
        // Counted below, in this process.
      }
    }
    if (window !== this.#window) {
      this.#window = window;
      this.#used = 0;
    }
    this.#used += 1;
    return this.#used;
  }
}
