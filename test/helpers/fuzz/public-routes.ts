// The public conversation family: its routes, the bodies each takes, Authorization headers with valid,
// broken and foreign tokens, and requests to them.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { publicPath } from '../conversations.ts';
import {
  CLOSABLE_ID,
  CLOSABLE_TOKEN,
  CONVERSATION_ID,
  FILE_ID,
  fill,
  fixtureIds,
  SESSION_TOKEN,
  VALID_KEY,
} from './fixture.ts';
import {
  fieldsJson,
  headerText,
  jsonBody,
  jsonObjectValue,
  jsonText,
  longText,
  nearly,
  utf16Text,
} from './json.ts';
import {
  apiKeyHeader,
  extraHeaders,
  headersOf,
  queryString,
  randomId,
  requestIdHeader,
} from './queries-and-headers.ts';
import { type Route, routeBody, urlOf } from './routes.ts';
import { described, type FuzzRequest } from './send.ts';
import { bearerSpellings, brokenToken } from './tokens.ts';

export const publicRoutes: Route[] = [
  { method: 'GET', path: publicPath(':id'), id: 'conversation', family: 'public' },
  { method: 'GET', path: publicPath(':id', '/messages'), id: 'conversation', family: 'public' },
  {
    method: 'POST',
    path: publicPath(':id', '/messages'),
    id: 'conversation',
    body: 'json',
    family: 'public',
  },
  { method: 'GET', path: publicPath(':id', '/files'), id: 'conversation', family: 'public' },
  {
    method: 'GET',
    path: publicPath(':id', '/turns/turn_x/events'),
    id: 'conversation',
    family: 'public',
  },
  {
    method: 'POST',
    path: publicPath(':id', '/files'),
    id: 'conversation',
    body: 'multipart',
    family: 'public',
  },
  {
    method: 'POST',
    path: publicPath(':id', '/feedback'),
    id: 'conversation',
    body: 'json',
    family: 'public',
  },
  { method: 'POST', path: publicPath(':id', '/inactivity'), id: 'closable', body: 'json', family: 'public' },
  { method: 'POST', path: publicPath(':id', '/terminate'), id: 'closable', body: 'json', family: 'public' },
];
export const publicGetRoutes = publicRoutes.filter((r) => r.method === 'GET');

/** The token that opens the route's fixture conversation, and the one that opens the other fixture. */
const tokenFor = (route: Route) => (route.id === 'closable' ? CLOSABLE_TOKEN : SESSION_TOKEN);
const otherTokenFor = (route: Route) => (route.id === 'closable' ? SESSION_TOKEN : CLOSABLE_TOKEN);
export const otherIdFor = (route: Route) => (route.id === 'closable' ? CONVERSATION_ID : CLOSABLE_ID);

/** Mostly the conversation of the route's token (so that requests get past the token), sometimes another. */
function publicIdArbitrary(route: Route): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant(fixtureIds[route.id ?? 'conversation']) },
    { weight: 1, arbitrary: fc.constant(otherIdFor(route)) },
    { weight: 2, arbitrary: randomId },
  );
}

const oneGrapheme = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 });
const graphemeText = (maxLength: number) => fc.string({ unit: 'grapheme', maxLength });

const feedbackFieldValues = {
  score: nearly(
    fc.oneof(
      fc.integer({ min: 0, max: 10 }).map(String),
      fc.integer({ min: -3, max: 13 }).map(String),
      fc.double().map(jsonText),
      fc.constantFrom('10.0', '1e1', '-0', '0.5', '1e400', '"7"', 'true', '[5]', '{"value":5}'),
    ),
  ),
  comment: nearly(
    fc
      .oneof(
        graphemeText(200),
        longText(oneGrapheme, 1_990, 2_010),
        utf16Text,
        fc.constantFrom('', ' ', 'x'.repeat(2_000), 'x'.repeat(2_001)),
      )
      .map(jsonText),
  ),
  metadata: nearly(jsonObjectValue),
};

