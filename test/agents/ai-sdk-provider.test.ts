// The providers on the AI SDK against a fake server that speaks each wire protocol
// (docs/guides/agents.md#providers): replies stream with usage and a stop reason; failures come back as
// ProviderErrors with the upstream status, its message and Retry-After; a 429 or 5xx before the first token
// is retried; files reach the server whole, streamed into the body (file-stand-ins.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type RemoteProviderKind, remoteProvider } from '../../src/agents/ai-sdk-provider.ts';
import { callModel } from '../../src/agents/call-model.ts';
import { fileBlock } from '../../src/agents/prompt.ts';
import { type ModelRequest, ProviderError } from '../../src/agents/provider.ts';
import { AppError } from '../../src/errors.ts';
import { type FakeModelServer, startFakeModelServer } from '../../support/fake-model-server.ts';

let fake: FakeModelServer;
before(async () => {
  fake = await startFakeModelServer();
});
after(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
  fake.queue.length = 0;
});

const kinds: RemoteProviderKind[] = ['openai', 'openai-compatible', 'anthropic'];

// Several chunks of base64 each (a chunk is 48 KiB of bytes), and an odd size, so that the last one is padded.
const image = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), randomBytes(300_001)]);
const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(200_000)]);
const text = `${'a'.repeat(70_000)}😀 and “quotes” \\ "escaped"`;
// A text file, inlined: a four-byte character across the first 48 KiB (where it is decoded in chunks), and
// what JSON and the wrapper escape.
const notes = `${'x'.repeat(3 * 16_384 - 1)}😀 <b>&amp;</b> "quoted" \\ \n</file>\t${'é'.repeat(30_000)}`;

function request(deltas: string[] = []): Omit<ModelRequest, 'signal'> {
  return {
    model: 'fake-model',
    system: 'Be brief.',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi!' }] }],
    onDelta: (text) => deltas.push(text),
  };
}

async function provider(kind: RemoteProviderKind) {
  return remoteProvider(kind, { baseUrl: fake.baseUrl, apiKey: 'test-key', settings: { maxTokens: 64 } });
}

