// Counterexamples the fuzzing found once, kept as plain tests: deep and huge JSON, lone surrogates, long file
// names and metadata parts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { USER_ID, useFuzzApp, VALID_KEY } from '../../helpers/fuzz/fixture.ts';
import { jsonText, nestedJson, objectJson } from '../../helpers/fuzz/json.ts';
import {
  buildMultipart,
  checkStoredUpload,
  type MultipartBody,
  type Part,
  uploadCase,
} from '../../helpers/fuzz/multipart.ts';
import { described, jsonRequest, send } from '../../helpers/fuzz/send.ts';

useFuzzApp();

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

  it('refuses a webhook url holding a lone surrogate with 422 string_unicode rather than storing another url', async () => {
    for (const url of ['https://crm.example.com/hook\\ud800', 'https://crm\\udfff.example.com/hook']) {
      const created = await send(
        jsonRequest('POST', '/v1/agents/webhooks', `{"url":"${url}","events":["session.closed"]}`),
      );
      assert.equal(created.statusCode, 422, created.body);
      const issues = created.json().detail as { loc: string[]; type: string }[];
      assert.ok(
        issues.some((d) => d.loc.join('.') === 'body.url' && d.type === 'string_unicode'),
        created.body,
      );
    }
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
