// Operations endpoints and the OpenAPI document generated from the route schemas.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildTestApp, useTestApp } from '../../helpers/app.ts';

const t = useTestApp();

describe('operations', () => {
  it('answers liveness and readiness', async () => {
    assert.deepEqual((await t.app.inject({ url: '/healthz' })).json(), { status: 'ok' });
    assert.deepEqual((await t.app.inject({ url: '/readyz' })).json(), { status: 'ready' });
  });

  it('answers readiness with 503 service_unavailable when the store does not answer', async () => {
    const broken = await buildTestApp();
    await broken.store.close();
    const res = await broken.app.inject({ url: '/readyz' });
    assert.equal(res.statusCode, 503);
    assert.equal(res.json().error.code, 'service_unavailable');
    assert.equal(res.headers['retry-after'], '1');
    await broken.app.close();
  });

  it('counts requests by route pattern and status in Prometheus format', async () => {
    await t.app.inject({ url: '/v1/agents/users/usr_abc', headers: { 'x-api-key': t.apiKey } });
    const res = await t.app.inject({ url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.match(
      res.body,
      /parley_http_requests_total\{method="GET",route="\/v1\/agents\/users\/:user_id",status="404"\} 1/,
    );
    assert.match(res.body, /parley_http_request_duration_seconds_bucket/);
    assert.doesNotMatch(res.body, /usr_abc/);
  });

  it('serves a docs page', async () => {
    const res = await t.app.inject({ url: '/docs' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /text\/html/);
  });
});

describe('/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    assert.equal(doc.openapi, '3.1.0');
    const result = await new Validator().validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  });

  it('documents every route with its operations, parameters and error responses', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const expected: Record<string, string[]> = {
      '/v1/agents/users': ['post', 'get'],
      '/v1/agents/users/{user_id}': ['get', 'patch', 'delete'],
      '/v1/agents/files': ['post', 'get'],
      '/v1/agents/files/{file_id}': ['get', 'delete'],
      '/v1/agents/files/{file_id}/content': ['get'],
      '/v1/agents/{agent_id}/conversations': ['post'],
      '/v1/agents/conversations/{conversation_id}/token': ['post'],
      '/v1/public/agents/conversations/{conversation_id}': ['get'],
      '/v1/public/agents/conversations/{conversation_id}/messages': ['get', 'post'],
      '/v1/public/agents/conversations/{conversation_id}/files': ['get', 'post'],
      '/v1/public/agents/conversations/{conversation_id}/feedback': ['post'],
      '/v1/public/agents/conversations/{conversation_id}/inactivity': ['post'],
      '/v1/public/agents/conversations/{conversation_id}/terminate': ['post'],
      '/healthz': ['get'],
      '/readyz': ['get'],
      '/metrics': ['get'],
    };
    for (const [path, methods] of Object.entries(expected)) {
      assert.ok(doc.paths[path], `missing ${path}`);
      for (const method of methods) assert.ok(doc.paths[path][method], `missing ${method} ${path}`);
    }
    const list = doc.paths['/v1/agents/files'].get;
    const params = list.parameters.map((p: { name: string }) => p.name).sort();
    assert.deepEqual(params, [
      'created_after',
      'created_before',
      'limit',
      'mime_type',
      'name',
      'offset',
      'session_id',
    ]);
    assert.ok(doc.paths['/v1/agents/files'].post.requestBody.content['multipart/form-data']);
    assert.ok(doc.paths['/v1/agents/users'].post.responses['422']);
    assert.ok(doc.paths['/v1/agents/users'].post.responses['409']);
    for (const [path, operations] of Object.entries<Record<string, { security?: unknown }>>(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const expected = path.startsWith('/v1/agents')
          ? [{ apiKey: [] }]
          : /^\/v1\/(responses|conversations)/.test(path)
            ? [{ apiKey: [] }, { bearerApiKey: [] }]
            : path.startsWith('/v1/public')
              ? [{ sessionToken: [] }]
              : []; // the operations routes say outright that they take no credential
        assert.deepEqual(operation.security, expected, `security of ${method} ${path}`);
      }
    }
  });
});