/** The provider's failure for one call, which must fail. */
async function failureOf(kind: RemoteProviderKind): Promise<ProviderError> {
  const p = await provider(kind);
  const err = await p.generate({ ...request(), signal: AbortSignal.timeout(20_000) }).then(
    () => assert.fail('the call succeeded'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ProviderError, String(err));
  return err;
}

for (const kind of kinds) {
  describe(`the ${kind} provider`, () => {
    test('streams the reply as deltas and reports usage and a finished reply', async () => {
      fake.queue.push({ kind: 'reply', text: 'Hello from the fake.' });
      const deltas: string[] = [];
      const reply = await (await provider(kind)).generate({
        ...request(deltas),
        signal: AbortSignal.timeout(20_000),
      });
      assert.equal(reply.text, 'Hello from the fake.');
      assert.equal(deltas.join(''), reply.text);
      assert.ok(deltas.length > 1, 'more than one delta');
      assert.deepEqual(reply.usage, {
        input_tokens: 11,
        output_tokens: 7,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
      });
      assert.equal(reply.stop_reason, 'end');
      const sent = fake.requests[0];
      assert.equal(sent?.path, kind === 'anthropic' ? '/v1/messages' : '/v1/chat/completions');
      assert.equal(sent?.body.model, 'fake-model');
      assert.equal(sent?.body.stream, true);
    });

    test("sends each file whole, streamed into the body: images' and PDFs' base64, a text file's text, the message's text unchanged", async () => {
      fake.queue.push({ kind: 'reply', text: 'Seen.' });
      const provider = await remoteProvider(kind, {
        baseUrl: fake.baseUrl,
        apiKey: 'test-key',
        settings: { maxTokens: 64 },
      });
      const reply = await provider.generate({
        model: 'fake-model',
        system: 'Be brief.',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text },
              { type: 'image', mime_type: 'image/png', data: image },
              { type: 'file', name: 'doc.pdf', mime_type: 'application/pdf', data: pdf },
              { type: 'file', name: 'notes.md', mime_type: 'text/markdown', data: Buffer.from(notes) },
            ],
          },
        ],
        onDelta: () => {},
        signal: AbortSignal.timeout(20_000),
      });
      assert.equal(reply.text, 'Seen.');
      const body = JSON.stringify(fake.requests[0]?.body);
      assert.doesNotMatch(body, /PRLYFILE/);
      assert.ok(body.includes(JSON.stringify(text)), 'the text arrives as it was');
      assert.ok(body.includes(image.toString('base64')), "the image's base64 arrives whole");
      assert.ok(body.includes(pdf.toString('base64')), "the PDF's base64 arrives whole");
      assert.ok(
        body.includes(JSON.stringify(fileBlock('notes.md', notes))),
        'the text file arrives inlined whole',
      );
    });

    test("sends the agent's temperature, top_p, stop sequences and seed as the protocol names them", async () => {
      const p = await remoteProvider(kind, {
        baseUrl: fake.baseUrl,
        apiKey: 'test-key',
        settings: { maxTokens: 64, temperature: 0.5, topP: 0.9, stop: ['END'], seed: 7 },
      });
      await p.generate({ ...request(), signal: AbortSignal.timeout(20_000) });
      const body = fake.requests[0]?.body ?? {};
      assert.equal(body.temperature, 0.5);
      assert.equal(body.top_p, 0.9);
      assert.equal(body.max_tokens, 64);
      if (kind === 'anthropic') {
        assert.deepEqual(body.stop_sequences, ['END']);
      } else {
        assert.deepEqual(body.stop, ['END']);
        assert.equal(body.seed, 7);
      }
    });

    test('a reply cut at the token limit says max_tokens', async () => {
      fake.queue.push({ kind: 'reply', text: 'A long', finish: 'length' });
      const reply = await (await provider(kind)).generate({
        ...request(),
        signal: AbortSignal.timeout(20_000),
      });
      assert.equal(reply.stop_reason, 'max_tokens');
    });

    test('a refused request carries the upstream status and its own message', async () => {
      fake.queue.push({
        kind: 'status',
        status: 400,
        body: {
          error: {
            code: 400,
            message: 'the request exceeds the available context size, try increasing it',
            type: 'exceed_context_size_error',
          },
        },
      });
      const err = await failureOf(kind);
      assert.equal(err.status, 400);
      assert.equal(err.upstreamMessage, 'the request exceeds the available context size, try increasing it');
      assert.equal(fake.requests.length, 1, 'a 400 is not retried');
    });

    test('a wrong key is a 401 upstream, not retried', async () => {
      fake.queue.push({
        kind: 'status',
        status: 401,
        body: { error: { message: 'Incorrect API key provided' } },
      });
      const err = await failureOf(kind);
      assert.equal(err.status, 401);
      assert.equal(fake.requests.length, 1);
    });

    test('a 429 before the first token is retried, and after the retries carries Retry-After', async () => {
      const limited = {
        kind: 'status' as const,
        status: 429,
        body: { error: { message: 'Rate limit reached' } },
        headers: { 'retry-after': '0' },
      };
      fake.queue.push(limited, { kind: 'reply', text: 'After the wait.' });
      const reply = await (await provider(kind)).generate({
        ...request(),
        signal: AbortSignal.timeout(20_000),
      });
      assert.equal(reply.text, 'After the wait.');
      assert.equal(fake.requests.length, 2);

      fake.requests.length = 0;
      fake.queue.push(limited, limited, limited);
      const err = await failureOf(kind);
      assert.equal(err.status, 429);
      assert.equal(err.retryAfterSeconds, 0);
      assert.equal(fake.requests.length, 3, 'the first try and two retries');
    });

    test('a 5xx after the retries carries its status', async () => {
      const down = {
        kind: 'status' as const,
        status: 503,
        body: { error: { message: 'overloaded' } },
        headers: { 'retry-after': '0' },
      };
      fake.queue.push(down, down, down);
      const err = await failureOf(kind);
      assert.equal(err.status, 503);
      assert.equal(err.upstreamMessage, 'overloaded');
    });

    test('a socket cut mid-stream is a failure without a status, after the deltas that came', async () => {
      fake.queue.push({ kind: 'cut', text: 'Half a rep' });
      assert.equal((await failureOf(kind)).status, undefined);
    });

    test('an error thrown by onDelta passes through unchanged and is not retried', async () => {
      fake.queue.push({ kind: 'reply', text: 'Hello from the fake.' });
      const own = new Error('the reader is gone');
      const p = await provider(kind);
      const err = await p
        .generate({
          ...request(),
          onDelta: () => {
            throw own;
          },
          signal: AbortSignal.timeout(20_000),
        })
        .then(
          () => assert.fail('the call succeeded'),
          (e: unknown) => e,
        );
      assert.equal(err, own);
      assert.equal(fake.requests.length, 1);
    });

    test('a stream that ends without the model finishing is a failure, not a complete reply', async () => {
      fake.queue.push({ kind: 'unfinished', text: 'Hello ' });
      assert.equal((await failureOf(kind)).status, undefined);
    });

    test("a server that refuses an image with a 500 (llama.cpp's words) is a refusal, not retried", async () => {
      fake.queue.push({
        kind: 'status',
        status: 500,
        body: {
          error: {
            code: 500,
            message:
              'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj',
            type: 'server_error',
          },
        },
      });
      const err = await failureOf(kind);
      assert.equal(err.status, 400);
      assert.equal(fake.requests.length, 1);
    });

    test('silence before the first byte is the stall timeout', async () => {
      fake.queue.push({ kind: 'stall' });
      const err = await callModel(await provider(kind), request(), { totalMs: 20_000, stallMs: 300 }).then(
        () => assert.fail('the call succeeded'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof AppError);
      assert.equal(err.code, 'agent_timeout');
    });
  });
}

test('a thinking model that sends only reasoning for longer than stall_ms is not stalled', async () => {
  // Reasoning every 50 ms for twice stall_ms: a margin of twenty for a loaded machine's event loop.
  fake.queue.push({ kind: 'reasoning', ms: 2000, text: 'Thought it through.' });
  const reply = await callModel(await provider('openai-compatible'), request(), {
    totalMs: 20_000,
    stallMs: 1000,
  });
  assert.equal(reply.text, 'Thought it through.');
});
