// The Open Responses routes driven by the AI SDK's Open Responses provider (`@ai-sdk/open-responses`) with
// `generateText` and `streamText` pointed at Parley: the SDK parses Parley's response object and event stream
// with its own schemas, and the text it reads is the agent's stored reply.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createOpenResponses } from '@ai-sdk/open-responses';
import { generateText, streamText } from 'ai';
import { allMessages, textOf, useSessionApp } from '../../helpers/sessions.ts';

let base = '';
const t = useSessionApp({
  setUp: async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
});
const parley = () => createOpenResponses({ name: 'parley', url: `${base}/v1/responses`, apiKey: t.apiKey });

/** The session the newest response of the tenant went to, and its stored messages. */
async function newestReply(): Promise<string> {
  const sessions = await t.store.listSessions('t1', {}, { limit: 1, offset: 0 });
  const [session] = sessions.items;
  assert.ok(session);
  const messages = await allMessages(t, session.id);
  const reply = messages.at(-1);
  assert.ok(reply);
  return textOf(reply);
}

test('generateText reads the agent reply Parley stored', async () => {
  const result = await generateText({
    model: parley()('demo'),
    prompt: 'Hello from the AI SDK',
    maxRetries: 0,
  });
  assert.match(result.text, /You said: "Hello from the AI SDK"/);
  assert.equal(result.text, await newestReply());
  assert.equal(result.finishReason, 'stop');
  assert.ok((result.usage.inputTokens ?? 0) > 0);
});

test('streamText streams the agent reply Parley stored', async () => {
  const result = streamText({ model: parley()('demo'), prompt: 'Stream from the AI SDK', maxRetries: 0 });
  let text = '';
  for await (const piece of result.textStream) text += piece;
  assert.match(text, /You said: "Stream from the AI SDK"/);
  assert.equal(text, await newestReply());
  assert.equal(await result.finishReason, 'stop');
});
