// A whole conversation over a real listening server, as a front-end and its integrator's server would
// drive it with fetch: start (API key) → send → upload an image and show it → inactivity warning → final
// (closes) → a refused send → feedback → terminate twice → the closed state. X-Request-Id on every answer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seenByEndUser } from '../../helpers/conversations.ts';
import { tinyPng } from '../../helpers/multipart.ts';
import { useSessionApp } from '../../helpers/sessions.ts';

let base: string;
const t = useSessionApp({
  setUp: async (app) => {
    base = await app.app.listen({ port: 0, host: '127.0.0.1' });
  },
});

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of several shapes, checked field by field
  body: any;
}

/** Every response must carry X-Request-Id; an error envelope's request_id must be the same id. */
async function call(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Answer> {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined) headers.set('content-type', 'application/json');
  const res = await fetch(`${base}${path}`, {
    ...rest,
    headers,
    ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
  });
  const text = await res.text();
  const body = text === '' ? null : JSON.parse(text);
  const requestId = res.headers.get('x-request-id');
  assert.ok(requestId, `no X-Request-Id on ${rest.method ?? 'GET'} ${path} (${res.status})`);
  if (body && typeof body === 'object' && 'error' in body) assert.equal(body.request_id, requestId, text);
  return { status: res.status, headers: res.headers, body };
}

