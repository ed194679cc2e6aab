// A resident session's latest messages, kept between turns so that a turn does not read its history back
// from the store: read on a session's first turn, followed by every commit, and counted against the
// process's resident bytes, which may let them go (the next turn reads them again).

import type { ResidentBytes } from '../resident-bytes.ts';
import type { MessageRecord } from '../store/store.ts';

interface Kept {
  message: MessageRecord;
  /** Its content's characters as stored (JSON), which is how the store cuts a history. */
  chars: number;
  bytes: number;
}

/** Tells apart the holdings of one session's successive actors: an old one's late load must not pass as the new one's. */
let instances = 0;

export class CachedHistory {
  readonly #key: string;
  readonly #resident: ResidentBytes;
  /** Oldest first; null while nothing is kept. */
  #kept: Kept[] | null = null;
  #bytes = 0;
  /** The characters (as stored) of the history recent() answered last. */
  #answered = 0;
  /** The actor has left memory: whatever arrives later is not kept. */
  #forgotten = false;

  constructor(resident: ResidentBytes) {
    // Short and flat (a longer template would be kept as a rope of strings): only this instance holds under it.
    this.#key = `h${++instances}`;
    this.#resident = resident;
  }

  /**
   * The last `limit` messages back while their content adds up to at most `maxChars` characters (the newest
   * always), as the store reads them: those kept, or those `load` reads, then kept while the bound allows.
   */
  async recent(
    limit: number,
    maxChars: number,
    load: () => Promise<MessageRecord[]>,
  ): Promise<MessageRecord[]> {
    if (!this.#kept) {
      const messages = await load();
      const read = messages.map(keep);
      this.#answered = charsOf(read);
      if (this.#forgotten) return messages;
      this.#kept = read;
      this.#bytes = this.#kept.reduce((n, k) => n + k.bytes, 0);
      this.#hold();
      return messages;
    }
    const kept = this.#kept;
    this.#resident.touch(this.#key);
    const cut = Math.max(kept.length - limit, firstWithin(kept, maxChars));
    if (cut > 0) {
      for (const k of kept.splice(0, cut)) this.#bytes -= k.bytes;
      this.#hold();
    }
    this.#answered = charsOf(kept);
    return kept.map((k) => k.message);
  }

  /** The characters (content as stored) of the messages recent() answered last. */
  get answeredChars(): number {
    return this.#answered;
  }

  /** What is kept now, for an estimate before a turn reads it: its characters and its messages; null if nothing. */
  kept(): { chars: number; messages: MessageRecord[] } | null {
    if (!this.#kept) return null;
    return { chars: charsOf(this.#kept), messages: this.#kept.map((k) => k.message) };
  }

  /** Follows a commit: `messages` were stored after those kept. */
  append(messages: readonly MessageRecord[]): void {
    if (!this.#kept || messages.length === 0) return;
    const added = messages.map(keep);
    for (const k of added) this.#bytes += k.bytes;
    // A new array of the exact length: pushed onto, a small one grows room for 17 (136 B more, idle).
    this.#kept = this.#kept.concat(added);
    this.#hold();
  }

  /** Keeps nothing any more (the actor leaves memory). */
  forget(): void {
    this.#forgotten = true;
    this.#clear();
    this.#resident.forget(this.#key);
  }

  #hold(): void {
    if (!this.#resident.hold(this.#key, this.#bytes, () => this.#clear())) this.#clear();
  }

  #clear(): void {
    this.#kept = null;
    this.#bytes = 0;
  }
}

function keep(message: MessageRecord): Kept {
  return { message, chars: JSON.stringify(message.content).length, bytes: messageBytes(message) };
}

/**
 * What a message takes in memory, estimated from above: two bytes a character (V8 keeps text that is not
 * Latin-1 that way) and room for the objects around it. Cheap: string lengths are known without a scan.
 */
export function messageBytes(message: MessageRecord): number {
  let bytes = 512;
  for (const block of message.content) bytes += 64 + 2 * (block.type === 'text' ? block.text.length : 32);
  if (message.metadata) bytes += 2 * JSON.stringify(message.metadata).length;
  if (message.tool_calls?.length) bytes += 2 * JSON.stringify(message.tool_calls).length;
  return bytes;
}

const charsOf = (kept: readonly Kept[]) => kept.reduce((n, k) => n + k.chars, 0);

/** The index of the oldest message from which on the content adds up to at most `maxChars`, the newest always in. */
function firstWithin(kept: readonly Kept[], maxChars: number): number {
  let chars = 0;
  for (let i = kept.length - 1; i >= 0; i--) {
    chars += (kept[i] as Kept).chars;
    if (chars > maxChars && i < kept.length - 1) return i + 1;
  }
  return 0;
}
