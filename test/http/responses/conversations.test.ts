// The Conversations API shape and the routes on one response, driven by the official `openai` package: a
// conversation is a session of the agent in metadata.agent, its items are the session's messages, deleting
// it closes the session, a response lists its input items, and cancelling a running response stops its turn.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import OpenAI from 'openai';
import { itemList, responseObject } from '#schemas';
import { assertOpenResponse, assertOpenStreamEvent } from '../../helpers/open-responses-schema.ts';
import { allMessages, testAgents, textOf, useSessionApp } from '../../helpers/sessions.ts';

let base = '';
const t = useSessionApp({
  agents: [...testAgents, { id: 'crawl', scripted: { token_delay_ms: 50 } }],
  setUp: async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
});
const openai = () => new OpenAI({ apiKey: t.apiKey, baseURL: `${base}/v1`, maxRetries: 0 });

test('conversations.create makes a session of the agent that responses then continue', async () => {
  const client = openai();
  const conversation = await client.conversations.create({ metadata: { agent: 'demo', ticket: 'T-1' } });
  assert.equal(conversation.object, 'conversation');
  const seeded = await client.conversations.create({
    metadata: { agent: 'demo' },
    items: [{ type: 'message', role: 'user', content: 'Seeded' }],
  });
  assert.deepEqual((await allMessages(t, seeded.id)).map(textOf), ['Seeded']);
  const response = await client.responses.create({
    model: 'demo',
    input: 'hi',
    conversation: conversation.id,
  });
  assert.equal(response.conversation?.id, conversation.id);
  const read = await client.conversations.retrieve(conversation.id);
  assert.deepEqual(read.metadata, { agent: 'demo', ticket: 'T-1' });
  const stored = await allMessages(t, conversation.id);
  assert.deepEqual(stored.map(textOf), ['hi', response.output_text]);
});

test("conversations.update replaces the metadata; the agent stays the conversation's", async () => {
  const client = openai();
  const conversation = await client.conversations.create({ metadata: { agent: 'demo', ticket: 'T-1' } });
  const updated = await client.conversations.update(conversation.id, { metadata: { stage: 'billing' } });
  assert.deepEqual(updated.metadata, { agent: 'demo', stage: 'billing' });
  assert.deepEqual((await client.conversations.retrieve(conversation.id)).metadata, updated.metadata);
  const session = await t.store.getSession('t1', conversation.id);
  assert.deepEqual(session?.metadata, { stage: 'billing' });
  await assert.rejects(
    client.conversations.update(conversation.id, { metadata: { agent: 'other' } }),
    (err) => err instanceof OpenAI.UnprocessableEntityError && err.param === 'metadata.agent',
  );
  await assert.rejects(
    client.conversations.update('ses_nobody', { metadata: {} }),
    (err) => err instanceof OpenAI.NotFoundError,
  );
});

test('conversations.items.create stores user messages without a turn; a response then goes on after them', async () => {
  const client = openai();
  const conversation = await client.conversations.create({ metadata: { agent: 'demo' } });
  const added = await client.conversations.items.create(conversation.id, {
    items: [
      { type: 'message', role: 'user', content: 'My order is A-1042.' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'It is late.' }] },
    ],
  });
  itemList.parse(added);
  assert.deepEqual(
    added.data.map((item) => (item.type === 'message' ? item.content : null)),
    [[{ type: 'input_text', text: 'My order is A-1042.' }], [{ type: 'input_text', text: 'It is late.' }]],
  );
  const stored = await allMessages(t, conversation.id);
  assert.deepEqual(stored.map(textOf), ['My order is A-1042.', 'It is late.']);
  assert.deepEqual(
    stored.map((m) => m.id),
    added.data.map((item) => item.id),
  );
  const response = await client.responses.create({
    model: 'demo',
    input: 'Where is it?',
    conversation: conversation.id,
  });
  assert.equal(response.status, 'completed');
  assert.deepEqual(
    (await allMessages(t, conversation.id)).map((m) => m.role),
    ['user', 'user', 'user', 'assistant'],
  );
  await assert.rejects(
    client.conversations.items.create(conversation.id, {
      items: [{ type: 'message', role: 'assistant', content: 'I am the agent' }],
    } as unknown as OpenAI.Conversations.ItemCreateParams),
    (err) => err instanceof OpenAI.UnprocessableEntityError,
  );
});

