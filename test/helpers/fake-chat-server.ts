// A fake OpenAI-compatible Chat Completions server on loopback that behaves like llama.cpp's `llama-server`
// where the context window is concerned: it counts the prompt by its own rule and refuses one over its
// context with llama.cpp's 400 body; otherwise it streams the reply a test chose, with usage if asked.
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';

export interface ChatMessage {
  role: string;
  content: string | { type: string; text?: string }[];
}

export interface ChatRequest {
  model: string;
  stream: boolean;
  max_tokens?: number;
  messages: ChatMessage[];
}

export interface FakeChatOptions {
  /** The model's context in tokens (llama.cpp's n_ctx); a longer prompt is refused with 400. */
  contextTokens: number;
  /** The model's own count of a text (a different tokenizer from Parley's estimate); default chars / 3. */
  countText?: (text: string) => number;
  /** Whether the final chunk reports usage (llama.cpp does; some servers do not). */
  reportUsage?: boolean;
}

/** What the chat template adds per message, in the fake's count. */
const TEMPLATE_TOKENS = 5;
/** What an image or other non-text part costs in the fake's count. */
const PART_TOKENS = 600;

export interface FakeChatServer {
  /** `http://127.0.0.1:<port>/v1`, for an agent's `base_url`. */
  baseUrl: string;
  /** Every request received, in order, refused ones included. */
  requests: ChatRequest[];
  /** Which requests were refused for their length (indexes into `requests`). */
  refused: number[];
  /** The text of the next replies; a function of the request, or a constant. */
  reply: (request: ChatRequest) => string;
  /** The fake's prompt count of a request, as it decides a refusal. */
  promptTokens(messages: readonly ChatMessage[]): number;
  close(): Promise<void>;
}

const sse = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;

export async function startFakeChatServer(options: FakeChatOptions): Promise<FakeChatServer> {
  const countText = options.countText ?? ((text: string) => Math.ceil(text.length / 3));
  const promptTokens = (messages: readonly ChatMessage[]) =>
    messages.reduce((sum, m) => {
      const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
      const content = parts.reduce(
        (n, p) => n + (p.type === 'text' ? countText(p.text ?? '') : PART_TOKENS),
        0,
      );
      return sum + TEMPLATE_TOKENS + content;
    }, 0);

  const app: FastifyInstance = Fastify({ forceCloseConnections: true });
  const server: FakeChatServer = {
    baseUrl: '',
    requests: [],
    refused: [],
    reply: () => 'OK.',
    promptTokens,
    close: () => app.close(),
  };
  app.post('/v1/chat/completions', (request, reply) => {
    const body = request.body as ChatRequest;
    server.requests.push(body);
    const prompt = promptTokens(body.messages);
    if (prompt > options.contextTokens) {
      server.refused.push(server.requests.length - 1);
      // llama.cpp's server, word for word (tools/server: exceed_context_size_error).
      return reply.code(400).send({
        error: {
          code: 400,
          message: 'the request exceeds the available context size, try increasing it',
          type: 'exceed_context_size_error',
          n_prompt_tokens: prompt,
          n_ctx: options.contextTokens,
        },
      });
    }
    const text = server.reply(body);
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // A few pieces, as a model streams them.
    const size = Math.max(1, Math.ceil(text.length / 4));
    for (let i = 0; i < text.length; i += size) {
      const content = text.slice(i, i + size);
      reply.raw.write(sse({ choices: [{ index: 0, delta: { content }, finish_reason: null }] }));
    }
    reply.raw.write(sse({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }));
    if (options.reportUsage) {
      const usage = { prompt_tokens: prompt, completion_tokens: countText(text) };
      reply.raw.write(sse({ choices: [], usage }));
    }
    reply.raw.write('data: [DONE]\n\n');
    reply.raw.end();
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  assert.ok(address && typeof address === 'object');
  server.baseUrl = `http://127.0.0.1:${address.port}/v1`;
  return server;
}
