// What a turn holds in memory while it runs, estimated from above (docs/internals/decisions.md#resident-memory):
// before it reads anything, from what the process knows (the session service reserves that much through
// admission.ts), and once its history and files are read, from what it holds (turn-model.ts resizes the
// reservation to that).
import type { ModelMessage } from '../agents/provider.ts';
import type { ContentBlock, Store } from '../store/store.ts';
import type { SessionEntry } from './resident-actors.ts';

/** Objects around the text (records, the SDK's messages, streams, the reply): a fixed allowance. */
export const TURN_OVERHEAD_BYTES = 256 * 1024;
/**
 * Bytes a character of history (its content as stored: JSON, escapes included) may take: two for the
 * records (V8 keeps text that is not Latin-1 two bytes a character), two for the request body's text, which the
 * providers build as one string (its UTF-8 is made a chunk at a time). While the store's rows are parsed,
 * their text and the records take the same four.
 */
const BYTES_PER_CHAR = 4;

/** The bounds a turn reads within: characters of history, bytes of files. */
export interface TurnBounds {
  maxHistoryChars: number;
  fileBudgetBytes: number;
}

/**
 * What a turn holding this much history, this many bytes of files and steps of this many characters takes,
 * from above. A file counts its bytes once: its base64, or its text when inlined, reaches the request body a
 * chunk at a time (agents/file-stand-ins.ts).
 */
export function turnBytes(historyChars: number, fileBytes: number, stepsChars = 0): number {
  return TURN_OVERHEAD_BYTES + BYTES_PER_CHAR * (historyChars + stepsChars) + fileBytes;
}

/** The bytes of files the model messages carry (a turn's files once read: those left out are not among them). */
export function fileBytesOf(messages: readonly ModelMessage[]): number {
  let bytes = 0;
  for (const message of messages) {
    if (message.role === 'tool') continue;
    for (const part of message.content) if (part.type !== 'text') bytes += part.data.length;
  }
  return bytes;
}

/** A session's history as the process knows it before a turn: its characters and contents, or unknown. */
export type KnownHistory = { chars: number; contents: readonly ContentBlock[][] } | null;

/** What the process knows of a session's history: its cached messages, none for a new one, else nothing. */
export function knownHistory(entry: SessionEntry): KnownHistory {
  const kept = entry.history.kept();
  if (kept) return { chars: kept.chars, contents: kept.messages.map((m) => m.content) };
  return entry.session.messages_count === 0 ? { chars: 0, contents: [] } : null;
}

/**
 * A turn before it reads anything: its history is the known one with the added messages, or, when unknown,
 * as much as a turn reads; its files those the history and the added messages name, as a turn attaches them
 * (newest first, within the budget), or, when the history is unknown, the whole budget.
 */
export async function sendBytes(
  store: Store,
  bounds: TurnBounds,
  tenantId: string,
  history: KnownHistory,
  added: readonly ContentBlock[][],
): Promise<number> {
  const addedChars = added.reduce((n, content) => n + JSON.stringify(content).length, 0);
  // The newest message is read whatever its size; the rest within the bound.
  const most = Math.max(bounds.maxHistoryChars, addedChars);
  if (!history) return turnBytes(most, bounds.fileBudgetBytes);
  const contents = [...history.contents, ...added];
  const files = await attached(store, tenantId, contents, bounds.fileBudgetBytes);
  return turnBytes(Math.min(history.chars + addedChars, most), files);
}

/** The bytes of the files the contents name, newest first, while they fit the budget (as model-messages.ts attaches them). */
async function attached(
  store: Store,
  tenantId: string,
  contents: readonly ContentBlock[][],
  budget: number,
): Promise<number> {
  const ids = new Set<string>();
  for (let i = contents.length - 1; i >= 0; i--) {
    const content = contents[i] as ContentBlock[];
    for (let j = content.length - 1; j >= 0; j--) {
      const block = content[j] as ContentBlock;
      if (block.type !== 'text') ids.add(block.file_id);
    }
  }
  let left = budget;
  for (const id of ids) {
    const file = await store.getFile(tenantId, id);
    if (!file) continue;
    if (file.size > left) break;
    left -= file.size;
  }
  return budget - left;
}

/**
 * A warning for the operator when the largest turn the bounds allow is estimated above a tenant's share of
 * the bound (such a turn counts as the share, and runs alone among its tenant's turns); null when it fits.
 */
export function largestTurnOverShare(bounds: TurnBounds, tenantCap: number): string | null {
  const largest = turnBytes(bounds.maxHistoryChars, bounds.fileBudgetBytes);
  if (tenantCap === 0 || largest <= tenantCap) return null;
  const mib = (bytes: number) => Math.ceil(bytes / (1024 * 1024));
  return (
    `A turn may hold up to ${mib(largest)} MiB (PARLEY_MAX_TURN_HISTORY_CHARS, PARLEY_MAX_TURN_FILE_BYTES), more than ` +
    `a tenant's share of PARLEY_MAX_RESIDENT_BYTES (${mib(tenantCap)} MiB): such a turn runs alone among its tenant's.`
  );
}
