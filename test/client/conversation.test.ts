// ParleyConversation (packages/client) against a real listening app: the public family with a session token,
// streamed turns as typed events, refusals as ParleyError, an expired token refreshed through the callback,
// and a stream cut by a real proxy that the client resumes (or sends again) without the consumer noticing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ParleyConversation, ParleyError, type TurnEvent } from '#client';
import { SessionTokens, tokenSecret } from '../../src/auth/session-tokens.ts';
import { loadConfig } from '../../src/config.ts';
import { apiKeyIdOf, useApp } from '../helpers/app.ts';
import { forward, startProxy } from '../helpers/http-proxy.ts';
import { buildSessionApp, sleep, useSessionApp } from '../helpers/sessions.ts';
import {
  assertTurnIds,
  baseUrl,
  clientAgents,
  collect,
  deltaText,
  keyClient,
  LONG,
  listen,
  mergeDeltas,
  openConversation,
} from './helpers.ts';

const t = useApp(() => buildSessionApp({}, clientAgents), listen);

describe('a streamed turn', () => {
  it('arrives as typed events: turn.started, the deltas, message.completed, turn.completed, with the ids of the contract', async () => {
    const conv = await openConversation(t);
    const stream = conv.stream('Hello there');
    const events = await collect(stream);
    assert.deepEqual(
      mergeDeltas(events).map((e) => e.event),
      ['turn.started', 'message.delta', 'message.completed', 'turn.completed'],
    );
    assertTurnIds(events);
    const [started] = events;
    assert.ok(started?.event === 'turn.started');
    assert.equal(stream.turnId, started.data.turn_id);
    assert.equal(started.data.session_id, conv.conversationId);
    assert.deepEqual(started.data.user_message?.content, [{ type: 'text', text: 'Hello there' }]);
    assert.equal(stream.lastEventId, events.at(-1)?.id);
    const completed = events.find((e) => e.event === 'message.completed');
    assert.ok(completed?.event === 'message.completed');
    assert.equal(
      deltaText(events),
      completed.data.message.content.map((b) => (b.type === 'text' ? b.text : '')).join(''),
    );
    assert.equal('metadata' in completed.data.message, false, 'the end user never sees metadata');
    const stored = await conv.messages();
    assert.deepEqual(stored.items.at(-1), completed.data.message);
    const done = events.at(-1);
    assert.ok(done?.event === 'turn.completed');
    assert.equal(done.data.conversation_status, 'active');
  });

  it('replays a finished turn through resume(), whole or after a given event id', async () => {
    const conv = await openConversation(t);
    const events = await collect(conv.stream('Replay me'));
    const turnId = events[0]?.data.turn_id ?? '';
    const whole = await collect(conv.resume(turnId));
    assert.deepEqual(mergeDeltas(whole), mergeDeltas(events));
    const afterStart = await collect(conv.resume(turnId, { after: events[0]?.id }));
    assert.deepEqual(mergeDeltas(afterStart), mergeDeltas(events).slice(1));
    const afterReply = events.find((e) => e.event === 'message.completed');
    const tail = await collect(conv.resume(turnId, { after: afterReply?.id }));
    assert.deepEqual(tail, events.slice(-1));
  });

  it('stops when its signal aborts, with the abort reason', async () => {
    const conv = await openConversation(t, 'drawl');
    const controller = new AbortController();
    const seen: TurnEvent[] = [];
    await assert.rejects(
      (async () => {
        for await (const event of conv.stream(LONG, { signal: controller.signal })) {
          seen.push(event);
          if (event.event === 'message.delta') controller.abort();
        }
      })(),
      { name: 'AbortError' },
    );
    assert.equal(seen.at(-1)?.event, 'message.delta');
  });
});

