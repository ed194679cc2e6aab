// Schemas of the AI SDK chat routes (DESIGN.md §14): the body `useChat` sends through DefaultChatTransport
// (`{ id, messages, trigger, messageId, … }`, read leniently: fields Parley does not use pass unchecked), the
// reading of its newest user message into a send, and the UI message stream answered for the OpenAPI document.
import { z } from 'zod';
import type { BlockInput } from '../actors/session-service.ts';
import { ValidationError, type ValidationIssue } from '../errors.ts';
import { MAX_BLOCKS, MAX_TEXT } from './message-schemas.ts';

/** A part of a UI message; the newest user message's `text` and `file` parts are read (chatSend). */
const uiMessagePart = z
  .looseObject({ type: z.string() })
  .meta({ id: 'UIMessagePart', description: "A part of an AI SDK UI message ('text', 'file', …)" });

const uiMessage = z
  .looseObject({
    id: z.string(),
    role: z.enum(['system', 'user', 'assistant']),
    parts: z.array(uiMessagePart),
  })
  .meta({ id: 'UIMessage', description: 'An AI SDK UI message' });

export type UIMessageInput = z.infer<typeof uiMessage>;

export const chatRequest = z
  .looseObject({
    id: z.string().optional().meta({ description: "The chat's id on the client (not used)" }),
    messages: z.array(uiMessage).min(1).meta({
      description:
        'The chat as the client holds it. Only the newest user message is read: it is sent as the next message of the session, which holds the history. Its text parts become text blocks; a file part whose url is a Parley file id (file_…, uploaded first) becomes an image block (mediaType image/…) or a file block; other parts are ignored.',
    }),
    trigger: z
      .string()
      .optional()
      .meta({ description: "'submit-message' or 'regenerate-message'; both send the newest user message" }),
    messageId: z.string().optional().meta({ description: 'Not used' }),
  })
  .meta({
    id: 'ChatRequest',
    // As DefaultChatTransport sends it, the client's own ids included.
    examples: [
      {
        id: 'Hq3sVwE9kLm2PzXa',
        messages: [
          {
            id: 'b7TnQ4cYx2RfJp8K',
            role: 'user',
            parts: [{ type: 'text', text: 'What are your opening hours?' }],
          },
        ],
        trigger: 'submit-message',
      },
    ],
  });

export type ChatRequest = z.infer<typeof chatRequest>;

/** The 200 answer of a chat route, for the OpenAPI document. */
export const uiMessageStreamResponse = {
  description:
    "The AI SDK UI message stream (header x-vercel-ai-ui-message-stream: v1): Server-Sent Events `data: {chunk}` — start (messageId: the agent reply's id), start-step, text-start, text-delta…, text-end (with tool-input-available and tool-output-available or tool-output-error between steps, where the caller sees tool calls), finish-step, finish; or an error chunk once the stream started — then `data: [DONE]`",
  content: { 'text/event-stream': { schema: z.string() } },
};

/** A user message id doubles as the Idempotency-Key, so it must be one (as idempotencyHeaders). */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;
/** A Parley file id, as a file part's url names an uploaded file. */
const FILE_ID = /^file_[0-9A-Za-z]{1,195}$/;

/** What a chat request sends: the newest user message, as content blocks, and its id. */
export interface ChatSend {
  id: string;
  content: BlockInput[];
}

/**
 * The newest user message of `messages` as a send, or a 422 naming what in it cannot be sent. Empty text
 * parts are skipped (a message of files only may carry one); parts other than text and file are ignored.
 */
export function chatSend(messages: readonly UIMessageInput[]): ChatSend {
  const index = messages.findLastIndex((m) => m.role === 'user');
  const message = messages[index];
  if (!message) {
    throw ValidationError.at(
      ['body', 'messages'],
      'No user message: the newest user message is what is sent',
      'value_error',
    );
  }
  const issues: ValidationIssue[] = [];
  const at = (path: (string | number)[], msg: string, type: string) =>
    issues.push({ loc: ['body', 'messages', index, ...path], msg, type });
  if (!KEY_PATTERN.test(message.id)) {
    at(['id'], 'A user message id is 1 to 255 printable ASCII characters', 'string_pattern_mismatch');
  }
  const content: BlockInput[] = [];
  message.parts.forEach((part, p) => {
    if (part.type === 'text') {
      const { text } = part;
      if (typeof text !== 'string') at(['parts', p, 'text'], 'Field required', 'missing');
      else if (/\p{Cs}/u.test(text))
        at(
          ['parts', p, 'text'],
          'Input should be well-formed Unicode (no lone surrogates)',
          'string_unicode',
        );
      else if (text.length > MAX_TEXT)
        at(['parts', p, 'text'], `String should have at most ${MAX_TEXT} characters`, 'string_too_long');
      else if (text !== '') content.push({ type: 'text', text });
    } else if (part.type === 'file') {
      const { url, mediaType } = part;
      if (typeof url !== 'string' || !FILE_ID.test(url)) {
        at(
          ['parts', p, 'url'],
          "Only files uploaded to Parley can be sent: upload the file first and give its id (file_…) as the part's url",
          'value_error',
        );
      } else {
        const image = typeof mediaType === 'string' && mediaType.startsWith('image/');
        content.push({ type: image ? 'image' : 'file', file_id: url });
      }
    }
  });
  if (issues.length > 0) throw new ValidationError(issues);
  if (content.length === 0) {
    at(['parts'], 'The user message has no text or file to send', 'too_short');
  } else if (content.length > MAX_BLOCKS) {
    at(['parts'], `At most ${MAX_BLOCKS} text and file parts`, 'too_long');
  }
  if (issues.length > 0) throw new ValidationError(issues);
  return { id: message.id, content };
}
