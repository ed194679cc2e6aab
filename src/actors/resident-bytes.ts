// The bytes a process keeps for its sessions between requests, cached histories and file contents alike,
// under one bound (PARLEY_MAX_RESIDENT_BYTES, DESIGN §16): whatever takes room pushes out the least recently
// used holdings of either kind. An owner holds bytes under a key and is told, through `release`, when they go.

interface Holding {
  bytes: number;
  release: () => void;
}

export class ResidentBytes {
  readonly maxBytes: number;
  /** In use order: the least recently used first. */
  readonly #held = new Map<string, Holding>();
  #bytes = 0;
  readonly #onChange: (bytes: number) => void;

  constructor(maxBytes: number, onChange: (bytes: number) => void = () => {}) {
    this.maxBytes = maxBytes;
    this.#onChange = onChange;
  }

  /** The bytes held now; never more than maxBytes. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Holds `bytes` under `key`, in place of what it held, as the most recently used; the least recently used
   * others are released until the total fits. False, and nothing held under `key`, when `bytes` alone exceed
   * the bound: the owner keeps nothing then.
   */
  hold(key: string, bytes: number, release: () => void): boolean {
    this.#remove(key);
    if (bytes > this.maxBytes) {
      this.#onChange(this.#bytes);
      return false;
    }
    this.#held.set(key, { bytes, release });
    this.#bytes += bytes;
    for (const [other, holding] of this.#held) {
      if (this.#bytes <= this.maxBytes) break;
      this.#remove(other);
      holding.release();
    }
    this.#onChange(this.#bytes);
    return true;
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
    if (this.#remove(key)) this.#onChange(this.#bytes);
  }

  #remove(key: string): boolean {
    const holding = this.#held.get(key);
    if (!holding) return false;
    this.#held.delete(key);
    this.#bytes -= holding.bytes;
    return true;
  }
}
