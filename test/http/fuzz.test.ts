// Property-based fuzzing (fast-check) of every route with random and malformed bodies, queries, paths, headers and
// uploads: never a 5xx, always the documented error shapes, and what a write answers is what reads back. The public
// conversation family is fuzzed with session tokens: valid, broken, forged and foreign ones.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { type JWTPayload, SignJWT, UnsecuredJWT } from 'jose';
import { errorCatalogue } from '../../src/errors.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { publicPath, startConversation } from '../helpers/conversations.ts';

// Generated requests carry these placeholders, replaced when sent, so counterexamples stay readable.
const VALID_KEY = '<valid-key>';
const USER_ID = '<user-id>';
const FILE_ID = '<file-id>';
const SESSION_ID = '<session-id>';
/** A conversation of the public family and its session token; it stays active. */
const CONVERSATION_ID = '<conversation-id>';
const SESSION_TOKEN = '<session-token>';
/** A second conversation, for inactivity and terminate, which may close it. */
const CLOSABLE_ID = '<closable-id>';
const CLOSABLE_TOKEN = '<closable-token>';

/** The app signs session tokens with this secret, so that tests can forge tokens it would accept. */
const TOKEN_SECRET = 'fuzz-secret-for-session-tokens-0123456789';

/** Runs per property; raise FUZZ_RUNS for a longer hunt. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);

let t: TestApp;
let userId = '';
let fileId = '';
let sessionId = '';
let conversationId = '';
let sessionToken = '';
let closableId = '';
let closableToken = '';

interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[]>;
  payload?: string | Buffer;
}

// --- sending and checking

const snakeCase = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const pascalCase = /^[A-Z][A-Za-z0-9]*$/;
const isoTimestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const tameRequestId = /^[A-Za-z0-9._:-]{1,128}$/;
const locRoots = ['body', 'query', 'path', 'header'];

function clip(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;
}

function summarise(req: FuzzRequest): string {
  const payload =
    req.payload === undefined
      ? ''
      : ` payload=${JSON.stringify(clip(Buffer.isBuffer(req.payload) ? req.payload.toString('utf8') : req.payload))}`;
  return `${req.method} ${JSON.stringify(clip(req.url))} headers=${clip(JSON.stringify(req.headers), 600)}${payload}`;
}

/** Gives a generated request a short description for fast-check's counterexample report. */
function described(req: FuzzRequest): FuzzRequest {
  return Object.assign(req, { [fc.toStringMethod]: () => summarise(req) });
}

function fill(text: string): string {
  return text
    .replaceAll(VALID_KEY, t.apiKey)
    .replaceAll(USER_ID, userId)
    .replaceAll(FILE_ID, fileId)
    .replaceAll(SESSION_ID, sessionId)
    .replaceAll(CONVERSATION_ID, conversationId)
    .replaceAll(SESSION_TOKEN, sessionToken)
    .replaceAll(CLOSABLE_ID, closableId)
    .replaceAll(CLOSABLE_TOKEN, closableToken);
}

function headerValue(req: FuzzRequest, name: string): string | undefined {
  const value = req.headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.map(fill).join(', ') : fill(value);
}

function parseBody(res: LightMyRequestResponse, where: string): unknown {
  assert.match(String(res.headers['content-type']), /^application\/json/, `not JSON: ${where}`);
  try {
    return JSON.parse(res.body);
  } catch {
    assert.fail(`unparsable JSON body: ${where}`);
  }
}

/**
 * The JSON object a request sent, as the server decodes it (UTF-8, a leading BOM dropped). No body, an empty one or
 * a JSON `null` is no fields, as the validator takes them.
 */
function sentJson(req: FuzzRequest): Record<string, unknown> {
  const text = Buffer.from(fill(String(req.payload ?? '')))
    .toString('utf8')
    .replace(/^\ufeff/, '');
  return text === '' ? {} : (JSON.parse(text) ?? {});
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function checkValidationBody(body: unknown, where: string): void {
  assert.ok(isPlainObject(body), `422 body is not an object: ${where}`);
  assert.deepEqual(Object.keys(body), ['detail'], `422 body must be exactly { detail }: ${where}`);
  const detail = body.detail;
  assert.ok(Array.isArray(detail) && detail.length > 0, `422 detail must be a non-empty array: ${where}`);
  for (const entry of detail) {
    assert.ok(isPlainObject(entry), `422 entry is not an object: ${where}`);
    assert.deepEqual(Object.keys(entry).sort(), ['loc', 'msg', 'type'], `422 entry keys: ${where}`);
    const { loc, msg, type } = entry;
    assert.ok(Array.isArray(loc) && loc.length > 0, `422 loc must be a non-empty array: ${where}`);
    for (const part of loc) {
      assert.ok(
        typeof part === 'string' || (typeof part === 'number' && Number.isInteger(part)),
        `422 loc holds a ${typeof part}: ${where}`,
      );
    }
    assert.ok(locRoots.includes(loc[0]), `422 loc starts with ${JSON.stringify(loc[0])}: ${where}`);
    assert.equal(typeof msg, 'string', `422 msg: ${where}`);
    assert.ok(typeof type === 'string' && snakeCase.test(type), `422 type ${JSON.stringify(type)}: ${where}`);
  }
}

function checkEnvelope(res: LightMyRequestResponse, body: unknown, requestId: string, where: string): void {
  assert.ok(isPlainObject(body), `error body is not an object: ${where}`);
  assert.deepEqual(Object.keys(body).sort(), ['error', 'request_id', 'timestamp'], `envelope keys: ${where}`);
  const { error, request_id, timestamp } = body;
  assert.ok(isPlainObject(error), `error is not an object: ${where}`);
  for (const key of Object.keys(error)) {
    assert.ok(['code', 'name', 'message', 'context'].includes(key), `unexpected error.${key}: ${where}`);
  }
  const { code, name, message, context } = error;
  assert.ok(typeof code === 'string' && snakeCase.test(code), `error.code ${JSON.stringify(code)}: ${where}`);
  assert.ok(Object.hasOwn(errorCatalogue, code), `error.code ${code} is not in the catalogue: ${where}`);
  const spec = errorCatalogue[code as keyof typeof errorCatalogue];
  assert.equal(res.statusCode, spec.status, `status of ${code}: ${where}`);
  assert.ok(
    typeof name === 'string' && pascalCase.test(name),
    `error.name ${JSON.stringify(name)}: ${where}`,
  );
  assert.equal(name, spec.name, `error.name of ${code}: ${where}`);
  assert.equal(typeof message, 'string', `error.message: ${where}`);
  assert.ok(context === undefined || isPlainObject(context), `error.context: ${where}`);
  assert.equal(request_id, requestId, `request_id must equal X-Request-Id: ${where}`);
  assert.ok(
    typeof timestamp === 'string' &&
      isoTimestamp.test(timestamp) &&
      new Date(timestamp).toISOString() === timestamp,
    `timestamp ${JSON.stringify(timestamp)}: ${where}`,
  );
  if (res.statusCode === 429) assert.ok(res.headers['retry-after'], `429 without Retry-After: ${where}`);
}

/** The properties every response must have, whatever was sent. */
function checkResponse(req: FuzzRequest, res: LightMyRequestResponse): void {
  const where = `${summarise(req)} -> ${res.statusCode} ${clip(res.body, 500)}`;
  assert.ok(res.statusCode < 500, `5xx answer: ${where}`);
  const requestId = res.headers['x-request-id'];
  assert.ok(typeof requestId === 'string' && requestId !== '', `no X-Request-Id: ${where}`);
  assert.match(requestId, tameRequestId, `X-Request-Id echoes an untamed value: ${where}`);
  const given = headerValue(req, 'x-request-id');
  if (given !== undefined && tameRequestId.test(given)) {
    assert.equal(requestId, given, `a tame X-Request-Id must be kept: ${where}`);
  }
  if (res.statusCode >= 200 && res.statusCode < 300) return;
  if (req.method === 'HEAD') {
    assert.equal(res.body, '', `HEAD answered with a body: ${where}`);
    return;
  }
  const body = parseBody(res, where);
  if (res.statusCode === 422) checkValidationBody(body, where);
  else checkEnvelope(res, body, requestId, where);
}

async function send(req: FuzzRequest): Promise<LightMyRequestResponse> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    headers[name] = Array.isArray(value) ? value.map(fill) : fill(value);
  }
  const res = await t.app.inject({
    method: req.method as InjectOptions['method'],
    url: fill(req.url),
    headers,
    ...(req.payload === undefined
      ? {}
      : { payload: typeof req.payload === 'string' ? fill(req.payload) : req.payload }),
  });
  checkResponse(req, res);
  return res;
}

