// A streamed turn whose process is killed mid-turn, read through ParleyClient: the service runs as a real child
// process; once a few deltas have arrived it is killed (SIGKILL) and started again on the same port and data.
// The client's resume then learns the turn was interrupted, sends the request again with the same
// Idempotency-Key, and the consumer reads the turn from a second turn.started to its end.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ParleyClient, type SessionTurnEvent } from '#client';
import { killLeftoverChildren, type ServiceProcess, startService, tempDir } from '../helpers/process.ts';
import { deltaText } from './helpers.ts';

after(killLeftoverChildren);

const apiKey = 'client-interrupt-key-0123456789abcdef';
const text = 'please tell me a long story about the sea and the ships that sail on it every day';

describe('a stream whose process dies mid-turn', { timeout: 180_000 }, () => {
  it('is sent again with the same Idempotency-Key: a second turn.started of the same turn, then the stored reply, stored once', async (t) => {
    const dataDir = await tempDir(t, 'parley-client-interrupt-');
    const agentsFile = join(await tempDir(t, 'parley-client-agents-'), 'agents.json');
    // 100 ms a word: the reply takes about two seconds, long enough to kill the process in the middle of it.
    await writeFile(
      agentsFile,
      JSON.stringify({ agents: [{ id: 'slow', scripted: { token_delay_ms: 100 } }] }),
    );
    const env = { PARLEY_BOOTSTRAP_API_KEY: apiKey, PARLEY_AGENTS_FILE: agentsFile, LOG_LEVEL: 'warn' };
    const services: ServiceProcess[] = [];
    t.after(async () => {
      for (const service of services) await service.kill();
    });
    const first = await startService({ dataDir, env, readyTimeoutMs: 60_000 });
    services.push(first);

    // Enough reconnects (up to 4 s apart) to outlast a restart on a loaded machine.
    const requests: { call: string; key: string | undefined }[] = [];
    const api = new ParleyClient({
      baseUrl: first.url,
      apiKey,
      maxReconnects: 15,
      fetch: (input, init) => {
        const headers = new Headers(init.headers);
        requests.push({
          call: `${init.method} ${new URL(input).pathname.replace(/^.*\/(?=messages\/stream$|turns\/)/, '')}`,
          key: headers.get('idempotency-key') ?? undefined,
        });
        return fetch(input, init);
      },
    });
    const session = await api.createSession('slow');
    const stream = api.streamMessage(session.id, text);
    const events: SessionTurnEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (services.length === 1 && events.filter((e) => e.event === 'message.delta').length === 3) {
        await first.stop('SIGKILL');
        services.push(await startService({ dataDir, env, port: first.port, readyTimeoutMs: 60_000 }));
      }
    }
    assert.equal(services.length, 2, 'the process was killed mid-turn');

    const starts = events.flatMap((e, i) => (e.event === 'turn.started' ? [i] : []));
    assert.equal(starts.length, 2, JSON.stringify(events.map((e) => e.event)));
    const [firstStart, secondStart] = starts.map((i) => events[i]);
    assert.ok(firstStart?.event === 'turn.started' && secondStart?.event === 'turn.started');
    assert.equal(secondStart.data.turn_id, firstStart.data.turn_id);
    assert.equal(secondStart.data.user_message?.id, firstStart.data.user_message?.id);
    assert.ok(!events.some((e) => e.event === 'turn.failed'), 'the interruption is not shown as a failure');
    // Sent, resumed (the first tries may meet no process), told the turn was interrupted, sent again.
    const turnPath = `turns/${firstStart.data.turn_id}/events`;
    const calls = requests
      .map((r) => r.call)
      .filter((c) => c.endsWith('messages/stream') || c.endsWith(turnPath));
    assert.equal(calls[0], 'POST messages/stream');
    assert.equal(calls.at(-1), 'POST messages/stream');
    assert.ok(calls.slice(1, -1).length >= 1);
    assert.ok(
      calls.slice(1, -1).every((c) => c === `GET ${turnPath}`),
      JSON.stringify(calls),
    );
    const keys = requests.filter((r) => r.call === 'POST messages/stream').map((r) => r.key);
    assert.equal(keys.length, 2);
    assert.equal(keys[1], keys[0]);
    const last = events.at(-1);
    assert.equal(last?.event, 'turn.completed');

    // What follows the second turn.started is the whole reply, as stored.
    const retold = events.slice(starts[1]);
    const completed = retold.find((e) => e.event === 'message.completed');
    assert.ok(completed?.event === 'message.completed');
    const stored = completed.data.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    assert.equal(deltaText(retold), stored);
    const messages = await api.listMessages(session.id);
    assert.deepEqual(
      messages.items.map((m) => m.role),
      ['user', 'assistant'],
    );
    assert.equal(messages.items[1]?.id, completed.data.message.id);
  });
});
