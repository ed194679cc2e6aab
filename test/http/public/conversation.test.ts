// The public conversation family (`/v1/public/agents/conversations/{id}`, session token): read the
// conversation and its messages, send, upload and list files, feedback, inactivity and terminate — every
// status each route answers (docs/internals/decisions.md: #a-conversation-is-a-session, #the-public-family,
// #idempotency-key, #limits; docs/reference/errors.md).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SessionTokens } from '../../../src/auth/session-tokens.ts';
import { apiKeyIdOf } from '../../helpers/app.ts';
import {
  type Conversation,
  openConversation,
  publicClient,
  recordKeys,
  seenByEndUser,
} from '../../helpers/conversations.ts';
import { encodeForm, tinyPdf, tinyPng } from '../../helpers/multipart.ts';
import {
  allMessages,
  assert422,
  assertError,
  client,
  createUser,
  getSession,
  type Message,
  sleep,
  textOf,
  upload,
  useSessionApp,
} from '../../helpers/sessions.ts';

const TOKEN_SECRET = 'test-secret-for-the-public-family-0123456789';
const uploadLimit = 64 * 1024;
const DEFAULT_WARNING = 'Are you still there? This conversation will close soon.';
const DEFAULT_FINAL = 'This conversation was closed after a period of inactivity.';
const elf = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0x3e, 0]);

/** Conversations of the agent `short`, expired once the set-up has waited past their session_ttl. */
const expiredPool: Awaited<ReturnType<typeof openConversation>>[] = [];
const t = useSessionApp({
  env: { PARLEY_MAX_UPLOAD_BYTES: String(uploadLimit), PARLEY_TOKEN_SECRET: TOKEN_SECRET },
  setUp: async (app) => {
    for (let i = 0; i < 6; i++) expiredPool.push(await openConversation(app, 'short'));
    await sleep(1200);
  },
});
const api = client(t);

/** A conversation whose session_ttl (1 s) passed without activity. */
function expired() {
  const c = expiredPool.pop();
  assert.ok(c, 'the pool of expired conversations is exhausted');
  return c;
}

/** A conversation closed through the public terminate. */
async function closed(agentId = 'demo') {
  const c = await openConversation(t, agentId);
  const res = await c.pub.post('/terminate', {});
  assert.equal(res.statusCode, 200, res.body);
  return c;
}

/** A public client holding a valid token (tenant t1) for a conversation that does not exist. */
async function ghost(conversationId = 'ses_doesnotexist') {
  const tokens = new SessionTokens(new TextEncoder().encode(TOKEN_SECRET), 900);
  const keyId = await apiKeyIdOf(t);
  const minted = await tokens.mint({ conversationId, tenantId: 't1', agentId: 'demo', keyId });
  return publicClient(t, conversationId, minted.session_token);
}

