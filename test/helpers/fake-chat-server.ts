// A fake OpenAI-compatible Chat Completions server on loopback that behaves like llama.cpp's `llama-server`
// where the context window is concerned: it counts the prompt by its own rule and refuses one over its
// context with llama.cpp's 400 body; otherwise it streams the reply a test chose, with usage if asked. A slow
// model too: held, it answers nothing until the test opens it; and lean, it reads large bodies as they come
// and keeps only what a test checks of them (their size, their images), so that a test of heavy turns does
// not hold their prompts.
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';

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
  /** Requests wait, unanswered, until `open()` (a slow model the test lets answer). */
  held?: boolean;
  /**
   * Bodies are read as they arrive and not kept: `received` says what came (their size and images), and
   * `requests` stays empty. Any size is taken.
   */
  lean?: boolean;
}

/** What a lean server saw of one request. */
export interface ReceivedBody {
  model: string;
  bytes: number;
  /** The images it carried, each as its data URL's media type and the length of its base64. */
  images: { mediaType: string; base64Chars: number }[];
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
  /** A lean server's requests, in order, once each body has been read whole. */
  received: ReceivedBody[];
  /** Requests received and not answered yet (held ones). */
  waiting: number;
  /** Lets the held requests, and every later one, answer. */
  open(): void;
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
  /** Streams `text` in a few pieces, as a model does; with the usage when `prompt` is given. */
  const streamReply = (reply: FastifyReply, text: string, prompt: number | null) => {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const size = Math.max(1, Math.ceil(text.length / 4));
    for (let i = 0; i < text.length; i += size) {
      const content = text.slice(i, i + size);
      reply.raw.write(sse({ choices: [{ index: 0, delta: { content }, finish_reason: null }] }));
    }
    reply.raw.write(sse({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }));
    if (prompt !== null) {
      reply.raw.write(
        sse({ choices: [], usage: { prompt_tokens: prompt, completion_tokens: countText(text) } }),
      );
    }
    reply.raw.write('data: [DONE]\n\n');
    reply.raw.end();
  };
  const server: FakeChatServer = {
    baseUrl: '',
    requests: [],
    refused: [],
    received: [],
    waiting: 0,
    open: () => open(),
    reply: () => 'OK.',
    promptTokens,
    close: () => app.close(),
  };
  let open = () => {};
  const opened = options.held ? new Promise<void>((resolve) => (open = resolve)) : Promise.resolve();
  if (options.lean) {
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', (_request, payload, done) => {
      readLean(payload).then((summary) => done(null, summary), done);
    });
  }
  app.post('/v1/chat/completions', async (request, reply) => {
    server.waiting++;
    await opened;
    server.waiting--;
    if (options.lean) {
      const summary = request.body as ReceivedBody;
      server.received.push(summary);
      return streamReply(reply, server.reply({ model: summary.model, stream: true, messages: [] }), null);
    }
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
    return streamReply(reply, server.reply(body), options.reportUsage ? prompt : null);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  assert.ok(address && typeof address === 'object');
  server.baseUrl = `http://127.0.0.1:${address.port}/v1`;
  return server;
}

/**
 * A lean server's reading of a body as it streams in: its size, its model (named at its start) and each image
 * data URL's media type and length, found across chunk boundaries, without keeping the body.
 */
async function readLean(stream: AsyncIterable<Buffer>): Promise<ReceivedBody> {
  const summary: ReceivedBody = { model: '', bytes: 0, images: [] };
  let head = '';
  /** The end of the previous chunk, where the start of a data URL may have been cut. */
  let tail = '';
  let image: ReceivedBody['images'][number] | null = null;
  for await (const chunk of stream) {
    summary.bytes += chunk.length;
    if (head.length < 4096) head += chunk.toString('latin1', 0, 4096);
    const text = tail + chunk.toString('latin1');
    tail = '';
    let at = 0;
    while (at < text.length) {
      if (image) {
        const end = text.indexOf('"', at);
        image.base64Chars += (end < 0 ? text.length : end) - at;
        if (end < 0) break;
        summary.images.push(image);
        image = null;
        at = end + 1;
        continue;
      }
      const start = text.indexOf('"data:image/', at);
      const comma = start < 0 ? -1 : text.indexOf(';base64,', start);
      if (comma < 0) {
        tail = text.slice(start < 0 ? Math.max(at, text.length - 64) : start);
        break;
      }
      image = { mediaType: text.slice(start + 6, comma), base64Chars: 0 };
      at = comma + ';base64,'.length;
    }
  }
  summary.model = /"model":"([^"]*)"/.exec(head)?.[1] ?? '';
  return summary;
}
