// Generators of query strings, path ids and headers (X-API-Key, X-Request-Id and others).
import fc from 'fast-check';
import { fixtureIds, type IdKind, VALID_KEY } from './fixture.ts';
import { anyText, headerText } from './json.ts';

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
export const queryString = fc.oneof(
  { weight: 6, arbitrary: fc.array(queryPair, { maxLength: 6 }).map((pairs) => `?${pairs.join('&')}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('?', '?&&&', '?=', '?=&=', '?%', '?limit=%', '?limit=%zz', '?offset=%E0%A4%A'),
  },
);

/** A path segment for `:user_id` / `:file_id`: encoded and raw unicode, bad escapes, dots, long ids. */
export const randomId = fc.oneof(
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

export const idFor = (kind: IdKind, existing: boolean) =>
  existing
    ? fc.oneof({ weight: 1, arbitrary: fc.constant(fixtureIds[kind]) }, { weight: 3, arbitrary: randomId })
    : randomId;

export const apiKeyHeader = fc.oneof(
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
export const requestIdHeader = fc.oneof(
  { weight: 4, arbitrary: fc.constant<string | undefined>(undefined) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/) },
  { weight: 2, arbitrary: headerText },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', ' ', 'a'.repeat(129), 'a b', 'idé', '../../x', '<script>', 'req_'),
  },
);
export const extraHeaders = fc.array(
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
export const headerChoice: fc.Arbitrary<HeaderChoice> = fc.record({
  apiKey: apiKeyHeader,
  requestId: requestIdHeader,
  extra: extraHeaders,
});
/** Valid key, no request id and nothing else: the requests that reach validation. */
export const plainHeaders: HeaderChoice = { apiKey: VALID_KEY, requestId: undefined, extra: [] };

export function headersOf(choice: HeaderChoice, contentType?: string): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of choice.extra) headers[name] = value;
  if (choice.apiKey !== undefined) headers['x-api-key'] = choice.apiKey;
  if (choice.requestId !== undefined) headers['x-request-id'] = choice.requestId;
  if (contentType !== undefined) headers['content-type'] = contentType;
  return headers;
}

export const withSometimesRandomHeaders = fc.oneof(
  { weight: 3, arbitrary: fc.constant(plainHeaders) },
  { weight: 1, arbitrary: headerChoice },
);
