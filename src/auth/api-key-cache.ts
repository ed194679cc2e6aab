// The active API keys recently presented, by the key itself: a repeated key costs a Map lookup and a read of
// the store's key epoch instead of a SHA-256 and a query. Every revocation, by any process on the database,
// moves the epoch, and the next request that reads it empties the cache: a revoked key is refused from the
// next request on. Unknown keys are not kept, so creating a key needs no invalidation.
import type { ApiKeyRecord, Store } from '../store/store.ts';
import { hashApiKey } from './api-keys.ts';

/** Past this many keys the oldest is forgotten (only keys that authenticated are kept: ~50 bytes each). */
const MAX_KEYS = 10_000;

export class ApiKeyCache {
  readonly #store: Pick<Store, 'apiKeyEpoch' | 'findApiKeyByHash'>;
  readonly #max: number;
  readonly #keys = new Map<string, ApiKeyRecord>();
  /** The epoch every key in #keys was found active at, or after. */
  #epoch = Number.NaN;

  constructor(store: Pick<Store, 'apiKeyEpoch' | 'findApiKeyByHash'>, max = MAX_KEYS) {
    this.#store = store;
    this.#max = max;
  }

  /** The active key `key` is, or null when it is unknown or revoked. */
  async find(key: string): Promise<ApiKeyRecord | null> {
    const epoch = await this.#store.apiKeyEpoch();
    if (epoch !== this.#epoch) {
      this.#keys.clear();
      this.#epoch = epoch;
    }
    const cached = this.#keys.get(key);
    if (cached) return cached;
    const found = await this.#store.findApiKeyByHash(hashApiKey(key));
    // Another request may have read a newer epoch meanwhile: this lookup may then predate the revocation it
    // stands for, so it is not kept.
    if (found && epoch === this.#epoch) {
      if (this.#keys.size >= this.#max) {
        const oldest = this.#keys.keys().next();
        if (!oldest.done) this.#keys.delete(oldest.value);
      }
      // Shared by every request that presents the key from now on.
      Object.freeze(found.agents);
      this.#keys.set(key, Object.freeze(found));
    }
    return found;
  }
}
