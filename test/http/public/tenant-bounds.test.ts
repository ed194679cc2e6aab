// The demo tenant's conversations are bounded more tightly than others: the text of one send, the messages
// of one conversation, the sends of every client together an hour, and uploads. Other tenants keep the
// configured limits.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type TestApp, useTestApp } from '../../helpers/app.ts';
import { openConversation, publicClient } from '../../helpers/conversations.ts';
import { tinyPng } from '../../helpers/multipart.ts';

/** A conversation of the demo page, from `remoteAddress` (each address has its own page budget). */
async function demoConversation(t: TestApp, remoteAddress = '127.0.0.1') {
  const res = await t.app.inject({ url: '/demo', remoteAddress });
  assert.equal(res.statusCode, 200, res.body);
  const tag = /<parley-chat([^>]*)>/.exec(res.body)?.[1] ?? '';
  const attr = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(tag)?.[1] ?? '';
  const id = attr('conversation-id');
  return { id, pub: publicClient(t, id, attr('token')) };
}

const chatBody = (text: string) => ({
  id: 'chat-1',
  messages: [{ id: `u-${text.length}`, role: 'user', parts: [{ type: 'text', text }] }],
  trigger: 'submit-message',
});

describe('a send in a demo conversation', () => {
  const t = useTestApp({
    env: { PARLEY_DEMO: 'true', PARLEY_DEMO_MAX_MESSAGE_CHARS: '10', PARLEY_DEMO_MAX_MESSAGES: '4' },
  });

  it('carries at most PARLEY_DEMO_MAX_MESSAGE_CHARS characters of text, plain, streamed or as a chat', async () => {
    const { pub } = await demoConversation(t);
    assert.equal((await pub.post('/messages', { content: 'ten chars!' })).statusCode, 201);
    const long = await pub.post('/messages', { content: 'eleven chars' });
    assert.equal(long.statusCode, 422);
    assert.deepEqual(long.json().detail[0].loc, ['body', 'content']);
    assert.equal(long.json().detail[0].type, 'string_too_long');
    const blocks = await pub.post('/messages/stream', {
      content: [
        { type: 'text', text: 'six  ' },
        { type: 'text', text: 'six  +' },
      ],
    });
    assert.equal(blocks.statusCode, 422);
    const chat = await pub.post('/chat', chatBody('eleven chars'));
    assert.equal(chat.statusCode, 422);
    assert.deepEqual(chat.json().detail[0].loc, ['body', 'messages', 0]);
    // Another tenant's conversation keeps the configured limits.
    const other = await openConversation(t);
    assert.equal((await other.pub.post('/messages', { content: 'eleven chars and more' })).statusCode, 201);
  });

  it('is refused with 409 session_message_limit_reached once the conversation holds PARLEY_DEMO_MAX_MESSAGES', async () => {
    const { id, pub } = await demoConversation(t);
    assert.equal((await pub.post('/messages', { content: 'one' })).statusCode, 201);
    assert.equal((await pub.post('/messages', { content: 'two' })).statusCode, 201);
    const refused = await pub.post('/messages', { content: 'three' });
    assert.equal(refused.statusCode, 409);
    assert.equal(refused.json().error.code, 'session_message_limit_reached');
    assert.deepEqual(refused.json().error.context, { limit: 4, messages_count: 4 });
    assert.equal((await t.store.getSession('demo', id))?.messages_count, 4);
  });
});

describe('the sends of every demo conversation together', () => {
  const t = useTestApp({ env: { PARLEY_DEMO: 'true', PARLEY_DEMO_SENDS_PER_HOUR: '2' } });

  it('are at most PARLEY_DEMO_SENDS_PER_HOUR an hour, then 429 rate_limited with Retry-After', async () => {
    const a = await demoConversation(t, '192.0.2.10');
    const b = await demoConversation(t, '192.0.2.11');
    assert.equal((await a.pub.post('/messages', { content: 'hi' })).statusCode, 201);
    assert.equal((await b.pub.post('/messages', { content: 'hi' })).statusCode, 201);
    const refused = await a.pub.post('/chat', chatBody('hello'));
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().error.code, 'rate_limited');
    assert.equal(refused.json().error.context.cap, 'demo_sends');
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 3600, String(retryAfter));
    // Nothing was stored for the refused send; other tenants are not counted.
    assert.equal((await t.store.getSession('demo', a.id))?.messages_count, 2);
    const other = await openConversation(t);
    assert.equal((await other.pub.post('/messages', { content: 'hi' })).statusCode, 201);
  });
});

describe('uploads to a demo conversation', () => {
  describe('with PARLEY_DEMO_FILE_BYTES=0', () => {
    const t = useTestApp({ env: { PARLEY_DEMO: 'true', PARLEY_DEMO_FILE_BYTES: '0' } });

    it('are refused with 413 conversation_file_quota', async () => {
      const { pub } = await demoConversation(t);
      const refused = await pub.upload(tinyPng, 'dot.png', 'image/png');
      assert.equal(refused.statusCode, 413);
      assert.equal(refused.json().error.code, 'conversation_file_quota');
      assert.equal(refused.json().error.context.limit_files, 0);
    });
  });

  describe('with a small PARLEY_DEMO_FILE_BYTES', () => {
    const t = useTestApp({ env: { PARLEY_DEMO: 'true', PARLEY_DEMO_FILE_BYTES: '1600' } });

    it('keep an eighth of it per conversation and all of it for the tenant', async () => {
      const first = await demoConversation(t);
      assert.equal((await first.pub.upload(tinyPng, 'dot.png', 'image/png')).statusCode, 201);
      const big = await first.pub.upload('x'.repeat(200), 'notes.txt', 'text/plain');
      assert.equal(big.statusCode, 413);
      assert.equal(big.json().error.code, 'conversation_file_quota');
      assert.equal(big.json().error.context.limit_bytes, 200);
      // Other tenants keep the configured quota.
      const other = await openConversation(t);
      assert.equal((await other.pub.upload('x'.repeat(5000), 'notes.txt', 'text/plain')).statusCode, 201);
    });
  });
});
