// Functions the client declares (`tools: [{ type: 'function', … }]`), driven by the official `openai`
// package on SQLite and PostgreSQL: the agent's model calls one, the response ends with its `function_call`
// (completed, run by no one but the client), the client answers with previous_response_id and a
// `function_call_output`, and the same turn goes on with that output, plain and streamed. The pause is
// committed (a restarted app on the same store takes the output), and an output is taken once: a second one
// for the same call is a 409 in OpenAI's envelope.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { responseObject, responseStreamEvent } from '#schemas';
import { assertOpenResponse, assertOpenStreamEvent } from '../../helpers/open-responses-schema.ts';
import { type ResponsesApp, startResponsesApp, storeKinds } from '../../helpers/responses-app.ts';
import { testAgents } from '../../helpers/sessions.ts';

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: true,
};
const asksWeather = '[[tool:get_weather {"city":"Paris"}]] What is the weather in Paris?';

/** Every event of a stream, each checked against the wire schema and the specification's own. */
async function drain(stream: AsyncIterable<ResponseStreamEvent>) {
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) {
    responseStreamEvent.parse(event);
    assertOpenStreamEvent(event);
    events.push(event);
  }
  return events;
}

/** The response a stream ended with. */
function finalOf(events: ResponseStreamEvent[]): OpenAI.Responses.Response {
  const last = events.at(-1);
  assert.ok(last?.type === 'response.completed', `ends with ${last?.type}`);
  return last.response;
}

/** Checks a response against both schemas; returns it. */
function valid(response: OpenAI.Responses.Response) {
  responseObject.parse(response);
  assertOpenResponse(response);
  return response;
}

