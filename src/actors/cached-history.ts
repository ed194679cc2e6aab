// A resident session's latest messages, kept between turns so that a turn does not read its history back
// from the store: read on a session's first turn, followed by every commit, and counted against the
// process's resident bytes, which may let them go (the next turn reads them again).
import type { MessageRecord } from '../store/store.ts';
import type { ResidentBytes } from './resident-bytes.ts';

export class CachedHistory {
  readonly #key: string;
  readonly #resident: ResidentBytes;
  /** Oldest first; null while nothing is kept. */
  #messages: MessageRecord[] | null = null;
  #bytes = 0;

  constructor(sessionId: string, resident: ResidentBytes) {
    this.#key = `history ${sessionId}`;
    this.#resident = resident;
  }

  /**
   * The last `limit` messages back while their content adds up to at most `maxChars` characters (the newest
   * always): those kept, or those `load` reads, then kept while the bound allows.
   */
  async recent(
    limit: number,
    maxChars: number,
    load: () => Promise<MessageRecord[]>,
  ): Promise<MessageRecord[]> {
    const kept = this.#messages;
    if (!kept) {
      const messages = await load();
      this.#messages = messages;
      this.#bytes = messages.reduce((n, m) => n + messageBytes(m), 0);
      this.#hold();
      return messages;
    }
    this.#resident.touch(this.#key);
    const cut = Math.max(kept.length - limit, firstWithin(kept, maxChars));
    if (cut === 0) return kept;
    for (const message of kept.splice(0, cut)) this.#bytes -= messageBytes(message);
    this.#hold();
    return kept;
  }

  /** Follows a commit: `messages` were stored after those kept. */
  append(messages: readonly MessageRecord[]): void {
    if (!this.#messages || messages.length === 0) return;
    this.#messages.push(...messages);
    for (const message of messages) this.#bytes += messageBytes(message);
    this.#hold();
  }

  /** Keeps nothing any more (the actor leaves memory). */
  forget(): void {
    this.#clear();
    this.#resident.forget(this.#key);
  }

  #hold(): void {
    if (!this.#resident.hold(this.#key, this.#bytes, () => this.#clear())) this.#clear();
  }

  #clear(): void {
    this.#messages = null;
    this.#bytes = 0;
  }
}

/**
 * What a message takes in memory, estimated from above: two bytes a character (V8 keeps text that is not
 * Latin-1 that way) and room for the objects around it. Cheap: string lengths are known without a scan.
 */
export function messageBytes(message: MessageRecord): number {
  let bytes = 512;
  for (const block of message.content) bytes += 64 + 2 * (block.type === 'text' ? block.text.length : 32);
  if (message.metadata) bytes += 2 * JSON.stringify(message.metadata).length;
  return bytes;
}

/**
 * The index of the oldest message from which on the content adds up to at most `maxChars`, the newest always
 * counted in. Characters as the store counts them (content as JSON), closely estimated without writing it.
 */
function firstWithin(messages: readonly MessageRecord[], maxChars: number): number {
  let chars = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as MessageRecord;
    for (const block of message.content) chars += block.type === 'text' ? 25 + block.text.length : 56;
    if (chars > maxChars && i < messages.length - 1) return i + 1;
  }
  return 0;
}