/** A content block: any mix of its fields with near-valid values. */
const mixedBlockJson = fieldsJson({
  type: nearly(fc.constantFrom('text', 'image', 'file', 'TEXT', '', 'video').map(jsonText)),
  text: nearly(fc.oneof(graphemeText(100), fc.constantFrom('', ' ')).map(jsonText)),
  file_id: nearly(
    fc
      .oneof(
        fc.constant(FILE_ID),
        fc.stringMatching(/^file_[A-Za-z0-9]{21}$/),
        fc.string({ maxLength: 210 }),
        fc.constantFrom('', 'x'.repeat(200), 'x'.repeat(201)),
      )
      .map(jsonText),
  ),
});
/** A text block as a client writes it, or a mixed one. */
const contentBlockJson = fc.oneof(
  fc
    .string({ unit: 'grapheme', minLength: 1, maxLength: 100 })
    .map((text) => jsonText({ type: 'text', text })),
  mixedBlockJson,
);

const messageFieldValues = {
  content: nearly(
    fc.oneof(
      { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }).map(jsonText) },
      { weight: 1, arbitrary: fc.constantFrom('', ' ').map(jsonText) },
      { weight: 1, arbitrary: longText(oneGrapheme, 31_990, 32_010).map(jsonText) },
      {
        weight: 2,
        arbitrary: fc.array(contentBlockJson, { maxLength: 18 }).map((blocks) => `[${blocks.join(',')}]`),
      },
    ),
  ),
  role: nearly(
    fc
      .oneof(
        { weight: 4, arbitrary: fc.constant('user') },
        { weight: 1, arbitrary: fc.constant('assistant') },
        { weight: 1, arbitrary: fc.constantFrom('system', 'USER', '') },
      )
      .map(jsonText),
  ),
  metadata: nearly(jsonObjectValue),
};

const inactivityFieldValues = {
  step: nearly(
    fc.constantFrom('warning', 'final', 'Warning', 'FINAL', '', 'other', ' warning').map(jsonText),
  ),
};

const terminateFieldValues = {
  reason: nearly(
    fc
      .oneof(
        graphemeText(100),
        longText(oneGrapheme, 495, 505),
        utf16Text,
        fc.constantFrom('', 'x'.repeat(500), 'x'.repeat(501)),
      )
      .map(jsonText),
  ),
};

/** The JSON bodies of the public routes that take one, by the last segment of their path. */
export const publicBodies: Record<string, fc.Arbitrary<string>> = {
  '/messages': fieldsJson(messageFieldValues, ['content']),
  '/feedback': fieldsJson(feedbackFieldValues, ['score']),
  '/inactivity': fieldsJson(inactivityFieldValues, ['step']),
  '/terminate': fieldsJson(terminateFieldValues),
};

/** Mostly the route's own fields, sometimes anything a client might send as JSON. */
export function publicJsonBody(route: Route): fc.Arbitrary<string> {
  const own = publicBodies[route.path.slice(route.path.lastIndexOf('/'))];
  return own === undefined
    ? jsonBody
    : fc.oneof({ weight: 4, arbitrary: own }, { weight: 1, arbitrary: jsonBody });
}

/** An Authorization header for a request to `route`: mostly its token, often another, broken or none at all. */
function credentialFor(route: Route): fc.Arbitrary<string | string[] | undefined> {
  const token = tokenFor(route);
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom<string | string[] | undefined>(...bearerSpellings(token)) },
    { weight: 2, arbitrary: fc.constantFrom(...bearerSpellings(otherTokenFor(route))) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 3,
      arbitrary: fc.constantFrom<string | string[]>(
        '',
        ' ',
        'Bearer',
        'Bearer ',
        'Bearer  ',
        `Bearer\t${token}`,
        token,
        `Token ${token}`,
        `Basic ${token}`,
        `Bearer ${token} ${token}`,
        `Bearer ${token}${token}`,
        `Bearer ${token}.`,
        `Bearer "${token}"`,
        `Bearer ${VALID_KEY}`,
        VALID_KEY,
        'Bearer null',
        'Bearer eyJhbGciOiJub25lIn0.e30.',
        ['Bearer x', `Bearer ${token}`],
        [`Bearer ${token}`, 'Bearer x'],
        [''],
      ),
    },
    { weight: 3, arbitrary: brokenToken.map((broken) => `Bearer ${broken}`) },
    { weight: 1, arbitrary: headerText },
    { weight: 1, arbitrary: headerText.map((text) => `Bearer ${text}`) },
  );
}

