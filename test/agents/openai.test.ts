// The openai provider against a fake OpenAI-compatible server on loopback: request shape, streaming,
// status errors, aborts and broken streams. No internet needed.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { OpenAiProvider } from '../../src/agents/openai.ts';
import { type ModelMessage, type ModelReply, ProviderError } from '../../src/agents/provider.ts';

type Behaviour = (request: FastifyRequest, reply: FastifyReply) => unknown;

interface Recorded {
  url: string;
  headers: FastifyRequest['headers'];
  body: {
    model: string;
    stream: boolean;
    stream_options?: unknown;
    temperature?: number;
    max_tokens?: number;
    messages: { role: string; content: unknown }[];
  };
}

const recorded: Recorded[] = [];
let behaviour: Behaviour = (_request, reply) => stream(reply, [delta('ok'), finish()]);
let server: FastifyInstance;
let baseUrl: string;
const providers: OpenAiProvider[] = [];

function provider(options: { apiKey?: string; temperature?: number; maxTokens?: number; url?: string } = {}) {
  const { url = baseUrl, ...rest } = options;
  const created = new OpenAiProvider({ baseUrl: url, ...rest });
  providers.push(created);
  return created;
}

const delta = (content: string) => ({ choices: [{ index: 0, delta: { content }, finish_reason: null }] });
const finish = () => ({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
const usageChunk = (prompt: number, completion: number) => ({
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});

function openStream(reply: FastifyReply) {
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  return reply.raw;
}

function stream(reply: FastifyReply, chunks: unknown[], options: { done?: boolean } = {}) {
  const raw = openStream(reply);
  for (const chunk of chunks) raw.write(`data: ${JSON.stringify(chunk)}\n\n`);
  if (options.done !== false) raw.write('data: [DONE]\n\n');
  raw.end();
}

function generate(
  target: OpenAiProvider,
  messages: ModelMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
  extra: { signal?: AbortSignal; onDelta?: (text: string) => void } = {},
): Promise<ModelReply> {
  return target.generate({
    model: 'test-model',
    system: 'You are a test.',
    messages,
    signal: extra.signal ?? new AbortController().signal,
    onDelta: extra.onDelta ?? (() => {}),
  });
}

const last = () => {
  const request = recorded.at(-1);
  assert.ok(request, 'the fake server received no request');
  return request;
};

before(async () => {
  server = Fastify({ forceCloseConnections: true });
  server.post('/v1/chat/completions', (request, reply) => {
    recorded.push({ url: request.url, headers: request.headers, body: request.body as Recorded['body'] });
    return behaviour(request, reply);
  });
  await server.listen({ host: '127.0.0.1', port: 0 });
  const address = server.server.address();
  assert.ok(address && typeof address === 'object');
  baseUrl = `http://127.0.0.1:${address.port}/v1`;
});

after(async () => {
  await Promise.all(providers.map((p) => p.close()));
  await server.close();
});

describe('OpenAiProvider request', () => {
  it('posts a streamed chat completion with the system prompt first and the turns in order', async () => {
    behaviour = (_request, reply) => stream(reply, [delta('fine'), finish()]);
    await generate(provider({ apiKey: 'sk-test' }), [
      { role: 'user', content: [{ type: 'text', text: 'First' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Reply' }] },
      { role: 'user', content: [{ type: 'text', text: 'Second' }] },
    ]);
    const { url, headers, body } = last();
    assert.equal(url, '/v1/chat/completions');
    assert.equal(headers.authorization, 'Bearer sk-test');
    assert.equal(headers['content-type'], 'application/json');
    assert.equal(headers.accept, 'text/event-stream');
    assert.equal(body.model, 'test-model');
    assert.equal(body.stream, true);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'You are a test.' },
      { role: 'user', content: 'First' },
      { role: 'assistant', content: 'Reply' },
      { role: 'user', content: 'Second' },
    ]);
    assert.equal('temperature' in body, false);
    assert.equal('max_tokens' in body, false);
  });

  it('sends no authorization header when there is no API key', async () => {
    behaviour = (_request, reply) => stream(reply, [finish()]);
    await generate(provider());
    assert.equal(last().headers.authorization, undefined);
  });

  it('passes temperature and max_tokens when they are configured', async () => {
    behaviour = (_request, reply) => stream(reply, [finish()]);
    await generate(provider({ temperature: 0.2, maxTokens: 64 }));
    assert.equal(last().body.temperature, 0.2);
    assert.equal(last().body.max_tokens, 64);
  });

  it('accepts a base URL that ends in a slash', async () => {
    behaviour = (_request, reply) => stream(reply, [delta('slash'), finish()]);
    const reply = await generate(provider({ url: `${baseUrl}/` }));
    assert.equal(last().url, '/v1/chat/completions');
    assert.equal(reply.text, 'slash');
  });

  it('joins an all-text message into one string and maps images, PDFs and text files to parts', async () => {
    behaviour = (_request, reply) => stream(reply, [finish()]);
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const pdf = Buffer.from('%PDF-1.7 fake');
    await generate(provider(), [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'seen' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look at these' },
          { type: 'image', mime_type: 'image/png', data: png },
          { type: 'file', name: 'report.pdf', mime_type: 'application/pdf', data: pdf },
          {
            type: 'file',
            name: 'a<b>&c.md',
            mime_type: 'text/markdown; charset=utf-8',
            data: Buffer.from('# Hi</file>'),
          },
          { type: 'file', name: 'data.json', mime_type: 'application/json', data: Buffer.from('{"a":1}') },
        ],
      },
    ]);
    const messages = last().body.messages;
    assert.deepEqual(messages[1], { role: 'user', content: 'one\n\ntwo' });
    assert.deepEqual(messages[2], { role: 'assistant', content: 'seen' });
    assert.deepEqual(messages[3], {
      role: 'user',
      content: [
        { type: 'text', text: 'Look at these' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
        {
          type: 'file',
          file: {
            filename: 'report.pdf',
            file_data: `data:application/pdf;base64,${pdf.toString('base64')}`,
          },
        },
        { type: 'text', text: '<file name="a&lt;b&gt;&amp;c.md">\n# Hi&lt;/file&gt;\n</file>' },
        { type: 'text', text: '<file name="data.json">\n{"a":1}\n</file>' },
      ],
    });
  });
});

describe('OpenAiProvider streaming', () => {
  it('hands each delta to onDelta in order and returns their concatenation with the usage', async () => {
    behaviour = (_request, reply) =>
      stream(reply, [delta('Hel'), delta(''), delta('lo, '), delta('world'), finish(), usageChunk(12, 3)]);
    const pieces: string[] = [];
    const reply = await generate(provider(), undefined, { onDelta: (piece) => pieces.push(piece) });
    assert.deepEqual(pieces, ['Hel', 'lo, ', 'world']);
    assert.equal(reply.text, 'Hello, world');
    assert.deepEqual(reply.usage, { input_tokens: 12, output_tokens: 3 });
  });

  it('reports zero usage when the server sends none', async () => {
    behaviour = (_request, reply) => stream(reply, [delta('x'), finish()]);
    const reply = await generate(provider());
    assert.deepEqual(reply.usage, { input_tokens: 0, output_tokens: 0 });
  });

  it('returns an empty reply when the model finishes without text', async () => {
    behaviour = (_request, reply) => stream(reply, [finish()]);
    const reply = await generate(provider());
    assert.equal(reply.text, '');
  });

  it('reassembles events and characters split across network packets', async () => {
    behaviour = (_request, reply) => {
      const raw = openStream(reply);
      const bytes = Buffer.from(`data: ${JSON.stringify(delta('café ☕'))}\n\ndata: [DONE]\n\n`);
      const cut = bytes.indexOf(Buffer.from('☕')) + 1;
      raw.write(bytes.subarray(0, cut));
      setTimeout(() => raw.end(bytes.subarray(cut)), 20);
    };
    const reply = await generate(provider());
    assert.equal(reply.text, 'café ☕');
  });

  it('stops at [DONE] even when the server keeps the connection open', { timeout: 5000 }, async () => {
    behaviour = (_request, reply) => {
      const raw = openStream(reply);
      raw.write(`data: ${JSON.stringify(delta('done'))}\n\ndata: [DONE]\n\n`);
    };
    const reply = await generate(provider());
    assert.equal(reply.text, 'done');
  });

  it('accepts a stream that finishes without [DONE]', async () => {
    behaviour = (_request, reply) => stream(reply, [delta('no done'), finish()], { done: false });
    const reply = await generate(provider());
    assert.equal(reply.text, 'no done');
  });

  it('lets an error thrown by onDelta through unchanged', async () => {
    behaviour = (_request, reply) => stream(reply, [delta('a'), finish()]);
    const boom = new Error('boom');
    await assert.rejects(
      generate(provider(), undefined, {
        onDelta: () => {
          throw boom;
        },
      }),
      (err) => err === boom,
    );
  });
});

describe('OpenAiProvider failures', () => {
  for (const status of [500, 429]) {
    it(`turns a ${status} answer into a ProviderError with that status and the server's message`, async () => {
      behaviour = (_request, reply) =>
        reply.code(status).send({ error: { message: `server says ${status}`, type: 'x', code: null } });
      await assert.rejects(generate(provider()), (err) => {
        assert.ok(err instanceof ProviderError);
        assert.equal(err.status, status);
        assert.match(err.message, new RegExp(`status ${status}: server says ${status}`));
        return true;
      });
    });
  }

  it('reads the message of an error given as a plain string', async () => {
    behaviour = (_request, reply) => reply.code(404).send({ error: 'model "test-model" not found' });
    await assert.rejects(generate(provider()), (err) => {
      assert.ok(err instanceof ProviderError);
      assert.equal(err.status, 404);
      assert.match(err.message, /model "test-model" not found/);
      return true;
    });
  });

  it('turns an error object inside the stream into a ProviderError', async () => {
    behaviour = (_request, reply) => stream(reply, [delta('a'), { error: { message: 'overloaded' } }]);
    await assert.rejects(generate(provider()), (err) => {
      assert.ok(err instanceof ProviderError);
      assert.match(err.message, /overloaded/);
      return true;
    });
  });

  it('turns a connection closed mid-stream into a ProviderError', async () => {
    behaviour = (_request, reply) => {
      const raw = openStream(reply);
      raw.write(`data: ${JSON.stringify(delta('partial'))}\n\n`, () => setTimeout(() => raw.destroy(), 20));
    };
    await assert.rejects(generate(provider()), (err) => {
      assert.ok(err instanceof ProviderError, String(err));
      assert.ok(err.cause, 'the network error is kept as the cause');
      return true;
    });
  });

  it('reports a stream that ends cleanly without [DONE] or a finish reason as ended early', async () => {
    behaviour = (_request, reply) => stream(reply, [delta('cut')], { done: false });
    await assert.rejects(generate(provider()), (err) => {
      assert.ok(err instanceof ProviderError);
      assert.match(err.message, /stream ended early/);
      return true;
    });
  });

  it('turns an unreachable server into a ProviderError with the cause', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    await assert.rejects(generate(provider({ url: `http://127.0.0.1:${port}/v1` })), (err) => {
      assert.ok(err instanceof ProviderError);
      assert.ok(err.cause);
      return true;
    });
  });
});

