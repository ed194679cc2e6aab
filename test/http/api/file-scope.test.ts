// A key scoped to some agents and the files of other agents' conversations
// (docs/internals/decisions.md#files-and-scoped-keys): such a file is answered like its conversation (403
// agent_forbidden), is not listed and cannot be attached; pool files stay the whole tenant's, and a key for
// every agent sees everything.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openConversation } from '../../helpers/conversations.ts';
import { tinyPng } from '../../helpers/multipart.ts';
import { assertError, client, createSession, send, upload, useSessionApp } from '../../helpers/sessions.ts';

/** A file uploaded in a `demo` conversation, a pool file, and a key limited to agent `other`. */
let demoFile: string;
let demoConversation: string;
let poolFile: string;
let otherKey: string;

const t = useSessionApp({
  setUp: async (app) => {
    const conversation = await openConversation(app, 'demo');
    const res = await conversation.pub.upload(tinyPng, 'secret.png', 'image/png');
    assert.equal(res.statusCode, 201, res.body);
    demoFile = res.json().id;
    demoConversation = conversation.id;
    poolFile = await upload(app, Buffer.from('shared notes'), 'pool.txt', 'text/plain');
    otherKey = await app.createKey('t1', ['other']);
  },
});

const listed = async (key: string, query = '') => {
  const res = await client(t, key).get(`/v1/agents/files?limit=100${query}`);
  assert.equal(res.statusCode, 200, res.body);
  return (res.json().items as { id: string }[]).map((f) => f.id);
};

describe("a key scoped to other agents and a conversation's file", () => {
  it('answers 403 agent_forbidden to reading, downloading and deleting it, and keeps it', async () => {
    const scoped = client(t, otherKey);
    for (const res of [
      await scoped.get(`/v1/agents/files/${demoFile}`),
      await scoped.get(`/v1/agents/files/${demoFile}/content`),
      await scoped.delete(`/v1/agents/files/${demoFile}`),
    ]) {
      const error = assertError(res, 403, 'agent_forbidden');
      assert.deepEqual(error.context, { agent_id: 'demo' });
    }
    assert.equal((await client(t).get(`/v1/agents/files/${demoFile}`)).statusCode, 200, 'not deleted');
  });

  it('does not list it, even filtered by its conversation, but lists the pool', async () => {
    const ids = await listed(otherKey);
    assert.ok(!ids.includes(demoFile));
    assert.ok(ids.includes(poolFile));
    assert.deepEqual(await listed(otherKey, `&session_id=${demoConversation}`), []);
  });

  it('refuses it in a send or a run with 403 agent_forbidden, storing nothing', async () => {
    const session = await createSession(t, 'other', {}, otherKey);
    const content = [
      { type: 'text', text: 'look' },
      { type: 'image', file_id: demoFile },
    ];
    assertError(await send(t, session.id, { content }, undefined, otherKey), 403, 'agent_forbidden');
    const messages = await client(t, otherKey).get(`/v1/agents/sessions/${session.id}/messages`);
    assert.deepEqual(messages.json().items, []);
    const before = await listed(t.apiKey);
    const run = await client(t, otherKey).post('/v1/agents/other/run', {
      messages: [{ role: 'user', content }],
    });
    assertError(run, 403, 'agent_forbidden');
    const sessions = await client(t, otherKey).get('/v1/agents/sessions?limit=100');
    assert.deepEqual(
      (sessions.json().items as { id: string }[]).map((s) => s.id),
      [session.id],
      'the refused run created no session',
    );
    assert.deepEqual(await listed(t.apiKey), before);
  });

  it('still reads, downloads and attaches pool files', async () => {
    const scoped = client(t, otherKey);
    assert.equal((await scoped.get(`/v1/agents/files/${poolFile}`)).statusCode, 200);
    assert.equal((await scoped.get(`/v1/agents/files/${poolFile}/content`)).body, 'shared notes');
    const session = await createSession(t, 'other', {}, otherKey);
    const res = await send(
      t,
      session.id,
      { content: [{ type: 'file', file_id: poolFile }] },
      undefined,
      otherKey,
    );
    assert.equal(res.statusCode, 201, res.body);
  });
});

describe('a key for every agent and a conversation file', () => {
  it('reads, downloads, lists and attaches it anywhere', async () => {
    const api = client(t);
    assert.equal((await api.get(`/v1/agents/files/${demoFile}`)).json().session_id, demoConversation);
    assert.equal((await api.get(`/v1/agents/files/${demoFile}/content`)).statusCode, 200);
    assert.ok((await listed(t.apiKey)).includes(demoFile));
    const session = await createSession(t, 'other');
    const res = await send(t, session.id, { content: [{ type: 'image', file_id: demoFile }] });
    assert.equal(res.statusCode, 201, res.body);
  });

  it('answers a key scoped to the agent of the conversation like that key', async () => {
    const demoKey = await t.createKey('t1', ['demo']);
    assert.equal((await client(t, demoKey).get(`/v1/agents/files/${demoFile}`)).statusCode, 200);
    assert.ok((await listed(demoKey)).includes(demoFile));
  });
});
