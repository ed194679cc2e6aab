// What the client tests share: a listening session app (with a slow-talking agent, so that a turn lasts long
// enough to cut its stream mid-way), clients of both families pointed at it, and reading a TurnStream.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { type AnyTurnEvent, ParleyClient, ParleyConversation, type ParleyConversationOptions } from '#client';
import type { TestApp } from '../helpers/app.ts';
import { testAgents } from '../helpers/sessions.ts';

/** The session tests' agents, and `drawl`, whose every token takes 25 ms (a reply lasts a second or so). */
export const clientAgents = [
  ...testAgents,
  { id: 'drawl', scripted: { token_delay_ms: 25 } },
  // Its end users may ask for a human.
  { id: 'desk', handoff: { user_can_request: true } },
];

/** A long message: the scripted reply repeats it, so that the reply has many tokens. */
export const LONG = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');

export async function listen(t: TestApp): Promise<void> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
}

export const baseUrl = (t: TestApp) => `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;

export const keyClient = (t: TestApp, options: { baseUrl?: string } = {}) =>
  new ParleyClient({ baseUrl: options.baseUrl ?? baseUrl(t), apiKey: t.apiKey });

/** Starts a conversation with the API key client and opens it with its token (through `baseUrl` if given). */
export async function openConversation(
  t: TestApp,
  agentId = 'demo',
  options: Partial<ParleyConversationOptions> = {},
): Promise<ParleyConversation> {
  const started = await keyClient(t).createConversation(agentId);
  return new ParleyConversation({
    baseUrl: baseUrl(t),
    conversationId: started.conversation.id,
    token: started.session_token,
    ...options,
  });
}

export async function collect<E>(stream: AsyncIterable<E>): Promise<E[]> {
  const events: E[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** The events with each run of consecutive deltas merged into one (the last id, the texts joined). */
export function mergeDeltas<E extends AnyTurnEvent>(events: E[]): E[] {
  const out: E[] = [];
  for (const event of events) {
    const last = out.at(-1);
    if (event.event === 'message.delta' && last?.event === 'message.delta') {
      last.id = event.id;
      last.data = {
        ...last.data,
        delta: { type: 'text', text: last.data.delta.text + event.data.delta.text },
      };
    } else out.push(structuredClone(event));
  }
  return out;
}

/** The reply text the deltas told. */
export const deltaText = (events: AnyTurnEvent[]) =>
  events.map((e) => (e.event === 'message.delta' ? e.data.delta.text : '')).join('');

/**
 * Checks the ids of a turn without tool events as the contract fixes them: `<turn_id>:<seq>`, turn.started
 * 0, a delta's seq 1 + the text length up to its end, then message.completed and turn.completed.
 */
export function assertTurnIds(events: AnyTurnEvent[]): void {
  const [first] = events;
  assert.ok(first?.event === 'turn.started', JSON.stringify(first));
  const turnId = first.data.turn_id;
  let told = 0;
  const seqs = events.map((e) => {
    assert.ok(e.id.startsWith(`${turnId}:`), e.id);
    return Number(e.id.slice(turnId.length + 1));
  });
  events.forEach((e, i) => {
    if (e.event === 'turn.started') assert.equal(seqs[i], 0);
    if (e.event === 'message.delta') {
      told += e.data.delta.text.length;
      assert.equal(seqs[i], told + 1, `delta ${i}`);
    }
    if (e.event === 'message.completed') assert.equal(seqs[i], told + 2);
    if (e.event === 'turn.completed') assert.equal(seqs[i], told + 3);
  });
}
