// The AI SDK's chat client for tests of the chat routes' approvals (docs/guides/ai-sdk.md#approvals): requests
// through DefaultChatTransport read with readUIMessageStream, what addToolApprovalResponse does to a message,
// the SDK's AbstractChat on a state in memory (what useChat wraps, without React), and the routes of both
// families on an app listening on loopback.
import assert from 'node:assert/strict';
import {
  AbstractChat,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
} from 'ai';
import type { ApprovalApp } from './approvals.ts';
import { openConversation, publicPath } from './conversations.ts';
import { createSession } from './sessions.ts';

export type ToolPart = Extract<UIMessage['parts'][number], { type: 'dynamic-tool' }>;

/** A chat with its route and credentials, as useChat's transport would be set up. */
export interface Route {
  api: string;
  headers: Record<string, string>;
}

/** The answer of one chat request: its chunks and the assistant message the SDK builds from them. */
export interface Answer {
  chunks: UIMessageChunk[];
  message: UIMessage;
}

/** Sends `messages` through DefaultChatTransport and reads the answer, continuing `last` if it is the assistant's. */
export async function chat(route: Route, messages: UIMessage[]): Promise<Answer> {
  const transport = new DefaultChatTransport<UIMessage>(route);
  const stream = await transport.sendMessages({
    chatId: 'chat-1',
    messages,
    trigger: 'submit-message',
    messageId: messages.at(-1)?.role === 'assistant' ? messages.at(-1)?.id : undefined,
    abortSignal: undefined,
  });
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  const last = messages.at(-1);
  let message: UIMessage | undefined;
  for await (const state of readUIMessageStream<UIMessage>({
    stream: ReadableStream.from(chunks),
    ...(last?.role === 'assistant' ? { message: structuredClone(last) } : {}),
    onError: (err) => assert.fail(String(err)),
  })) {
    message = state;
  }
  assert.ok(message);
  return { chunks, message };
}

/** The refusal a chat request gets (the transport's APICallError): its status and JSON error. */
export async function refused(answer: Promise<unknown>) {
  const err = await answer.then(
    () => assert.fail('the chat was not refused'),
    (e: { statusCode?: number; responseBody?: string }) => e,
  );
  return { status: err.statusCode, error: JSON.parse(err.responseBody ?? '{}').error };
}

export const toolParts = (message: UIMessage) =>
  message.parts.filter((p): p is ToolPart => p.type === 'dynamic-tool');
export const textOf = (message: UIMessage) =>
  message.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
export const user = (id: string, text: string): UIMessage => ({
  id,
  role: 'user',
  parts: [{ type: 'text', text }],
});

/** What addToolApprovalResponse does to the message: the part of approval `id` answered. */
export const answer = (message: UIMessage, id: string, approved: boolean, reason?: string): UIMessage => ({
  ...message,
  parts: message.parts.map((p) =>
    p.type === 'dynamic-tool' && p.state === 'approval-requested' && p.approval.id === id
      ? { ...p, state: 'approval-responded', approval: { id, approved, ...(reason ? { reason } : {}) } }
      : p,
  ),
});

/** A chat state in memory, as the SDK's framework bindings keep it. */
class MemoryState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (message: UIMessage) => void this.messages.push(message);
  popMessage = () => void this.messages.pop();
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages[index] = message;
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/** The SDK's chat (what useChat wraps), without a framework. */
export class NodeChat extends AbstractChat<UIMessage> {
  constructor(init: Omit<ConstructorParameters<typeof AbstractChat<UIMessage>>[0], 'state'>) {
    super({ ...init, state: new MemoryState() });
  }
}

/** The chat routes of an app: one of a new API-key session, one of a new conversation with its token. */
export function chatRoutes(t: ApprovalApp) {
  let base: string | undefined;
  const listening = async () => {
    base ??= await t.app.listen({ port: 0, host: '127.0.0.1' });
    return base;
  };
  const keyRoute = async (agent = 'shop'): Promise<Route> => {
    const { id } = await createSession(t, agent);
    return { api: `${await listening()}/v1/agents/sessions/${id}/chat`, headers: { 'x-api-key': t.apiKey } };
  };
  const publicRoute = async (agent = 'shop') => {
    const c = await openConversation(t, agent);
    const route: Route = {
      api: `${await listening()}${publicPath(c.id, '/chat')}`,
      headers: { authorization: `Bearer ${c.session_token}` },
    };
    return { id: c.id, route };
  };
  const sessionOf = (route: Route) => route.api.split('/').at(-2) ?? '';
  return { keyRoute, publicRoute, sessionOf };
}