describe('a conversation over HTTP, start to end', () => {
  it('runs start, send, image upload, warning, final, refused send, feedback, terminate twice, closed state', async () => {
    // The integrator's server starts the conversation with its API key.
    const start = await call('/v1/agents/demo/conversations', {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey },
      json: { context: { channel: 'web' } },
    });
    assert.equal(start.status, 201, JSON.stringify(start.body));
    const { conversation, session_token: token } = start.body;
    assert.equal(conversation.status, 'active');
    assert.ok(Date.parse(start.body.expires_at) > Date.now());
    const id: string = conversation.id;
    const path = (rest = '') => `/v1/public/agents/conversations/${id}${rest}`;
    const bearer = { authorization: `Bearer ${token}` };

    // The front-end sends a message with the session token.
    const hello = await call(path('/messages'), {
      method: 'POST',
      headers: bearer,
      json: { content: 'hello' },
    });
    assert.equal(hello.status, 201, JSON.stringify(hello.body));
    assert.equal(hello.body.agent_message.role, 'assistant');
    assert.equal(
      hello.body.agent_message.content[0].text,
      'Hello! You said: "hello". Context: channel: "web".',
    );

    // Uploads an image as real multipart/form-data and shows it in an image block.
    const form = new FormData();
    form.append('file', new Blob([tinyPng], { type: 'image/png' }), 'screenshot.png');
    const uploaded = await call(path('/files'), { method: 'POST', headers: bearer, body: form });
    assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
    assert.deepEqual(Object.keys(uploaded.body).sort(), ['created_at', 'id', 'mime_type', 'name', 'size']);
    assert.equal(uploaded.body.mime_type, 'image/png');
    assert.equal(uploaded.body.name, 'screenshot.png');
    assert.equal(uploaded.body.size, tinyPng.length);
    const fileId: string = uploaded.body.id;
    const files = await call(path('/files'), { headers: bearer });
    assert.equal(files.status, 200);
    assert.deepEqual(files.body, { items: [uploaded.body], next_offset: null });

    const look = await call(path('/messages'), {
      method: 'POST',
      headers: bearer,
      json: {
        content: [
          { type: 'text', text: 'see this' },
          { type: 'image', file_id: fileId },
        ],
      },
    });
    assert.equal(look.status, 201, JSON.stringify(look.body));
    assert.equal(
      look.body.agent_message.content[0].text,
      'Hello! You said: "see this". Context: channel: "web". Attachments: 1.',
    );

    // The front-end notices the user went quiet: a warning, then the final message, which closes.
    const warning = await call(path('/inactivity'), {
      method: 'POST',
      headers: bearer,
      json: { step: 'warning' },
    });
    assert.equal(warning.status, 200, JSON.stringify(warning.body));
    assert.equal(warning.body.step, 'warning');
    assert.equal(warning.body.conversation_status, 'active');
    assert.equal(warning.body.message.role, 'assistant');
    assert.equal(
      warning.body.message.content[0].text,
      'Are you still there? This conversation will close soon.',
    );

    const final = await call(path('/inactivity'), {
      method: 'POST',
      headers: bearer,
      json: { step: 'final' },
    });
    assert.equal(final.status, 200, JSON.stringify(final.body));
    assert.equal(final.body.step, 'final');
    assert.equal(final.body.conversation_status, 'closed');
    assert.equal(
      final.body.message.content[0].text,
      'This conversation was closed after a period of inactivity.',
    );

    // The conversation is closed: a send is refused.
    const refused = await call(path('/messages'), {
      method: 'POST',
      headers: bearer,
      json: { content: 'wait, I am back' },
    });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'session_closed');
    assert.ok(!Number.isNaN(Date.parse(refused.body.timestamp)));

    // Feedback is still welcome.
    const feedback = await call(path('/feedback'), {
      method: 'POST',
      headers: bearer,
      json: { score: 9, comment: 'Quick and kind', metadata: { widget: 'v2' } },
    });
    assert.equal(feedback.status, 200, JSON.stringify(feedback.body));
    assert.equal(feedback.body.score, 9);
    assert.equal(feedback.body.comment, 'Quick and kind');
    assert.ok(feedback.body.id);

    // Terminate is idempotent: both calls answer the closing the final step made.
    const terminated = await call(path('/terminate'), {
      method: 'POST',
      headers: bearer,
      json: { reason: 'user closed the widget' },
    });
    assert.equal(terminated.status, 200, JSON.stringify(terminated.body));
    assert.equal(terminated.body.id, id);
    assert.equal(terminated.body.status, 'closed');
    assert.equal(terminated.body.reason, 'inactivity');
    const again = await call(path('/terminate'), { method: 'POST', headers: bearer, json: {} });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(again.body, terminated.body);

    // The state says closed, by inactivity, at the time the terminate calls reported.
    const state = await call(path(), { headers: bearer });
    assert.equal(state.status, 200, JSON.stringify(state.body));
    assert.equal(state.body.status, 'closed');
    assert.equal(state.body.close_reason, 'inactivity');
    assert.equal(state.body.closed_at, terminated.body.closed_at);
    assert.equal(state.body.messages_count, 6);
    assert.ok(!('metadata' in state.body) && !('context' in state.body) && !('user' in state.body));

    // The whole exchange, oldest first, as both families read it.
    const messages = await call(path('/messages'), { headers: bearer });
    assert.equal(messages.status, 200);
    assert.deepEqual(
      messages.body.items.map((m: { role: string }) => m.role),
      ['user', 'assistant', 'user', 'assistant', 'assistant', 'assistant'],
    );
    assert.deepEqual(messages.body.items[2].content[1], { type: 'image', file_id: fileId });
    assert.equal(messages.body.items[4].id, warning.body.message.id);
    assert.equal(messages.body.items[5].id, final.body.message.id);
    const server = await call(`/v1/agents/sessions/${id}/messages`, { headers: { 'x-api-key': t.apiKey } });
    assert.equal(server.status, 200);
    // The same messages; only the API key sees their metadata (the integrator's).
    assert.deepEqual(server.body.items.map(seenByEndUser), messages.body.items);
    const session = await call(`/v1/agents/sessions/${id}`, { headers: { 'x-api-key': t.apiKey } });
    assert.equal(session.body.status, 'closed');
    assert.deepEqual(session.body.context, { channel: 'web' });
    const pooled = await call(`/v1/agents/files?session_id=${id}`, { headers: { 'x-api-key': t.apiKey } });
    assert.deepEqual(
      pooled.body.items.map((f: { id: string; session_id: string }) => [f.id, f.session_id]),
      [[fileId, id]],
    );
  });

  it('sends X-Request-Id on failures before any route runs too: no token, unknown route, bad JSON', async () => {
    const start = await call('/v1/agents/demo/conversations', {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey },
      json: {},
    });
    assert.equal(start.status, 201);
    const id = start.body.conversation.id;
    const noToken = await call(`/v1/public/agents/conversations/${id}`);
    assert.equal(noToken.status, 401);
    assert.equal(noToken.body.error.code, 'unauthorized');
    const unknown = await call('/v1/nowhere');
    assert.equal(unknown.status, 404);
    const res = await fetch(`${base}/v1/public/agents/conversations/${id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${start.body.session_token}`, 'content-type': 'application/json' },
      body: '{not json',
    });
    assert.equal(res.status, 422);
    assert.ok(res.headers.get('x-request-id'));
    const invalid = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
    assert.deepEqual(invalid.detail[0]?.loc, ['body']);
    assert.equal(invalid.detail[0]?.type, 'json_invalid');
  });
});
