// Schemas of the AI SDK chat routes: the body `useChat` sends through DefaultChatTransport (`{ id, messages,
// trigger, messageId, … }`, read leniently: fields Parley does not use pass unchecked) and the UI message
// stream answered, for the OpenAPI document.
import { z } from 'zod';

/** A part of a UI message; the newest user message's `text` and `file` parts are read. */
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