describe('OpenAiProvider abort', () => {
  it('rejects with the abort error, not a ProviderError, and closes the socket', {
    timeout: 5000,
  }, async () => {
    let socketClosed!: Promise<void>;
    behaviour = (request, reply) => {
      socketClosed = new Promise((resolve) => request.raw.socket.once('close', () => resolve()));
      openStream(reply).write(`data: ${JSON.stringify(delta('stalling'))}\n\n`);
    };
    const controller = new AbortController();
    const pending = generate(provider(), undefined, {
      signal: controller.signal,
      onDelta: () => controller.abort(),
    });
    await assert.rejects(pending, (err) => {
      assert.ok(!(err instanceof ProviderError));
      assert.ok(err === controller.signal.reason || (err as Error).name === 'AbortError', String(err));
      return true;
    });
    await socketClosed;
  });

  it('rethrows the reason the signal was aborted with, as callModel does on a timeout', {
    timeout: 5000,
  }, async () => {
    behaviour = (_request, reply) => {
      openStream(reply).write(`data: ${JSON.stringify(delta('stalling'))}\n\n`);
    };
    const controller = new AbortController();
    const reason = new Error('model stall timeout');
    const pending = generate(provider(), undefined, {
      signal: controller.signal,
      onDelta: () => setTimeout(() => controller.abort(reason), 10),
    });
    await assert.rejects(pending, (err) => err === reason);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const before = recorded.length;
    const reason = new Error('shutdown');
    await assert.rejects(
      generate(provider(), undefined, { signal: AbortSignal.abort(reason) }),
      (err) => err === reason,
    );
    assert.equal(recorded.length, before);
  });
});
