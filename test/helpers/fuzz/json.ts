// Generators of text and JSON bodies: hostile strings, deep and huge JSON, near-valid user fields, text that
// is not JSON and bodies of other content types.
import fc from 'fast-check';

const charOf = (min: number, max: number, skip: number[] = []) =>
  fc
    .integer({ min, max })
    .filter((c) => !skip.includes(c))
    .map((c) => String.fromCharCode(c));

/** Anything a real client can put in a header value: tab, printable ASCII and Latin-1. */
export const headerText = fc.string({
  unit: fc.oneof(charOf(0x20, 0x7e), charOf(0x09, 0x09), charOf(0xa0, 0xff)),
});
/** Single UTF-16 units, lone surrogates included. */
export const utf16Text = fc.string({ unit: charOf(0, 0xffff) });
export const anyText = fc.oneof(
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
export const longText = (unit: fc.Arbitrary<string>, min: number, max: number) =>
  fc.tuple(unit, fc.integer({ min, max })).map(([c, n]) => c.repeat(n));

export const jsonText = (value: unknown): string => JSON.stringify(value) ?? 'null';

type Nesting = 'object' | 'array' | 'mixed';

/** JSON text `levels` containers deep, built as text so that no recursive serializer is involved. */
export function nestedJson(levels: number, nesting: Nesting = 'object', leaf = '0'): string {
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
export function objectJson(entries: [string, string][]): string {
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
export const jsonObjectValue = fc.oneof(
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

export const nearly = (valid: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 10, arbitrary: valid },
    { weight: 1, arbitrary: wildJson },
    { weight: 1, arbitrary: fc.constant('null') },
  );

export const userFieldValues = {
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
export const fieldsJson = (fields: Record<string, fc.Arbitrary<string>>, requiredKeys: string[] = []) =>
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
export const userBodyJson = fieldsJson(userFieldValues);

/** Text sent as application/json that is not (or not only) JSON. */
export const notJson = fc.oneof(
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
export const jsonBody = fc.oneof(
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

export const jsonContentType = fc.oneof(
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

export const otherContentTypes = [
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
export const otherContentType = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...otherContentTypes) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', ';', 'application/', '/json', 'application/vnd.api+json', '*/*'),
  },
  { weight: 1, arbitrary: headerText },
);
export const otherBody = fc.oneof(
  anyText.filter((s) => s.length > 0),
  fc.uint8Array({ minLength: 1, maxLength: 2_000 }).map((bytes) => Buffer.from(bytes)),
  fc.constantFrom(
    '<user><name>x</name></user>',
    'name=x&email=y%40z',
    '{"name":"x"}',
    '--abc\r\n\r\n--abc--',
  ),
);