async function record(pub: ReturnType<typeof publicClient>): Promise<Conversation> {
  const res = await pub.get();
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

describe('authentication of the public family', () => {
  const routes: [string, 'GET' | 'POST', string, object | undefined][] = [
    ['record', 'GET', '', undefined],
    ['messages', 'GET', '/messages', undefined],
    ['send', 'POST', '/messages', { content: 'hi' }],
    ['files', 'GET', '/files', undefined],
    ['feedback', 'POST', '/feedback', { score: 5 }],
    ['inactivity', 'POST', '/inactivity', { step: 'final' }],
    ['terminate', 'POST', '/terminate', {}],
  ];

  it('answers 401 unauthorized on every route without a bearer token or with an API key instead', async () => {
    const c = await openConversation(t);
    for (const [name, method, rest, payload] of routes) {
      const url = `/v1/public/agents/conversations/${c.id}${rest}`;
      const bare = await t.app.inject({ method, url, ...(payload ? { payload } : {}) });
      assertError(bare, 401, 'unauthorized');
      const withKey = await t.app.inject({
        method,
        url,
        headers: { 'x-api-key': t.apiKey },
        ...(payload ? { payload } : {}),
      });
      assert.equal(withKey.statusCode, 401, `${name}: ${withKey.body}`);
      assert.equal(withKey.json().error.code, 'unauthorized', name);
    }
    assert.equal((await record(c.pub)).status, 'active');
    assert.deepEqual(await allMessages(t, c.id), []);
  });

  it('answers 403 forbidden on every route to a token of another conversation, touching nothing', async () => {
    const mine = await openConversation(t);
    const theirs = await openConversation(t);
    const wrong = publicClient(t, theirs.id, mine.session_token);
    for (const [name, method, rest, payload] of routes) {
      const res = method === 'GET' ? await wrong.get(rest) : await wrong.post(rest, payload);
      assert.equal(res.statusCode, 403, `${name}: ${res.body}`);
      assert.equal(res.json().error.code, 'forbidden', name);
    }
    assert.equal((await record(theirs.pub)).status, 'active');
    assert.deepEqual(await allMessages(t, theirs.id), []);
  });
});

describe('GET /v1/public/agents/conversations/{id}', () => {
  it('answers 200 with the conversation record, never its metadata, context or user', async () => {
    const user = await createUser(t, { name: 'Grace', info: { plan: 'gold' } });
    const c = await openConversation(t, 'demo', {
      user: { id: user.id },
      context: { tier: 'secret-context' },
      metadata: { crm: 'secret-metadata' },
    });
    const res = await c.pub.get();
    assert.equal(res.statusCode, 200, res.body);
    const conversation = res.json();
    assert.deepEqual(Object.keys(conversation).sort(), recordKeys);
    assert.equal(conversation.id, c.id);
    assert.equal(conversation.agent_id, 'demo');
    assert.equal(conversation.status, 'active');
    assert.equal(conversation.closed_at, null);
    assert.equal(conversation.close_reason, null);
    assert.equal(conversation.messages_count, 0);
    assert.equal(conversation.last_message_at, null);
    assert.ok(!Number.isNaN(Date.parse(conversation.created_at)));
    assert.deepEqual(conversation, c.conversation);
    for (const hidden of ['secret-context', 'secret-metadata', 'Grace', 'gold', user.id]) {
      assert.ok(!res.body.includes(hidden), hidden);
    }
    // The conversation is the session: same id, same record through the API key.
    const session = await getSession(t, c.id);
    assert.deepEqual(session.metadata, { crm: 'secret-metadata' });
  });

  it('follows the turns: messages_count and last_message_at move', async () => {
    const c = await openConversation(t);
    const sent = await c.pub.post('/messages', { content: 'count me' });
    assert.equal(sent.statusCode, 201, sent.body);
    const after = await record(c.pub);
    assert.equal(after.messages_count, 2);
    assert.equal(after.last_message_at, sent.json().agent_message.created_at);
  });

  it('answers 200 with status expired once the session_ttl passed', async () => {
    const c = expired();
    const conversation = await record(c.pub);
    assert.equal(conversation.status, 'expired');
  });

  it('answers 404 conversation_not_found for a conversation that does not exist', async () => {
    const error = assertError(await (await ghost()).get(), 404, 'conversation_not_found');
    assert.equal(error.name, 'ConversationNotFoundError');
  });

  it("answers 404 conversation_not_found for a token naming another tenant's conversation", async () => {
    const key = await t.createKey('t-public-other');
    const res = await client(t, key).post('/v1/agents/demo/conversations', {});
    assert.equal(res.statusCode, 201, res.body);
    // A token that claims tenant t1 for a conversation of another tenant.
    assertError(await (await ghost(res.json().conversation.id)).get(), 404, 'conversation_not_found');
  });
});

describe('GET /v1/public/agents/conversations/{id}/messages', () => {
  it('answers 200 with the messages oldest first, paged with limit, offset and next_offset', async () => {
    const c = await openConversation(t);
    for (const word of ['a', 'b', 'c']) {
      assert.equal((await c.pub.post('/messages', { content: word })).statusCode, 201);
    }
    const all = (await allMessages(t, c.id)).map(seenByEndUser);
    assert.equal(all.length, 6);
    const whole = await c.pub.get('/messages');
    assert.equal(whole.statusCode, 200, whole.body);
    assert.deepEqual(Object.keys(whole.json()).sort(), ['items', 'next_offset']);
    assert.deepEqual(whole.json().items, all);
    assert.equal(whole.json().next_offset, null);
    assert.deepEqual(
      whole.json().items.map((m: Message) => m.role),
      ['user', 'assistant', 'user', 'assistant', 'user', 'assistant'],
    );
    const p1 = await c.pub.get('/messages?limit=4');
    assert.deepEqual(p1.json().items, all.slice(0, 4));
    assert.equal(p1.json().next_offset, 4);
    const p2 = await c.pub.get('/messages?limit=4&offset=4');
    assert.deepEqual(p2.json().items, all.slice(4));
    assert.equal(p2.json().next_offset, null);
    const full = await c.pub.get('/messages?limit=6');
    assert.equal(full.json().items.length, 6);
    assert.equal(full.json().next_offset, null, 'a full last page still says null');
    const past = await c.pub.get('/messages?offset=10');
    assert.deepEqual(past.json(), { items: [], next_offset: null });
  });

  it('answers 200 on closed and expired conversations too', async () => {
    const c = await closed();
    assert.deepEqual((await c.pub.get('/messages')).json(), { items: [], next_offset: null });
    const e = expired();
    const res = await e.pub.get('/messages');
    assert.equal(res.statusCode, 200, res.body);
  });

  it('answers 422 for limit=0, limit=101 and offset=-1', async () => {
    const c = await openConversation(t);
    assert422(await c.pub.get('/messages?limit=0'), ['query', 'limit']);
    assert422(await c.pub.get('/messages?limit=101'), ['query', 'limit']);
    assert422(await c.pub.get('/messages?offset=-1'), ['query', 'offset']);
  });

  it('answers 404 conversation_not_found for a conversation that does not exist', async () => {
    assertError(await (await ghost()).get('/messages'), 404, 'conversation_not_found');
  });
});

describe('POST /v1/public/agents/conversations/{id}/messages', () => {
  const key = (k: string) => ({ 'idempotency-key': k });

  it("answers 201 with the agent's reply, stored and readable through the API key", async () => {
    const c = await openConversation(t);
    const res = await c.pub.post('/messages', { content: 'hi there', metadata: { page: '/pricing' } });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(Object.keys(res.json()), ['agent_message']);
    const reply = res.json().agent_message;
    assert.match(reply.id, /^msg_/);
    assert.equal(reply.role, 'assistant');
    assert.equal(textOf(reply), 'Hello! You said: "hi there".');
    assert.equal(res.headers['idempotent-replayed'], undefined);
    const [user, assistant, ...rest] = await allMessages(t, c.id);
    assert.deepEqual(rest, []);
    assert.equal(user?.role, 'user');
    assert.deepEqual(user?.content, [{ type: 'text', text: 'hi there' }]);
    assert.deepEqual(user?.metadata, { page: '/pricing' });
    assert.ok(assistant);
    assert.deepEqual(seenByEndUser(assistant), reply);
    assert.equal((await getSession(t, c.id)).messages_count, 2);
  });

  it('replays the first answer for the same Idempotency-Key and body with idempotent-replayed: true', async () => {
    const c = await openConversation(t);
    const first = await c.pub.post('/messages', { content: 'once', metadata: { a: 1, b: 2 } }, key('p-1'));
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const again = await c.pub.post('/messages', { metadata: { b: 2, a: 1 }, content: 'once' }, key('p-1'));
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json(), first.json());
    assert.equal((await allMessages(t, c.id)).length, 2);
  });

  it('replays a finished attempt even after the conversation was closed', async () => {
    const c = await openConversation(t);
    const first = await c.pub.post('/messages', { content: 'before close' }, key('p-3'));
    assert.equal(first.statusCode, 201, first.body);
    assert.equal((await c.pub.post('/terminate', {})).statusCode, 200);
    const again = await c.pub.post('/messages', { content: 'before close' }, key('p-3'));
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.json(), first.json());
    assertError(await c.pub.post('/messages', { content: 'new' }, key('p-4')), 409, 'session_closed');
  });

  it('answers 409 idempotency_key_reused for the same key with another body, storing nothing', async () => {
    const c = await openConversation(t);
    assert.equal((await c.pub.post('/messages', { content: 'first' }, key('p-2'))).statusCode, 201);
    const error = assertError(
      await c.pub.post('/messages', { content: 'second' }, key('p-2')),
      409,
      'idempotency_key_reused',
    );
    assert.equal(error.context?.idempotency_key, 'p-2');
    assert.deepEqual((await allMessages(t, c.id)).map(textOf), ['first', 'Hello! You said: "first".']);
  });

  it('answers 422 for empty, missing, over-long or over-many content, a bad role, an extra field or a bad key', async () => {
    const c = await openConversation(t);
    const post = (body: unknown, headers?: Record<string, string>) => c.pub.post('/messages', body, headers);
    assert422(await post({ content: '' }), ['body', 'content']);
    assert422(await post({ role: 'user' }), ['body', 'content'], 'missing');
    assert422(await post({ content: 'x'.repeat(32_001) }), ['body', 'content']);
    const seventeen = await post({ content: Array.from({ length: 17 }, () => ({ text: 'a' })) });
    assert.equal(seventeen.statusCode, 422, seventeen.body);
    assert422(await post({ content: 'hi', role: 'system' }), ['body', 'role']);
    assert422(await post({ content: 'hi', extra: 1 }), ['body', 'extra'], 'extra_forbidden');
    assert422(await post({ content: [{ type: 'image' }] }), ['body', 'content', 0, 'file_id'], 'missing');
    assert422(await post({ content: 'hi', metadata: [1] }), ['body', 'metadata']);
    assert422(await post({ content: 'hi' }, key('')), ['header', 'idempotency-key']);
    assert422(await post({ content: 'hi' }, key('k'.repeat(256))), ['header', 'idempotency-key']);
    assert.deepEqual(await allMessages(t, c.id), []);
  });

  it('answers 403 role_not_allowed for role assistant, and stores nothing', async () => {
    const c = await openConversation(t);
    const error = assertError(
      await c.pub.post('/messages', { role: 'assistant', content: 'I am the agent now' }),
      403,
      'role_not_allowed',
    );
    assert.equal(error.name, 'RoleNotAllowedError');
    assertError(
      await c.pub.post('/messages', { role: 'assistant', content: 'again' }, key('p-role')),
      403,
      'role_not_allowed',
    );
    assert.deepEqual(await allMessages(t, c.id), []);
    assert.equal((await record(c.pub)).messages_count, 0);
    assert.equal(await t.store.getIdempotencyRecord(c.id, 'p-role'), null);
  });

  it('answers 409 session_closed on a closed conversation, storing nothing', async () => {
    const c = await closed();
    const error = assertError(await c.pub.post('/messages', { content: 'after' }), 409, 'session_closed');
    assert.equal(error.name, 'SessionClosedError');
    assert.deepEqual(await allMessages(t, c.id), []);
  });

  it('answers 409 session_expired once the conversation outlived its session_ttl', async () => {
    const c = expired();
    assertError(await c.pub.post('/messages', { content: 'too late' }), 409, 'session_expired');
    assert.equal((await record(c.pub)).status, 'expired');
    assert.deepEqual(await allMessages(t, c.id), []);
  });

  it('answers 409 session_message_limit_reached when a turn would pass messages_per_session', async () => {
    const c = await openConversation(t, 'limited');
    assert.equal((await c.pub.post('/messages', { content: 'one' })).statusCode, 201);
    assert.equal((await c.pub.post('/messages', { content: 'two' })).statusCode, 201);
    const error = assertError(
      await c.pub.post('/messages', { content: 'three' }),
      409,
      'session_message_limit_reached',
    );
    assert.equal(error.context?.limit, 4);
    assert.equal((await record(c.pub)).messages_count, 4);
  });

  it('answers 404 conversation_not_found for a conversation that does not exist', async () => {
    assertError(await (await ghost()).post('/messages', { content: 'hi' }), 404, 'conversation_not_found');
  });
});