// --- text and JSON generators

const charOf = (min: number, max: number, skip: number[] = []) =>
  fc
    .integer({ min, max })
    .filter((c) => !skip.includes(c))
    .map((c) => String.fromCharCode(c));

/** Anything a real client can put in a header value: tab, printable ASCII and Latin-1. */
const headerText = fc.string({ unit: fc.oneof(charOf(0x20, 0x7e), charOf(0x09, 0x09), charOf(0xa0, 0xff)) });
/** Single UTF-16 units, lone surrogates included. */
const utf16Text = fc.string({ unit: charOf(0, 0xffff) });
const anyText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'binary-ascii' }),
  utf16Text,
);
const hugeText = fc
  .tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 3 }), fc.integer({ min: 1_000, max: 60_000 }))
  .map(([s, n]) => s.repeat(n));

/** `min`…`max` repetitions of one character of `unit`: long strings around a length limit. */
const longText = (unit: fc.Arbitrary<string>, min: number, max: number) =>
  fc.tuple(unit, fc.integer({ min, max })).map(([c, n]) => c.repeat(n));

const jsonText = (value: unknown): string => JSON.stringify(value) ?? 'null';

type Nesting = 'object' | 'array' | 'mixed';

/** JSON text `levels` containers deep, built as text so that no recursive serializer is involved. */
function nestedJson(levels: number, nesting: Nesting = 'object', leaf = '0'): string {
  const open: string[] = [];
  const close: string[] = [];
  for (let i = 0; i < levels; i++) {
    const object = nesting === 'object' || (nesting === 'mixed' && i % 2 === 0);
    open.push(object ? '{"k":' : '[');
    close.push(object ? '}' : ']');
  }
  return `${open.join('')}${leaf}${close.reverse().join('')}`;
}

const deepJson = fc
  .record({
    levels: fc.oneof(
      fc.integer({ min: 31, max: 45 }),
      fc.integer({ min: 46, max: 2_000 }),
      fc.constantFrom(5_000, 10_000),
    ),
    nesting: fc.constantFrom<Nesting>('object', 'array', 'mixed'),
    leaf: fc.jsonValue({ maxDepth: 1 }).map(jsonText),
  })
  .map(({ levels, nesting, leaf }) => nestedJson(levels, nesting, leaf));

/** JSON text of any kind of value, the hostile ones included. */
const wildJson: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(jsonText) },
  { weight: 2, arbitrary: anyText.map(jsonText) },
  { weight: 1, arbitrary: fc.double().map(jsonText) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'null',
      'true',
      '0',
      '-1',
      '1e400',
      '-1e400',
      '123456789012345678901234567890',
      '-0',
      '[]',
      '{}',
      '""',
    ),
  },
  { weight: 1, arbitrary: hugeText.map(jsonText) },
  { weight: 1, arbitrary: deepJson },
  { weight: 1, arbitrary: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 50 }).map(jsonText) },
);

/** A JSON object text from entries; duplicate keys are kept, as a hostile client may send them. */
function objectJson(entries: [string, string][]): string {
  return `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`;
}

const fieldName = fc.oneof(
  { weight: 3, arbitrary: fc.string() },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      'toString',
      'id',
      'created_at',
      'tenant_id',
      'deleted_at',
      '',
      'metadata',
    ),
  },
);

/** A metadata or info value: usually an object, sometimes at the size or depth limits or far beyond. */
const jsonObjectValue = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 4 })).map(jsonText) },
  {
    weight: 1,
    arbitrary: fc.dictionary(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' })).map(jsonText),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 8_100, max: 8_300 }).map((n) => jsonText({ blob: 'x'.repeat(n) })),
  },
  { weight: 1, arbitrary: fc.integer({ min: 28, max: 40 }).map((levels) => nestedJson(levels)) },
  { weight: 1, arbitrary: deepJson },
);

const nearly = (valid: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 10, arbitrary: valid },
    { weight: 1, arbitrary: wildJson },
    { weight: 1, arbitrary: fc.constant('null') },
  );

const userFieldValues = {
  reference: nearly(
    fc
      .oneof(
        fc.stringMatching(/^[a-zA-Z0-9_\-:.]{1,20}$/),
        fc.string({ unit: 'grapheme', maxLength: 140 }),
        longText(fc.stringMatching(/^[a-zA-Z0-9_\-:.]$/), 120, 130),
        fc.constantFrom('', ' ', 'a b', 'x'.repeat(128), 'x'.repeat(129), 'ref\\x', 'ref/x', 'réf'),
      )
      .map(jsonText),
  ),
  name: nearly(
    fc
      .oneof(
        fc.string({ unit: 'grapheme', maxLength: 210 }),
        longText(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }), 95, 210),
        utf16Text,
        fc.constantFrom('', 'x'.repeat(200), 'x'.repeat(201)),
      )
      .map(jsonText),
  ),
  email: nearly(
    fc
      .oneof(
        fc.emailAddress(),
        fc.string(),
        fc.constantFrom('a@b', '@', 'a@b.c', `${'x'.repeat(250)}@example.com`),
      )
      .map(jsonText),
  ),
  phone: nearly(
    fc.oneof(fc.string({ maxLength: 40 }), longText(fc.constantFrom('1', ' ', '+'), 28, 36)).map(jsonText),
  ),
  metadata: nearly(jsonObjectValue),
  info: nearly(jsonObjectValue),
};

/**
 * A JSON object of known fields with near-valid or hostile values, sometimes unknown fields. Fields not in
 * `requiredKeys` may be absent.
 */
const fieldsJson = (fields: Record<string, fc.Arbitrary<string>>, requiredKeys: string[] = []) =>
  fc
    .tuple(
      fc.record(fields, { requiredKeys }),
      fc.oneof(
        { weight: 3, arbitrary: fc.constant<[string, string][]>([]) },
        { weight: 1, arbitrary: fc.array(fc.tuple(fieldName, wildJson), { minLength: 1, maxLength: 3 }) },
      ),
    )
    .map(([known, extra]) => objectJson([...(Object.entries(known) as [string, string][]), ...extra]));

/** A user create/update body. */
const userBodyJson = fieldsJson(userFieldValues);

/** Text sent as application/json that is not (or not only) JSON. */
const notJson = fc.oneof(
  anyText,
  fc.constantFrom(
    '{',
    '}',
    '[',
    'nul',
    'tru',
    "{'a':1}",
    '{"a":1,}',
    '{"a":}',
    'NaN',
    'undefined',
    '\ufeff{}',
    ' ',
    '\n',
    '{"a":1}garbage',
    '{"a":1}{"b":2}',
    '"unterminated',
    '{"__proto__":{"x":1}}',
    '{"metadata":{"__proto__":{"x":1}}}',
    '{"constructor":{"prototype":{"x":1}}}',
    '<user><name>x</name></user>',
    'name=x&email=y',
    '\u0000',
  ),
  userBodyJson.chain((text) => fc.nat({ max: Math.max(0, text.length - 1) }).map((n) => text.slice(0, n))),
  fc.tuple(fc.jsonValue().map(jsonText), anyText).map(([json, tail]) => `${json}${tail}`),
);

