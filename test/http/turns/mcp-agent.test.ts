// An agent whose tools come from an MCP server, through the whole app: the catalogue names a stdio server
// (the SDK's own McpServer in a child process), Parley starts it, offers its tools as `<server>__<tool>`, and
// the step loop calls them. And what stops the start: a tool's secret variable that is not set.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { useApp } from '../../helpers/app.ts';
import { buildSessionApp, createSession, send, textOf } from '../../helpers/sessions.ts';

const serverScript = fileURLToPath(new URL('../../../support/mcp-test-server.ts', import.meta.url));

const t = useApp(() =>
  buildSessionApp({}, [
    {
      id: 'mathbot',
      mcp_servers: [{ name: 'math', command: process.execPath, args: [serverScript], tools: ['add'] }],
    },
    {
      id: 'downbot',
      // Nothing listens on port 9 of loopback (discard): the server is down from the start.
      mcp_servers: [{ name: 'down', url: 'http://127.0.0.1:9/mcp' }],
      // The model is offered tools only while the agent has some: this one keeps it asking.
      tools: [{ name: 'other', description: 'Another tool', url: 'http://127.0.0.1:9/other' }],
    },
  ]),
);

test('an agent calls an MCP server tool as <server>__<tool> and answers with its structured result', async () => {
  const session = await createSession(t, 'mathbot');
  const res = await send(t, session.id, { content: 'Sum [[tool:math__add {"a":2,"b":3}]]' });
  assert.equal(res.statusCode, 201, res.body);
  const reply = res.json().agent_message;
  assert.deepEqual(
    reply.tool_calls.map((c: { name: string; status: string; output: unknown }) => [
      c.name,
      c.status,
      c.output,
    ]),
    [['math__add', 'ok', { sum: 5 }]],
  );
  assert.match(textOf(reply), /Tools: math__add ok \{"sum":5\}\./);
});

test('a tool outside the allow-list is not offered: its call is an unknown tool', async () => {
  const session = await createSession(t, 'mathbot');
  const res = await send(t, session.id, { content: '[[tool:math__echo {"text":"hi"}]]' });
  assert.equal(res.statusCode, 201, res.body);
  assert.equal(res.json().agent_message.tool_calls[0].output.error, 'unknown_tool');
});

test('a server that is down does not stop the start, and a call of its tools says it is unavailable', async () => {
  const session = await createSession(t, 'downbot');
  const res = await send(t, session.id, { content: '[[tool:down__add {"a":1,"b":1}]]' });
  assert.equal(res.statusCode, 201, res.body);
  assert.equal(res.json().agent_message.tool_calls[0].output.error, 'unavailable');
});

test('a tool whose secret_env names a variable that is not set stops the start, naming it', async () => {
  const agents = [
    {
      id: 'signed',
      tools: [
        { name: 'x', description: 'x', url: 'http://127.0.0.1:9/x', secret_env: 'TOOL_TEST_UNSET_SECRET' },
      ],
    },
  ];
  await assert.rejects(buildSessionApp({}, agents), /agent signed, tool x names TOOL_TEST_UNSET_SECRET/);
});
