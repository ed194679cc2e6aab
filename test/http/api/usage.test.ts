// Usage and budgets end to end (docs/guides/usage.md): a scripted conversation with tool steps counted
// exactly, the same in the stored replies, the Session and User totals and every grouping of the report;
// budgets that refuse the next send with 429 and Retry-After to the period's end, and that stop a tool loop
// between its steps; bad budgets refused with the field; a replayed send counted once.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { MessageUsage } from '../../../src/store/store.ts';
import { useApp } from '../../helpers/app.ts';
import {
  allMessages,
  assert422,
  assertError,
  buildSessionApp,
  client,
  createSession,
  createUser,
  getSession,
  type Message,
  send,
  testAgents,
} from '../../helpers/sessions.ts';
import {
  recordDirective,
  startToolReceiver,
  type ToolReceiver,
  toolAgent,
} from '../../helpers/tool-receiver.ts';

const pricing = { input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 };

let tools: ToolReceiver;
// Closed by the file's own after hook: the app is built in a before hook, too late to register one there.
after(() => tools.close());
const t = useApp(async () => {
  tools = await startToolReceiver({ after: () => {} });
  return buildSessionApp({}, [...testAgents, { ...toolAgent(tools.url, 'priced'), pricing }]);
});

type Reply = Message & {
  stop_reason: string | null;
  usage: MessageUsage | null;
  tool_calls: unknown[] | null;
};

/** The totals the replies among `messages` add up to, as the API answers totals. */
function totalsOf(messages: readonly Reply[]) {
  const replies = messages.flatMap((m) => (m.usage ? [m.usage] : []));
  const sum = (k: keyof Omit<MessageUsage, 'model'>) => replies.reduce((n, u) => n + u[k], 0);
  const cost = sum('cost_micro_usd');
  return {
    turns: replies.length,
    input_tokens: sum('input_tokens'),
    output_tokens: sum('output_tokens'),
    cached_input_tokens: sum('cached_input_tokens'),
    reasoning_tokens: sum('reasoning_tokens'),
    cost_micro_usd: cost,
    cost_usd: cost / 1e6,
  };
}

