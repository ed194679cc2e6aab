// Usage where it is reported beside the API (docs/guides/usage.md): the webhook turn.completed carries the
// reply's usage at the top of its data, the Prometheus counters follow the stored replies by agent and model,
// budget refusals are counted; concurrent turns of one end-user overshoot a budget by at most what the turns
// already running spend; a stream over budget is refused before it opens.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { useApp } from '../../helpers/app.ts';
import {
  allMessages,
  assertError,
  buildSessionApp,
  client,
  createSession,
  createUser,
  send,
  testAgents,
} from '../../helpers/sessions.ts';
import {
  recordDirective,
  startToolReceiver,
  type ToolReceiver,
  toolAgent,
} from '../../helpers/tool-receiver.ts';
import { waitFor } from '../../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.ts';

const pricing = { input_per_mtok: 1.5, output_per_mtok: 6 };
let tools: ToolReceiver;
const t = useApp(async () => {
  // Closed by the file's own after hook: the app is built in a before hook, too late to register one there.
  tools = await startToolReceiver({ after: () => {} });
  return buildSessionApp({}, [
    ...testAgents,
    { id: 'metered', pricing },
    { ...toolAgent(tools.url, 'toolmetered'), pricing },
  ]);
});
let receiver: WebhookReceiver;
before(async () => {
  receiver = await startWebhookReceiver();
});
after(() => receiver.close());
after(() => tools.close());

/** The value of a Prometheus sample, 0 when absent. */
async function sample(name: string, labels: string): Promise<number> {
  const text = (await t.app.inject({ url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('usage reported', () => {
  test('the webhook turn.completed carries the reply usage, and the counters follow the stored replies', async () => {
    const hook = await client(t).post('/v1/agents/webhooks', {
      url: receiver.url,
      events: ['turn.completed'],
    });
    assert.equal(hook.statusCode, 201, hook.body);
    const input = 'agent="metered",model="scripted",kind="input"';
    const costLabels = 'agent="metered",model="scripted"';
    const before = await sample('parley_model_tokens_total', input);
    const costBefore = await sample('parley_model_cost_usd_total', costLabels);
    const session = await createSession(t, 'metered');
    const res = await send(t, session.id, { content: 'How much was that?' });
    assert.equal(res.statusCode, 201, res.body);
    const { usage } = res.json().agent_message;
    assert.equal(usage.cost_micro_usd, Math.round(usage.input_tokens * 1.5 + usage.output_tokens * 6));
    assert.equal((await sample('parley_model_tokens_total', input)) - before, usage.input_tokens);
    const cost = (await sample('parley_model_cost_usd_total', costLabels)) - costBefore;
    assert.ok(Math.abs(cost - usage.cost_micro_usd / 1e6) < 1e-9, `${cost}`);
    await waitFor('the turn.completed delivery', () =>
      receiver.requests.some(
        (d) => d.body?.type === 'turn.completed' && d.body.data.session_id === session.id,
      ),
    );
    const event = receiver.requests.find((d) => d.body?.data.session_id === session.id)?.body;
    assert.ok(event);
    assert.deepEqual(event.data.usage, usage);
    assert.deepEqual((event.data.message as { usage: unknown }).usage, usage);
  });
});

describe('budgets under concurrency and streams', () => {
  test('concurrent turns of one user overshoot the budget by at most what the running turns spend; the next is refused', async () => {
    const user = await createUser(t, { reference: 'usage-concurrent' });
    const put = await client(t).put(`/v1/agents/users/${user.id}/budget`, { period: 'month', max_tokens: 1 });
    assert.equal(put.statusCode, 200, put.body);
    const sessions = await Promise.all(
      [1, 2, 3, 4].map(() => createSession(t, 'toolmetered', { user: { id: user.id } })),
    );
    // The four turns are all running (each waits on its first tool call) before any has committed a reply:
    // each passed its first check; each stops at its next one, on its own spending.
    const since = tools.requests.length;
    tools.hold();
    const content = `Go ${recordDirective('a')} [[tool@2:record {"value":"b"}]]`;
    const sending = Promise.all(sessions.map((s) => send(t, s.id, { content })));
    await tools.received(since + 4);
    tools.release();
    const sent = await sending;
    for (const res of sent) {
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().agent_message.stop_reason, 'budget');
    }
    const running = sent.reduce((n, r) => {
      const u = r.json().agent_message.usage;
      return n + u.input_tokens + u.output_tokens;
    }, 0);
    const used = (await client(t).get(`/v1/agents/users/${user.id}`)).json().usage;
    const tokens = used.input_tokens + used.output_tokens;
    assert.equal(
      tokens,
      running,
      'over the limit of 1 by what the four running turns spent (a model call each)',
    );
    const refused = assertError(
      await send(t, sessions[0]?.id ?? '', { content: 'More' }),
      429,
      'budget_exceeded',
    );
    assert.deepEqual(refused.context?.used, { tokens });
    assert.ok((await sample('parley_budget_refusals_total', 'agent="toolmetered"')) >= 5);
  });

  test('a stream over budget is refused before it opens, and nothing is stored', async () => {
    const user = await createUser(t, { reference: 'usage-stream' });
    await client(t).put(`/v1/agents/users/${user.id}/budget`, { period: 'day', max_cost_usd: 0 });
    const session = await createSession(t, 'metered', { user: { id: user.id } });
    const res = await client(t).post(`/v1/agents/sessions/${session.id}/messages/stream`, { content: 'Hi' });
    assertError(res, 429, 'budget_exceeded');
    assert.ok(Number(res.headers['retry-after']) > 0);
    assert.deepEqual(await allMessages(t, session.id), []);
  });
});
