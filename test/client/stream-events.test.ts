// The zod schemas of a turn's events (@parley/schemas, turn-events.ts), which type the client and describe the stream in
// the OpenAPI document, against what the service really sends: every event of completed, failed and tool-calling
// turns of both families, read through the client, parses under the family's schema.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { type AnyTurnEvent, ParleyConversation } from '#client';
import { conversationMessageSchema, messageSchema, turnEventSchema, usageSchema } from '#schemas';
import { useApp } from '../helpers/app.ts';
import { buildSessionApp, testAgents } from '../helpers/sessions.ts';
import { baseUrl, collect, keyClient, listen } from './helpers.ts';

const keyEvent = turnEventSchema(messageSchema, usageSchema);
const tokenEvent = turnEventSchema(conversationMessageSchema, usageSchema);

// A tool on loopback that answers every call with what it was given.
const tool = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"noted":true}'));
});
tool.listen(0, '127.0.0.1');
await once(tool, 'listening');
after(() => tool.close());
const toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/note`;
const noteTool = {
  name: 'note',
  description: 'Notes a value',
  input_schema: { type: 'object' },
  url: toolUrl,
};

const t = useApp(
  () =>
    buildSessionApp({}, [
      ...testAgents,
      { id: 'toolbot', tools: [noteTool] },
      { id: 'shown', expose_tools: true, tools: [noteTool] },
    ]),
  listen,
);

function assertParses(schema: typeof keyEvent | typeof tokenEvent, events: AnyTurnEvent[]) {
  for (const event of events) {
    const parsed = schema.safeParse(event);
    assert.ok(
      parsed.success,
      `${event.event}: ${JSON.stringify(parsed.error?.issues)}\n${JSON.stringify(event)}`,
    );
  }
}

describe('the schemas of the stream events', () => {
  it('describe every event of an API-key stream: plain, with tool calls, and failed', async () => {
    const api = keyClient(t);
    const plain = await collect(api.streamMessage((await api.createSession('demo')).id, 'plain'));
    const tools = await collect(
      api.streamMessage((await api.createSession('toolbot')).id, 'go [[tool:note {"v":1}]]'),
    );
    const failed = await collect(api.streamMessage((await api.createSession('demo')).id, 'now [[fail]]'));
    assert.deepEqual(
      tools.map((e) => e.event).filter((e) => e.startsWith('tool.')),
      ['tool.started', 'tool.completed'],
    );
    assert.equal(failed.at(-1)?.event, 'turn.failed');
    assertParses(keyEvent, [...plain, ...tools, ...failed]);
  });

  it('describe every event of a session-token stream, tool events of an agent that exposes them included', async () => {
    const open = async (agent: string) => {
      const started = await keyClient(t).createConversation(agent);
      return new ParleyConversation({
        baseUrl: baseUrl(t),
        conversationId: started.conversation.id,
        token: started.session_token,
      });
    };
    const plain = await collect((await open('demo')).stream('plain'));
    const shown = await collect((await open('shown')).stream('go [[tool:note {"v":2}]]'));
    const hidden = await collect((await open('toolbot')).stream('go [[tool:note {"v":3}]]'));
    const failed = await collect((await open('demo')).stream('now [[fail]]'));
    assert.ok(shown.some((e) => e.event === 'tool.completed'));
    assert.ok(!hidden.some((e) => e.event.startsWith('tool.')));
    assertParses(tokenEvent, [...plain, ...shown, ...hidden, ...failed]);
    // The public family's messages never carry metadata.
    for (const e of [...plain, ...shown]) {
      if (e.event === 'message.completed') assert.equal('metadata' in e.data.message, false);
    }
  });
});
