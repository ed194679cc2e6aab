// A fake model server on loopback that speaks both wire protocols Parley uses, streamed: OpenAI Chat
// Completions (`POST /v1/chat/completions`) and Anthropic Messages (`POST /v1/messages`). Each request is
// answered as the test's next behaviour says: a reply, or a failure as real servers fail (a status with their
// error body and headers, a socket cut mid-stream, silence before the first byte), or tool calls in each
// protocol's streamed form.
import assert from 'node:assert/strict';
import Fastify, { type FastifyReply } from 'fastify';

export type Behaviour =
  | { kind: 'reply'; text: string; finish?: 'stop' | 'length' | 'content_filter' }
  | { kind: 'status'; status: number; body: unknown; headers?: Record<string, string> }
  /** Streams `text`, then destroys the socket without finishing. */
  | { kind: 'cut'; text: string }
  /** Accepts the request and sends nothing. */
  | { kind: 'stall' }
  /** Streams `text`, then ends the response cleanly without the model's finish (as a proxy might). */
  | { kind: 'unfinished'; text: string }
  /** Chat Completions only: `reasoning_content` pieces for `ms`, then `text` (a thinking model). */
  | { kind: 'reasoning'; ms: number; text: string }
  /** `text` if any, then one step's tool calls, in order, their inputs streamed as JSON in pieces. */
  | { kind: 'tools'; calls: ToolCallBehaviour[]; text?: string };

export interface ToolCallBehaviour {
  name: string;
  input: unknown;
}

export interface FakeModelServer {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  /** Request bodies, in order, with the path they came to. */
  requests: { path: string; body: Record<string, unknown>; headers: Record<string, unknown> }[];
  /** What the next requests get, in order; once used up, every request gets `fallback`. */
  queue: Behaviour[];
  fallback: Behaviour;
  close(): Promise<void>;
}

const data = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
const event = (name: string, chunk: unknown) => `event: ${name}\n${data(chunk)}`;

function pieces(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 3));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function chatStream(reply: FastifyReply, text: string, finish: string | null): void {
  for (const content of pieces(text)) {
    reply.raw.write(data({ id: 'c1', choices: [{ index: 0, delta: { content }, finish_reason: null }] }));
  }
  if (finish === null) return;
  reply.raw.write(data({ id: 'c1', choices: [{ index: 0, delta: {}, finish_reason: finish }] }));
  reply.raw.write(data({ id: 'c1', choices: [], usage: { prompt_tokens: 11, completion_tokens: 7 } }));
  reply.raw.write('data: [DONE]\n\n');
}

/** Chat Completions' tool calls: each opens with its index, id and name; its arguments follow in pieces. */
function chatToolsStream(reply: FastifyReply, calls: ToolCallBehaviour[], text: string): void {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    data({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] });
  reply.raw.write(chunk({ role: 'assistant', content: null }));
  for (const content of pieces(text)) reply.raw.write(chunk({ content }));
  calls.forEach((call, index) => {
    reply.raw.write(
      chunk({
        tool_calls: [
          { index, id: `call_wire${index}`, type: 'function', function: { name: call.name, arguments: '' } },
        ],
      }),
    );
    for (const args of pieces(JSON.stringify(call.input))) {
      reply.raw.write(chunk({ tool_calls: [{ index, function: { arguments: args } }] }));
    }
  });
  reply.raw.write(chunk({}, 'tool_calls'));
  reply.raw.write(data({ id: 'c1', choices: [], usage: { prompt_tokens: 11, completion_tokens: 7 } }));
  reply.raw.write('data: [DONE]\n\n');
}

const anthropicStop: Record<string, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  content_filter: 'refusal',
};

function messageStart(reply: FastifyReply): void {
  reply.raw.write(
    event('message_start', {
      type: 'message_start',
      message: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'fake',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 11, output_tokens: 1 },
      },
    }),
  );
}

/** Anthropic's text block at index 0, streamed in pieces; left open (a cut stream ends here). */
function textBlock(reply: FastifyReply, text: string): void {
  reply.raw.write(
    event('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    }),
  );
  for (const piece of pieces(text)) {
    reply.raw.write(
      event('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: piece },
      }),
    );
  }
}

