// The conversation as the model sees it: stored messages with their files read from the tenant pool. A file
// deleted since it was sent becomes a placeholder, so old turns stay readable. A turn attaches at most its
// budget of file bytes, newest first; older files become a placeholder too
// (docs/internals/decisions.md#files-a-turn-sends), and the bytes come from the process's file cache when it
// has them.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { MessageRecord, Store, StoredFile } from '../store/store.ts';
import type { FileCache } from './file-cache.ts';
import type { ContentMessage, ModelPart } from './provider.ts';

/** How a turn gets its files: the process's cache, and how many bytes of files one turn may attach. */
export interface TurnFiles {
  cache: FileCache;
  budgetBytes: number;
  /** Set when no file is to be sent at all (the model refused them): why, in each file's placeholder line. */
  withheld?: string;
}

type Kind = 'image' | 'file';

export async function toModelMessages(
  store: Store,
  tenantId: string,
  messages: readonly MessageRecord[],
  files: TurnFiles,
): Promise<ContentMessage[]> {
  const loaded =
    files.withheld === undefined ? await loadFiles(store, tenantId, newestFirst(messages), files) : null;
  const filePart = (fileId: string, kind: Kind): ModelPart => {
    if (!loaded) return { type: 'text', text: `[${kind} ${fileId} ${files.withheld}]` };
    const found = loaded.get(fileId);
    if (found === undefined) return { type: 'text', text: `[${kind} ${fileId} is no longer available]` };
    if (found === 'over budget') {
      return {
        type: 'text',
        text: `[${kind} ${fileId} is left out: a turn attaches a limited size of files, the newest first]`,
      };
    }
    const { file, data } = found;
    return kind === 'image' && file.mime_type.startsWith('image/')
      ? { type: 'image', mime_type: file.mime_type, data }
      : { type: 'file', name: file.name, mime_type: file.mime_type, data };
  };
  return messages.map((m) => ({
    role: m.role,
    content: m.content.map((b) =>
      b.type === 'text' ? { type: 'text' as const, text: b.text } : filePart(b.file_id, b.type),
    ),
  }));
}

/** The ids of the files the messages refer to, each once, from the last block of the last message back. */
function newestFirst(messages: readonly MessageRecord[]): string[] {
  const ids = new Set<string>();
  // Index loops: the whole history is walked every turn, and reversed copies of it cost more than the walk.
  for (let i = messages.length - 1; i >= 0; i--) {
    const content = (messages[i] as MessageRecord).content;
    for (let j = content.length - 1; j >= 0; j--) {
      const block = content[j] as MessageRecord['content'][number];
      if (block.type !== 'text') ids.add(block.file_id);
    }
  }
  return [...ids];
}

type Loaded = { file: StoredFile; data: Buffer } | 'over budget';

/**
 * Each file (absent when deleted): newest first while their sizes fit the budget; once one does not, it and
 * every older one are over budget and never read. Reads go one at a time, the event loop served in between,
 * because a store may read synchronously.
 */
async function loadFiles(
  store: Store,
  tenantId: string,
  ids: readonly string[],
  { cache, budgetBytes }: TurnFiles,
): Promise<Map<string, Loaded>> {
  const loaded = new Map<string, Loaded>();
  const records = await Promise.all(ids.map((id) => store.getFile(tenantId, id)));
  let left = budgetBytes;
  let spent = false;
  for (const file of records) {
    if (!file) continue;
    // Once a file does not fit, older ones are left out even if smaller: the model sees a recent stretch.
    spent ||= file.size > left;
    if (spent) {
      loaded.set(file.id, 'over budget');
      continue;
    }
    let data = cache.get(tenantId, file.id);
    if (!data) {
      data = (await store.readFileContent(tenantId, file.id)) ?? undefined;
      // Deleted since its record was read: it takes none of the budget.
      if (!data) continue;
      cache.set(tenantId, file.id, data);
      await yieldToLoop();
    }
    left -= file.size;
    loaded.set(file.id, { file, data });
  }
  for (const [i, id] of ids.entries()) if (!records[i]) cache.delete(tenantId, id);
  return loaded;
}
