// ParleyClient (packages/client) against a real listening app: one method for every route of the API-key
// family (checked against the service's own OpenAPI document), streamed turns as typed events resumed with
// Last-Event-ID after a real proxy cut them, and refusals as ParleyError.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Fetch, ParleyClient, ParleyError } from '#client';
import { useApp } from '../helpers/app.ts';
import { forward, startProxy } from '../helpers/http-proxy.ts';
import { buildSessionApp } from '../helpers/sessions.ts';
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
} from './helpers.ts';

const t = useApp(() => buildSessionApp({}, clientAgents), listen);

interface Operation {
  method: string;
  path: string;
  query: string[];
}

/** The API-key family's operations, as /openapi.json describes them. */
async function documentedOperations(): Promise<Operation[]> {
  const doc = (await (await fetch(`${baseUrl(t)}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    if (path !== '/v1/agents' && !path.startsWith('/v1/agents/')) continue;
    for (const [method, op] of Object.entries(
      item as Record<string, { parameters?: { in: string; name: string }[] }>,
    )) {
      const query = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      operations.push({ method: method.toUpperCase(), path, query: query.sort() });
    }
  }
  return operations;
}

/** Which documented operation a request is: its method, and its path matched against the templates. */
function operationOf(operations: Operation[], method: string, pathname: string): Operation {
  const hits = operations.filter(
    (op) => op.method === method && new RegExp(`^${op.path.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(pathname),
  );
  assert.equal(hits.length, 1, `${method} ${pathname} matches ${JSON.stringify(hits)}`);
  return hits[0] as Operation;
}

describe('the API-key family', () => {
  it('has a method for every route of the OpenAPI document, each sending the query parameters the route declares', async () => {
    const sent: { method: string; pathname: string; query: string[] }[] = [];
    const recording: Fetch = (input, init) => {
      const url = new URL(input);
      sent.push({
        method: init.method ?? 'GET',
        pathname: url.pathname,
        query: [...url.searchParams.keys()].sort(),
      });
      return fetch(input, init);
    };
    const api = new ParleyClient({ baseUrl: baseUrl(t), apiKey: t.apiKey, fetch: recording });

    const user = await api.createUser({ reference: 'crm-7', name: 'Ada', email: 'ada@example.com' });
    assert.equal(
      (await api.listUsers({ reference: 'crm-7', email: 'ada@example.com', limit: 5, offset: 0 })).items[0]
        ?.id,
      user.id,
    );
    assert.equal((await api.getUser(user.id)).name, 'Ada');
    assert.equal((await api.updateUser(user.id, { name: 'Ada L.' })).name, 'Ada L.');

    const bytes = new Uint8Array([1, 2, 3, 4, 5]);
    const file = await api.uploadFile(new Blob([bytes], { type: 'application/octet-stream' }), {
      filename: 'five.bin',
      metadata: { origin: 'test' },
    });
    assert.deepEqual(file.metadata, { origin: 'test' });
    const listed = await api.listFiles({
      name: 'five',
      mime_type: file.mime_type,
      created_after: '2000-01-01T00:00:00Z',
      created_before: '2999-01-01T00:00:00Z',
      limit: 10,
      offset: 0,
    });
    assert.deepEqual(
      listed.items.map((f) => f.id),
      [file.id],
    );
    assert.equal((await api.listFiles({ session_id: 'ses_none' })).items.length, 0);
    assert.equal((await api.getFile(file.id)).name, 'five.bin');
    const content = await api.downloadFile(file.id);
    assert.deepEqual(new Uint8Array(await content.arrayBuffer()), bytes);

    assert.ok((await api.agents()).some((a) => a.id === 'demo' && a.provider === 'scripted'));
    const session = await api.createSession('demo', { user: { id: user.id }, context: { plan: 'pro' } });
    const listedSessions = await api.listSessions({
      status: 'active',
      agent_id: 'demo',
      user_id: user.id,
      user_reference: 'crm-7',
      handled_by: 'agent',
      pending_approval: false,
      updated_after: '2000-01-01T00:00:00Z',
      limit: 5,
      offset: 0,
    });
    assert.deepEqual(
      listedSessions.items.map((s) => s.id),
      [session.id],
    );
    assert.equal(listedSessions.next_cursor, null);
    const newer = await api.createSession('demo');
    const newest = await api.listSessions({ limit: 1 });
    assert.deepEqual(
      newest.items.map((s) => s.id),
      [newer.id],
    );
    assert.ok(newest.next_cursor);
    const next = await api.listSessions({ cursor: newest.next_cursor, limit: 1 });
    assert.deepEqual(
      next.items.map((s) => s.id),
      [session.id],
    );
    assert.equal((await api.getSession(session.id)).context.plan, 'pro');
    const reply = await api.sendMessage(session.id, { content: 'Hi', metadata: { from: 'crm' } });
    assert.ok(reply.status === 'replied');
    assert.match(JSON.stringify(reply.agent_message.content), /Hello Ada L\.!/);
    // Handed to people, a send is stored without a reply; handed back, the agent answers again.
    assert.equal((await api.handoff(session.id, 'asks for a person')).handled_by, 'humans');
    const stored = await api.sendMessage(session.id, 'Anyone there?');
    assert.deepEqual(stored, { status: 'handled_by_humans', agent_message: null, handled_by: 'humans' });
    assert.equal((await api.handback(session.id)).handled_by, 'agent');
    const stream = api.streamMessage(session.id, 'Stream it');
    const events = await collect(stream);
    assert.equal(events.at(-1)?.event, 'turn.completed');
    const replayed = await collect(api.resumeTurn(session.id, stream.turnId ?? ''));
    assert.deepEqual(mergeDeltas(replayed), mergeDeltas(events));
    const chat = await api.chat(session.id, {
      id: 'chat-1',
      messages: [{ id: 'ui-1', role: 'user', parts: [{ type: 'text', text: 'From useChat' }] }],
      trigger: 'submit-message',
    });
    assert.equal(chat.headers.get('x-vercel-ai-ui-message-stream'), 'v1');
    const uiStream = await chat.text();
    assert.match(uiStream, /"type":"text-delta"/);
    assert.match(uiStream, /useChat/);
    const messages = await api.listMessages(session.id, { limit: 100, offset: 0 });
    // Three exchanges, and the message people were handed.
    assert.equal(messages.items.length, 7);
    assert.deepEqual(messages.items[0]?.metadata, { from: 'crm' });
    assert.equal((await api.getMessage(session.id, reply.agent_message.id)).id, reply.agent_message.id);
    // A finished turn: a cancel answers it as it is, and a decision finds no call waiting.
    const finished = await api.cancelTurn(session.id, stream.turnId ?? '');
    assert.equal(finished.turn.status, 'completed');
    await assert.rejects(api.approve(session.id, stream.turnId ?? '', 'call_none'), {
      name: 'ParleyError',
      status: 409,
      code: 'approval_not_pending',
    });
    const closed = await api.terminateSession(session.id, 'finished');
    assert.equal(closed.status, 'closed');
    const told = await collect(api.sessionEvents(session.id));
    assert.equal(told.at(-1)?.event, 'session.closed');

    const ran = await api.run('demo', { messages: [{ content: 'Run once' }], context: { a: 1 } });
    assert.match(ran.session_id, /^ses_/);
    const started = await api.createConversation('demo', { metadata: { page: 'pricing' } });
    const token = await api.refreshToken(started.conversation.id);
    assert.match(token.session_token, /^ey/);

    const day = new Date().toISOString().slice(0, 10);
    const usage = await api.usage.report({
      from: day,
      to: day,
      group_by: 'user',
      agent_id: 'demo',
      user_id: user.id,
      limit: 5,
      offset: 0,
    });
    assert.deepEqual(
      usage.items.map((r) => [r.key, r.turns]),
      [[user.id, (await api.getUser(user.id)).usage?.turns]],
    );
    assert.equal(
      (await api.usage.setBudget(user.id, { period: 'month', max_tokens: 10 ** 9 })).period,
      'month',
    );
    assert.equal((await api.usage.getBudget(user.id)).max_tokens, 10 ** 9);
    await api.usage.deleteBudget(user.id);
    assert.equal((await api.usage.setBudget(null, { period: 'day', max_cost_usd: 100 })).user_id, null);
    assert.equal((await api.usage.getBudget(null)).max_cost_usd, 100);
    await api.usage.deleteBudget(null);

    await api.deleteFile(file.id);
    await api.deleteUser(user.id);

    const hook = await api.createWebhook({ url: 'https://crm.example.com/hooks', events: ['user.deleted'] });
    assert.match(hook.secret, /^whsec_/);
    assert.deepEqual(
      (await api.listWebhooks()).map((w) => w.id),
      [hook.id],
    );
    assert.equal((await api.getWebhook(hook.id)).url, 'https://crm.example.com/hooks');
    assert.deepEqual((await api.listWebhookDeliveries(hook.id, { limit: 5, offset: 0 })).items, []);
    await api.deleteWebhook(hook.id);

    const operations = await documentedOperations();
    /** Each operation used, with every query parameter any of its requests sent. */
    const covered = new Map<string, Set<string>>();
    for (const request of sent) {
      const op = operationOf(operations, request.method, request.pathname);
      const key = `${op.method} ${op.path}`;
      covered.set(key, new Set([...(covered.get(key) ?? []), ...request.query]));
    }
    for (const op of operations) {
      const query = [...(covered.get(`${op.method} ${op.path}`) ?? [])].sort();
      // Lists take every filter the route declares; other routes send none the route does not declare.
      if (op.query.includes('limit')) assert.deepEqual(query, op.query, `${op.method} ${op.path}`);
      else
        assert.deepEqual(
          query.filter((q) => !op.query.includes(q)),
          [],
          `${op.method} ${op.path}`,
        );
    }
    assert.deepEqual(
      operations.map((op) => `${op.method} ${op.path}`).filter((key) => !covered.has(key)),
      [],
      'routes without a client method',
    );
  });

  it('streams a turn as typed events whose messages carry their metadata', async () => {
    const api = keyClient(t);
    const session = await api.createSession('demo');
    const events = await collect(api.streamMessage(session.id, { content: 'Typed', metadata: { n: 1 } }));
    assertTurnIds(events);
    const [started] = events;
    assert.ok(started?.event === 'turn.started');
    assert.deepEqual(started.data.user_message?.metadata, { n: 1 });
    const completed = events.find((e) => e.event === 'message.completed');
    assert.ok(completed?.event === 'message.completed');
    assert.equal(completed.data.message.metadata, null);
    assert.match(deltaText(events), /Typed/);
  });

  it('resumes a stream cut after its 3rd event with Last-Event-ID: the events seen equal those of the undisturbed turn', async () => {
    const proxy = await startProxy(baseUrl(t), (req) =>
      req.url.endsWith('/messages/stream') ? { kind: 'cut-after-events', events: 3 } : forward,
    );
    try {
      const api = keyClient(t, { baseUrl: proxy.url });
      const session = await api.createSession('drawl');
      const stream = api.streamMessage(session.id, LONG);
      const events = await collect(stream);
      assertTurnIds(events);
      assert.equal(events.at(-1)?.event, 'turn.completed');
      const resumes = proxy.requests.filter((r) => r.url.includes(`/turns/${stream.turnId}/events`));
      assert.ok(resumes.length >= 1);
      assert.equal(resumes[0]?.headers['last-event-id'], events[2]?.id);
      const undisturbed = await collect(keyClient(t).resumeTurn(session.id, stream.turnId ?? ''));
      assert.deepEqual(mergeDeltas(events), mergeDeltas(undisturbed));
    } finally {
      await proxy.close();
    }
  });

  it('turns a 422 into a ParleyError with the detail, and a resume of an unknown turn into a 404 ParleyError', async () => {
    const api = keyClient(t);
    const error = await api.createUser({ reference: 'has spaces' }).catch((e: unknown) => e);
    assert.ok(error instanceof ParleyError);
    assert.equal(error.status, 422);
    assert.equal(error.code, 'validation_error');
    assert.deepEqual(error.detail?.[0]?.loc, ['body', 'reference']);
    assert.match(error.message, /reference/);

    const session = await api.createSession('demo');
    await assert.rejects(collect(api.resumeTurn(session.id, 'turn_unknown')), (err: unknown) => {
      assert.ok(err instanceof ParleyError);
      assert.equal(err.status, 404);
      assert.equal(err.code, 'turn_not_found');
      return true;
    });
    const events = await collect(api.streamMessage(session.id, 'one turn'));
    const turnId = events[0]?.data.turn_id ?? '';
    await assert.rejects(
      collect(api.resumeTurn(session.id, turnId, { after: 'turn_other:3' })),
      (err: unknown) => {
        assert.ok(err instanceof ParleyError);
        assert.equal(err.status, 422);
        assert.equal(err.detail?.[0]?.loc.at(-1), 'last-event-id');
        return true;
      },
    );
  });
});