interface PublicHeaderChoice {
  authorization: string | string[] | undefined;
  apiKey: string | string[] | undefined;
  requestId: string | undefined;
  extra: [string, string][];
}

export function publicHeadersOf(
  choice: PublicHeaderChoice,
  contentType?: string,
): Record<string, string | string[]> {
  const headers = headersOf(
    { apiKey: choice.apiKey, requestId: choice.requestId, extra: choice.extra },
    contentType,
  );
  if (choice.authorization !== undefined) headers.authorization = choice.authorization;
  return headers;
}

/** The route's token and nothing else: the requests that reach validation. */
export const plainPublicHeaders = (route: Route): PublicHeaderChoice => ({
  authorization: `Bearer ${tokenFor(route)}`,
  apiKey: undefined,
  requestId: undefined,
  extra: [],
});

export const publicHeaderChoice = (route: Route): fc.Arbitrary<PublicHeaderChoice> =>
  fc.record({
    authorization: credentialFor(route),
    apiKey: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: apiKeyHeader },
    ),
    requestId: requestIdHeader,
    extra: extraHeaders,
  });

export const withSometimesRandomPublicHeaders = (route: Route) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant(plainPublicHeaders(route)) },
    { weight: 1, arbitrary: publicHeaderChoice(route) },
  );

/** A request to any public route with anything in it, the body chosen to suit the route most of the time. */
export const anyPublicRequest: fc.Arbitrary<FuzzRequest> = fc
  .constantFrom(...publicRoutes)
  .chain((route) =>
    fc.record({
      route: fc.constant(route),
      id: publicIdArbitrary(route),
      query: fc.option(queryString, { nil: '' }),
      headers: withSometimesRandomPublicHeaders(route),
      body: routeBody(route, publicJsonBody(route)),
    }),
  )
  .map(({ route, id, query, headers, body }) =>
    described({
      method: route.method,
      url: urlOf(route, id, query),
      headers: publicHeadersOf(headers, body.contentType),
      ...(body.payload === undefined ? {} : { payload: body.payload }),
    }),
  );

/** A public request with the route's token, and a JSON body when the route takes one. */
export const publicJsonRequest = (route: Route, payload?: string): FuzzRequest =>
  described({
    method: route.method,
    url: urlOf(route, fixtureIds[route.id ?? 'conversation']),
    headers: publicHeadersOf(
      plainPublicHeaders(route),
      payload === undefined ? undefined : 'application/json',
    ),
    ...(payload === undefined ? {} : { payload }),
  });

export const publicRoute = (method: string, rest: string) => {
  const route = publicRoutes.find((r) => r.method === method && r.path === publicPath(':id', rest));
  assert.ok(route, `${method} ${rest}`);
  return route;
};

/** The conversation id of a public URL, decoded as the router decodes it. */
export const pathIdOf = (req: FuzzRequest) =>
  decodeURIComponent(fill(req.url.split('?')[0]?.split('/')[5] ?? ''));

/** Path ids that the router takes as they are: no bad escapes, no dot segments, not too long. */
export const routableId = fc.oneof(
  fc.stringMatching(/^ses_[A-Za-z0-9]{21}$/),
  fc
    .string({ maxLength: 30 })
    .filter((s) => s !== '.' && s !== '..')
    .map(encodeURIComponent),
);
