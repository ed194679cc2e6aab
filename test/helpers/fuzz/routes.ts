// The routes of the server-side family and the operations endpoints, and requests to them with anything in
// them: ids, queries, headers and bodies chosen to suit the route most of the time.
import fc from 'fast-check';
import type { IdKind } from './fixture.ts';
import { jsonBody, jsonContentType, otherBody, otherContentType } from './json.ts';
import { multipartBody } from './multipart.ts';
import { headersOf, idFor, queryString, withSometimesRandomHeaders } from './queries-and-headers.ts';
import { described, type FuzzRequest } from './send.ts';

export interface Route {
  method: string;
  path: string;
  /** `:id` in `path` is a user, file, session or conversation id. */
  id?: IdKind;
  body?: 'json' | 'multipart';
  family: 'api' | 'operations' | 'public';
}

export const routes: Route[] = [
  { method: 'POST', path: '/v1/agents/users', body: 'json', family: 'api' },
  { method: 'GET', path: '/v1/agents/users', family: 'api' },
  { method: 'GET', path: '/v1/agents/users/:id', id: 'user', family: 'api' },
  { method: 'PATCH', path: '/v1/agents/users/:id', id: 'user', body: 'json', family: 'api' },
  { method: 'DELETE', path: '/v1/agents/users/:id', id: 'user', family: 'api' },
  { method: 'POST', path: '/v1/agents/files', body: 'multipart', family: 'api' },
  { method: 'GET', path: '/v1/agents/files', family: 'api' },
  { method: 'GET', path: '/v1/agents/files/:id', id: 'file', family: 'api' },
  { method: 'DELETE', path: '/v1/agents/files/:id', id: 'file', family: 'api' },
  { method: 'GET', path: '/v1/agents/files/:id/content', id: 'file', family: 'api' },
  { method: 'POST', path: '/v1/agents/demo/sessions', body: 'json', family: 'api' },
  { method: 'POST', path: '/v1/agents/nope/sessions', body: 'json', family: 'api' },
  { method: 'GET', path: '/v1/agents', family: 'api' },
  { method: 'GET', path: '/v1/agents/sessions', family: 'api' },
  { method: 'GET', path: '/v1/agents/sessions/:id', id: 'session', family: 'api' },
  { method: 'POST', path: '/v1/agents/sessions/:id/messages', id: 'session', body: 'json', family: 'api' },
  { method: 'GET', path: '/v1/agents/sessions/:id/messages', id: 'session', family: 'api' },
  { method: 'GET', path: '/v1/agents/sessions/:id/messages/msg_x', id: 'session', family: 'api' },
  { method: 'GET', path: '/v1/agents/sessions/:id/turns/turn_x/events', id: 'session', family: 'api' },
  { method: 'POST', path: '/v1/agents/sessions/:id/terminate', id: 'session', body: 'json', family: 'api' },
  { method: 'POST', path: '/v1/agents/demo/run', body: 'json', family: 'api' },
  { method: 'POST', path: '/v1/agents/demo/conversations', body: 'json', family: 'api' },
  { method: 'POST', path: '/v1/agents/nope/conversations', body: 'json', family: 'api' },
  { method: 'POST', path: '/v1/agents/conversations/:id/token', id: 'conversation', family: 'api' },
  { method: 'GET', path: '/healthz', family: 'operations' },
  { method: 'GET', path: '/readyz', family: 'operations' },
  { method: 'GET', path: '/metrics', family: 'operations' },
  { method: 'GET', path: '/openapi.json', family: 'operations' },
];
export const idRoutes = routes.filter((r) => r.id !== undefined);
export const operationRoutes = routes.filter((r) => r.family === 'operations');

/**
 * The route's URL with `id`; DELETE and the API's terminate never get the shared fixtures, so they stay for other
 * runs (the public terminate and inactivity have a conversation of their own to close).
 */
export function idArbitrary(route: Route): fc.Arbitrary<string> {
  if (route.id === undefined) return fc.constant('');
  return idFor(
    route.id,
    route.method !== 'DELETE' && !(route.family === 'api' && route.path.endsWith('/terminate')),
  );
}
export const urlOf = (route: Route, id: string, query = '') => `${route.path.replace(':id', id)}${query}`;

type BodyChoice = { contentType: string | undefined; payload: string | Buffer | undefined };

export const bodyChoice: fc.Arbitrary<BodyChoice> = fc.oneof(
  { weight: 2, arbitrary: fc.constant<BodyChoice>({ contentType: undefined, payload: undefined }) },
  { weight: 3, arbitrary: fc.record({ contentType: jsonContentType, payload: jsonBody }) },
  { weight: 1, arbitrary: fc.record({ contentType: otherContentType, payload: otherBody }) },
  { weight: 1, arbitrary: fc.record({ contentType: fc.constant(undefined), payload: otherBody }) },
  {
    weight: 2,
    arbitrary: multipartBody.map(({ contentType, payload }): BodyChoice => ({ contentType, payload })),
  },
);

/** A body of any kind, of the kind `route` takes most of the time (JSON bodies from `json`). */
export function routeBody(route: Route, json: fc.Arbitrary<string> = jsonBody): fc.Arbitrary<BodyChoice> {
  if (route.body === 'json') {
    return fc.oneof(
      { weight: 3, arbitrary: fc.record({ contentType: jsonContentType, payload: json }) },
      { weight: 1, arbitrary: bodyChoice },
    );
  }
  if (route.body === 'multipart') {
    return fc.oneof(
      {
        weight: 3,
        arbitrary: multipartBody.map(({ contentType, payload }): BodyChoice => ({ contentType, payload })),
      },
      { weight: 1, arbitrary: bodyChoice },
    );
  }
  return bodyChoice;
}

/** A request to any route with anything in it, the body chosen to suit the route most of the time. */
export const anyRequest: fc.Arbitrary<FuzzRequest> = fc
  .constantFrom(...routes)
  .chain((route) =>
    fc.record({
      route: fc.constant(route),
      id: idArbitrary(route),
      query: fc.option(queryString, { nil: '' }),
      headers: withSometimesRandomHeaders,
      body: routeBody(route),
    }),
  )
  .map(({ route, id, query, headers, body }) =>
    described({
      method: route.method,
      url: urlOf(route, id, query),
      headers: headersOf(headers, body.contentType),
      ...(body.payload === undefined ? {} : { payload: body.payload }),
    }),
  );

export const userRoute = (method: 'POST' | 'PATCH') =>
  method === 'POST'
    ? fc.constant('/v1/agents/users')
    : idFor('user', true).map((id) => `/v1/agents/users/${id}`);
