// The file bytes a process keeps between turns, bounded in bytes, least recently used out first: a turn reads
// from the store only the files it does not already have (docs/internals/decisions.md#files-a-turn-sends).
// What it keeps also counts against the process's resident bytes, which may take a file back for a history
// used more recently. A file's bytes never change under its id, so an entry cannot go stale; a deleted file
// is noticed by its metadata, which turns still read.
import type { ResidentBytes } from '../resident-bytes.ts';

export class FileCache {
  readonly maxBytes: number;
  readonly #resident: ResidentBytes;
  /** In use order: the least recently used first. */
  readonly #entries = new Map<string, Buffer>();
  #bytes = 0;

  constructor(maxBytes: number, resident: ResidentBytes) {
    this.maxBytes = maxBytes;
    this.#resident = resident;
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
      this.#resident.touch(key);
    }
    return data;
  }

  /** Keeps `data`, dropping the least recently used to make room; a file larger than the bound is not kept. */
  set(tenantId: string, fileId: string, data: Buffer): void {
    this.delete(tenantId, fileId);
    const key = keyOf(tenantId, fileId);
    if (data.length > this.maxBytes || !this.#resident.hold(key, data.length, () => this.#drop(key))) return;
    this.#entries.set(key, data);
    this.#bytes += data.length;
    for (const old of this.#entries.keys()) {
      if (this.#bytes <= this.maxBytes) break;
      this.#drop(old);
      this.#resident.forget(old);
    }
  }

  delete(tenantId: string, fileId: string): void {
    const key = keyOf(tenantId, fileId);
    if (this.#drop(key)) this.#resident.forget(key);
  }

  #drop(key: string): boolean {
    const data = this.#entries.get(key);
    if (!data) return false;
    this.#entries.delete(key);
    this.#bytes -= data.length;
    return true;
  }
}

// File ids come from clients; a JSON pair cannot make two (tenant, file) pairs collide, nor meet a history's key.
const keyOf = (tenantId: string, fileId: string) => `file ${JSON.stringify([tenantId, fileId])}`;
