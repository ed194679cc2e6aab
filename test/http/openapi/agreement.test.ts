// Where the OpenAPI document and the server once disagreed, they agree: what a schema allows the server
// accepts, and what the server refuses the document does not allow (issue 19's independent check).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { baseUrl, listen } from '../../client/helpers.ts';
import { useApp } from '../../helpers/app.ts';
import { isPlainObject } from '../../helpers/fuzz/send.ts';
import { buildSessionApp, upload } from '../../helpers/sessions.ts';

const t = useApp(() => buildSessionApp(), listen);

const json = (method: 'POST' | 'PATCH', url: string, payload: string) =>
  t.app.inject({
    method,
    url,
    headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
    payload,
  });

async function documentSchema(name: string): Promise<Record<string, unknown>> {
  const doc = (await t.app.inject({ url: '/openapi.json' })).json();
  return doc.components.schemas[name];
}

describe('the server and its OpenAPI document agree', () => {
  it('refuses a user lookup of {} as the document does (minProperties 1)', async () => {
    const res = await json('POST', '/v1/agents/demo/sessions', '{"user":{}}');
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json().detail[0].loc, ['body', 'user']);
    const create = await documentSchema('SessionCreate');
    assert.match(JSON.stringify(create), /"minProperties":1/);
  });

  it('refuses a JSON null body (the document requires an object) and still takes an absent one', async () => {
    const refused = await json('POST', '/v1/agents/users', 'null');
    assert.equal(refused.statusCode, 422);
    assert.deepEqual(refused.json().detail, [
      { loc: ['body'], msg: 'Input should be an object', type: 'dict_type' },
    ]);
    assert.equal((await json('POST', '/v1/agents/users', '')).statusCode, 201);
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    assert.equal(doc.paths['/v1/agents/users'].post.requestBody.required, false);
    assert.equal(doc.paths['/v1/agents/sessions/{session_id}/messages'].post.requestBody.required, true);
  });

  it('refuses an email the documented pattern refuses (a domain label ending in -)', async () => {
    const user = await documentSchema('User');
    assert.ok(user);
    const fields = (await t.app.inject({ url: '/openapi.json' })).json().paths['/v1/agents/users'].post
      .requestBody.content['application/json'].schema;
    const email = JSON.stringify(fields).match(/"email":\{"anyOf":\[\{[^}]*"pattern":"((?:[^"\\]|\\.)*)"/);
    assert.ok(email?.[1], 'the email field has a pattern');
    const pattern = new RegExp(JSON.parse(`"${email[1]}"`));
    for (const address of ['a@b-.com', 'a@b.com', 'first.last+tag@mail.example.org', 'a..b@c.com']) {
      const res = await json('POST', '/v1/agents/users', JSON.stringify({ email: address }));
      assert.equal(res.statusCode === 201, pattern.test(address), `${address}: ${res.statusCode}`);
    }
  });

  it('answers a __proto__ key as the valid JSON it is: 422 key_forbidden at the key, not json_invalid', async () => {
    const res = await json('POST', '/v1/agents/users', '{"metadata":{"a":[{"__proto__":{"admin":true}}]}}');
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json().detail[0].loc, ['body', 'metadata', 'a', 0, '__proto__']);
    assert.equal(res.json().detail[0].type, 'key_forbidden');
  });

  it('answers the QUERY method as any other unknown method (404 not_found; 401 first on the public family)', async () => {
    const answer = async (method: string, path: string, headers: Record<string, string>) => {
      const res = await fetch(`${baseUrl(t)}${path}`, {
        method,
        headers: { 'x-api-key': t.apiKey, ...headers },
      });
      const body = await res.json();
      assert.ok(isPlainObject(body) && isPlainObject(body.error));
      return `${res.status} ${body.error.code}`;
    };
    for (const path of ['/healthz', '/v1/agents/users', '/v1/public/agents/conversations/x', '/nope']) {
      const kinds: Record<string, string>[] = [{}, { 'content-type': 'application/json' }];
      for (const headers of kinds) {
        const query = await answer('QUERY', path, headers);
        assert.equal(query, await answer('PUT', path, headers), `${path} ${JSON.stringify(headers)}`);
        if (!path.startsWith('/v1/public/')) assert.equal(query, '404 not_found', path);
      }
    }
  });

  it("serves a file's content with the file's own type, which the document allows (*/*)", async () => {
    const id = await upload(t, Buffer.from('# Title\n'), 'notes.md', 'text/markdown');
    const res = await t.app.inject({
      url: `/v1/agents/files/${id}/content`,
      headers: { 'x-api-key': t.apiKey },
    });
    assert.equal(res.headers['content-type'], 'text/markdown');
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    assert.deepEqual(
      Object.keys(doc.paths['/v1/agents/files/{file_id}/content'].get.responses['200'].content),
      ['*/*'],
    );
  });
});