describe('the other routes of a conversation', () => {
  it('reads, sends, streams, decides, cancels, lists, uploads, leaves feedback, warns of inactivity, terminates and follows the events: every public route but the AI SDK chat', async () => {
    const sent: string[] = [];
    const conv = await openConversation(t, 'demo', {
      fetch: (input, init) => {
        sent.push(`${init.method} ${new URL(input).pathname}`);
        return fetch(input, init);
      },
    });
    const record = await conv.get();
    assert.equal(record.id, conv.conversationId);
    assert.equal(record.status, 'active');

    const file = await conv.upload(new Blob([Buffer.from('hello file')], { type: 'text/plain' }), 'note.txt');
    assert.equal(file.name, 'note.txt');
    assert.equal(file.size, 10);
    assert.deepEqual(
      (await conv.files()).items.map((f) => f.id),
      [file.id],
    );

    const reply = await conv.send({
      content: [
        { type: 'text', text: 'see this' },
        { type: 'file', file_id: file.id },
      ],
    });
    assert.ok(reply.status === 'replied');
    assert.equal(reply.agent_message.role, 'assistant');
    assert.match(JSON.stringify(reply.agent_message.content), /Attachments: 1/);
    const plain = await conv.send('and a plain string');
    assert.ok(plain.status === 'replied');
    assert.match(JSON.stringify(plain.agent_message.content), /and a plain string/);

    const stream = conv.stream('streamed');
    const events = await collect(stream);
    assert.equal(events.at(-1)?.event, 'turn.completed');
    assert.deepEqual(await collect(conv.resume(stream.turnId ?? '', { after: stream.lastEventId })), []);
    // A finished turn: a cancel answers it as it is, and a decision finds no call waiting.
    const finished = await conv.cancel(stream.turnId ?? '');
    assert.equal(finished.turn.status, 'completed');
    assert.equal('metadata' in (finished.agent_message ?? {}), false);
    await assert.rejects(conv.deny(stream.turnId ?? '', 'call_none', 'no'), {
      name: 'ParleyError',
      status: 409,
      code: 'approval_not_pending',
    });

    const page = await conv.messages({ limit: 2, offset: 1 });
    assert.equal(page.items.length, 2);
    assert.equal(page.next_offset, 3);

    // This agent's end users may not ask for a human.
    await assert.rejects(conv.requestHuman('a person, please'), {
      name: 'ParleyError',
      status: 403,
      code: 'handoff_not_allowed',
    });

    const warning = await conv.inactivity('warning');
    assert.equal(warning.step, 'warning');
    assert.equal(warning.conversation_status, 'active');
    const feedback = await conv.feedback({ score: 9, comment: 'quick' });
    assert.equal(feedback.score, 9);
    const closed = await conv.terminate('done here');
    assert.equal(closed.status, 'closed');
    assert.equal(closed.reason, 'done here');
    assert.equal((await conv.get()).status, 'closed');
    assert.equal((await collect(conv.events())).at(-1)?.event, 'session.closed');

    // Every route of the family in the OpenAPI document was called, but the one useChat's transport calls.
    const doc = (await (await fetch(`${baseUrl(t)}/openapi.json`)).json()) as {
      paths: Record<string, object>;
    };
    const routes = Object.entries(doc.paths).flatMap(([path, item]) =>
      path.startsWith('/v1/public/') ? Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`) : [],
    );
    const called = new Set(
      sent.map((c) => c.replace(conv.conversationId, '{conversation_id}').replace(/turn_\w+/, '{turn_id}')),
    );
    assert.deepEqual(
      routes.filter((r) => !called.has(r)),
      ['POST /v1/public/agents/conversations/{conversation_id}/chat'],
    );
  });

  it('sends each message with an Idempotency-Key: the same key replays the stored reply instead of sending twice', async () => {
    const conv = await openConversation(t);
    const first = await conv.send('once', { idempotencyKey: 'k-1' });
    const again = await conv.send('once', { idempotencyKey: 'k-1' });
    assert.deepEqual(again, first);
    assert.equal((await conv.get()).messages_count, 2);
  });
});

describe('asking for a human', () => {
  it('hands the conversation to people where its agent allows it: sends are then stored without a reply', async () => {
    const conv = await openConversation(t, 'desk');
    const asked = await conv.requestHuman('a person, please');
    assert.equal(asked.handled_by, 'humans');
    assert.equal(asked.handoff?.by, 'user');
    assert.equal((await conv.requestHuman()).handoff?.reason, 'a person, please', 'a repeat keeps the first');
    const stored = await conv.send('still there?');
    assert.deepEqual(stored, { status: 'handled_by_humans', agent_message: null, handled_by: 'humans' });
    assert.equal((await conv.get()).messages_count, 1);
    // Streamed, the send is told as its stored message alone, and the stream ends there.
    const told = await collect(conv.stream('anyone?'));
    assert.deepEqual(
      told.map((e) => e.event),
      ['message.created'],
    );
    const [created] = told;
    assert.ok(created?.event === 'message.created');
    assert.deepEqual(created.data.message.content, [{ type: 'text', text: 'anyone?' }]);
  });
});

describe('refusals', () => {
  it('turns a 422 into a ParleyError with the detail, from a plain call and from a stream', async () => {
    const conv = await openConversation(t);
    const error = await conv.feedback({ score: 11 }).catch((e: unknown) => e);
    assert.ok(error instanceof ParleyError);
    assert.equal(error.status, 422);
    assert.equal(error.code, 'validation_error');
    assert.deepEqual(error.detail?.[0]?.loc, ['body', 'score']);
    await assert.rejects(collect(conv.stream({ content: '' })), (err: unknown) => {
      assert.ok(err instanceof ParleyError);
      assert.equal(err.status, 422);
      assert.deepEqual(err.detail?.[0]?.loc.slice(0, 2), ['body', 'content']);
      return true;
    });
  });

  it('turns an error envelope into a ParleyError with code, name, context and request id', async () => {
    const conv = await openConversation(t);
    await conv.terminate();
    const error = await conv.send('too late').catch((e: unknown) => e);
    assert.ok(error instanceof ParleyError);
    assert.equal(error.status, 409);
    assert.equal(error.code, 'session_closed');
    assert.equal(error.errorName, 'SessionClosedError');
    assert.match(error.requestId ?? '', /\S/);
  });
});

describe('an expired session token', () => {
  /** A conversation whose token (minted by the service's own code with a 1 s lifetime) has expired. */
  async function expiredConversation() {
    const started = await keyClient(t).createConversation('demo');
    const id = started.conversation.id;
    const config = loadConfig({ PARLEY_DATA_DIR: t.dataDir, PARLEY_TOKEN_TTL: '1' });
    const short = await new SessionTokens(tokenSecret(config), config.tokenTtlSeconds).mint({
      conversationId: id,
      tenantId: 't1',
      agentId: 'demo',
      keyId: await apiKeyIdOf(t),
    });
    // Wait for the service to call it expired (JWT times are whole seconds: one to two seconds).
    for (;;) {
      const res = await fetch(`${baseUrl(t)}/v1/public/agents/conversations/${id}`, {
        headers: { authorization: `Bearer ${short.session_token}` },
      });
      const body = (await res.json()) as { error?: { code: string } };
      if (res.status === 401 && body.error?.code === 'session_token_expired') break;
      await sleep(100);
    }
    return { id, token: short.session_token };
  }

  it('is refreshed through the callback once, and the request repeated with the new token', async () => {
    const { id, token } = await expiredConversation();
    const minted: string[] = [];
    const conv = new ParleyConversation({
      baseUrl: baseUrl(t),
      conversationId: id,
      token,
      refreshToken: async () => {
        const fresh = await keyClient(t).refreshToken(id);
        minted.push(fresh.session_token);
        return fresh.session_token;
      },
    });
    // Three calls meet the expired token together: they share one refresh.
    const [record, page, again] = await Promise.all([conv.get(), conv.messages(), conv.get()]);
    assert.equal(record.id, id);
    assert.deepEqual(page.items, []);
    assert.equal(again.id, id);
    assert.equal(minted.length, 1);
    assert.equal(conv.token, minted[0]);
    const reply = await conv.send('after the refresh');
    assert.ok(reply.status === 'replied');
    assert.equal(reply.agent_message.role, 'assistant');
    assert.equal(minted.length, 1);
  });

  it('is a ParleyError session_token_expired without a callback', async () => {
    const { id, token } = await expiredConversation();
    const conv = new ParleyConversation({ baseUrl: baseUrl(t), conversationId: id, token });
    const error = await conv.get().catch((e: unknown) => e);
    assert.ok(error instanceof ParleyError);
    assert.equal(error.status, 401);
    assert.equal(error.code, 'session_token_expired');
  });
});

describe('a stream whose connection breaks', () => {
  it('is resumed after its last event when cut after the 3rd: the events seen equal those of the undisturbed turn', async () => {
    const proxy = await startProxy(baseUrl(t), (req) =>
      req.url.endsWith('/messages/stream') ? { kind: 'cut-after-events', events: 3 } : forward,
    );
    try {
      const conv = await openConversation(t, 'drawl', { baseUrl: proxy.url });
      const stream = conv.stream(LONG);
      const events = await collect(stream);
      const turnId = stream.turnId ?? '';
      assert.equal(events.at(-1)?.event, 'turn.completed');
      assertTurnIds(events);
      // The turn was sent once and resumed after the 3rd event.
      const sends = proxy.requests.filter((r) => r.url.endsWith('/messages/stream'));
      assert.equal(sends.length, 1);
      const resumes = proxy.requests.filter((r) => r.url.includes(`/turns/${turnId}/events`));
      assert.ok(resumes.length >= 1);
      assert.equal(new URL(resumes[0]?.url ?? '', proxy.url).searchParams.get('after'), events[2]?.id);
      // The same turn, read undisturbed once it is stored, holds exactly the same events.
      const undisturbed = await collect(conv.resume(turnId));
      assert.deepEqual(mergeDeltas(events), mergeDeltas(undisturbed));
      assert.equal((await conv.get()).messages_count, 2);
    } finally {
      await proxy.close();
    }
  });

  it('is sent again with the same Idempotency-Key when it broke before turn.started: the message is stored once', async () => {
    const proxy = await startProxy(baseUrl(t), (req, index) =>
      req.url.endsWith('/messages/stream') && index === 0 ? { kind: 'drop' } : forward,
    );
    try {
      const conv = await openConversation(t, 'demo', { baseUrl: proxy.url });
      const events = await collect(conv.stream('are you there?'));
      assert.deepEqual(
        mergeDeltas(events).map((e) => e.event),
        ['turn.started', 'message.delta', 'message.completed', 'turn.completed'],
      );
      const sends = proxy.requests.filter((r) => r.url.endsWith('/messages/stream'));
      assert.equal(sends.length, 2);
      assert.match(String(sends[0]?.headers['idempotency-key']), /^[0-9a-f-]{36}$/);
      assert.equal(sends[1]?.headers['idempotency-key'], sends[0]?.headers['idempotency-key']);
      const page = await conv.messages();
      assert.deepEqual(
        page.items.map((m) => m.role),
        ['user', 'assistant'],
      );
    } finally {
      await proxy.close();
    }
  });

  it('gives up after the default 5 reconnections when maxReconnects is NaN (an unparsable setting), never looping on', {
    timeout: 60_000,
  }, async () => {
    const proxy = await startProxy(baseUrl(t), (req) =>
      req.url.endsWith('/messages/stream') ? { kind: 'drop' } : forward,
    );
    try {
      const conv = await openConversation(t, 'demo', { baseUrl: proxy.url, maxReconnects: Number.NaN });
      const error = await collect(conv.stream('anyone?')).catch((e: unknown) => e);
      assert.ok(error instanceof ParleyError);
      assert.equal(error.code, 'stream_interrupted');
      assert.equal(proxy.requests.filter((r) => r.url.endsWith('/messages/stream')).length, 6);
    } finally {
      await proxy.close();
    }
  });
});

describe('answers that ask to retry', () => {
  it('retries a send answered 503 with Retry-After: 1 after that second, with the same Idempotency-Key', async () => {
    let refused = false;
    const proxy = await startProxy(baseUrl(t), (req) => {
      if (refused || !req.url.endsWith('/messages')) return forward;
      refused = true;
      return {
        kind: 'answer',
        status: 503,
        headers: { 'retry-after': '1' },
        body: {
          error: { code: 'service_unavailable', name: 'ServiceUnavailableError', message: 'retry shortly' },
          request_id: 'req-proxy',
          timestamp: new Date().toISOString(),
        },
      };
    });
    try {
      const conv = await openConversation(t, 'demo', { baseUrl: proxy.url });
      const started = performance.now();
      const reply = await conv.send('patience');
      const waited = performance.now() - started;
      assert.ok(reply.status === 'replied');
      assert.equal(reply.agent_message.role, 'assistant');
      assert.ok(waited >= 990, `retried after ${waited} ms`);
      const sends = proxy.requests.filter((r) => r.url.endsWith('/messages'));
      assert.equal(sends.length, 2);
      assert.equal(sends[1]?.headers['idempotency-key'], sends[0]?.headers['idempotency-key']);
      assert.equal((await conv.get()).messages_count, 2);
    } finally {
      await proxy.close();
    }
  });

  it('gives up after maxRetries, with the last refusal', async () => {
    const proxy = await startProxy(baseUrl(t), (req) =>
      req.method === 'GET'
        ? {
            kind: 'answer',
            status: 429,
            headers: { 'retry-after': '0' },
            body: { error: { code: 'rate_limited', name: 'RateLimitExceededError', message: 'slow down' } },
          }
        : forward,
    );
    try {
      const conv = await openConversation(t, 'demo', { baseUrl: proxy.url, maxRetries: 3 });
      const error = await conv.get().catch((e: unknown) => e);
      assert.ok(error instanceof ParleyError);
      assert.equal(error.code, 'rate_limited');
      assert.equal(error.retryAfterSeconds, 0);
      assert.equal(proxy.requests.filter((r) => r.method === 'GET').length, 4);
    } finally {
      await proxy.close();
    }
  });

  it('retries the default 2 times when maxRetries is NaN (an unparsable setting), never looping on', {
    timeout: 30_000,
  }, async () => {
    const proxy = await startProxy(baseUrl(t), (req) =>
      req.method === 'GET'
        ? {
            kind: 'answer',
            status: 429,
            headers: { 'retry-after': '0' },
            body: { error: { code: 'rate_limited', name: 'RateLimitExceededError', message: 'slow down' } },
          }
        : forward,
    );
    try {
      const conv = await openConversation(t, 'demo', { baseUrl: proxy.url, maxRetries: Number.NaN });
      const error = await conv.get().catch((e: unknown) => e);
      assert.ok(error instanceof ParleyError);
      assert.equal(error.code, 'rate_limited');
      assert.equal(proxy.requests.filter((r) => r.method === 'GET').length, 3);
    } finally {
      await proxy.close();
    }
  });
});

describe('the rate limit of a conversation (PARLEY_RATE_LIMIT_TOKEN=3)', () => {
  const limited = useSessionApp({ env: { PARLEY_RATE_LIMIT_TOKEN: '3' }, setUp: listen });

  it('is thrown at once, with retryAfterSeconds, when its Retry-After asks for more than 30 s', async () => {
    const requests: string[] = [];
    const conv = await openConversation(limited, 'demo', {
      fetch: (input, init) => {
        requests.push(`${init.method} ${new URL(input).pathname}`);
        return fetch(input, init);
      },
    });
    for (let i = 0; i < 3; i++) await conv.get();
    // The window is a minute and has just begun: the server asks for about 60 s.
    const error = await conv.get().catch((e: unknown) => e);
    assert.ok(error instanceof ParleyError);
    assert.equal(error.status, 429);
    assert.equal(error.code, 'rate_limited');
    assert.ok((error.retryAfterSeconds ?? 0) > 30, String(error.retryAfterSeconds));
    assert.equal(requests.length, 4);
  });
});
