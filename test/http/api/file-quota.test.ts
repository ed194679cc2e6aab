// Upload quotas over HTTP (docs/internals/decisions.md#upload-quotas): a conversation's files and bytes, and
// a tenant's bytes, each with its own 413; a refused upload stores nothing, and deleting a file gives its
// room back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.ts';
import type { TestApp } from '../../helpers/app.ts';
import { openConversation } from '../../helpers/conversations.ts';
import { encodeForm, fileForm, tinyPng } from '../../helpers/multipart.ts';
import { assertError, client, useSessionApp } from '../../helpers/sessions.ts';

const TOKEN_SECRET = 'test-secret-for-the-upload-quotas-0123456789';
const text = (n: number) => 'a'.repeat(n);

/** Uploads `content` to the tenant pool with `key` (tenant t1's key by default). */
async function poolUpload(t: TestApp, content: string, key = t.apiKey) {
  const { payload, contentType } = await encodeForm(fileForm(content, 'notes.txt', 'text/plain'));
  return t.app.inject({
    method: 'POST',
    url: '/v1/agents/files',
    headers: { 'x-api-key': key, 'content-type': contentType },
    payload,
  });
}

it('defaults to 100 files and 200 MiB per conversation and 10 GiB per tenant', () => {
  assert.deepEqual(loadConfig({}).fileQuota, {
    conversationFiles: 100,
    conversationBytes: 200 * 1024 * 1024,
    tenantBytes: 10 * 1024 * 1024 * 1024,
  });
});

describe('the conversation quota', () => {
  const t = useSessionApp({
    env: {
      PARLEY_TOKEN_SECRET: TOKEN_SECRET,
      PARLEY_CONVERSATION_MAX_FILES: '3',
      PARLEY_CONVERSATION_MAX_FILE_BYTES: '1000',
    },
  });
  const api = client(t);

  it('answers the file past the count 413 conversation_file_quota and stores nothing', async () => {
    const c = await openConversation(t);
    for (let i = 0; i < 3; i++) {
      assert.equal((await c.pub.upload(tinyPng, `dot-${i}.png`, 'image/png')).statusCode, 201);
    }
    const error = assertError(
      await c.pub.upload(tinyPng, 'one-too-many.png', 'image/png'),
      413,
      'conversation_file_quota',
    );
    assert.deepEqual(error.context, {
      conversation_id: c.id,
      limit_files: 3,
      used_files: 3,
      limit_bytes: 1000,
      used_bytes: 3 * tinyPng.length,
      file_bytes: tinyPng.length,
    });
    assert.equal((await c.pub.get('/files')).json().items.length, 3);
    const other = await openConversation(t);
    assert.equal((await other.pub.upload(tinyPng, 'dot.png', 'image/png')).statusCode, 201);
  });

  it('answers a file past the bytes 413 conversation_file_quota, and takes it once a file is deleted', async () => {
    const c = await openConversation(t);
    const first = await c.pub.upload(text(600), 'first.txt', 'text/plain');
    assert.equal(first.statusCode, 201, first.body);
    const error = assertError(
      await c.pub.upload(text(401), 'second.txt', 'text/plain'),
      413,
      'conversation_file_quota',
    );
    assert.equal(error.context?.used_bytes, 600);
    assert.equal(error.context?.file_bytes, 401);
    assert.equal((await c.pub.get('/files')).json().items.length, 1);

    assert.equal((await api.delete(`/v1/agents/files/${first.json().id}`)).statusCode, 204);
    assert.equal((await c.pub.upload(text(401), 'second.txt', 'text/plain')).statusCode, 201);
  });

  it('leaves the tenant pool out of any conversation quota', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await poolUpload(t, text(900))).statusCode, 201);
  });
});

describe('the tenant quota', () => {
  const t = useSessionApp({
    env: { PARLEY_TOKEN_SECRET: TOKEN_SECRET, PARLEY_TENANT_MAX_FILE_BYTES: '2000' },
  });
  const api = client(t);

  it('counts pool and conversation files together, answers 413 tenant_file_quota, and deleting frees room', async () => {
    const pooled = await poolUpload(t, text(1200));
    assert.equal(pooled.statusCode, 201, pooled.body);
    const c = await openConversation(t);
    assert.equal((await c.pub.upload(text(700), 'a.txt', 'text/plain')).statusCode, 201);

    const fromConversation = assertError(
      await c.pub.upload(text(101), 'b.txt', 'text/plain'),
      413,
      'tenant_file_quota',
    );
    assert.deepEqual(fromConversation.context, { limit_bytes: 2000, used_bytes: 1900, file_bytes: 101 });
    const fromPool = assertError(await poolUpload(t, text(101)), 413, 'tenant_file_quota');
    assert.equal(fromPool.context?.used_bytes, 1900);
    assert.equal((await api.get('/v1/agents/files')).json().items.length, 2);

    const otherTenant = await t.createKey('t2');
    assert.equal((await poolUpload(t, text(2000), otherTenant)).statusCode, 201);

    assert.equal((await api.delete(`/v1/agents/files/${pooled.json().id}`)).statusCode, 204);
    assert.equal((await c.pub.upload(text(1300), 'b.txt', 'text/plain')).statusCode, 201);
  });
});
