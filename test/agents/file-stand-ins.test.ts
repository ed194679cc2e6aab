// Files sent to a model as a stream of what stands in for them (docs/internals/decisions.md#files-a-turn-sends):
// a stand-in that is out is sent as its file's base64 with the exact Content-Length, no character cut by a
// chunk; a request without stand-ins, or naming one no longer out, goes as it was built. Every provider's
// body, end to end: ai-sdk-provider.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { FileStandIns, fetchWithFiles } from '../../src/agents/file-stand-ins.ts';

describe('files sent as a stream of their base64', () => {
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
