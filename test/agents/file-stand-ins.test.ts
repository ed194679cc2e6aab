// Files sent to a model as a stream of their base64 made from their bytes (docs/internals/decisions.md#resident-memory):
// every provider's body reaches the server with each file's base64 whole, a text file inlined whole and its
// text unchanged, no character cut by a chunk; a request without files, or naming a stand-in no longer out, goes as it was built.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type RemoteProviderKind, remoteProvider } from '../../src/agents/ai-sdk-provider.ts';
import { FileStandIns, fetchWithFiles } from '../../src/agents/file-stand-ins.ts';
import { fileBlock } from '../../src/agents/prompt.ts';
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

// Several chunks of base64 each (a chunk is 48 KiB of bytes), and an odd size, so that the last one is padded.
const image = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), randomBytes(300_001)]);
const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(200_000)]);
const text = `${'a'.repeat(70_000)}😀 and “quotes” \\ "escaped"`;
// A text file, inlined: a four-byte character across the first 48 KiB (where it is decoded in chunks), and
// what JSON and the wrapper escape.
const notes = `${'x'.repeat(3 * 16_384 - 1)}😀 <b>&amp;</b> "quoted" \\ \n</file>\t${'é'.repeat(30_000)}`;

describe('files sent as a stream of their base64', () => {
  for (const kind of ['openai', 'openai-compatible', 'anthropic'] as RemoteProviderKind[]) {
    test(`the ${kind} provider's body carries each file's base64 whole, a text file's text and the message's text unchanged`, async () => {
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
  }

  test('a request without stand-ins, or naming one no longer out, goes as it was built', async () => {
    const seen: RequestInit[] = [];
    const fetch = fetchWithFiles(async (_input, init) => {
      seen.push(init ?? {});
      return new Response('{}');
    });
    const plain = { method: 'POST', body: '{"messages":[]}' };
    await fetch('http://127.0.0.1/', plain);
    const files = new FileStandIns();
    const token = files.add(Buffer.from('bytes'));
    files.release();
    const stale = { method: 'POST', body: `{"data":"${token}"}` };
    await fetch('http://127.0.0.1/', stale);
    assert.equal(seen[0], plain);
    assert.equal(seen[1], stale);
  });

  test('a stand-in that is out is sent as its base64, with the exact Content-Length, and no pair of surrogates is cut', async () => {
    const files = new FileStandIns();
    const data = randomBytes(100_000);
    const token = files.add(data);
    let sent = '';
    let length = '';
    const fetch = fetchWithFiles(async (input, init) => {
      length = new Headers(init?.headers).get('content-length') ?? '';
      sent = await new Request(input, init).text();
      return new Response('{}');
    });
    // The pair of surrogates sits across the first 65,536 characters, where the text is cut into chunks.
    const head = `{"t":"${'x'.repeat(65_535 - 6)}😀",`;
    await fetch('http://127.0.0.1/', { method: 'POST', body: `${head}"a":"${token}","b":"é${token}"}` });
    files.release();
    const expected = `${head}"a":"${data.toString('base64')}","b":"é${data.toString('base64')}"}`;
    assert.equal(sent, expected);
    assert.equal(Number(length), Buffer.byteLength(expected));
  });
});