/** Any body a client might send as application/json. */
const jsonBody = fc.oneof(
  { weight: 8, arbitrary: userBodyJson },
  { weight: 2, arbitrary: fc.jsonValue().map(jsonText) },
  { weight: 1, arbitrary: fc.jsonValue({ stringUnit: 'grapheme' }).map(jsonText) },
  { weight: 1, arbitrary: deepJson },
  { weight: 3, arbitrary: notJson },
  { weight: 1, arbitrary: fc.constant('') },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1_048_577, max: 1_200_000 }).map((n) => jsonText({ name: 'x'.repeat(n) })),
  },
);

const jsonContentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'Application/JSON',
      'application/json;charset=latin1',
      'application/json; foo=bar',
    ),
  },
);

const otherContentTypes = [
  'text/plain',
  'text/html',
  'application/xml',
  'text/xml',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  'application/jsonx',
  'multipart/mixed; boundary=abc',
  'multipart/form-data; boundary=abc',
];
const otherContentType = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...otherContentTypes) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', ';', 'application/', '/json', 'application/vnd.api+json', '*/*'),
  },
  { weight: 1, arbitrary: headerText },
);
const otherBody = fc.oneof(
  anyText.filter((s) => s.length > 0),
  fc.uint8Array({ minLength: 1, maxLength: 2_000 }).map((bytes) => Buffer.from(bytes)),
  fc.constantFrom(
    '<user><name>x</name></user>',
    'name=x&email=y%40z',
    '{"name":"x"}',
    '--abc\r\n\r\n--abc--',
  ),
);

// --- query, path and header generators

const safeEncode = (text: string): string => {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(Buffer.from(text).toString('utf8'));
  }
};

const numberText = fc.oneof(
  fc.integer().map(String),
  fc.integer({ min: -5, max: 105 }).map(String),
  fc.double().map(String),
  fc.bigInt().map(String),
  fc.constantFrom(
    '',
    ' ',
    '1.5',
    '1e2',
    '1e400',
    '-1e400',
    'NaN',
    'Infinity',
    '-Infinity',
    '0x10',
    '0b11',
    ' 5 ',
    '+5',
    '05',
    '-0',
    '9007199254740991',
    '9007199254740993',
    '99999999999999999999',
    'abc',
    '١٢',
  ),
);

const two = (n: number) => String(n).padStart(2, '0');
const dateText = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc
    .record({
      year: fc.integer({ min: 0, max: 10_000 }),
      month: fc.integer({ min: 0, max: 13 }),
      day: fc.integer({ min: 0, max: 32 }),
      hour: fc.integer({ min: 0, max: 25 }),
      minute: fc.integer({ min: 0, max: 61 }),
      second: fc.integer({ min: 0, max: 61 }),
      fraction: fc.constantFrom('', '.0', '.123', '.123456789123'),
      zone: fc.constantFrom(
        'Z',
        'z',
        '+00:00',
        '-00:00',
        '+23:59',
        '-23:59',
        '+24:00',
        '+0530',
        '+05',
        '',
        ' UTC',
      ),
    })
    .map(
      (d) =>
        `${String(d.year).padStart(4, '0')}-${two(d.month)}-${two(d.day)}T${two(d.hour)}:${two(d.minute)}:${two(d.second)}${d.fraction}${d.zone}`,
    ),
  fc.constantFrom(
    '2024-02-30T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '2024-02-29T00:00:00Z',
    '0000-01-01T00:00:00+23:59',
    '9999-12-31T23:59:59.999-23:59',
    '2024-01-01',
    '1700000000',
    'not a date',
  ),
);

const queryKey = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'limit',
      'offset',
      'name',
      'mime_type',
      'created_after',
      'created_before',
      'reference',
      'email',
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '__proto__',
      'constructor',
      'hasOwnProperty',
      'limit[]',
      'limit[0]',
      '',
      'LIMIT',
    ),
  },
  { weight: 1, arbitrary: fc.string() },
);
const queryValue = fc.oneof(
  { weight: 3, arbitrary: numberText },
  { weight: 2, arbitrary: dateText },
  { weight: 2, arbitrary: anyText },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 3_000 }).map((n) => 'x'.repeat(n)) },
);
const queryPair = fc
  .tuple(queryKey, queryValue, fc.constantFrom('encoded', 'raw', 'bare'))
  .map(([key, value, style]) =>
    style === 'encoded'
      ? `${safeEncode(key)}=${safeEncode(value)}`
      : style === 'raw'
        ? `${key}=${value}`
        : key,
  );
/** A query string (with its `?`): repeated keys, empty values, raw reserved characters, bad percent-escapes. */
const queryString = fc.oneof(
  { weight: 6, arbitrary: fc.array(queryPair, { maxLength: 6 }).map((pairs) => `?${pairs.join('&')}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('?', '?&&&', '?=', '?=&=', '?%', '?limit=%', '?limit=%zz', '?offset=%E0%A4%A'),
  },
);

/** A path segment for `:user_id` / `:file_id`: encoded and raw unicode, bad escapes, dots, long ids. */
const randomId = fc.oneof(
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }).map(safeEncode) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '%',
      '%%',
      '%zz',
      '%E0%A4%A',
      '%C0%AF',
      '%00',
      '%2F',
      '%252F',
      '..',
      '.',
      '%2e%2e',
      'usr_',
      'file_',
      '%F0%9F%98%80',
      '😀',
      'ユーザー',
      '\u202e',
      'null',
      '0',
      '-1',
      ' ',
      '',
    ),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^(usr|file)_[A-Za-z0-9_-]{21}$/) },
  { weight: 1, arbitrary: fc.integer({ min: 90, max: 5_000 }).map((n) => 'x'.repeat(n)) },
);
const fixtureIds = {
  user: USER_ID,
  file: FILE_ID,
  session: SESSION_ID,
  conversation: CONVERSATION_ID,
  closable: CLOSABLE_ID,
} as const;
type IdKind = keyof typeof fixtureIds;

const idFor = (kind: IdKind, existing: boolean) =>
  existing
    ? fc.oneof({ weight: 1, arbitrary: fc.constant(fixtureIds[kind]) }, { weight: 3, arbitrary: randomId })
    : randomId;

const apiKeyHeader = fc.oneof(
  { weight: 14, arbitrary: fc.constant<string | string[] | undefined>(VALID_KEY) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<string | string[]>(
      '',
      ' ',
      'pk_',
      'null',
      `${VALID_KEY} `,
      ` ${VALID_KEY}`,
      `${VALID_KEY}x`,
      `Bearer ${VALID_KEY}`,
      [VALID_KEY, VALID_KEY],
      [VALID_KEY, 'x'],
      [''],
    ),
  },
  { weight: 1, arbitrary: headerText },
  { weight: 1, arbitrary: fc.stringMatching(/^pk_[A-Za-z0-9]{43}$/) },
);
const requestIdHeader = fc.oneof(
  { weight: 4, arbitrary: fc.constant<string | undefined>(undefined) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/) },
  { weight: 2, arbitrary: headerText },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', ' ', 'a'.repeat(129), 'a b', 'idé', '../../x', '<script>', 'req_'),
  },
);
const extraHeaders = fc.array(
  fc.tuple(
    fc.constantFrom(
      'accept',
      'accept-encoding',
      'accept-language',
      'origin',
      'x-forwarded-for',
      'if-none-match',
      'idempotency-key',
      'authorization',
      'cookie',
      'x-custom',
    ),
    headerText,
  ),
  { maxLength: 3 },
);

interface HeaderChoice {
  apiKey: string | string[] | undefined;
  requestId: string | undefined;
  extra: [string, string][];
}
const headerChoice: fc.Arbitrary<HeaderChoice> = fc.record({
  apiKey: apiKeyHeader,
  requestId: requestIdHeader,
  extra: extraHeaders,
});
/** Valid key, no request id and nothing else: the requests that reach validation. */
const plainHeaders: HeaderChoice = { apiKey: VALID_KEY, requestId: undefined, extra: [] };

function headersOf(choice: HeaderChoice, contentType?: string): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of choice.extra) headers[name] = value;
  if (choice.apiKey !== undefined) headers['x-api-key'] = choice.apiKey;
  if (choice.requestId !== undefined) headers['x-request-id'] = choice.requestId;
  if (contentType !== undefined) headers['content-type'] = contentType;
  return headers;
}

const withSometimesRandomHeaders = fc.oneof(
  { weight: 3, arbitrary: fc.constant(plainHeaders) },
  { weight: 1, arbitrary: headerChoice },
);

// --- multipart generators

const magicNumbers = [
  [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], // PNG
  [0xff, 0xd8, 0xff], // JPEG
  [0x47, 0x49, 0x46, 0x38, 0x39, 0x61], // GIF
  [0x52, 0x49, 0x46, 0x46, 0, 0, 0, 0, 0x57, 0x45, 0x42, 0x50], // WebP
  [0x25, 0x50, 0x44, 0x46, 0x2d], // PDF
  [0x50, 0x4b, 0x03, 0x04], // ZIP
  [0x1f, 0x8b, 0x08], // gzip
  [0x49, 0x49, 0x2a, 0x00], // TIFF
  [0x1a, 0x45, 0xdf, 0xa3], // EBML
  [0x00, 0x00, 0x00, 0x20, 0x66, 0x74, 0x79, 0x70], // ISO BMFF
  [0x7f, 0x45, 0x4c, 0x46], // ELF
  [0x4d, 0x5a], // PE
  [0xef, 0xbb, 0xbf], // UTF-8 BOM
].map((bytes) => Buffer.from(bytes));

const fileContent = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 500 }).map((s) => Buffer.from(s)),
  },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 2_000 }).map((bytes) => Buffer.from(bytes)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...magicNumbers), fc.uint8Array({ maxLength: 2_000 }))
      .map(([magic, rest]) => Buffer.concat([magic, rest])),
  },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => Buffer.from(jsonText(v))) },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(0)) },
);

const metadataContent = fc.oneof(
  { weight: 3, arbitrary: jsonObjectValue },
  { weight: 1, arbitrary: fc.jsonValue().map(jsonText) },
  { weight: 1, arbitrary: fc.integer({ min: 31, max: 40 }).map((levels) => nestedJson(levels)) },
  { weight: 1, arbitrary: fc.constantFrom(nestedJson(1_000), nestedJson(10_000, 'mixed')) },
  { weight: 1, arbitrary: anyText },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 16_000, max: 20_000 }).map((n) => jsonText({ blob: 'x'.repeat(n) })),
  },
);

const fileName = fc.oneof(
  fc.constantFrom(
    'a.txt',
    'notes.md',
    'data.csv',
    'x.json',
    'img.png',
    'doc.pdf',
    '../../etc/passwd',
    'C:\\dir\\y.txt',
    '',
    '.txt',
    'noext',
    'a"b.txt',
  ),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc
    .tuple(
      fc.string({ maxLength: 3 }),
      longText(fc.constantFrom('a', 'é', '😀', 'ユ', '👩‍👩‍👧'), 60, 300),
      fc.constantFrom('.txt', '.md', ''),
    )
    .map(([prefix, middle, extension]) => `${prefix}${middle}${extension}`),
);
const partContentType = fc.option(
  fc.oneof(
    fc.constantFrom(
      'text/plain',
      'application/json',
      'image/png',
      'image/jpeg',
      'application/pdf',
      'application/octet-stream',
      'text/csv',
      'text/markdown',
      'text/plain; charset=utf-8',
      'application/json; charset=utf-8',
      '',
    ),
    headerText,
  ),
  { nil: undefined },
);

interface Part {
  name: string;
  filename: string | undefined;
  contentType: string | undefined;
  content: Buffer;
}

const part: fc.Arbitrary<Part> = fc
  .oneof(
    { weight: 5, arbitrary: fc.constantFrom('file', 'metadata') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '__proto__',
        'constructor',
        'toString',
        'hasOwnProperty',
        '',
        'FILE',
        'file[]',
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 120 }) },
  )
  .chain((name) =>
    fc.record({
      name: fc.constant(name),
      filename:
        name === 'file'
          ? fc.option(fileName, { nil: undefined, freq: 8 })
          : fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fileName }),
      contentType: partContentType,
      content:
        name === 'metadata'
          ? fc.oneof(
              { weight: 4, arbitrary: metadataContent.map((s) => Buffer.from(s)) },
              { weight: 1, arbitrary: fileContent },
            )
          : fc.oneof(
              { weight: 4, arbitrary: fileContent },
              { weight: 1, arbitrary: metadataContent.map((s) => Buffer.from(s)) },
            ),
    }),
  );

/** A part that the service should accept, so that many uploads get through to the store. */
const goodFilePart: fc.Arbitrary<Part> = fc.record({
  name: fc.constant('file'),
  filename: fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constantFrom('a.txt', 'notes.md', 'data.csv', 'x.json', 'img.png', 'résumé.txt'),
    },
    { weight: 1, arbitrary: fileName },
  ),
  contentType: fc.constantFrom('text/plain', 'application/octet-stream', undefined),
  content: fc.oneof(
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 500 }).map((s) => Buffer.from(s)),
    fc.jsonValue().map((v) => Buffer.from(jsonText(v))),
    fc
      .uint8Array({ maxLength: 500 })
      .map((bytes) => Buffer.concat([magicNumbers[0] as Buffer, Buffer.from(bytes)])),
  ),
});

type Framing = 'ok' | 'truncated' | 'no-closing' | 'lf-only' | 'preamble' | 'epilogue';

interface MultipartBody {
  boundary: string;
  contentType: string | undefined;
  payload: Buffer;
  framing: Framing;
  parts: Part[];
}

function buildMultipart(boundary: string, parts: Part[], framing: Framing, cut: number): Buffer {
  const eol = framing === 'lf-only' ? '\n' : '\r\n';
  const chunks: Buffer[] = [];
  if (framing === 'preamble') chunks.push(Buffer.from(`this is a preamble${eol}`));
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
    const type = p.contentType === undefined ? '' : `Content-Type: ${p.contentType}${eol}`;
    chunks.push(Buffer.from(`--${boundary}${eol}Content-Disposition: ${disposition}${eol}${type}${eol}`));
    chunks.push(p.content, Buffer.from(eol));
  }
  if (framing !== 'no-closing') chunks.push(Buffer.from(`--${boundary}--${eol}`));
  if (framing === 'epilogue') chunks.push(Buffer.from('trailing epilogue bytes'));
  const body = Buffer.concat(chunks);
  return framing === 'truncated' ? body.subarray(0, Math.floor(body.length * cut)) : body;
}

const multipartBody: fc.Arbitrary<MultipartBody> = fc
  .record({
    boundary: fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9]{8,40}$/).map((s) => `----parley${s}`),
      fc.stringMatching(/^[A-Za-z0-9'()+_,\-./:=?]{1,70}$/),
    ),
    first: fc.option(goodFilePart, { nil: undefined, freq: 4 }),
    rest: fc.oneof(
      { weight: 4, arbitrary: fc.array(part, { maxLength: 2 }) },
      { weight: 1, arbitrary: fc.array(part, { maxLength: 6 }) },
    ),
    framing: fc.oneof(
      { weight: 6, arbitrary: fc.constant<Framing>('ok') },
      {
        weight: 1,
        arbitrary: fc.constantFrom<Framing>('truncated', 'no-closing', 'lf-only', 'preamble', 'epilogue'),
      },
    ),
    cut: fc.double({ min: 0, max: 1, noNaN: true }),
    contentTypeStyle: fc.oneof(
      { weight: 8, arbitrary: fc.constant('standard') },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          'quoted',
          'no-boundary',
          'empty-boundary',
          'wrong-boundary',
          'upper-case',
          'with-charset',
          'mixed',
          'text',
          'absent',
        ),
      },
    ),
  })
  .map(({ boundary, first, rest, framing, cut, contentTypeStyle }) => {
    const parts = first === undefined ? rest : [first, ...rest];
    const contentTypes: Record<string, string | undefined> = {
      standard: `multipart/form-data; boundary=${boundary}`,
      quoted: `multipart/form-data; boundary="${boundary}"`,
      'no-boundary': 'multipart/form-data',
      'empty-boundary': 'multipart/form-data; boundary=',
      'wrong-boundary': `multipart/form-data; boundary=x${boundary}`,
      'upper-case': `MULTIPART/FORM-DATA; BOUNDARY=${boundary}`,
      'with-charset': `multipart/form-data; charset=utf-8; boundary=${boundary}`,
      mixed: `multipart/mixed; boundary=${boundary}`,
      text: 'text/plain',
      absent: undefined,
    };
    const contentType = contentTypes[contentTypeStyle];
    return { boundary, contentType, framing, parts, payload: buildMultipart(boundary, parts, framing, cut) };
  });

// --- routes

interface Route {
  method: string;
  path: string;
  /** `:id` in `path` is a user, file, session or conversation id. */
  id?: IdKind;
  body?: 'json' | 'multipart';
  family: 'api' | 'operations' | 'public';
}

const routes: Route[] = [
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
  { method: 'GET', path: '/v1/agents/sessions', family: 'api' },
  { method: 'GET', path: '/v1/agents/sessions/:id', id: 'session', family: 'api' },
  { method: 'POST', path: '/v1/agents/sessions/:id/messages', id: 'session', body: 'json', family: 'api' },
  { method: 'GET', path: '/v1/agents/sessions/:id/messages', id: 'session', family: 'api' },
  { method: 'GET', path: '/v1/agents/sessions/:id/messages/msg_x', id: 'session', family: 'api' },
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
const idRoutes = routes.filter((r) => r.id !== undefined);
const operationRoutes = routes.filter((r) => r.family === 'operations');

/**
 * The route's URL with `id`; DELETE and the API's terminate never get the shared fixtures, so they stay for other
 * runs (the public terminate and inactivity have a conversation of their own to close).
 */
function idArbitrary(route: Route): fc.Arbitrary<string> {
  if (route.id === undefined) return fc.constant('');
  return idFor(
    route.id,
    route.method !== 'DELETE' && !(route.family === 'api' && route.path.endsWith('/terminate')),
  );
}
const urlOf = (route: Route, id: string, query = '') => `${route.path.replace(':id', id)}${query}`;

type BodyChoice = { contentType: string | undefined; payload: string | Buffer | undefined };

const bodyChoice: fc.Arbitrary<BodyChoice> = fc.oneof(
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
function routeBody(route: Route, json: fc.Arbitrary<string> = jsonBody): fc.Arbitrary<BodyChoice> {
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
const anyRequest: fc.Arbitrary<FuzzRequest> = fc
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

const userRoute = (method: 'POST' | 'PATCH') =>
  method === 'POST'
    ? fc.constant('/v1/agents/users')
    : idFor('user', true).map((id) => `/v1/agents/users/${id}`);

/** Runs one fuzzing property over `requests`, each response checked by `send`, plus an optional extra check. */
async function fuzz(
  requests: fc.Arbitrary<FuzzRequest>,
  extra?: (req: FuzzRequest, res: LightMyRequestResponse) => Promise<void> | void,
  examples: FuzzRequest[] = [],
  numRuns = RUNS,
): Promise<void> {
  await fc.assert(
    fc.asyncProperty(requests, async (req) => {
      const res = await send(req);
      await extra?.(req, res);
    }),
    { numRuns, examples: examples.map((req) => [described(req)]), includeErrorInReport: true },
  );
}

const jsonRequest = (method: string, url: string, payload: string): FuzzRequest =>
  described({
    method,
    url,
    headers: { 'x-api-key': VALID_KEY, 'content-type': 'application/json' },
    payload,
  });

interface UploadCase {
  body: MultipartBody;
  req: FuzzRequest;
}

/** The upload request for a generated multipart body, described by its request alone. */
function uploadCase(body: MultipartBody): UploadCase {
  const req = described({
    method: 'POST',
    url: '/v1/agents/files',
    headers: headersOf(plainHeaders, body.contentType),
    payload: body.payload,
  });
  return Object.assign({ body, req }, { [fc.toStringMethod]: () => summarise(req) });
}

/**
 * After a 201 upload: the record and the bytes read back are what the upload answered and sent. `hidden` are the
 * record's fields that the upload's answer leaves out (the public family shows neither metadata nor session_id).
 */
async function checkStoredUpload(
  req: FuzzRequest,
  res: LightMyRequestResponse,
  body: MultipartBody,
  hidden?: Record<string, unknown>,
) {
  const file = res.json();
  assert.match(file.id, /^file_/, summarise(req));
  const record = await send(
    described({ method: 'GET', url: `/v1/agents/files/${file.id}`, headers: headersOf(plainHeaders) }),
  );
  assert.equal(record.statusCode, 200, record.body);
  assert.deepEqual(
    record.json(),
    { ...file, metadata: record.json().metadata, ...hidden },
    `read-back differs after ${summarise(req)}`,
  );
  const content = await send(
    described({
      method: 'GET',
      url: `/v1/agents/files/${file.id}/content`,
      headers: headersOf(plainHeaders),
    }),
  );
  assert.equal(content.statusCode, 200, content.body);
  assert.equal(content.rawPayload.length, file.size, summarise(req));
  assert.equal(content.headers['content-type'], file.mime_type, summarise(req));
  const sent = body.parts.filter((p) => p.name === 'file' && p.filename !== undefined);
  const bytes = sent[0]?.content;
  if (body.framing === 'ok' && sent.length === 1 && bytes && !bytes.includes(`--${body.boundary}`)) {
    assert.ok(content.rawPayload.equals(bytes), `downloaded bytes differ after ${summarise(req)}`);
  }
}

// --- the public conversation family

const publicRoutes: Route[] = [
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
const publicGetRoutes = publicRoutes.filter((r) => r.method === 'GET');

/** The token that opens the route's fixture conversation, and the one that opens the other fixture. */
const tokenFor = (route: Route) => (route.id === 'closable' ? CLOSABLE_TOKEN : SESSION_TOKEN);
const otherTokenFor = (route: Route) => (route.id === 'closable' ? SESSION_TOKEN : CLOSABLE_TOKEN);
const otherIdFor = (route: Route) => (route.id === 'closable' ? CONVERSATION_ID : CLOSABLE_ID);

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
const publicBodies: Record<string, fc.Arbitrary<string>> = {
  '/messages': fieldsJson(messageFieldValues, ['content']),
  '/feedback': fieldsJson(feedbackFieldValues, ['score']),
  '/inactivity': fieldsJson(inactivityFieldValues, ['step']),
  '/terminate': fieldsJson(terminateFieldValues),
};

/** Mostly the route's own fields, sometimes anything a client might send as JSON. */
function publicJsonBody(route: Route): fc.Arbitrary<string> {
  const own = publicBodies[route.path.slice(route.path.lastIndexOf('/'))];
  return own === undefined
    ? jsonBody
    : fc.oneof({ weight: 4, arbitrary: own }, { weight: 1, arbitrary: jsonBody });
}

/** Ways of writing `Authorization` for `token` that RFC 6750 allows: any case of the scheme, spaces after it. */
const bearerSpellings = (token: string) => [
  `Bearer ${token}`,
  `bearer ${token}`,
  `BEARER ${token}`,
  `Bearer   ${token}`,
  `Bearer ${token} `,
];

/**
 * The fixture conversation the request's Authorization header opens, or null. Node keeps the first of repeated
 * Authorization headers and drops the others.
 */
function grantOf(req: FuzzRequest): string | null {
  const value = req.headers.authorization;
  const header = Array.isArray(value) ? value[0] : value;
  if (header === undefined) return null;
  if (bearerSpellings(SESSION_TOKEN).includes(header)) return CONVERSATION_ID;
  if (bearerSpellings(CLOSABLE_TOKEN).includes(header)) return CLOSABLE_ID;
  return null;
}

const base64urlAlphabet = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'];

type Breakage =
  | 'edit-signed'
  | 'delete-signed'
  | 'insert-signed'
  | 'edit-signature'
  | 'cut'
  | 'extend'
  | 'swap-payload';

/**
 * The fixture token changed so that it cannot verify any more. Only changes that alter the signed text or the
 * signature's bytes: a lenient base64url decoder reads `=`, `+` or the spare bits of the last character as no change.
 */
function breakToken(how: Breakage, at: number, chars: string): string {
  const token = sessionToken;
  const signedEnd = token.lastIndexOf('.');
  const other = (c: string | undefined) => (chars[0] === c ? (c === 'A' ? 'B' : 'A') : (chars[0] as string));
  switch (how) {
    case 'edit-signed': {
      const i = at % signedEnd;
      return `${token.slice(0, i)}${other(token[i])}${token.slice(i + 1)}`;
    }
    case 'delete-signed': {
      const i = at % signedEnd;
      return `${token.slice(0, i)}${token.slice(i + 1)}`;
    }
    case 'insert-signed': {
      const i = at % (signedEnd + 1);
      return `${token.slice(0, i)}${chars}${token.slice(i)}`;
    }
    case 'edit-signature': {
      // Not the last character, whose spare bits a decoder may ignore.
      const i = signedEnd + 1 + (at % (token.length - signedEnd - 2));
      return `${token.slice(0, i)}${other(token[i])}${token.slice(i + 1)}`;
    }
    case 'cut':
      return token.slice(0, at % token.length);
    case 'extend':
      return `${token}${chars}`;
    case 'swap-payload':
      return `${closableToken.slice(0, closableToken.lastIndexOf('.'))}${token.slice(signedEnd)}`;
  }
}

/** The fixture's session token, edited so that it no longer verifies (made when generated, from the real token). */
const brokenToken: fc.Arbitrary<string> = fc
  .record({
    how: fc.constantFrom<Breakage>(
      'edit-signed',
      'delete-signed',
      'insert-signed',
      'edit-signature',
      'cut',
      'extend',
      'swap-payload',
    ),
    at: fc.nat(),
    chars: fc.string({ unit: fc.constantFrom(...base64urlAlphabet), minLength: 1, maxLength: 3 }),
  })
  .map(({ how, at, chars }) => breakToken(how, at, chars));

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

function publicHeadersOf(
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
const plainPublicHeaders = (route: Route): PublicHeaderChoice => ({
  authorization: `Bearer ${tokenFor(route)}`,
  apiKey: undefined,
  requestId: undefined,
  extra: [],
});

const publicHeaderChoice = (route: Route): fc.Arbitrary<PublicHeaderChoice> =>
  fc.record({
    authorization: credentialFor(route),
    apiKey: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: apiKeyHeader },
    ),
    requestId: requestIdHeader,
    extra: extraHeaders,
  });

const withSometimesRandomPublicHeaders = (route: Route) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant(plainPublicHeaders(route)) },
    { weight: 1, arbitrary: publicHeaderChoice(route) },
  );

/** A request to any public route with anything in it, the body chosen to suit the route most of the time. */
const anyPublicRequest: fc.Arbitrary<FuzzRequest> = fc
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
const publicJsonRequest = (route: Route, payload?: string): FuzzRequest =>
  described({
    method: route.method,
    url: urlOf(route, fixtureIds[route.id ?? 'conversation']),
    headers: publicHeadersOf(
      plainPublicHeaders(route),
      payload === undefined ? undefined : 'application/json',
    ),
    ...(payload === undefined ? {} : { payload }),
  });

const publicRoute = (method: string, rest: string) => {
  const route = publicRoutes.find((r) => r.method === method && r.path === publicPath(':id', rest));
  assert.ok(route, `${method} ${rest}`);
  return route;
};

/** The conversation id of a public URL, decoded as the router decodes it. */
const pathIdOf = (req: FuzzRequest) => decodeURIComponent(fill(req.url.split('?')[0]?.split('/')[5] ?? ''));

/** One thing wrong with a session token (or nothing). */
type TokenDefect =
  | 'none'
  | 'expired'
  | 'not-yet-valid'
  | 'wrong-secret'
  | 'HS512'
  | 'alg-none'
  | 'wrong-issuer'
  | 'wrong-audience'
  | 'no-sub'
  | 'empty-sub'
  | 'no-jti'
  | 'no-exp'
  | 'no-tid'
  | 'empty-tid'
  | 'numeric-agt';

interface ForgedToken {
  defect: TokenDefect;
  /** The claims (placeholders allowed): the conversation, its tenant and agent. */
  sub: string;
  tid: string;
  agt: string;
}

/** Signs a token as the service would, but with the given claims and defect. */
async function forge({ defect, sub, tid, agt }: ForgedToken): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: JWTPayload = {
    iss: 'parley',
    aud: 'parley-public',
    sub: fill(sub),
    tid: fill(tid),
    agt,
    jti: 'tok_forged',
    iat: now,
    exp: now + 3_600,
  };
  switch (defect) {
    case 'expired':
      claims.exp = now - 3_600;
      break;
    case 'not-yet-valid':
      claims.nbf = now + 3_600;
      break;
    case 'wrong-issuer':
      claims.iss = 'not-parley';
      break;
    case 'wrong-audience':
      claims.aud = 'parley-admin';
      break;
    case 'no-sub':
      delete claims.sub;
      break;
    case 'empty-sub':
      claims.sub = '';
      break;
    case 'no-jti':
      delete claims.jti;
      break;
    case 'no-exp':
      delete claims.exp;
      break;
    case 'no-tid':
      delete claims.tid;
      break;
    case 'empty-tid':
      claims.tid = '';
      break;
    case 'numeric-agt':
      claims.agt = 7;
      break;
  }
  if (defect === 'alg-none') return new UnsecuredJWT(claims).encode();
  const secret = new TextEncoder().encode(defect === 'wrong-secret' ? `${TOKEN_SECRET}-other` : TOKEN_SECRET);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: defect === 'HS512' ? 'HS512' : 'HS256', typ: 'JWT' })
    .sign(secret);
}

/** Path ids that the router takes as they are: no bad escapes, no dot segments, not too long. */
const routableId = fc.oneof(
  fc.stringMatching(/^ses_[A-Za-z0-9]{21}$/),
  fc
    .string({ maxLength: 30 })
    .filter((s) => s !== '.' && s !== '..')
    .map(encodeURIComponent),
);

// --- the tests

before(async () => {
  t = await buildTestApp({
    PARLEY_RATE_LIMIT_KEY: '1000000',
    PARLEY_RATE_LIMIT_TOKEN: '1000000',
    PARLEY_TOKEN_SECRET: TOKEN_SECRET,
  });
  const user = await t.app.inject({
    method: 'POST',
    url: '/v1/agents/users',
    headers: { 'x-api-key': t.apiKey },
    payload: { reference: 'fuzz-fixture', metadata: { a: 1 } },
  });
  assert.equal(user.statusCode, 201, user.body);
  userId = user.json().id;
  const upload = buildMultipart(
    'fixture',
    [{ name: 'file', filename: 'fixture.txt', contentType: 'text/plain', content: Buffer.from('hello') }],
    'ok',
    1,
  );
  const file = await t.app.inject({
    method: 'POST',
    url: '/v1/agents/files',
    headers: { 'x-api-key': t.apiKey, 'content-type': 'multipart/form-data; boundary=fixture' },
    payload: upload,
  });
  assert.equal(file.statusCode, 201, file.body);
  fileId = file.json().id;
  const session = await t.app.inject({
    method: 'POST',
    url: '/v1/agents/demo/sessions',
    headers: { 'x-api-key': t.apiKey },
    payload: { user: { id: userId }, context: { plan: 'fuzz' } },
  });
  assert.equal(session.statusCode, 201, session.body);
  sessionId = session.json().id;
  const conversation = await startConversation(t, 'demo', { user: { id: userId } });
  conversationId = conversation.conversation.id;
  sessionToken = conversation.session_token;
  const closable = await startConversation(t);
  closableId = closable.conversation.id;
  closableToken = closable.session_token;
});
after(() => t.close());

describe('fuzzing every route', () => {
  it('answers any request to any route without a 5xx and with the documented error shapes', async () => {
    await fuzz(anyRequest, undefined, [], 300);
  });

  it('answers random JSON bodies to user creation and update with a user that reads back the same, an envelope or a 422', async () => {
    const requests = fc
      .record({
        method: fc.constantFrom<'POST' | 'PATCH'>('POST', 'PATCH'),
        contentType: jsonContentType,
        payload: jsonBody,
      })
      .chain(({ method, contentType, payload }) =>
        userRoute(method).map((url) =>
          described({
            method,
            url,
            headers: { 'x-api-key': VALID_KEY, 'content-type': contentType },
            payload,
          }),
        ),
      );
    await fuzz(
      requests,
      async (req, res) => {
        if (res.statusCode !== 200 && res.statusCode !== 201) return;
        const user = res.json();
        assert.match(user.id, /^usr_/, summarise(req));
        assert.ok(isPlainObject(user.metadata) && isPlainObject(user.info), summarise(req));
        // What the write answered is what was stored.
        const read = await send(
          described({ method: 'GET', url: `/v1/agents/users/${user.id}`, headers: headersOf(plainHeaders) }),
        );
        assert.equal(read.statusCode, 200, read.body);
        assert.deepEqual(read.json(), user, `read-back differs after ${summarise(req)}`);
      },
      [
        jsonRequest('POST', '/v1/agents/users', nestedJson(10_000)),
        jsonRequest('POST', '/v1/agents/users', objectJson([['metadata', nestedJson(33)]])),
        jsonRequest(
          'PATCH',
          `/v1/agents/users/${USER_ID}`,
          objectJson([['info', nestedJson(10_000, 'mixed')]]),
        ),
      ],
    );
  });

  it('answers text that is not JSON, sent as application/json, with 422 json_invalid at ["body"]', async () => {
    const requests = fc
      .record({ method: fc.constantFrom<'POST' | 'PATCH'>('POST', 'PATCH'), payload: notJson })
      .map(({ method, payload }) =>
        jsonRequest(method, method === 'POST' ? '/v1/agents/users' : `/v1/agents/users/${USER_ID}`, payload),
      );
    await fuzz(requests, (req, res) => {
      // The text as the server decodes it (UTF-8, a leading byte-order mark dropped); an empty body means no fields.
      const text = Buffer.from(fill(String(req.payload)))
        .toString('utf8')
        .replace(/^\ufeff/, '');
      if (text === '') return;
      try {
        JSON.parse(text);
        return;
      } catch {
        assert.equal(res.statusCode, 422, `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`);
        const detail = res.json().detail;
        assert.equal(detail.length, 1, res.body);
        assert.deepEqual(detail[0].loc, ['body']);
        assert.equal(detail[0].type, 'json_invalid');
      }
    });
  });

  it('refuses bodies of other content types on the JSON routes with 415 unsupported_media_type', async () => {
    const requests = fc
      .record({
        method: fc.constantFrom<'POST' | 'PATCH'>('POST', 'PATCH'),
        contentType: fc.constantFrom(
          ...otherContentTypes.filter((type) => !type.startsWith('multipart/form-data')),
        ),
        payload: otherBody,
      })
      .map(({ method, contentType, payload }) =>
        described({
          method,
          url: method === 'POST' ? '/v1/agents/users' : `/v1/agents/users/${USER_ID}`,
          headers: { 'x-api-key': VALID_KEY, 'content-type': contentType },
          payload,
        }),
      );
    await fuzz(requests, (req, res) => {
      assert.equal(res.statusCode, 415, `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`);
      assert.equal(res.json().error.code, 'unsupported_media_type');
    });
  });

  it('refuses multipart bodies on the JSON routes with 415 unsupported_media_type', async () => {
    const requests = fc
      .record({
        method: fc.constantFrom<'POST' | 'PATCH'>('POST', 'PATCH'),
        body: multipartBody.filter(
          (b) => b.contentType?.toLowerCase().startsWith('multipart/form-data') ?? false,
        ),
      })
      .map(({ method, body }) =>
        described({
          method,
          url: method === 'POST' ? '/v1/agents/users' : `/v1/agents/users/${USER_ID}`,
          headers: headersOf(plainHeaders, body.contentType),
          payload: body.payload,
        }),
      );
    const multipartUser = (method: 'POST' | 'PATCH', payload: string) =>
      described({
        method,
        url: method === 'POST' ? '/v1/agents/users' : `/v1/agents/users/${USER_ID}`,
        headers: { 'x-api-key': VALID_KEY, 'content-type': 'multipart/form-data; boundary=abc' },
        payload,
      });
    await fuzz(
      requests,
      (req, res) => {
        assert.equal(res.statusCode, 415, `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`);
        assert.equal(res.json().error.code, 'unsupported_media_type');
      },
      [
        multipartUser(
          'POST',
          '--abc\r\nContent-Disposition: form-data; name="name"\r\n\r\nAda\r\n--abc--\r\n',
        ),
        multipartUser('POST', '--abc--\r\n'),
        multipartUser(
          'PATCH',
          '--abc\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{}\r\n--abc--\r\n',
        ),
      ],
    );
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
        idArbitrary(route).map((id) =>
          described({ method, url: urlOf(route, id), headers: headersOf(headers) }),
        ),
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

  it('answers random multipart bodies to the file upload with a file that reads back the same, an envelope or a 422', async () => {
    await fc.assert(
      fc.asyncProperty(multipartBody.map(uploadCase), async ({ body, req }) => {
        const res = await send(req);
        if (res.statusCode === 201) await checkStoredUpload(req, res, body);
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  it('accepts an upload of a text file with a metadata part holding a JSON object, whatever type the part declares', async () => {
    const cases = fc
      .record({
        text: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }),
        // A JSON part is parsed safely: prototype-poisoning keys at any depth are refused (tested elsewhere).
        metadata: fc
          .dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 })
          .filter((m) => !/"(__proto__|constructor)"/.test(JSON.stringify(m))),
        metadataType: fc.constantFrom(
          undefined,
          'text/plain',
          'application/json',
          'application/json; charset=utf-8',
        ),
      })
      .map(({ text, metadata, metadataType }) => {
        const parts: Part[] = [
          { name: 'file', filename: 'notes.txt', contentType: 'text/plain', content: Buffer.from(text) },
          {
            name: 'metadata',
            filename: undefined,
            contentType: metadataType,
            content: Buffer.from(jsonText(metadata)),
          },
        ];
        const boundary = 'parley-fuzz-boundary';
        const upload = uploadCase({
          boundary,
          contentType: `multipart/form-data; boundary=${boundary}`,
          framing: 'ok',
          parts,
          payload: buildMultipart(boundary, parts, 'ok', 1),
        });
        return Object.assign(upload, { metadata });
      });
    await fc.assert(
      fc.asyncProperty(cases, async ({ body, req, metadata }) => {
        const res = await send(req);
        assert.equal(res.statusCode, 201, `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`);
        await checkStoredUpload(req, res, body);
        const record = await send(
          described({
            method: 'GET',
            url: `/v1/agents/files/${res.json().id}`,
            headers: headersOf(plainHeaders),
          }),
        );
        assert.deepEqual(record.json().metadata, JSON.parse(jsonText(metadata)), summarise(req));
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
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
    let first = await t.store.getFeedback(conversationId);
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
        const stored = await t.store.getFeedback(conversationId);
        assert.deepEqual(
          stored,
          { ...feedback, session_id: conversationId, metadata: sent.metadata ?? {} },
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
          closableId = fresh.conversation.id;
          closableToken = fresh.session_token;
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
          assert.equal(body.id, closableId, where);
          assert.equal(body.status, 'closed', where);
          assert.equal(body.reason, sentJson(req).reason ?? null, where);
        }
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

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
        } else if (token.defect !== 'none') {
          assert.deepEqual([res.statusCode, code], [401, 'session_token_invalid'], where);
        } else if (pathIdOf(req) !== fill(token.sub)) {
          assert.deepEqual([res.statusCode, code], [403, 'forbidden'], where);
        } else if (fill(token.sub) === conversationId && token.tid === 't1') {
          assert.equal(res.statusCode, 200, where);
        } else {
          // Another tenant's view of the fixture, or a conversation that does not exist.
          assert.deepEqual([res.statusCode, code], [404, 'conversation_not_found'], where);
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
        await checkStoredUpload(req, res, body, { metadata: {}, session_id: conversationId });
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });
});

describe('fuzzing regressions', () => {
  const deepShapes: [string, string][] = [
    ['objects at the top level', nestedJson(10_000, 'object')],
    ['arrays at the top level', nestedJson(10_000, 'array')],
    ['objects and arrays at the top level', nestedJson(10_000, 'mixed')],
    ['objects inside metadata', objectJson([['metadata', nestedJson(10_000)]])],
    ['arrays and objects inside info', objectJson([['info', nestedJson(10_000, 'mixed')]])],
    ['arrays inside name', objectJson([['name', nestedJson(10_000, 'array')]])],
    ['objects inside an unknown field', objectJson([['extra', nestedJson(10_000)]])],
  ];
  for (const [shape, payload] of deepShapes) {
    it(`answers 422, not 500, to a user body nested 10,000 levels deep with ${shape}`, async () => {
      const res = await send(jsonRequest('POST', '/v1/agents/users', payload));
      assert.equal(res.statusCode, 422, res.body);
    });
  }

  it('refuses metadata and info exactly 33 levels deep with 422 too_deep at their field', async () => {
    for (const field of ['metadata', 'info']) {
      for (const [method, url] of [
        ['POST', '/v1/agents/users'],
        ['PATCH', `/v1/agents/users/${USER_ID}`],
      ] as const) {
        const res = await send(jsonRequest(method, url, objectJson([[field, nestedJson(33)]])));
        assert.equal(res.statusCode, 422, `${method} ${field}: ${res.body}`);
        assert.deepEqual(res.json().detail, [
          { loc: ['body', field], msg: 'Nested deeper than 32 levels', type: 'too_deep' },
        ]);
      }
    }
  });

  it('accepts metadata and info exactly 32 levels deep', async () => {
    const res = await send(
      jsonRequest(
        'POST',
        '/v1/agents/users',
        objectJson([
          ['metadata', nestedJson(32)],
          ['info', nestedJson(32, 'mixed')],
        ]),
      ),
    );
    assert.equal(res.statusCode, 201, res.body);
  });

  it('refuses an upload whose metadata part is 33 levels deep with 422 at ["body","metadata"]', async () => {
    const payload = buildMultipart(
      'deep',
      [
        { name: 'file', filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('hello') },
        {
          name: 'metadata',
          filename: undefined,
          contentType: undefined,
          content: Buffer.from(nestedJson(33)),
        },
      ],
      'ok',
      1,
    );
    const res = await send(
      described({
        method: 'POST',
        url: '/v1/agents/files',
        headers: { 'x-api-key': VALID_KEY, 'content-type': 'multipart/form-data; boundary=deep' },
        payload,
      }),
    );
    assert.equal(res.statusCode, 422, res.body);
    assert.deepEqual(res.json().detail[0].loc, ['body', 'metadata']);
    assert.equal(res.json().detail[0].type, 'too_deep');
  });

  it('refuses a user name holding a lone surrogate with 422 string_unicode rather than storing it corrupted', async () => {
    const created = await send(jsonRequest('POST', '/v1/agents/users', '{"name":"x\\ud800y"}'));
    assert.equal(created.statusCode, 422, created.body);
    assert.deepEqual(created.json().detail[0].loc, ['body', 'name']);
    assert.equal(created.json().detail[0].type, 'string_unicode');
  });

  it('cuts a long file name with astral characters without splitting a character and reads it back the same', async () => {
    const parts: Part[] = [
      {
        name: 'file',
        filename: `ab${'😀'.repeat(200)}.txt`,
        contentType: 'text/plain',
        content: Buffer.from('hello'),
      },
    ];
    const body: MultipartBody = {
      boundary: 'astral',
      contentType: 'multipart/form-data; boundary=astral',
      framing: 'ok',
      parts,
      payload: buildMultipart('astral', parts, 'ok', 1),
    };
    const { req } = uploadCase(body);
    const res = await send(req);
    assert.equal(res.statusCode, 201, res.body);
    const name: string = res.json().name;
    assert.ok(name.length <= 255, name);
    assert.doesNotMatch(
      name,
      /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/u,
      'a lone surrogate',
    );
    await checkStoredUpload(req, res, body);
  });

  it('accepts an upload whose metadata part is declared application/json', async () => {
    const parts: Part[] = [
      { name: 'file', filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('hello') },
      {
        name: 'metadata',
        filename: undefined,
        contentType: 'application/json',
        content: Buffer.from('{"a":1}'),
      },
    ];
    const { req } = uploadCase({
      boundary: 'typed',
      contentType: 'multipart/form-data; boundary=typed',
      framing: 'ok',
      parts,
      payload: buildMultipart('typed', parts, 'ok', 1),
    });
    const res = await send(req);
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(res.json().metadata, { a: 1 });
  });

  it('answers a JSON body over the body limit with 413 payload_too_large', async () => {
    const res = await send(
      jsonRequest('POST', '/v1/agents/users', jsonText({ name: 'x'.repeat(1_100_000) })),
    );
    assert.equal(res.statusCode, 413, res.body);
    assert.equal(res.json().error.code, 'payload_too_large');
  });
});
