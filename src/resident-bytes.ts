// The bytes a process counts against its one bound (PARLEY_MAX_RESIDENT_BYTES,
// docs/internals/decisions.md#resident-memory): what running turns reserved (the admission of turns,
// actors/admission.ts, decides who may reserve) and what it keeps for its sessions between requests, cached
// histories and file contents alike. Kept bytes give way to reserved ones: whatever takes room pushes out the
// least recently used holdings of either kind. An owner holds bytes under a key and is told, through
// `release`, when they go. The bound is the process's: when its resident set grows past 85% of it (garbage not
// yet collected, the runtime), the holdings make room for the rest, down to a tenth of the bound, and take it
// back as it is freed.

import { totalmem } from 'node:os';
import { constrainedMemory } from 'node:process';
import { getHeapStatistics } from 'node:v8';

interface Holding {
  bytes: number;
  release: () => void;
}

export interface ResidentBytesOptions {
  maxBytes: number;
  /**
   * The process's resident set size now; process.memoryUsage.rss by default. Null: no reading, the room is
   * maxBytes (a process that leaves its memory to others, and tests of the holdings alone).
   */
  rss?: (() => number) | null;
  /** Milliseconds now, for how often the resident set is read; Date.now by default. */
  now?: () => number;
  /** Told the bytes held and the room allowed them now after every change. */
  onChange?: (bytes: number, limit: number) => void;
}

const MiB = 1024 * 1024;

/**
 * The bound when none is set: half the memory a cgroup allows the process (process.constrainedMemory()), or a
 * quarter of the machine's when none does (others share it); at most half of V8's heap limit, since histories
 * and request bodies live on the heap, and a heap that reaches its limit ends the process. Whole MiB.
 */
export function defaultResidentBytes(
  memory = {
    constrained: constrainedMemory(),
    total: totalmem(),
    heapLimit: getHeapStatistics().heap_size_limit,
  },
): number {
  // No limit reads as 0, or as a number beyond the machine (cgroup v2's "max").
  const limited = memory.constrained > 0 && memory.constrained < memory.total;
  const share = limited ? memory.constrained / 2 : memory.total / 4;
  return Math.floor(Math.min(share, memory.heapLimit / 2) / MiB) * MiB;
}

/** How often the resident set is read: it moves with garbage collection, not with each holding. */
const CHECK_EVERY_MS = 1000;
/** The share of the bound the resident set aims under: room for what a burst of requests allocates. */
const AIM = 0.85;
/**
 * The share of the bound the holdings keep however far the process is over its aim. Giving back the last of
 * them cannot bring it under (the runtime keeps the heap it grew, and a busy process's own working set can
 * pass the bound alone), while without them every turn reads its history from the store again: measured, a
 * process that had served tool turns fell from 2,640 to 1,190 plain turns a second with its room at nothing.
 */
const FLOOR = 0.1;

export class ResidentBytes {
  readonly maxBytes: number;
  /** In use order: the least recently used first. */
  readonly #held = new Map<string, Holding>();
  #bytes = 0;
  /** What running turns reserved: counted first, never pushed out. */
  #reserved = 0;
  /**
   * The room allowed now: from nothing, it grows by half the free room at each reading, up to maxBytes, and
   * gives back what the process grows beyond its aim; so a burst at start-up cannot fill it before a reading.
   */
  #limit = 0;
  #checkedAt = Number.NEGATIVE_INFINITY;
  /** The last reading, so that an excess is given back once, not again at every check while it lasts. */
  #lastRss = 0;
  readonly #rss: (() => number) | null;
  readonly #now: () => number;
  readonly #onChange: (bytes: number, limit: number) => void;

  constructor(options: ResidentBytesOptions) {
    this.maxBytes = options.maxBytes;
    this.#rss = options.rss === undefined ? process.memoryUsage.rss : options.rss;
    if (!this.#rss) this.#limit = options.maxBytes;
    this.#now = options.now ?? Date.now;
    this.#onChange = options.onChange ?? (() => {});
  }

  /** The bytes held now; never more than the limit. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The room allowed the holdings now: at most maxBytes, less what turns reserved. */
  get limit(): number {
    return Math.max(0, Math.min(this.#limit, this.maxBytes - this.#reserved));
  }

  /** The bytes running turns reserved now. */
  get reserved(): number {
    return this.#reserved;
  }

  /**
   * Counts `bytes` (negative: gives them back) as reserved by running turns; the least recently used holdings
   * go until what is held fits beside them. The caller decides who may reserve (it may pass the bound).
   */
  reserve(bytes: number): void {
    this.#reserved += bytes;
    this.#shrinkTo(this.limit);
    this.#onChange(this.#bytes, this.limit);
  }

  /**
   * Holds `bytes` under `key`, in place of what it held, as the most recently used; the least recently used
   * others are released until the total fits. False, and nothing held under `key`, when `bytes` alone exceed
   * the room allowed: the owner keeps nothing then.
   */
  hold(key: string, bytes: number, release: () => void): boolean {
    // Before the key's old holding goes: an excess is given back from all that is held, this one included.
    this.#adjust();
    this.#remove(key);
    const limit = this.limit;
    const held = bytes <= limit;
    if (held) {
      this.#held.set(key, { bytes, release });
      this.#bytes += bytes;
    }
    this.#shrinkTo(limit);
    this.#onChange(this.#bytes, limit);
    return held;
  }

  /** Counts `key` as just used. */
  touch(key: string): void {
    const holding = this.#held.get(key);
    if (!holding) return;
    this.#held.delete(key);
    this.#held.set(key, holding);
  }

  /** Lets go of `key` without calling its release: its owner has dropped the bytes already. */
  forget(key: string): void {
    if (this.#remove(key)) this.#onChange(this.#bytes, this.limit);
  }

  /**
   * At most once a CHECK_EVERY_MS: over its aim, the process gives back from the holdings what it grew beyond
   * the aim since the last reading (an excess that lasts was given back already; freed memory shows late, if
   * ever), down to FLOOR; under it, the holdings may grow by half the free room, up to maxBytes.
   */
  #adjust(): void {
    if (!this.#rss) return;
    const now = this.#now();
    if (now - this.#checkedAt < CHECK_EVERY_MS) return;
    this.#checkedAt = now;
    const aim = this.maxBytes * AIM;
    const rss = this.#rss();
    const grown = rss - Math.max(aim, this.#lastRss);
    this.#lastRss = rss;
    if (rss > aim) {
      const floor = this.maxBytes * FLOOR;
      if (grown > 0) this.#limit = Math.max(floor, Math.min(this.#limit, this.#bytes) - grown);
      else this.#limit = Math.max(floor, this.#limit);
    } else {
      this.#limit = Math.min(this.maxBytes, this.#limit + (aim - rss) / 2);
    }
  }

  #shrinkTo(limit: number): void {
    for (const [key, holding] of this.#held) {
      if (this.#bytes <= limit) break;
      this.#remove(key);
      holding.release();
    }
  }

  #remove(key: string): boolean {
    const holding = this.#held.get(key);
    if (!holding) return false;
    this.#held.delete(key);
    this.#bytes -= holding.bytes;
    return true;
  }
}
