// Property-based fuzzing of the file upload with random multipart bodies: an accepted file reads back with
// the bytes and metadata that were sent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { RUNS, useFuzzApp } from '../../helpers/fuzz/fixture.ts';
import { jsonText } from '../../helpers/fuzz/json.ts';
import {
  buildMultipart,
  checkStoredUpload,
  multipartBody,
  type Part,
  uploadCase,
} from '../../helpers/fuzz/multipart.ts';
import { headersOf, plainHeaders } from '../../helpers/fuzz/queries-and-headers.ts';
import { clip, described, send, summarise } from '../../helpers/fuzz/send.ts';

useFuzzApp();

describe('fuzzing every route', () => {
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
});
