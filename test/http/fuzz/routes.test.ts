// Property-based fuzzing (fast-check) of every route of the server-side family and the operations endpoints
// with random requests, bodies of any type, query strings, path ids, methods and headers: never a 5xx, always
// the documented error shapes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { useFuzzApp, VALID_KEY } from '../../helpers/fuzz/fixture.ts';
import { otherBody, otherContentType, userBodyJson } from '../../helpers/fuzz/json.ts';
import {
  headerChoice,
  headersOf,
  plainHeaders,
  queryString,
  withSometimesRandomHeaders,
} from '../../helpers/fuzz/queries-and-headers.ts';
import {
  anyRequest,
  bodyChoice,
  idArbitrary,
  idRoutes,
  operationRoutes,
  routes,
  urlOf,
} from '../../helpers/fuzz/routes.ts';
import { clip, described, fuzz, headerValue, summarise } from '../../helpers/fuzz/send.ts';

const t = useFuzzApp();

describe('fuzzing every route', () => {
  it('answers any request to any route without a 5xx and with the documented error shapes', async () => {
    await fuzz(anyRequest, undefined, [], 300);
  });

  it('answers bodies of any content type on every route without a 5xx', async () => {
    const requests = fc
      .record({
        route: fc.constantFrom(...routes),
        contentType: fc.option(otherContentType, { nil: undefined }),
        payload: otherBody,
      })
      .chain(({ route, contentType, payload }) =>
        idArbitrary(route).map((id) =>
          described({
            method: route.method,
            url: urlOf(route, id),
            headers: headersOf(plainHeaders, contentType),
            payload,
          }),
        ),
      );
    await fuzz(requests);
  });

  it('answers random query strings on every route with a page, an envelope or a 422 in the query', async () => {
    const requests = fc
      .record({
        route: fc.oneof(
          {
            weight: 4,
            arbitrary: fc.constantFrom(
              ...routes.filter((r) => r.method === 'GET' && r.id === undefined && r.family === 'api'),
            ),
          },
          { weight: 1, arbitrary: fc.constantFrom(...routes) },
        ),
        query: queryString,
      })
      .chain(({ route, query }) =>
        idArbitrary(route).map((id) =>
          described({ method: route.method, url: urlOf(route, id, query), headers: headersOf(plainHeaders) }),
        ),
      );
    await fuzz(
      requests,
      (req, res) => {
        if (
          req.method !== 'GET' ||
          !req.url.startsWith('/v1/agents/') ||
          req.url.split('?')[0]?.split('/').length !== 4
        )
          return;
        if (res.statusCode === 200) {
          const page = res.json();
          assert.ok(Array.isArray(page.items), summarise(req));
          assert.ok(page.next_offset === null || Number.isInteger(page.next_offset), summarise(req));
          assert.ok(page.items.length <= 100, summarise(req));
        } else {
          assert.equal(res.statusCode, 422, `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`);
          for (const entry of res.json().detail) assert.equal(entry.loc[0], 'query', summarise(req));
        }
      },
      [
        described({
          method: 'GET',
          url: '/v1/agents/files?created_after=2024-02-30T00:00:00Z',
          headers: { 'x-api-key': VALID_KEY },
        }),
        described({
          method: 'GET',
          url: '/v1/agents/files?limit=1&limit=2&offset=-1',
          headers: { 'x-api-key': VALID_KEY },
        }),
        described({
          method: 'GET',
          url: '/v1/agents/users?offset=9007199254740991',
          headers: { 'x-api-key': VALID_KEY },
        }),
      ],
    );
  });

  it('answers random path ids with the resource, its 404 or another documented error', async () => {
    const requests = fc
      .record({ route: fc.constantFrom(...idRoutes), query: fc.option(queryString, { nil: '' }) })
      .chain(({ route, query }) =>
        fc
          .record({
            id: idArbitrary(route),
            body:
              route.body === 'json' ? fc.option(userBodyJson, { nil: undefined }) : fc.constant(undefined),
          })
          .map(({ id, body }) =>
            described({
              method: route.method,
              url: urlOf(route, id, query),
              headers: headersOf(plainHeaders, body === undefined ? undefined : 'application/json'),
              ...(body === undefined ? {} : { payload: body }),
            }),
          ),
      );
    await fuzz(requests, (req, res) => {
      if (res.statusCode !== 404) return;
      const code = res.json().error.code;
      assert.ok(
        [
          'not_found',
          'user_not_found',
          'file_not_found',
          'session_not_found',
          'agent_not_found',
          'message_not_found',
          'turn_not_found',
          'conversation_not_found',
        ].includes(code),
        `${summarise(req)} -> ${code}`,
      );
    });
  });

  it('answers wrong methods on every path with 404 not_found', async () => {
    const requests = fc
      .record({
        route: fc.constantFrom(...routes),
        method: fc.constantFrom('PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'GET'),
        headers: withSometimesRandomHeaders,
      })
      .filter(({ route, method }) => !routes.some((r) => r.path === route.path && r.method === method))
      .chain(({ route, method, headers }) =>
        idArbitrary(route)
          // An id with `#` or `?` ends the path early: the URL then names another route (DELETE of
          // `/files/#/content` is DELETE `/files/`, a route of its own), not this one with a wrong method.
          .filter((id) => !/[#?]/.test(id))
          .map((id) => described({ method, url: urlOf(route, id), headers: headersOf(headers) })),
      );
    await fuzz(requests, (req, res) => {
      if (req.method === 'HEAD') return; // every path has a GET, so HEAD is routed; its bodyless answer is checked
      if (res.statusCode === 400) return; // a URL Fastify cannot decode
      assert.equal(res.statusCode, 404, `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`);
    });
  });

  it('answers random X-API-Key and X-Request-Id headers with the right 401 code and a tame request id', async () => {
    const requests = fc
      .record({ route: fc.constantFrom(...routes), headers: headerChoice })
      .chain(({ route, headers }) =>
        idArbitrary(route).map((id) =>
          described({ method: route.method, url: urlOf(route, id), headers: headersOf(headers) }),
        ),
      );
    await fuzz(requests, (req, res) => {
      const path = req.url.split('?')[0] ?? '';
      const route = routes.find((r) => r.method === req.method && r.path === path);
      const key = headerValue(req, 'x-api-key');
      if (route?.family === 'operations') {
        assert.equal(res.statusCode, 200, `${summarise(req)} -> ${res.statusCode}`);
      } else if (req.url.startsWith('/v1/agents/') && res.statusCode === 401) {
        const expected = key === undefined || key === '' ? 'unauthorized' : 'invalid_api_key';
        assert.equal(res.json().error.code, expected, summarise(req));
      } else if (req.url.startsWith('/v1/agents/') && res.statusCode !== 404 && res.statusCode !== 400) {
        assert.equal(key, t.apiKey, `${summarise(req)} -> ${res.statusCode} without a valid key`);
      }
    });
  });

  it('answers any request to the operations routes with 200', async () => {
    const requests = fc
      .record({
        route: fc.constantFrom(...operationRoutes),
        query: fc.option(queryString, { nil: '' }),
        headers: headerChoice,
        body: bodyChoice,
      })
      .map(({ route, query, headers, body }) =>
        described({
          method: route.method,
          url: urlOf(route, '', query),
          headers: headersOf(headers, body.contentType),
          ...(body.payload === undefined ? {} : { payload: body.payload }),
        }),
      );
    await fuzz(
      requests,
      (req, res) => {
        assert.equal(res.statusCode, 200, `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`);
      },
      [],
      60,
    );
  });
});
