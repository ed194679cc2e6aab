// The GenAI conventions' mapping: finish reasons, error types, and captured messages that carry a file's
// type and never its bytes, cut when long. And the URLs of outgoing requests as spans record them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  errorType,
  finishReason,
  inputMessages,
  MAX_CONTENT_CHARS,
  outputMessages,
} from '../../src/tracing/genai.ts';
import { urlAttributes } from '../../src/tracing/sdk.ts';

describe('the GenAI attributes', () => {
  it("maps Parley's stop reasons to the conventions' finish reasons", () => {
    assert.equal(finishReason({ stop_reason: 'end', tool_calls: [] }), 'stop');
    assert.equal(finishReason({ stop_reason: 'max_tokens', tool_calls: [] }), 'length');
    assert.equal(finishReason({ stop_reason: 'content_filter', tool_calls: [] }), 'content_filter');
    assert.equal(
      finishReason({ stop_reason: 'end', tool_calls: [{ id: 'call_1', name: 'x', input: {} }] }),
      'tool_call',
    );
  });

  it('names an error by its code or class, never by its message', () => {
    assert.equal(
      errorType(Object.assign(new Error('the prompt said …'), { code: 'agent_timeout' })),
      'agent_timeout',
    );
    assert.equal(errorType(new TypeError('x')), 'TypeError');
    assert.equal(errorType(new Error('secret detail')), '_OTHER');
    assert.equal(errorType('a string'), '_OTHER');
  });

  it('records a file or an image by its type only, and cuts long texts', () => {
    const bytes = Buffer.from('PRIVATE FILE CONTENT');
    const long = 'a'.repeat(MAX_CONTENT_CHARS + 1000);
    const text = inputMessages([
      {
        role: 'user',
        content: [
          { type: 'text', text: long },
          { type: 'image', mime_type: 'image/png', data: bytes } as never,
          { type: 'file', mime_type: 'application/pdf', name: 'order.pdf', data: bytes } as never,
        ],
      },
      {
        role: 'tool',
        results: [{ call_id: 'call_1', name: 'lookup', status: 'ok', output: { found: true } }],
      },
    ]);
    assert.doesNotMatch(text, /PRIVATE|order\.pdf/);
    const [user, tool] = JSON.parse(text);
    assert.equal(user.parts[0].content, `${'a'.repeat(MAX_CONTENT_CHARS)}… (${long.length} chars)`);
    assert.deepEqual(user.parts.slice(1), [
      { type: 'image', mime_type: 'image/png', modality: 'image' },
      { type: 'file', mime_type: 'application/pdf' },
    ]);
    assert.deepEqual(tool.parts, [{ type: 'tool_call_response', id: 'call_1', response: '{"found":true}' }]);
  });

  it('records the reply with its tool calls and finish reason', () => {
    const reply = JSON.parse(
      outputMessages({
        text: 'Looking it up',
        stop_reason: 'end',
        usage: { input_tokens: 1, output_tokens: 1 },
        tool_calls: [{ id: 'call_1', name: 'lookup', input: { order: 'A-1' } }],
      }),
    );
    assert.deepEqual(reply, [
      {
        role: 'assistant',
        parts: [
          { type: 'text', content: 'Looking it up' },
          { type: 'tool_call', id: 'call_1', name: 'lookup', arguments: '{"order":"A-1"}' },
        ],
        finish_reason: 'tool_call',
      },
    ]);
  });
});

describe('the URL of an outgoing request on its span', () => {
  it('keeps the path and the names of the query, not its values', () => {
    assert.deepEqual(urlAttributes('https://api.example.com', '/v1/chat?key=s3cr3t&mode=x', false), {
      'url.full': 'https://api.example.com/v1/chat?key=REDACTED&mode=REDACTED',
      'url.path': '/v1/chat',
      'url.query': '?key=REDACTED&mode=REDACTED',
    });
  });

  it('keeps only the origin of a webhook delivery, whose path may be its secret', () => {
    assert.deepEqual(urlAttributes('https://hooks.example.com', '/services/T0/B0/s3cr3t', true), {
      'url.full': 'https://hooks.example.com/REDACTED',
      'url.path': '/REDACTED',
      'url.query': '',
    });
  });
});
