// Property-based fuzzing of the JSON bodies of user creation and update: what a write answers is what reads
// back; text that is not JSON, other content types and multipart bodies are refused as documented.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { fill, USER_ID, useFuzzApp, VALID_KEY } from '../../helpers/fuzz/fixture.ts';
import {
  jsonBody,
  jsonContentType,
  nestedJson,
  notJson,
  objectJson,
  otherBody,
  otherContentTypes,
} from '../../helpers/fuzz/json.ts';
import { multipartBody } from '../../helpers/fuzz/multipart.ts';
import { headersOf, plainHeaders } from '../../helpers/fuzz/queries-and-headers.ts';
import { userRoute } from '../../helpers/fuzz/routes.ts';
import {
  clip,
  described,
  fuzz,
  isPlainObject,
  jsonRequest,
  send,
  summarise,
} from '../../helpers/fuzz/send.ts';

useFuzzApp();

/** The service's body limit when PARLEY_MAX_BODY_BYTES is unset, as the fuzzed app runs. */
const DEFAULT_BODY_LIMIT = 1024 * 1024;

describe('fuzzing every route', () => {
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
      const bytes = Buffer.from(fill(String(req.payload)));
      // A truncated huge body can pass the body limit (1 MiB by default): that is read as too large, not parsed.
      if (bytes.length > DEFAULT_BODY_LIMIT) {
        assert.equal(res.statusCode, 413, `${summarise(req)} -> ${res.statusCode} ${clip(res.body)}`);
        assert.equal(res.json().error.code, 'payload_too_large');
        return;
      }
      // The text as the server decodes it (UTF-8, a leading byte-order mark dropped); an empty body means no fields.
      const text = bytes.toString('utf8').replace(/^\ufeff/, '');
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
});
