// Property-based fuzzing of the public conversation family with the fixture's session tokens: random requests,
// conversation start, feedback, send, inactivity, terminate, list queries and uploads.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { publicPath, startConversation } from '../../helpers/conversations.ts';
import {
  CLOSABLE_ID,
  CONVERSATION_ID,
  fixture,
  fixtureIds,
  RUNS,
  USER_ID,
  useFuzzApp,
} from '../../helpers/fuzz/fixture.ts';
import {
  fieldsJson,
  jsonBody,
  jsonContentType,
  jsonObjectValue,
  jsonText,
  nearly,
  nestedJson,
  objectJson,
  userFieldValues,
} from '../../helpers/fuzz/json.ts';
import { checkStoredUpload, multipartBody } from '../../helpers/fuzz/multipart.ts';
import {
  anyPublicRequest,
  plainPublicHeaders,
  publicBodies,
  publicGetRoutes,
  publicHeadersOf,
  publicJsonBody,
  publicJsonRequest,
  publicRoute,
  publicRoutes,
} from '../../helpers/fuzz/public-routes.ts';
import { headersOf, plainHeaders, queryString, randomId } from '../../helpers/fuzz/queries-and-headers.ts';
import { urlOf } from '../../helpers/fuzz/routes.ts';
import { clip, described, fuzz, jsonRequest, send, sentJson, summarise } from '../../helpers/fuzz/send.ts';

const t = useFuzzApp();

