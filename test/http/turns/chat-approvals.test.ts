// Approvals through the AI SDK chat routes (docs/guides/ai-sdk.md#approvals), on SQLite and PostgreSQL, over a
// listening server and the SDK's own client: a paused turn streams a tool part and a tool-approval-request per
// call the caller may decide, the answer addToolApprovalResponse leaves in the assistant message is the
// decision (an approved call runs once, a denied one never and the model is told), refusals are the approval
// routes' JSON errors, and the SDK's AbstractChat goes send → approval → answer → automatic send → reply.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import {
  answer,
  chat,
  chatRoutes,
  NodeChat,
  refused,
  textOf,
  toolParts,
  user,
} from '../../helpers/ai-chat.ts';
import { call, callsOf, perStore, postgresMissing } from '../../helpers/approvals.ts';
import { waitFor } from '../../helpers/wait.ts';

const pgMissing = await postgresMissing();

perStore('approvals in an AI SDK chat', pgMissing, (t) => {
  const { keyRoute, publicRoute, sessionOf } = chatRoutes(t);

  it('streams a tool part and a tool-approval-request per call the API key may decide, then ends the message', async () => {
    const route = await keyRoute();
    const first = await chat(route, [user('u-1', `${call('refund', 'r')} ${call('email', 'e')}`)]);
    const types = first.chunks
      .map((c) => c.type)
      .filter((type, i, all) => type !== 'text-delta' || all[i - 1] !== type);
    assert.deepEqual(types, [
      'start',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'tool-input-available',
      'tool-approval-request',
      'tool-input-available',
      'tool-approval-request',
      'finish-step',
      'finish',
    ]);
    const parts = toolParts(first.message);
    assert.deepEqual(
      parts.map((p) => [p.toolName, p.state, p.input]),
      [
        ['refund', 'approval-requested', { value: 'r' }],
        ['email', 'approval-requested', { value: 'e' }],
      ],
    );
    // The approval id is the call id, as the approval routes name it.
    const waiting = await t.store.awaitingApproval([sessionOf(route)]);
    assert.deepEqual(
      parts.map((p) => p.approval?.id),
      waiting.map((c) => c.id),
    );
    assert.deepEqual(
      parts.map((p) => p.toolCallId),
      waiting.map((c) => c.id),
    );
    const metadata = first.message.metadata as Record<string, unknown>;
    assert.equal(metadata.turn_status, 'awaiting_approval');
    assert.equal(metadata.turn_id, waiting[0]?.turn_id);
    assert.ok(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [first.message] }) === false);
  });

  it('shows the end user only its own calls, even where the agent hides tools', async () => {
    const { route } = await publicRoute();
    const first = await chat(route, [
      user('u-1', `${call('refund', 'r')} ${call('email', 'e')} ${call('lookup', 'l')}`),
    ]);
    assert.deepEqual(
      toolParts(first.message).map((p) => [p.toolName, p.state]),
      [['email', 'approval-requested']],
    );
  });

  for (const family of ['key', 'public'] as const) {
    it(`approving through the next request runs the tool once and streams the reply (${family})`, async () => {
      const route = family === 'key' ? await keyRoute() : (await publicRoute()).route;
      const sessionId = sessionOf(route);
      const asked = user('u-1', `Mail me ${call('email', 'hi')}`);
      const first = await chat(route, [asked]);
      const [part] = toolParts(first.message);
      assert.ok(part?.approval);
      assert.deepEqual(callsOf(t.receiver, sessionId), []);

      const answered = answer(first.message, part.approval.id, true);
      assert.ok(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [asked, answered] }));
      const next = await chat(route, [asked, answered]);
      assert.equal(next.message.id, first.message.id, 'the same assistant message goes on');
      assert.deepEqual(
        toolParts(next.message).map((p) => [p.toolName, p.state, p.state === 'output-available' && p.output]),
        [['email', 'output-available', { recorded: 'hi' }]],
      );
      assert.match(textOf(next.message), /Tools: email ok/);
      assert.equal((next.message.metadata as Record<string, unknown>).turn_status, 'completed');
      assert.equal(callsOf(t.receiver, sessionId).length, 1);
      // Not to be sent again: the answered call has its result.
      assert.equal(
        lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [asked, next.message] }),
        false,
      );

      // The same answer again is no error and runs nothing again.
      const again = await chat(route, [asked, answered]);
      assert.equal(toolParts(again.message)[0]?.state, 'output-available');
      assert.equal(again.chunks.find((c) => c.type === 'start')?.messageId, first.message.id);
      assert.equal(textOf(again.message), textOf(next.message), 'the reply once, after what the client held');
      assert.equal(callsOf(t.receiver, sessionId).length, 1);
      assert.equal(t.receiver.applications.get(part.toolCallId) ?? 1, 1);
    });

    it(`denying never calls the tool, and the model is told who denied it and why (${family})`, async () => {
      const route = family === 'key' ? await keyRoute() : (await publicRoute()).route;
      const sessionId = sessionOf(route);
      const asked = user('u-1', `Mail me ${call('email', 'hi')}`);
      const first = await chat(route, [asked]);
      const id = toolParts(first.message)[0]?.approval?.id ?? '';
      const next = await chat(route, [asked, answer(first.message, id, false, 'not now')]);
      assert.ok(next.chunks.some((c) => c.type === 'tool-output-denied'));
      assert.equal(toolParts(next.message)[0]?.state, 'output-denied');
      const by = family === 'key' ? 'operator' : 'user';
      assert.ok(
        textOf(next.message).includes(`email error {"error":"denied","by":"${by}","reason":"not now"}`),
        textOf(next.message),
      );
      assert.deepEqual(callsOf(t.receiver, sessionId), []);
    });
  }

  it('refuses an answer for a call that does not wait, with the approval routes’ errors before the stream', async () => {
    const route = await keyRoute();
    const asked = user('u-1', `${call('email', 'e')}`);
    const first = await chat(route, [asked]);
    const id = toolParts(first.message)[0]?.approval?.id ?? '';
    // Unknown call.
    const renamed: UIMessage = JSON.parse(
      JSON.stringify(answer(first.message, id, true)).replaceAll(id, 'call_nope'),
    );
    const unknown = await refused(chat(route, [asked, renamed]));
    assert.equal(unknown.status, 409);
    assert.equal(unknown.error.code, 'approval_not_pending');
    // Decided one way, then answered the other way.
    await chat(route, [asked, answer(first.message, id, false)]);
    const other = await refused(chat(route, [asked, answer(first.message, id, true)]));
    assert.equal(other.status, 409);
    assert.equal(other.error.code, 'approval_not_pending');
    assert.deepEqual(other.error.context, {
      turn_id: other.error.context.turn_id,
      call_id: id,
      state: 'decided',
    });
    // A session without a waiting turn, and a message that names none.
    const idle = await keyRoute();
    const { metadata: _m, ...bare } = answer(first.message, id, true);
    const none = await refused(chat(idle, [asked, bare]));
    assert.equal(none.status, 409);
    assert.equal(none.error.code, 'approval_not_pending');
  });

  it('refuses an operator call answered through the public family with 403, and applies nothing', async () => {
    const { id: conversationId, route } = await publicRoute();
    const asked = user('u-1', `${call('refund', 'r')} ${call('email', 'e')}`);
    const first = await chat(route, [asked]);
    const operatorCall = (await t.store.awaitingApproval([conversationId])).find(
      (c) => c.approver === 'operator',
    );
    assert.ok(operatorCall);
    const forged: UIMessage = {
      ...first.message,
      parts: [
        ...first.message.parts,
        {
          type: 'dynamic-tool',
          toolName: 'refund',
          toolCallId: operatorCall.id,
          state: 'approval-responded',
          input: { value: 'r' },
          approval: { id: operatorCall.id, approved: true },
        },
      ],
    };
    const forbidden = await refused(chat(route, [asked, forged]));
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.error.code, 'approval_forbidden');
    assert.equal((await t.store.awaitingApproval([conversationId])).length, 2);
    assert.deepEqual(callsOf(t.receiver, conversationId), []);
  });

  it('answers the same user message again (the SDK retrying) with the calls that still wait', async () => {
    const route = await keyRoute();
    const asked = user('u-1', `${call('email', 'e')}`);
    const first = await chat(route, [asked]);
    const again = await chat(route, [asked]);
    assert.deepEqual(
      toolParts(again.message).map((p) => [p.toolName, p.state, p.approval?.id]),
      toolParts(first.message).map((p) => [p.toolName, p.state, p.approval?.id]),
    );
    assert.equal((again.message.metadata as Record<string, unknown>).turn_status, 'awaiting_approval');
  });

  it('refuses a new user message while the turn waits with 409 approval_pending', async () => {
    const route = await keyRoute();
    const asked = user('u-1', `${call('email', 'e')}`);
    const first = await chat(route, [asked]);
    const pending = await refused(chat(route, [asked, first.message, user('u-2', 'hello?')]));
    assert.equal(pending.status, 409);
    assert.equal(pending.error.code, 'approval_pending');
  });

  it('refuses malformed answers with 422 naming the field', async () => {
    const route = await keyRoute();
    const asked = user('u-1', `${call('email', 'e')}`);
    const first = await chat(route, [asked]);
    const part = toolParts(first.message)[0];
    assert.ok(part);
    const withPart = (extra: Record<string, unknown>) =>
      fetch(route.api, {
        method: 'POST',
        headers: { ...route.headers, 'content-type': 'application/json' },
        body: JSON.stringify({
          id: 'chat-1',
          trigger: 'submit-message',
          messages: [
            asked,
            { ...first.message, parts: [{ ...part, state: 'approval-responded', ...extra }] },
          ],
        }),
      });
    const cases: [Record<string, unknown>, (string | number)[], string][] = [
      [{ approval: { id: part.toolCallId } }, ['approval', 'approved'], 'missing'],
      [{ approval: undefined }, ['approval'], 'missing'],
      [{ approval: { id: part.toolCallId, approved: 'yes' } }, ['approval', 'approved'], 'bool_type'],
      [{ approval: { id: '', approved: true } }, ['approval', 'id'], 'string_too_short'],
      [
        { approval: { id: part.toolCallId, approved: false, reason: 'x'.repeat(501) } },
        ['approval', 'reason'],
        'string_too_long',
      ],
    ];
    for (const [extra, at, type] of cases) {
      const res = await withPart(extra);
      const body = (await res.json()) as { detail: { loc: unknown[]; type: string }[] };
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.deepEqual(body.detail[0].loc, ['body', 'messages', 1, 'parts', 0, ...at], JSON.stringify(body));
      assert.equal(body.detail[0].type, type);
    }
    assert.equal((await t.store.awaitingApproval([sessionOf(route)])).length, 1);
  });

  it('answers the end user while an operator call still waits, without the SDK sending the same answer again', async () => {
    const { id: conversationId, route } = await publicRoute();
    let requests = 0;
    const chat = new NodeChat({
      transport: new DefaultChatTransport<UIMessage>({
        ...route,
        fetch: (input, init) => {
          requests += 1;
          return fetch(input, init);
        },
      }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: `${call('refund', 'r')} ${call('email', 'e')}` });
    const [email] = toolParts(chat.lastMessage as UIMessage);
    assert.equal(email?.state, 'approval-requested');
    await chat.addToolApprovalResponse({ id: email?.approval?.id ?? '', approved: true });
    await waitFor('the answer to the approval', () => requests === 2 && chat.status === 'ready');
    const message = chat.lastMessage as UIMessage;
    assert.equal((message.metadata as Record<string, unknown>).turn_status, 'awaiting_approval');
    // The answered call is left in a step of its own: nothing is sent again.
    assert.equal(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: chat.messages }), false);
    assert.deepEqual(
      (await t.store.awaitingApproval([conversationId])).map((c) => c.approver),
      ['operator'],
    );
    assert.deepEqual(callsOf(t.receiver, conversationId), []);
    assert.equal(requests, 2);
  });

  for (const family of ['key', 'public'] as const) {
    it(`drives the SDK's own chat through an approval: send, approval requested, answer, automatic send, reply (${family})`, async () => {
      const route = family === 'key' ? await keyRoute() : (await publicRoute()).route;
      const sessionId = sessionOf(route);
      const errors: Error[] = [];
      const chat = new NodeChat({
        transport: new DefaultChatTransport<UIMessage>(route),
        sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
        onError: (err) => errors.push(err),
      });
      await chat.sendMessage({ text: `Mail me ${call('email', 'hi')}` });
      assert.deepEqual(errors, []);
      const requested = toolParts(chat.lastMessage as UIMessage);
      assert.deepEqual(
        requested.map((p) => [p.toolName, p.state]),
        [['email', 'approval-requested']],
      );
      await chat.addToolApprovalResponse({ id: requested[0]?.approval?.id ?? '', approved: true });
      await waitFor(
        'the reply after the approval',
        () => chat.status === 'ready' && /Tools: email ok/.test(textOf(chat.lastMessage as UIMessage)),
      );
      assert.deepEqual(errors, []);
      assert.equal(chat.messages.length, 2);
      assert.deepEqual(
        toolParts(chat.lastMessage as UIMessage).map((p) => [p.toolName, p.state]),
        [['email', 'output-available']],
      );
      assert.equal(callsOf(t.receiver, sessionId).length, 1);
    });
  }
});
