// Property-based fuzzing of the public family's authentication: random Authorization headers, tokens signed
// with any claims and one defect, and wrong methods, before and after the token is checked.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CONVERSATION_ID, fill, fixture, fixtureIds, RUNS, useFuzzApp } from '../../helpers/fuzz/fixture.ts';
import { jsonContentType } from '../../helpers/fuzz/json.ts';
import {
  otherIdFor,
  pathIdOf,
  publicGetRoutes,
  publicHeaderChoice,
  publicHeadersOf,
  publicJsonBody,
  publicRoutes,
  routableId,
  withSometimesRandomPublicHeaders,
} from '../../helpers/fuzz/public-routes.ts';
import { urlOf } from '../../helpers/fuzz/routes.ts';
import { clip, described, fuzz, send, summarise } from '../../helpers/fuzz/send.ts';
import { forge, grantOf, type TokenDefect } from '../../helpers/fuzz/tokens.ts';

useFuzzApp();

describe('fuzzing the conversation routes', () => {
  it('answers random Authorization headers with 401, or 403 forbidden for a valid token on another conversation', async () => {
    const requests = fc
      .constantFrom(...publicRoutes)
      .chain((route) =>
        fc.record({
          route: fc.constant(route),
          id: fc.oneof(
            { weight: 3, arbitrary: fc.constant(fixtureIds[route.id ?? 'conversation']) },
            { weight: 1, arbitrary: fc.constant(otherIdFor(route)) },
            { weight: 2, arbitrary: routableId },
          ),
          headers: publicHeaderChoice(route),
          body: fc.option(fc.record({ contentType: jsonContentType, payload: publicJsonBody(route) }), {
            nil: undefined,
          }),
        }),
      )
      .map(({ route, id, headers, body }) =>
        described({
          method: route.method,
          url: urlOf(route, id),
          headers: publicHeadersOf(headers, body?.contentType),
          ...(body === undefined ? {} : { payload: body.payload }),
        }),
      );
    await fuzz(requests, (req, res) => {
      const where = `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`;
      const granted = grantOf(req);
      if (granted === null) {
        assert.equal(res.statusCode, 401, where);
        assert.ok(['unauthorized', 'session_token_invalid'].includes(res.json().error.code), where);
        assert.match(String(res.headers['www-authenticate']), /^Bearer /, where);
      } else if (pathIdOf(req) === fill(granted)) {
        assert.ok(
          res.statusCode !== 401 && !(res.statusCode === 403 && res.json().error.code === 'forbidden'),
          `a valid token was refused on its own conversation: ${where}`,
        );
      } else {
        assert.equal(res.statusCode, 403, where);
        assert.equal(res.json().error.code, 'forbidden', where);
        assert.deepEqual(res.json().error.context, { conversation_id: pathIdOf(req) }, where);
      }
    });
  });

  it('answers tokens signed with any claims with 401 unless valid, and a valid one only for its own conversation of its tenant', async () => {
    const cases = fc
      .record({
        token: fc.record({
          defect: fc.oneof(
            { weight: 3, arbitrary: fc.constant<TokenDefect>('none') },
            {
              weight: 2,
              arbitrary: fc.constantFrom<TokenDefect>(
                'expired',
                'not-yet-valid',
                'wrong-secret',
                'HS512',
                'alg-none',
                'wrong-issuer',
                'wrong-audience',
                'no-sub',
                'empty-sub',
                'no-jti',
                'no-exp',
                'no-tid',
                'empty-tid',
                'numeric-agt',
                'no-kid',
                'unknown-kid',
              ),
            },
          ),
          sub: fc.oneof(
            { weight: 1, arbitrary: fc.constant(CONVERSATION_ID) },
            {
              weight: 2,
              arbitrary: fc.string({ minLength: 1, maxLength: 30 }).filter((s) => s !== '.' && s !== '..'),
            },
          ),
          tid: fc.oneof(
            { weight: 1, arbitrary: fc.constant('t1') },
            { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 20 }) },
          ),
          agt: fc.oneof(fc.constant('demo'), fc.string({ minLength: 1, maxLength: 20 })),
        }),
        route: fc.constantFrom(...publicGetRoutes),
        /** The token's own conversation in the path, or the fixture's. */
        own: fc.boolean(),
      })
      .map((c) =>
        Object.assign(c, { [fc.toStringMethod]: () => JSON.stringify({ ...c, route: c.route.path }) }),
      );
    await fc.assert(
      fc.asyncProperty(cases, async ({ token, route, own }) => {
        const req = described({
          method: route.method,
          url: urlOf(route, own ? encodeURIComponent(token.sub) : CONVERSATION_ID),
          headers: { authorization: `Bearer ${await forge(token)}` },
        });
        const res = await send(req);
        const where = `${JSON.stringify(token)} ${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`;
        const code = res.statusCode < 300 ? null : res.json().error.code;
        if (token.defect === 'expired') {
          assert.deepEqual([res.statusCode, code], [401, 'session_token_expired'], where);
        } else if (token.defect !== 'none' || fill(token.tid) !== 't1') {
          // A token of another tenant names a key (kid) that is not that tenant's.
          assert.deepEqual([res.statusCode, code], [401, 'session_token_invalid'], where);
        } else if (pathIdOf(req) !== fill(token.sub)) {
          assert.deepEqual([res.statusCode, code], [403, 'forbidden'], where);
        } else if (fill(token.sub) === fixture.conversationId) {
          // The resume route names a turn the fixture conversation does not have.
          if (route.path.includes('/turns/'))
            assert.deepEqual([res.statusCode, code], [404, 'turn_not_found'], where);
          else assert.equal(res.statusCode, 200, where);
        } else {
          // A conversation that does not exist.
          assert.deepEqual([res.statusCode, code], [404, 'conversation_not_found'], where);
        }
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  it('answers wrong methods on the public paths with 404 not_found once the token is valid, 401 before', async () => {
    // Unknown routes under the prefix answer through the family, token first (like its routes).
    const requests = fc
      .record({
        route: fc.constantFrom(...publicRoutes),
        method: fc.constantFrom('PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'GET'),
      })
      .filter(({ route, method }) => !publicRoutes.some((r) => r.path === route.path && r.method === method))
      .chain(({ route, method }) =>
        fc
          .record({
            id: fc.oneof(
              { weight: 3, arbitrary: fc.constant(fixtureIds[route.id ?? 'conversation']) },
              { weight: 1, arbitrary: fc.constant(otherIdFor(route)) },
              { weight: 2, arbitrary: routableId },
            ),
            headers: withSometimesRandomPublicHeaders(route),
          })
          .map(({ id, headers }) =>
            described({ method, url: urlOf(route, id), headers: publicHeadersOf(headers) }),
          ),
      );
    await fuzz(requests, (req, res) => {
      if (req.method === 'HEAD') return; // a path with a GET routes HEAD too; its bodyless answer is checked
      const where = `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`;
      if (grantOf(req) === null) {
        assert.equal(res.statusCode, 401, where);
        assert.ok(['unauthorized', 'session_token_invalid'].includes(res.json().error.code), where);
      } else {
        assert.equal(res.statusCode, 404, where);
        assert.equal(res.json().error.code, 'not_found', where);
      }
    });
  });
});
