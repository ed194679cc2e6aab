// The file bytes a process keeps between turns, bounded in bytes, least recently used out first: a turn
// reads from the store only the files it does not already have (DESIGN §16). A file's bytes never change
// under its id, so an entry cannot go stale; a deleted file is noticed by its metadata, which turns still read.

export class FileCache {
  readonly maxBytes: number;
  /** In use order: the least recently used first. */
  readonly #entries = new Map<string, Buffer>();
  #bytes = 0;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** The bytes held now; never more than maxBytes. */
  get bytes(): number {
    return this.#bytes;
  }

  get(tenantId: string, fileId: string): Buffer | undefined {
    const key = keyOf(tenantId, fileId);
    const data = this.#entries.get(key);
    if (data) {
      this.#entries.delete(key);
      this.#entries.set(key, data);
    }
    return data;
  }

  /** Keeps `data`, dropping the least recently used to make room; a file larger than the bound is not kept. */
  set(tenantId: string, fileId: string, data: Buffer): void {
    this.delete(tenantId, fileId);
    if (data.length > this.maxBytes) return;
    this.#entries.set(keyOf(tenantId, fileId), data);
    this.#bytes += data.length;
    for (const [key, old] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(key);
      this.#bytes -= old.length;
    }
  }

  delete(tenantId: string, fileId: string): void {
    const key = keyOf(tenantId, fileId);
    const data = this.#entries.get(key);
    if (!data) return;
    this.#entries.delete(key);
    this.#bytes -= data.length;
  }
}

// File ids come from clients; a JSON pair cannot make two (tenant, file) pairs collide.
const keyOf = (tenantId: string, fileId: string) => JSON.stringify([tenantId, fileId]);