describe('content blocks through the public family', () => {
  it('answers 201 for an image block naming an image uploaded in the conversation', async () => {
    const c = await openConversation(t);
    const up = await c.pub.upload(tinyPng, 'dot.png', 'image/png');
    assert.equal(up.statusCode, 201, up.body);
    const fileId = up.json().id;
    const res = await c.pub.post('/messages', {
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', file_id: fileId },
      ],
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(textOf(res.json().agent_message), 'Hello! You said: "look". Attachments: 1.');
    const [user] = await allMessages(t, c.id);
    assert.deepEqual(user?.content, [
      { type: 'text', text: 'look' },
      { type: 'image', file_id: fileId },
    ]);
  });

  it('answers 201 for a file block naming a PDF uploaded in the conversation', async () => {
    const c = await openConversation(t);
    const up = await c.pub.upload(tinyPdf, 'doc.pdf', 'application/pdf');
    assert.equal(up.statusCode, 201, up.body);
    const res = await c.pub.post('/messages', { content: [{ text: 'read' }, { file_id: up.json().id }] });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(textOf(res.json().agent_message), 'Hello! You said: "read". Attachments: 1.');
  });

  it('answers 404 file_not_found with context.param for a pool file uploaded with the API key', async () => {
    const c = await openConversation(t);
    const pool = await upload(t, tinyPng, 'pool.png', 'image/png');
    for (const type of ['image', 'file']) {
      const res = await c.pub.post('/messages', { content: [{ text: 'x' }, { type, file_id: pool }] });
      const error = assertError(res, 404, 'file_not_found');
      assert.equal(error.context?.file_id, pool);
      assert.equal(error.context?.param, 'body.content.1.file_id');
    }
    assert.deepEqual(await allMessages(t, c.id), []);
  });

  it("answers 404 file_not_found for another conversation's file and for an unknown id", async () => {
    const c = await openConversation(t);
    const other = await openConversation(t);
    const up = await other.pub.upload(tinyPng, 'theirs.png', 'image/png');
    assert.equal(up.statusCode, 201, up.body);
    const theirs = assertError(
      await c.pub.post('/messages', { content: [{ type: 'image', file_id: up.json().id }] }),
      404,
      'file_not_found',
    );
    assert.equal(theirs.context?.param, 'body.content.0.file_id');
    assertError(
      await c.pub.post('/messages', { content: [{ type: 'file', file_id: 'file_nope' }] }),
      404,
      'file_not_found',
    );
    assert.deepEqual(await allMessages(t, c.id), []);
    // The owner may use it.
    const own = await other.pub.post('/messages', { content: [{ type: 'image', file_id: up.json().id }] });
    assert.equal(own.statusCode, 201, own.body);
  });

  it('answers 422 at ["body","content",i,"file_id"] for an image block pointing at a PDF', async () => {
    const c = await openConversation(t);
    const up = await c.pub.upload(tinyPdf, 'doc.pdf', 'application/pdf');
    assert.equal(up.statusCode, 201, up.body);
    const res = await c.pub.post('/messages', {
      content: [{ text: 'x' }, { type: 'image', file_id: up.json().id }],
    });
    assert422(res, ['body', 'content', 1, 'file_id']);
    assert.deepEqual(await allMessages(t, c.id), []);
  });
});

describe('POST /v1/public/agents/conversations/{id}/files', () => {
  it('answers 201 with id, name, size, mime_type and created_at, and no metadata', async () => {
    const c = await openConversation(t);
    const res = await c.pub.upload(tinyPng, 'photos/dot.png', 'image/png');
    assert.equal(res.statusCode, 201, res.body);
    const file = res.json();
    assert.deepEqual(Object.keys(file).sort(), ['created_at', 'id', 'mime_type', 'name', 'size']);
    assert.match(file.id, /^file_/);
    assert.equal(file.name, 'dot.png');
    assert.equal(file.size, tinyPng.length);
    assert.equal(file.mime_type, 'image/png');
    assert.ok(!Number.isNaN(Date.parse(file.created_at)));
  });

  it('puts the file in the tenant pool with session_id = the conversation, and in the conversation list', async () => {
    const c = await openConversation(t);
    const up = await c.pub.upload(tinyPdf, 'contract.pdf', 'application/pdf');
    assert.equal(up.statusCode, 201, up.body);
    const file = up.json();
    const pooled = await api.get(`/v1/agents/files/${file.id}`);
    assert.equal(pooled.statusCode, 200, pooled.body);
    assert.equal(pooled.json().session_id, c.id);
    assert.deepEqual(pooled.json().metadata, {});
    const listed = await api.get('/v1/agents/files?limit=100');
    const inPool = listed.json().items.find((f: { id: string }) => f.id === file.id);
    assert.ok(inPool, listed.body);
    assert.equal(inPool.session_id, c.id);
    const filtered = await api.get(`/v1/agents/files?session_id=${c.id}`);
    assert.equal(filtered.statusCode, 200, filtered.body);
    assert.deepEqual(
      filtered.json().items.map((f: { id: string; session_id: string }) => [f.id, f.session_id]),
      [[file.id, c.id]],
    );
    const own = await c.pub.get('/files');
    assert.equal(own.statusCode, 200, own.body);
    assert.deepEqual(own.json(), { items: [file], next_offset: null });
  });

  it('answers 409 session_closed on a closed conversation and session_expired on an expired one', async () => {
    const c = await closed();
    assertError(await c.pub.upload(tinyPng, 'late.png', 'image/png'), 409, 'session_closed');
    const e = expired();
    assertError(await e.pub.upload(tinyPng, 'late.png', 'image/png'), 409, 'session_expired');
    assert.deepEqual((await api.get(`/v1/agents/files?session_id=${c.id}`)).json().items, []);
    assert.deepEqual((await api.get(`/v1/agents/files?session_id=${e.id}`)).json().items, []);
  });

  it('answers 415 unsupported_media_type for bytes of a type that is not allowed, and for a JSON body', async () => {
    const c = await openConversation(t);
    const error = assertError(
      await c.pub.upload(elf, 'tool', 'application/octet-stream'),
      415,
      'unsupported_media_type',
    );
    assert.equal(error.context?.detected, 'application/x-elf');
    assertError(await c.pub.upload('just text', 'fake.png', 'image/png'), 415, 'unsupported_media_type');
    assertError(await c.pub.post('/files', { file: 'x' }), 415, 'unsupported_media_type');
    assert.deepEqual((await c.pub.get('/files')).json().items, []);
  });

  it('answers 422 at ["body","file"] without a file part, and for an empty file', async () => {
    const c = await openConversation(t);
    const form = new FormData();
    form.append('note', 'no file here');
    const { payload, contentType } = await encodeForm(form);
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/public/agents/conversations/${c.id}/files`,
      headers: { authorization: `Bearer ${c.session_token}`, 'content-type': contentType },
      payload,
    });
    assert422(res, ['body', 'file']);
    assert422(await c.pub.upload('', 'empty.txt', 'text/plain'), ['body', 'file']);
  });

  it('answers 413 file_too_large over PARLEY_MAX_UPLOAD_BYTES, and 201 at exactly the limit', async () => {
    const c = await openConversation(t);
    const error = assertError(
      await c.pub.upload(Buffer.alloc(uploadLimit + 1, 'a'), 'big.txt', 'text/plain'),
      413,
      'file_too_large',
    );
    assert.equal(error.context?.limit_bytes, uploadLimit);
    const exact = await c.pub.upload(Buffer.alloc(uploadLimit, 'a'), 'exact.txt', 'text/plain');
    assert.equal(exact.statusCode, 201, exact.body);
    assert.equal(exact.json().size, uploadLimit);
    assert.deepEqual(
      (await c.pub.get('/files')).json().items.map((f: { name: string }) => f.name),
      ['exact.txt'],
    );
  });

  it('answers 404 conversation_not_found for a conversation that does not exist', async () => {
    assertError(await (await ghost()).upload(tinyPng, 'dot.png', 'image/png'), 404, 'conversation_not_found');
  });
});

describe('GET /v1/public/agents/conversations/{id}/files', () => {
  it("answers 200 with this conversation's files only, newest first, paged, without metadata", async () => {
    const c = await openConversation(t);
    const other = await openConversation(t);
    await upload(t, tinyPng, 'pool.png', 'image/png');
    assert.equal((await other.pub.upload(tinyPng, 'other.png', 'image/png')).statusCode, 201);
    const first = (await c.pub.upload(tinyPng, 'first.png', 'image/png')).json();
    await sleep(3);
    const second = (await c.pub.upload(tinyPdf, 'second.pdf', 'application/pdf')).json();
    const res = await c.pub.get('/files');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { items: [second, first], next_offset: null });
    for (const item of res.json().items) {
      assert.ok(!('metadata' in item) && !('session_id' in item), JSON.stringify(item));
    }
    const p1 = await c.pub.get('/files?limit=1');
    assert.deepEqual(p1.json(), { items: [second], next_offset: 1 });
    const p2 = await c.pub.get('/files?limit=1&offset=1');
    assert.deepEqual(p2.json(), { items: [first], next_offset: null });
    assert422(await c.pub.get('/files?limit=0'), ['query', 'limit']);
  });

  it('answers 200 on a closed conversation', async () => {
    const c = await openConversation(t);
    const file = (await c.pub.upload(tinyPng, 'kept.png', 'image/png')).json();
    assert.equal((await c.pub.post('/terminate', {})).statusCode, 200);
    assert.deepEqual((await c.pub.get('/files')).json(), { items: [file], next_offset: null });
  });

  it('answers 404 conversation_not_found for a conversation that does not exist', async () => {
    assertError(await (await ghost()).get('/files'), 404, 'conversation_not_found');
  });
});

describe('POST /v1/public/agents/conversations/{id}/feedback', () => {
  it('answers 200 with id, score, submitted_at and comment', async () => {
    const c = await openConversation(t);
    const res = await c.pub.post('/feedback', { score: 9, comment: 'Helpful', metadata: { page: 'faq' } });
    assert.equal(res.statusCode, 200, res.body);
    const feedback = res.json();
    assert.deepEqual(Object.keys(feedback).sort(), ['comment', 'id', 'score', 'submitted_at']);
    assert.equal(feedback.score, 9);
    assert.equal(feedback.comment, 'Helpful');
    assert.ok(!Number.isNaN(Date.parse(feedback.submitted_at)));
  });

  it('takes score alone (comment and metadata are optional), and the bounds 0 and 10', async () => {
    const c = await openConversation(t);
    const res = await c.pub.post('/feedback', { score: 0 });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().score, 0);
    assert.equal(res.json().comment, null);
    const top = await c.pub.post('/feedback', { score: 10, comment: 'x'.repeat(2000) });
    assert.equal(top.statusCode, 200, top.body);
    assert.equal(top.json().comment.length, 2000);
  });

  it('replaces the first submission on a second one, keeping the same id', async () => {
    const c = await openConversation(t);
    const first = (await c.pub.post('/feedback', { score: 3, comment: 'meh', metadata: { a: 1 } })).json();
    await sleep(3);
    const second = await c.pub.post('/feedback', { score: 8, comment: 'better after all' });
    assert.equal(second.statusCode, 200, second.body);
    assert.equal(second.json().id, first.id);
    assert.equal(second.json().score, 8);
    assert.equal(second.json().comment, 'better after all');
    assert.ok(second.json().submitted_at > first.submitted_at, second.body);
    const stored = await t.store.getFeedback(c.id);
    assert.equal(stored?.id, first.id);
    assert.equal(stored?.score, 8);
    assert.deepEqual(stored?.metadata, {});
    const other = (await (await openConversation(t)).pub.post('/feedback', { score: 5 })).json();
    assert.notEqual(other.id, first.id);
  });

  it('answers 422 for score 11, -1, 2.5, "7" or missing, comment over 2,000 chars, metadata not an object', async () => {
    const c = await openConversation(t);
    for (const score of [11, -1, 2.5, '7']) {
      assert422(await c.pub.post('/feedback', { score }), ['body', 'score']);
    }
    assert422(await c.pub.post('/feedback', { comment: 'no score' }), ['body', 'score'], 'missing');
    assert422(await c.pub.post('/feedback', { score: 5, comment: 'x'.repeat(2001) }), ['body', 'comment']);
    for (const metadata of [[1, 2], 'text', 3]) {
      assert422(await c.pub.post('/feedback', { score: 5, metadata }), ['body', 'metadata']);
    }
    assert422(await c.pub.post('/feedback', { score: 5, extra: true }), ['body', 'extra'], 'extra_forbidden');
  });

  it('answers 200 on closed and on expired conversations', async () => {
    const c = await closed();
    const onClosed = await c.pub.post('/feedback', { score: 7, comment: 'after the end' });
    assert.equal(onClosed.statusCode, 200, onClosed.body);
    const e = expired();
    const onExpired = await e.pub.post('/feedback', { score: 2 });
    assert.equal(onExpired.statusCode, 200, onExpired.body);
    assert.equal(onExpired.json().score, 2);
    assert.equal((await record(e.pub)).status, 'expired');
  });

  it('answers 404 conversation_not_found for a conversation that does not exist', async () => {
    assertError(await (await ghost()).post('/feedback', { score: 5 }), 404, 'conversation_not_found');
  });
});

describe('POST /v1/public/agents/conversations/{id}/inactivity', () => {
  it("answers 200 to warning with the agent's warning message, stored as assistant; the conversation stays active", async () => {
    const c = await openConversation(t);
    const res = await c.pub.post('/inactivity', { step: 'warning' });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['conversation_status', 'message', 'step']);
    assert.equal(body.step, 'warning');
    assert.equal(body.conversation_status, 'active');
    assert.equal(body.message.role, 'assistant');
    assert.deepEqual(body.message.content, [{ type: 'text', text: DEFAULT_WARNING }]);
    assert.deepEqual((await allMessages(t, c.id)).map(seenByEndUser), [body.message]);
    assert.deepEqual((await c.pub.get('/messages')).json().items, [body.message]);
    const conversation = await record(c.pub);
    assert.equal(conversation.status, 'active');
    assert.equal(conversation.messages_count, 1);
    assert.equal((await c.pub.post('/messages', { content: 'I am here' })).statusCode, 201);
  });

  it('answers 200 to final, closing the conversation with close_reason inactivity and closed_at', async () => {
    const c = await openConversation(t);
    assert.equal((await c.pub.post('/messages', { content: 'hello' })).statusCode, 201);
    const res = await c.pub.post('/inactivity', { step: 'final' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().step, 'final');
    assert.equal(res.json().conversation_status, 'closed');
    assert.equal(res.json().message.role, 'assistant');
    assert.equal(textOf(res.json().message), DEFAULT_FINAL);
    const conversation = await record(c.pub);
    assert.equal(conversation.status, 'closed');
    assert.equal(conversation.close_reason, 'inactivity');
    assert.ok(conversation.closed_at && !Number.isNaN(Date.parse(conversation.closed_at)));
    assert.equal(conversation.messages_count, 3);
    assert.equal((await allMessages(t, c.id)).at(-1)?.id, res.json().message.id);
  });

  it('answers 409 session_closed after the final step: to a send and to inactivity again', async () => {
    const c = await openConversation(t);
    assert.equal((await c.pub.post('/inactivity', { step: 'final' })).statusCode, 200);
    assertError(await c.pub.post('/messages', { content: 'wait' }), 409, 'session_closed');
    assertError(await c.pub.post('/inactivity', { step: 'warning' }), 409, 'session_closed');
    assertError(await c.pub.post('/inactivity', { step: 'final' }), 409, 'session_closed');
    assert.equal((await allMessages(t, c.id)).length, 1);
  });

  it('answers 409 session_closed on a terminated conversation and session_expired on an expired one', async () => {
    const c = await closed();
    assertError(await c.pub.post('/inactivity', { step: 'warning' }), 409, 'session_closed');
    const e = expired();
    assertError(await e.pub.post('/inactivity', { step: 'final' }), 409, 'session_expired');
    assert.deepEqual(await allMessages(t, c.id), []);
    assert.deepEqual(await allMessages(t, e.id), []);
  });

  it("uses the agent's own messages, and keeps the conversation active when close_on_final is false", async () => {
    const c = await openConversation(t, 'lingering');
    const warning = await c.pub.post('/inactivity', { step: 'warning' });
    assert.equal(warning.statusCode, 200, warning.body);
    assert.equal(textOf(warning.json().message), 'Still there?');
    const final = await c.pub.post('/inactivity', { step: 'final' });
    assert.equal(final.statusCode, 200, final.body);
    assert.equal(final.json().conversation_status, 'active');
    assert.equal(textOf(final.json().message), 'Goodbye for now.');
    const conversation = await record(c.pub);
    assert.equal(conversation.status, 'active');
    assert.equal(conversation.close_reason, null);
    assert.equal(conversation.closed_at, null);
    assert.deepEqual((await allMessages(t, c.id)).map(textOf), ['Still there?', 'Goodbye for now.']);
    assert.equal((await c.pub.post('/messages', { content: 'back' })).statusCode, 201);
  });

  it('accepts final at the message limit (it closes), while warning there is 409 session_message_limit_reached', async () => {
    const c = await openConversation(t, 'limited');
    assert.equal((await c.pub.post('/messages', { content: 'one' })).statusCode, 201);
    assert.equal((await c.pub.post('/messages', { content: 'two' })).statusCode, 201);
    assertError(await c.pub.post('/inactivity', { step: 'warning' }), 409, 'session_message_limit_reached');
    assert.equal((await record(c.pub)).messages_count, 4);
    const final = await c.pub.post('/inactivity', { step: 'final' });
    assert.equal(final.statusCode, 200, final.body);
    assert.equal(final.json().conversation_status, 'closed');
    const conversation = await record(c.pub);
    assert.equal(conversation.status, 'closed');
    assert.equal(conversation.close_reason, 'inactivity');
    assert.equal(conversation.messages_count, 5);
  });

  it("answers 422 for step 'other', a missing step or an extra field, storing nothing", async () => {
    const c = await openConversation(t);
    assert422(await c.pub.post('/inactivity', { step: 'other' }), ['body', 'step'], 'enum');
    assert422(await c.pub.post('/inactivity', {}), ['body', 'step']);
    assert422(await c.pub.post('/inactivity', { step: 'warning', x: 1 }), ['body', 'x'], 'extra_forbidden');
    assert.deepEqual(await allMessages(t, c.id), []);
    assert.equal((await record(c.pub)).status, 'active');
  });

  it('reports a missing step with the 422 type missing, as every other missing field', async () => {
    const c = await openConversation(t);
    assert422(await c.pub.post('/inactivity', {}), ['body', 'step'], 'missing');
  });

  it('answers 404 conversation_not_found for a conversation that does not exist', async () => {
    assertError(
      await (await ghost()).post('/inactivity', { step: 'warning' }),
      404,
      'conversation_not_found',
    );
  });
});

describe('POST /v1/public/agents/conversations/{id}/terminate', () => {
  it('answers 200 with id, status closed, closed_at and reason; the record shows closed and close_reason', async () => {
    const c = await openConversation(t);
    const res = await c.pub.post('/terminate', { reason: 'user left' });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['closed_at', 'id', 'reason', 'status']);
    assert.equal(body.id, c.id);
    assert.equal(body.status, 'closed');
    assert.equal(body.reason, 'user left');
    assert.ok(!Number.isNaN(Date.parse(body.closed_at)));
    const conversation = await record(c.pub);
    assert.equal(conversation.status, 'closed');
    assert.equal(conversation.closed_at, body.closed_at);
    assert.equal(conversation.close_reason, 'user left');
    const session = await getSession(t, c.id);
    assert.equal(session.status, 'closed');
  });

  it('is idempotent: a second call answers 200 with the first closed_at and reason', async () => {
    const c = await openConversation(t);
    const first = (await c.pub.post('/terminate', { reason: 'first' })).json();
    await sleep(3);
    const second = await c.pub.post('/terminate', { reason: 'second' });
    assert.equal(second.statusCode, 200, second.body);
    assert.deepEqual(second.json(), first);
    assert.equal((await record(c.pub)).close_reason, 'first');
  });

  it('takes an empty body (reason null) and a reason of exactly 500 characters', async () => {
    const c = await openConversation(t);
    const res = await c.pub.post('/terminate', {});
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().reason, null);
    const d = await openConversation(t);
    const long = await d.pub.post('/terminate', { reason: 'r'.repeat(500) });
    assert.equal(long.statusCode, 200, long.body);
    assert.equal(long.json().reason.length, 500);
  });

  it('answers 422 for a reason of 501 characters, and the conversation stays active', async () => {
    const c = await openConversation(t);
    assert422(await c.pub.post('/terminate', { reason: 'r'.repeat(501) }), ['body', 'reason']);
    assert422(await c.pub.post('/terminate', { reason: 7 }), ['body', 'reason']);
    assert.equal((await record(c.pub)).status, 'active');
  });

  it('answers 200 with the inactivity closing after a final inactivity step', async () => {
    const c = await openConversation(t);
    const final = await c.pub.post('/inactivity', { step: 'final' });
    assert.equal(final.statusCode, 200, final.body);
    const closedAt = (await record(c.pub)).closed_at;
    const res = await c.pub.post('/terminate', { reason: 'late' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().closed_at, closedAt);
    assert.equal(res.json().reason, 'inactivity');
  });

  it('answers 404 conversation_not_found for a conversation that does not exist', async () => {
    assertError(await (await ghost()).post('/terminate', {}), 404, 'conversation_not_found');
  });
});