for (const kind of storeKinds) {
  describe(`client-declared functions on ${kind}`, () => {
    let app: ResponsesApp;
    let skip: string | undefined;
    before(async () => {
      const started = await startResponsesApp(kind, testAgents);
      if ('skip' in started) skip = started.skip;
      else app = started;
    });
    after(() => app?.close());

    test('a call to a declared function ends the response; its output lets the same turn answer', async (t) => {
      if (skip) return t.skip(skip);
      const client = app.openai();
      const first = valid(
        await client.responses.create({ model: 'demo', input: asksWeather, tools: [weather] }),
      );
      assert.equal(first.status, 'completed');
      assert.deepEqual(first.tools, [weather]);
      const call = first.output.at(-1);
      assert.ok(call?.type === 'function_call', JSON.stringify(first.output));
      assert.equal(call.name, 'get_weather');
      assert.equal(call.status, 'completed');
      assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
      assert.ok(!first.output.some((item) => item.type === 'function_call_output'));

      const second = valid(
        await client.responses.create({
          model: 'demo',
          previous_response_id: first.id,
          input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"celsius":21}' }],
          tools: [weather],
        }),
      );
      assert.equal(second.status, 'completed');
      assert.equal(second.id, first.id, 'the same turn goes on');
      assert.deepEqual(
        second.output.map((item) => item.type),
        ['message'],
      );
      assert.match(second.output_text, /get_weather ok "\{\\"celsius\\":21\}"/);

      const read = valid(await client.responses.retrieve(first.id));
      assert.deepEqual(
        read.output.map((item) => item.type),
        ['function_call', 'function_call_output', 'message'],
      );
      assert.equal(read.output_text, second.output_text);
    });

    test('a second output for the same call is refused with a 409, and the turn answered once', async (t) => {
      if (skip) return t.skip(skip);
      const client = app.openai();
      const first = await client.responses.create({ model: 'demo', input: asksWeather, tools: [weather] });
      const call = first.output.at(-1);
      assert.ok(call?.type === 'function_call');
      const answer = {
        model: 'demo',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output' as const, call_id: call.call_id, output: 'sunny' }],
      };
      const done = await client.responses.create(answer);
      assert.equal(done.status, 'completed');
      await assert.rejects(client.responses.create(answer), (err) => {
        assert.ok(err instanceof OpenAI.ConflictError, String(err));
        assert.equal(err.code, 'approval_not_pending');
        assert.equal(err.type, 'invalid_request_error');
        assert.match(err.message, /given its output, already/);
        return true;
      });
      const messages = await app.store.listMessages('t1', first.conversation?.id ?? '', {
        limit: 10,
        offset: 0,
      });
      assert.equal(messages?.items.filter((m) => m.role === 'assistant').length, 1);
    });

    test('streamed, the call ends the first stream and the output starts a stream of the rest only', async (t) => {
      if (skip) return t.skip(skip);
      const client = app.openai();
      const events = await drain(
        await client.responses.create({ model: 'demo', input: asksWeather, tools: [weather], stream: true }),
      );
      const first = valid(finalOf(events));
      const call = first.output.find((item) => item.type === 'function_call');
      assert.ok(call?.type === 'function_call');
      assert.ok(
        events.some((e) => e.type === 'response.output_item.done' && e.item.type === 'function_call'),
      );

      const rest = await drain(
        await client.responses.create({
          model: 'demo',
          previous_response_id: first.id,
          input: [{ type: 'function_call_output', call_id: call.call_id, output: 'rainy' }],
          stream: true,
        }),
      );
      assert.deepEqual(
        rest.slice(0, 2).map((e) => e.type),
        ['response.created', 'response.in_progress'],
      );
      assert.ok(
        !rest.some((e) => 'item' in e && e.item.type === 'function_call'),
        'the answered call is not told again',
      );
      const second = valid(finalOf(rest));
      const [message] = second.output;
      assert.ok(message?.type === 'message');
      assert.match(JSON.stringify(message.content), /get_weather ok \\"rainy\\"/);
      assert.deepEqual(
        second.output.map((item) => item.type),
        ['message'],
      );
    });

    test('an answer that leaves a call waiting ends with that call again, plain and streamed', async (t) => {
      if (skip) return t.skip(skip);
      const client = app.openai();
      const both = `[[tool:get_weather {"city":"Paris"}]] [[tool:get_weather {"city":"Rome"}]] Both?`;
      const first = await client.responses.create({ model: 'demo', input: both, tools: [weather] });
      const calls = first.output.flatMap((item) => (item.type === 'function_call' ? [item] : []));
      assert.equal(calls.length, 2);
      const [paris, rome] = calls;
      assert.ok(paris && rome);
      const output = (call: typeof paris, text: string) => ({
        type: 'function_call_output' as const,
        call_id: call.call_id,
        output: text,
      });
      const half = valid(
        await client.responses.create({
          model: 'demo',
          previous_response_id: first.id,
          input: [output(paris, 'sun')],
        }),
      );
      assert.equal(half.status, 'completed');
      assert.deepEqual(
        half.output.map((item) => (item.type === 'function_call' ? item.call_id : item.type)),
        [rome.call_id],
      );
      const rest = await drain(
        await client.responses.create({
          model: 'demo',
          previous_response_id: first.id,
          input: [output(rome, 'rain')],
          stream: true,
        }),
      );
      const done = valid(finalOf(rest));
      assert.deepEqual(
        done.output.map((item) => item.type),
        ['message'],
      );
      assert.match(JSON.stringify(done.output), /get_weather ok \\"sun\\"; get_weather ok \\"rain\\"/);
    });

    test('the pause is committed: a restarted app takes the output and the turn answers', async (t) => {
      if (skip) return t.skip(skip);
      const first = await app
        .openai()
        .responses.create({ model: 'demo', input: asksWeather, tools: [weather] });
      const call = first.output.at(-1);
      assert.ok(call?.type === 'function_call');
      await app.restart();
      const second = valid(
        await app.openai().responses.create({
          model: 'demo',
          previous_response_id: first.id,
          input: [{ type: 'function_call_output', call_id: call.call_id, output: 'after the restart' }],
        }),
      );
      assert.equal(second.status, 'completed');
      assert.match(second.output_text, /get_weather ok "after the restart"/);
    });

    test('answers that do not fit the paused turn are refused in the OpenAI envelope', async (t) => {
      if (skip) return t.skip(skip);
      const client = app.openai();
      const first = await client.responses.create({ model: 'demo', input: asksWeather, tools: [weather] });
      const call = first.output.at(-1);
      assert.ok(call?.type === 'function_call');
      const output = [{ type: 'function_call_output' as const, call_id: call.call_id, output: 'x' }];
      await assert.rejects(
        client.responses.create({ model: 'demo', input: output, conversation: first.conversation?.id ?? '' }),
        (err) => err instanceof OpenAI.UnprocessableEntityError && err.param === 'previous_response_id',
      );
      await assert.rejects(
        client.responses.create({
          model: 'demo',
          previous_response_id: first.id,
          input: [{ type: 'function_call_output', call_id: 'call_nobody', output: 'x' }],
        }),
        (err) => err instanceof OpenAI.ConflictError && err.code === 'approval_not_pending',
      );
      await assert.rejects(
        client.responses.create({
          model: 'demo',
          previous_response_id: first.id,
          input: [{ type: 'mcp_approval_response', approval_request_id: call.call_id, approve: true }],
        }),
        (err) => err instanceof OpenAI.ConflictError && /waits for its output/.test(err.message),
      );
      await assert.rejects(
        client.responses.create({
          model: 'demo',
          input: 'hi',
          tools: [{ type: 'web_search' } as unknown as OpenAI.Responses.FunctionTool],
        }),
        (err) => err instanceof OpenAI.UnprocessableEntityError && /Only function tools/.test(err.message),
      );
    });

    test('functions the model could not be offered are refused before anything is stored: a name twice, or with __', async (t) => {
      if (skip) return t.skip(skip);
      const client = app.openai();
      const conversation = await client.conversations.create({ metadata: { agent: 'demo' } });
      for (const [tools, why] of [
        [[weather, weather], /declared twice/],
        [[{ ...weather, name: 'crm__lookup' }], /reserved for MCP tools/],
      ] as const) {
        await assert.rejects(
          client.responses.create({
            model: 'demo',
            input: 'hi',
            conversation: conversation.id,
            tools: [...tools],
          }),
          (err) => err instanceof OpenAI.UnprocessableEntityError && why.test(err.message),
        );
      }
      const items = await client.conversations.items.list(conversation.id);
      assert.equal(items.data.length, 0, 'nothing stored');
    });
  });
}