describe('fuzzing the conversation routes', () => {
  it('answers any request to the public conversation routes without a 5xx and with the documented error shapes', async () => {
    await fuzz(anyPublicRequest);
  });

  it('answers random bodies to conversation start with a conversation that its tokens open, an envelope or a 422', async () => {
    const userLookupJson = fieldsJson({
      id: nearly(fc.oneof(fc.constant(USER_ID), fc.string({ maxLength: 210 })).map(jsonText)),
      reference: userFieldValues.reference,
    });
    const startBody = fieldsJson({
      user: nearly(userLookupJson),
      context: nearly(jsonObjectValue),
      metadata: nearly(jsonObjectValue),
    });
    const requests = fc
      .record({
        agent: fc.oneof(
          { weight: 6, arbitrary: fc.constant('demo') },
          { weight: 1, arbitrary: fc.constant('nope') },
          { weight: 1, arbitrary: randomId },
        ),
        contentType: jsonContentType,
        payload: fc.oneof({ weight: 4, arbitrary: startBody }, { weight: 1, arbitrary: jsonBody }),
      })
      .map(({ agent, contentType, payload }) =>
        described({
          method: 'POST',
          url: `/v1/agents/${agent}/conversations`,
          headers: headersOf(plainHeaders, contentType),
          payload,
        }),
      );
    await fuzz(
      requests,
      async (req, res) => {
        if (res.statusCode !== 201) return;
        const started = res.json();
        const { conversation } = started;
        assert.match(conversation.id, /^ses_/, summarise(req));
        assert.equal(conversation.agent_id, 'demo', summarise(req));
        assert.equal(conversation.status, 'active', summarise(req));
        assert.equal(conversation.messages_count, 0, summarise(req));
        assert.ok(Date.parse(started.expires_at) > Date.now(), summarise(req));
        // The token opens the conversation it came with, which reads back as the start answered.
        const opened = await send(
          described({
            method: 'GET',
            url: publicPath(conversation.id),
            headers: { authorization: `Bearer ${started.session_token}` },
          }),
        );
        assert.equal(opened.statusCode, 200, opened.body);
        assert.deepEqual(opened.json(), conversation, `read-back differs after ${summarise(req)}`);
        // So does a fresh token from the token route.
        const minted = await send(
          described({
            method: 'POST',
            url: `/v1/agents/conversations/${conversation.id}/token`,
            headers: headersOf(plainHeaders),
          }),
        );
        assert.equal(minted.statusCode, 200, minted.body);
        const reopened = await send(
          described({
            method: 'GET',
            url: publicPath(conversation.id, '/messages'),
            headers: { authorization: `Bearer ${minted.json().session_token}` },
          }),
        );
        assert.equal(reopened.statusCode, 200, reopened.body);
      },
      [
        jsonRequest('POST', '/v1/agents/demo/conversations', objectJson([['context', nestedJson(10_000)]])),
        jsonRequest(
          'POST',
          '/v1/agents/demo/conversations',
          objectJson([['user', nestedJson(10_000, 'mixed')]]),
        ),
        jsonRequest('POST', '/v1/agents/demo/conversations', '{"user":{"id":"x\\ud800"}}'),
      ],
    );
  });

  it('answers random JSON bodies to feedback with feedback stored as answered under its first id, an envelope or a 422', async () => {
    const route = publicRoute('POST', '/feedback');
    const requests = fc
      .record({
        contentType: jsonContentType,
        payload: fc.oneof(
          { weight: 4, arbitrary: publicBodies['/feedback'] as fc.Arbitrary<string> },
          { weight: 1, arbitrary: jsonBody },
        ),
      })
      .map(({ contentType, payload }) =>
        described({
          method: route.method,
          url: urlOf(route, CONVERSATION_ID),
          headers: publicHeadersOf(plainPublicHeaders(route), contentType),
          payload,
        }),
      );
    let first = await t.store.getFeedback(fixture.conversationId);
    await fuzz(
      requests,
      async (req, res) => {
        const where = `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`;
        if (res.statusCode === 422) {
          for (const entry of res.json().detail) assert.equal(entry.loc[0], 'body', where);
        }
        if (res.statusCode !== 200) return;
        const feedback = res.json();
        assert.deepEqual(Object.keys(feedback).sort(), ['comment', 'id', 'score', 'submitted_at'], where);
        assert.ok(Number.isInteger(feedback.score) && feedback.score >= 0 && feedback.score <= 10, where);
        const sent = sentJson(req);
        assert.ok(feedback.score === sent.score, `score ${feedback.score}: ${where}`);
        assert.equal(feedback.comment, sent.comment ?? null, where);
        // One feedback per conversation: a later one replaces the first, under the first one's id.
        assert.equal(feedback.id, first?.id ?? feedback.id, `the feedback id changed: ${where}`);
        assert.ok(feedback.submitted_at >= (first?.submitted_at ?? ''), `submitted_at went back: ${where}`);
        const stored = await t.store.getFeedback(fixture.conversationId);
        assert.deepEqual(
          stored,
          { ...feedback, session_id: fixture.conversationId, metadata: sent.metadata ?? {} },
          `stored feedback differs after ${where}`,
        );
        first = stored;
      },
      [
        publicJsonRequest(route, '{"score":1e400}'),
        publicJsonRequest(route, '{"score":10.0,"comment":null,"metadata":null}'),
        publicJsonRequest(route, objectJson([['metadata', nestedJson(10_000)]])),
        publicJsonRequest(route, objectJson([['metadata', nestedJson(33)]])),
        publicJsonRequest(route, jsonText({ score: 5, comment: 'x'.repeat(2_001) })),
        publicJsonRequest(route, '{"score":5,"comment":"x\\ud800y"}'),
      ],
    );
  });

  it('answers random JSON bodies to send, inactivity and terminate with their result, an envelope or a 422 in the body', async () => {
    const bodyRoutes = publicRoutes.filter((r) => r.body === 'json' && !r.path.endsWith('/feedback'));
    const requests = fc
      .constantFrom(...bodyRoutes)
      .chain((route) =>
        fc.record({
          route: fc.constant(route),
          contentType: jsonContentType,
          payload: publicJsonBody(route),
        }),
      )
      .map(({ route, contentType, payload }) =>
        described({
          method: route.method,
          url: urlOf(route, fixtureIds[route.id ?? 'conversation']),
          headers: publicHeadersOf(plainPublicHeaders(route), contentType),
          payload,
        }),
      );
    await fc.assert(
      fc.asyncProperty(requests, async (req) => {
        if (req.url.includes(CLOSABLE_ID)) {
          // Inactivity and terminate get an active conversation of their own each time, as the first call would.
          const fresh = await startConversation(t);
          fixture.closableId = fresh.conversation.id;
          fixture.closableToken = fresh.session_token;
        }
        const res = await send(req);
        const where = `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`;
        if (res.statusCode === 422) {
          for (const entry of res.json().detail) assert.equal(entry.loc[0], 'body', where);
          return;
        }
        if (res.statusCode >= 300) return;
        const body = res.json();
        if (req.url.endsWith('/messages')) {
          assert.equal(res.statusCode, 201, where);
          assert.equal(body.agent_message.role, 'assistant', where);
        } else if (req.url.endsWith('/inactivity')) {
          assert.equal(res.statusCode, 200, where);
          assert.ok(['warning', 'final'].includes(body.step), where);
          assert.equal(body.message.role, 'assistant', where);
          assert.equal(body.conversation_status, body.step === 'final' ? 'closed' : 'active', where);
        } else {
          assert.equal(res.statusCode, 200, where);
          assert.equal(body.id, fixture.closableId, where);
          assert.equal(body.status, 'closed', where);
          assert.equal(body.reason, sentJson(req).reason ?? null, where);
        }
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  it('answers random query strings to the public lists with a page, an envelope or a 422 in the query', async () => {
    const lists = publicGetRoutes.filter((r) => r.path.endsWith('/messages') || r.path.endsWith('/files'));
    const requests = fc
      .record({ route: fc.constantFrom(...lists), query: queryString })
      .map(({ route, query }) =>
        described({
          method: route.method,
          url: urlOf(route, CONVERSATION_ID, query),
          headers: publicHeadersOf(plainPublicHeaders(route)),
        }),
      );
    await fuzz(requests, (req, res) => {
      const where = `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`;
      if (res.statusCode === 200) {
        const page = res.json();
        assert.ok(Array.isArray(page.items), where);
        assert.ok(page.next_offset === null || Number.isInteger(page.next_offset), where);
        assert.ok(page.items.length <= 100, where);
      } else {
        assert.equal(res.statusCode, 422, where);
        for (const entry of res.json().detail) assert.equal(entry.loc[0], 'query', where);
      }
    });
  });

  it('answers random multipart bodies to the conversation upload with a file listed in the conversation, an envelope or a 422', async () => {
    const route = publicRoute('POST', '/files');
    const list = publicRoute('GET', '/files');
    const cases = multipartBody.map((body) => {
      const req = described({
        method: route.method,
        url: urlOf(route, CONVERSATION_ID),
        headers: publicHeadersOf(plainPublicHeaders(route), body.contentType),
        payload: body.payload,
      });
      return Object.assign({ body, req }, { [fc.toStringMethod]: () => summarise(req) });
    });
    await fc.assert(
      fc.asyncProperty(cases, async ({ body, req }) => {
        const res = await send(req);
        if (res.statusCode !== 201) return;
        const file = res.json();
        assert.deepEqual(
          Object.keys(file).sort(),
          ['created_at', 'id', 'mime_type', 'name', 'size'],
          summarise(req),
        );
        // Newest first in the conversation's list, exactly as answered.
        const listed = await send(
          described({
            method: 'GET',
            url: urlOf(list, CONVERSATION_ID, '?limit=1'),
            headers: publicHeadersOf(plainPublicHeaders(list)),
          }),
        );
        assert.equal(listed.statusCode, 200, listed.body);
        assert.deepEqual(listed.json().items, [file], `listed file differs after ${summarise(req)}`);
        // In the tenant pool, tagged with the conversation, with the bytes that were sent.
        await checkStoredUpload(req, res, body, { metadata: {}, session_id: fixture.conversationId });
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });
});
