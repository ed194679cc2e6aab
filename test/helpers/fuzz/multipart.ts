// Generators of multipart bodies (parts, framing, boundaries and content types) and the checks of an upload
// that was accepted.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { anyText, headerText, jsonObjectValue, jsonText, longText, nestedJson } from './json.ts';
import { headersOf, plainHeaders } from './queries-and-headers.ts';
import { described, type FuzzRequest, send, summarise } from './send.ts';

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

export interface Part {
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

export interface MultipartBody {
  boundary: string;
  contentType: string | undefined;
  payload: Buffer;
  framing: Framing;
  parts: Part[];
}

export function buildMultipart(boundary: string, parts: Part[], framing: Framing, cut: number): Buffer {
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

export const multipartBody: fc.Arbitrary<MultipartBody> = fc
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

interface UploadCase {
  body: MultipartBody;
  req: FuzzRequest;
}

/** The upload request for a generated multipart body, described by its request alone. */
export function uploadCase(body: MultipartBody): UploadCase {
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
export async function checkStoredUpload(
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