test('conversations.items.list pages the messages newest first, or oldest first with order asc', async () => {
  const client = openai();
  const conversation = await client.conversations.create({ metadata: { agent: 'demo' } });
  for (const input of ['one', 'two'])
    await client.responses.create({ model: 'demo', input, conversation: conversation.id });
  const stored = await allMessages(t, conversation.id);
  const newest = await client.conversations.items.list(conversation.id, { limit: 3 });
  itemList.shape.data.parse(newest.data);
  assert.deepEqual(
    newest.data.map((item) => item.id),
    stored
      .map((m) => m.id)
      .reverse()
      .slice(0, 3),
  );
  assert.equal(newest.has_more, true);
  const all = [];
  for await (const item of client.conversations.items.list(conversation.id, { order: 'asc', limit: 1 }))
    all.push(item);
  assert.deepEqual(
    all.map((item) => item.id),
    stored.map((m) => m.id),
  );
  const [first] = all;
  assert.ok(first?.type === 'message');
  assert.deepEqual(first.content, [{ type: 'input_text', text: 'one' }]);
});

test('a response lists the user message it answered as its input items', async () => {
  const client = openai();
  const response = await client.responses.create({ model: 'demo', input: 'the question' });
  const items = await client.responses.inputItems.list(response.id);
  assert.equal(items.data.length, 1);
  const [item] = items.data;
  assert.ok(item?.type === 'message');
  assert.deepEqual(item.content, [{ type: 'input_text', text: 'the question' }]);
});

test('deleting a conversation closes its session: it takes no more responses', async () => {
  const client = openai();
  const conversation = await client.conversations.create({ metadata: { agent: 'demo' } });
  const deleted = await client.conversations.delete(conversation.id);
  assert.deepEqual(deleted, { id: conversation.id, object: 'conversation.deleted', deleted: true });
  await assert.rejects(
    client.responses.create({ model: 'demo', input: 'hello?', conversation: conversation.id }),
    (err) => err instanceof OpenAI.ConflictError && err.code === 'session_closed',
  );
});

test('cancelling a streamed response that is running stops it; the response reads cancelled', async () => {
  const client = openai();
  const stream = await client.responses.create({
    model: 'crawl',
    input: 'a long answer please',
    stream: true,
  });
  let id = '';
  let sawText = false;
  const types: string[] = [];
  for await (const event of stream) {
    assertOpenStreamEvent(event);
    types.push(event.type);
    if (event.type === 'response.created') id = event.response.id;
    if (event.type === 'response.output_text.delta' && !sawText) {
      sawText = true;
      const cancelled = await client.responses.cancel(id);
      responseObject.parse(cancelled);
      assertOpenResponse(cancelled);
      assert.equal(cancelled.status, 'cancelled');
    }
  }
  assert.ok(sawText);
  assert.equal(types.at(-1), 'response.incomplete');
  const read = await client.responses.retrieve(id);
  assertOpenResponse(read);
  assert.equal(read.status, 'cancelled');
});

test('cancelling a finished response answers it as it is', async () => {
  const client = openai();
  const response = await client.responses.create({ model: 'demo', input: 'done' });
  const again = await client.responses.cancel(response.id);
  assert.equal(again.status, 'completed');
  assert.deepEqual(again.output, response.output);
});

test('a refused request leaves no session behind: an item naming an unknown file, an answer naming no response', async () => {
  const client = openai();
  const count = async () => {
    const res = await fetch(`${base}/v1/agents/sessions?limit=100`, { headers: { 'x-api-key': t.apiKey } });
    return ((await res.json()) as { items: unknown[] }).items.length;
  };
  const before = await count();
  await assert.rejects(
    client.conversations.create({
      metadata: { agent: 'demo' },
      items: [
        {
          type: 'message',
          role: 'user',
          content: [{ type: 'input_file', file_id: 'file_nowhere' }],
        },
      ],
    } as unknown as OpenAI.Conversations.ConversationCreateParams),
    (err) => err instanceof OpenAI.APIError && err.status !== undefined && err.status < 500,
  );
  await assert.rejects(
    client.responses.create({
      model: 'demo',
      input: [{ type: 'function_call_output', call_id: 'call_x', output: 'sunny' }],
    }),
    (err) => err instanceof OpenAI.APIError && err.status !== undefined && err.status < 500,
  );
  assert.equal(await count(), before);
});