const blockStop = (index: number) => event('content_block_stop', { type: 'content_block_stop', index });

/** The end of an Anthropic message: why it stopped, then message_stop. */
function messageEnd(reply: FastifyReply, stopReason: string): void {
  reply.raw.write(
    event('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: 7 },
    }),
  );
  reply.raw.write(event('message_stop', { type: 'message_stop' }));
}

function messagesStream(reply: FastifyReply, text: string, finish: string | null): void {
  messageStart(reply);
  textBlock(reply, text);
  if (finish === null) return;
  reply.raw.write(blockStop(0));
  messageEnd(reply, anthropicStop[finish] ?? 'end_turn');
}

/** Anthropic's tool calls: a `tool_use` block each, its input in `input_json_delta` pieces, then stop. */
function messagesToolsStream(reply: FastifyReply, calls: ToolCallBehaviour[], text: string): void {
  messageStart(reply);
  const offset = text === '' ? 0 : 1;
  if (text !== '') {
    textBlock(reply, text);
    reply.raw.write(blockStop(0));
  }
  calls.forEach((call, i) => {
    const index = i + offset;
    reply.raw.write(
      event('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: `toolu_wire${i}`, name: call.name, input: {} },
      }),
    );
    // Anthropic's first input delta is empty, as in its captures.
    for (const partial_json of ['', ...pieces(JSON.stringify(call.input))]) {
      reply.raw.write(
        event('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json },
        }),
      );
    }
    reply.raw.write(blockStop(index));
  });
  messageEnd(reply, 'tool_use');
}

export async function startFakeModelServer(): Promise<FakeModelServer> {
  const app = Fastify({ forceCloseConnections: true });
  const server: FakeModelServer = {
    baseUrl: '',
    requests: [],
    queue: [],
    fallback: { kind: 'reply', text: 'Hello there.' },
    close: () => app.close(),
  };
  const answer =
    (stream: typeof chatStream, toolsStream: typeof chatToolsStream) =>
    (request: { url: string; body: unknown; headers: Record<string, unknown> }, reply: FastifyReply) => {
      const body = request.body;
      assert.ok(typeof body === 'object' && body !== null);
      server.requests.push({ path: request.url, body: { ...body }, headers: request.headers });
      const behaviour = server.queue.shift() ?? server.fallback;
      if (behaviour.kind === 'status') {
        return reply
          .code(behaviour.status)
          .headers(behaviour.headers ?? {})
          .send(behaviour.body);
      }
      reply.hijack();
      if (behaviour.kind === 'stall') return;
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      if (behaviour.kind === 'unfinished') {
        stream(reply, behaviour.text, null);
        reply.raw.end();
        return;
      }
      if (behaviour.kind === 'reasoning') {
        const until = Date.now() + behaviour.ms;
        const think = () => {
          if (Date.now() >= until) {
            stream(reply, behaviour.text, 'stop');
            reply.raw.end();
            return;
          }
          reply.raw.write(
            data({
              id: 'c1',
              choices: [{ index: 0, delta: { reasoning_content: 'Hmm. ' }, finish_reason: null }],
            }),
          );
          setTimeout(think, 50);
        };
        think();
        return;
      }
      if (behaviour.kind === 'tools') {
        toolsStream(reply, behaviour.calls, behaviour.text ?? '');
        reply.raw.end();
        return;
      }
      if (behaviour.kind === 'cut') {
        stream(reply, behaviour.text, null);
        // Let the pieces leave before the cut, as a dying upstream would.
        setImmediate(() => reply.raw.destroy());
        return;
      }
      stream(reply, behaviour.text, behaviour.finish ?? 'stop');
      reply.raw.end();
    };
  app.post('/v1/chat/completions', answer(chatStream, chatToolsStream));
  app.post('/v1/messages', answer(messagesStream, messagesToolsStream));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  assert.ok(address && typeof address === 'object');
  server.baseUrl = `http://127.0.0.1:${address.port}/v1`;
  return server;
}
