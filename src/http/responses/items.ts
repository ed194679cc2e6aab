// A session's messages as Open Responses items (docs/guides/openai-sdks.md): the user's content blocks as
// `input_text`, `input_image` and `input_file` parts, the agent's text as `output_text`; and a page of them
// as the SDKs' list (`first_id`, `last_id`, `has_more`), after an item id, in either order.
import type { z } from 'zod';
import type { conversationItem, itemListQuery } from '#schemas';
import type { MessageRecord } from '../../store/store.ts';

type Item = z.infer<typeof conversationItem>;

export function itemOf(m: MessageRecord): Item {
  return {
    type: 'message',
    id: m.id,
    role: m.role,
    status: 'completed',
    content: m.content.map((block) => {
      if (block.type === 'text') {
        return m.role === 'user'
          ? { type: 'input_text' as const, text: block.text }
          : { type: 'output_text' as const, text: block.text, annotations: [] };
      }
      return block.type === 'image'
        ? { type: 'input_image' as const, file_id: block.file_id, image_url: null, detail: 'auto' as const }
        : { type: 'input_file' as const, file_id: block.file_id };
    }),
  };
}

/** A page of `items` (oldest first) as the query asks: its order, after an item id, at most `limit`. */
export function itemPage(items: readonly Item[], query: z.infer<typeof itemListQuery>) {
  const ordered = query.order === 'asc' ? [...items] : [...items].reverse();
  const start = query.after === undefined ? 0 : ordered.findIndex((item) => item.id === query.after) + 1;
  const data = start === 0 && query.after !== undefined ? [] : ordered.slice(start, start + query.limit);
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: start + data.length < ordered.length && data.length > 0,
  };
}