const today = () => new Date().toISOString().slice(0, 10);
const report = async (query: string) => {
  const res = await client(t).get(`/v1/agents/usage?${query}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as {
    items: ({ key: string | null } & ReturnType<typeof totalsOf>)[];
    next_offset: number | null;
  };
};

/** Seconds from now to the next UTC midnight. */
const toMidnight = () => {
  const now = new Date();
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return (next - now.getTime()) / 1000;
};

describe('usage', () => {
  test('a conversation with tool steps is counted exactly, alike in its replies, its totals and every grouping', async () => {
    const user = await createUser(t, { reference: 'usage-exact' });
    const session = await createSession(t, 'priced', { user: { id: user.id } });
    const first = await send(t, session.id, { content: 'Hello there' });
    assert.equal(first.statusCode, 201, first.body);
    const stepped = await send(t, session.id, {
      content: `Keep two things ${recordDirective('a')} [[tool@2:record {"value":"b"}]]`,
    });
    assert.equal(stepped.statusCode, 201, stepped.body);
    const reply = stepped.json().agent_message as Reply;
    assert.equal(reply.tool_calls?.length, 2);
    const u = reply.usage;
    assert.ok(u);
    // Three model calls (two steps and the answer), priced at 2 and 8 micro-dollars a token.
    assert.equal(u.cost_micro_usd, u.input_tokens * 2 + u.output_tokens * 8);
    assert.equal(u.model, 'scripted');

    const messages = (await allMessages(t, session.id)) as Reply[];
    const expected = totalsOf(messages);
    assert.equal(expected.turns, 2);
    assert.deepEqual((await getSession(t, session.id)).usage, expected);
    const readUser = await client(t).get(`/v1/agents/users/${user.id}`);
    assert.deepEqual(readUser.json().usage, expected);

    const day = today();
    const only = `from=${day}&to=${day}&user_id=${user.id}`;
    assert.deepEqual((await report(`${only}&group_by=day`)).items, [{ key: day, ...expected }]);
    assert.deepEqual((await report(`${only}&group_by=agent`)).items, [{ key: 'priced', ...expected }]);
    assert.deepEqual((await report(`${only}&group_by=user`)).items, [{ key: user.id, ...expected }]);
    assert.deepEqual((await report(`${only}&group_by=session`)).items, [{ key: session.id, ...expected }]);
  });

  test('a send replayed under its Idempotency-Key is counted once', async () => {
    const session = await createSession(t, 'priced');
    const headers = { 'idempotency-key': 'usage-replay-1' };
    const sent = await send(t, session.id, { content: 'Count me once' }, headers);
    assert.equal(sent.statusCode, 201, sent.body);
    const replayed = await send(t, session.id, { content: 'Count me once' }, headers);
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    const messages = (await allMessages(t, session.id)) as Reply[];
    assert.deepEqual((await getSession(t, session.id)).usage, totalsOf(messages));
    assert.equal((await getSession(t, session.id)).usage?.turns, 1);
  });

  test('a key scoped to some agents sees only their usage', async () => {
    const scoped = await t.createKey('t1', ['other']);
    const res = await client(t, scoped).get(`/v1/agents/usage?group_by=agent&from=${today()}&to=${today()}`);
    assert.equal(res.statusCode, 200, res.body);
    for (const row of res.json().items) assert.equal(row.key, 'other');
  });
});

describe('budgets', () => {
  test("a user's budget spent by a conversation refuses the next send with 429 and Retry-After to the end of the UTC day", async () => {
    const user = await createUser(t, { reference: 'usage-budget' });
    const put = await client(t).put(`/v1/agents/users/${user.id}/budget`, { period: 'day', max_tokens: 10 });
    assert.equal(put.statusCode, 200, put.body);
    assert.deepEqual(
      { ...(put.json() as object), created_at: 0, updated_at: 0 },
      { user_id: user.id, period: 'day', max_cost_usd: null, max_tokens: 10, created_at: 0, updated_at: 0 },
    );
    const session = await createSession(t, 'priced', { user: { id: user.id } });
    const first = await send(t, session.id, { content: 'Spend my budget on this one' });
    assert.equal(first.statusCode, 201, first.body);
    const before = (await getSession(t, session.id)).messages_count;

    const refused = await send(t, session.id, { content: 'And one more' });
    const error = assertError(refused, 429, 'budget_exceeded');
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(Math.abs(retryAfter - toMidnight()) <= 5, `Retry-After ${retryAfter}`);
    const used = totalsOf((await allMessages(t, session.id)) as Reply[]);
    assert.deepEqual(error.context?.period, 'day');
    assert.deepEqual(error.context?.limit, { max_tokens: 10 });
    assert.deepEqual(error.context?.used, { tokens: used.input_tokens + used.output_tokens });
    assert.equal((await getSession(t, session.id)).messages_count, before, 'nothing was stored');

    // Removed, the budget no longer holds the user.
    assert.equal((await client(t).delete(`/v1/agents/users/${user.id}/budget`)).statusCode, 204);
    assertError(await client(t).get(`/v1/agents/users/${user.id}/budget`), 404, 'budget_not_found');
    assert.equal((await send(t, session.id, { content: 'Now again' })).statusCode, 201);
  });

  test('the tenant default holds a session without a user, and stops its tool loop between steps', async () => {
    const put = await client(t).put('/v1/agents/budgets/default', { period: 'month', max_tokens: 1 });
    assert.equal(put.statusCode, 200, put.body);
    try {
      const session = await createSession(t, 'priced');
      const res = await send(t, session.id, {
        content: `Two steps ${recordDirective('x')} [[tool@2:record {"value":"y"}]]`,
      });
      assert.equal(res.statusCode, 201, res.body);
      const reply = res.json().agent_message as Reply;
      assert.equal(reply.stop_reason, 'budget');
      assert.equal(reply.tool_calls?.length, 1, 'the second step was never asked for');
      const stored = (await allMessages(t, session.id)) as Reply[];
      assert.deepEqual(stored.at(-1), reply);
      assert.deepEqual((await getSession(t, session.id)).usage, totalsOf(stored));
      // Spent: the next send is refused, until the month ends.
      assertError(await send(t, session.id, { content: 'More' }), 429, 'budget_exceeded');
    } finally {
      assert.equal((await client(t).delete('/v1/agents/budgets/default')).statusCode, 204);
    }
  });

  test('a budget that is negative, not a number, absurd or empty is refused with its field; a deleted user has none', async () => {
    const user = await createUser(t, { reference: 'usage-bad' });
    const path = `/v1/agents/users/${user.id}/budget`;
    assert422(await client(t).put(path, { period: 'day', max_cost_usd: -1 }), ['body', 'max_cost_usd']);
    assert422(await client(t).put(path, { period: 'day', max_cost_usd: 'ten' }), ['body', 'max_cost_usd']);
    assert422(await client(t).put(path, { period: 'day', max_tokens: 1e300 }), ['body', 'max_tokens']);
    assert422(await client(t).put(path, { period: 'week', max_tokens: 5 }), ['body', 'period']);
    assert422(await client(t).put(path, { period: 'day' }), ['body', 'max_cost_usd']);
    assertError(await client(t).get(path), 404, 'budget_not_found');
    assert.equal((await client(t).delete(`/v1/agents/users/${user.id}`)).statusCode, 204);
    assertError(await client(t).put(path, { period: 'day', max_tokens: 5 }), 404, 'user_not_found');
  });
});
