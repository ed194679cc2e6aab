// Acceptance: Idempotency-Key across a crash of the owning process
// (docs/internals/decisions.md#idempotency-key, docs/internals/architecture.md#sharding-and-ownership). The
// service runs as a real child process with a slow scripted agent; a send is killed with SIGKILL after its
// user message was committed and before the reply was, and the same send retried on the restarted service
// completes the turn without storing the user message twice. Spoken to over loopback HTTP with undici.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { SqliteStore } from '../../src/store/sqlite/store.ts';
import { StaleEpochError } from '../../src/store/store.ts';
import { killLeftoverChildren, type ServiceProcess, startService, tempDir } from '../helpers/process.ts';

after(killLeftoverChildren);

const bootstrapKey = 'crash-test-key-0123456789abcdef';
const agentId = 'slow';
// The scripted agent echoes the message one word at a time, 300 ms per word: about 6 s for this one.
const slowText = 'please tell me a long story about the sea and the ships that sail on it every day';

interface Message {
  id: string;
  role: 'user' | 'assistant';
  content: { type: string; text?: string }[];
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/** One HTTP client per process: its pooled sockets die with the process, so none is reused across a crash. */
class Client {
  readonly #agent = new Agent({ keepAliveTimeout: 1_000 });
  readonly #url: string;

  constructor(service: ServiceProcess) {
    this.#url = service.url;
  }

  async call(method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await request(`${this.#url}${path}`, {
      method,
      dispatcher: this.#agent,
      headers: {
        'x-api-key': bootstrapKey,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
    });
    const text = await response.body.text();
    return {
      status: response.statusCode,
      headers: response.headers,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    } satisfies Answer;
  }

  async createSession(): Promise<string> {
    const created = await this.call('POST', `/v1/agents/${agentId}/sessions`, { context: { case: 'crash' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return String(created.body.id);
  }

  send(sessionId: string, key: string, text = slowText): Promise<Answer> {
    return this.call(
      'POST',
      `/v1/agents/sessions/${sessionId}/messages`,
      { content: text },
      { 'idempotency-key': key },
    );
  }

  async messages(sessionId: string): Promise<Message[]> {
    const page = await this.call('GET', `/v1/agents/sessions/${sessionId}/messages?limit=100`);
    assert.equal(page.status, 200, JSON.stringify(page.body));
    return page.body.items as Message[];
  }

  close(): Promise<void> {
    return this.#agent.destroy();
  }
}

async function writeAgentsFile(dir: string): Promise<string> {
  const file = join(dir, 'agents.yaml');
  await writeFile(
    file,
    [
      'agents:',
      `  - id: ${agentId}`,
      '    name: Slow',
      '    instructions: Answer slowly.',
      '    provider: scripted',
      '    scripted:',
      '      token_delay_ms: 300',
      '',
    ].join('\n'),
  );
  return file;
}

interface Fixture {
  dataDir: string;
  env: Record<string, string>;
}

async function fixture(t: Parameters<typeof tempDir>[0]): Promise<Fixture> {
  const dataDir = await tempDir(t, 'parley-crash-');
  const agentsFile = await writeAgentsFile(await tempDir(t, 'parley-crash-agents-'));
  return {
    dataDir,
    env: { PARLEY_BOOTSTRAP_API_KEY: bootstrapKey, PARLEY_AGENTS_FILE: agentsFile, LOG_LEVEL: 'warn' },
  };
}

async function start(
  t: Parameters<typeof tempDir>[0],
  f: Fixture,
  port?: number,
): Promise<{ service: ServiceProcess; client: Client }> {
  const service = await startService({
    dataDir: f.dataDir,
    env: f.env,
    readyTimeoutMs: 60_000,
    ...(port === undefined ? {} : { port }),
  });
  const client = new Client(service);
  t.after(async () => {
    await client.close();
    await service.kill();
  });
  return { service, client };
}

/** Polls the message list until `done` holds; fails after `timeoutMs`. */
async function waitForMessages(
  client: Client,
  sessionId: string,
  done: (messages: Message[]) => boolean,
  timeoutMs = 30_000,
): Promise<Message[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const messages = await client.messages(sessionId);
    if (done(messages)) return messages;
    if (Date.now() > deadline) throw new Error(`messages never matched: ${JSON.stringify(messages)}`);
    await sleep(25);
  }
}

const byRole = (messages: Message[], role: Message['role']) => messages.filter((m) => m.role === role);

/** The shard's row of the fencing table, read while the service may be running (WAL allows it). */
function shardOwner(dataDir: string, shard: number): { epoch: number; owner: string } {
  const db = new DatabaseSync(join(dataDir, 'parley.db'), { readOnly: true });
  try {
    return db.prepare('SELECT epoch, owner FROM shard_owner WHERE shard = ?').get(shard) as unknown as {
      epoch: number;
      owner: string;
    };
  } finally {
    db.close();
  }
}

describe('a send whose process is killed after storing the user message', { timeout: 180_000 }, () => {
  test('a retry with the same Idempotency-Key on the restarted service stores the reply once and no second user message', async (t) => {
    const f = await fixture(t);
    const first = await start(t, f);
    const sessionId = await first.client.createSession();

    // The first attempt: never answered, since its process dies under it.
    const attempt = first.client.send(sessionId, 'k-crash').then(
      (answer) => ({ answer }),
      (error: unknown) => ({ error }),
    );
    const before = await waitForMessages(first.client, sessionId, (m) => byRole(m, 'user').length > 0);
    assert.equal(byRole(before, 'assistant').length, 0, 'precondition: the reply must still be in flight');
    const userMessage = byRole(before, 'user')[0];
    assert.ok(userMessage);

    await first.service.stop('SIGKILL');
    const outcome = await attempt;
    assert.ok(
      'error' in outcome,
      `the killed attempt should not have been answered: ${JSON.stringify(outcome)}`,
    );

    const second = await start(t, f, first.service.port);
    const afterCrash = await second.client.messages(sessionId);
    assert.deepEqual(
      afterCrash.map((m) => [m.id, m.role]),
      [[userMessage.id, 'user']],
      'the committed user message survives the crash, and no reply was stored',
    );

    const retry = await second.client.send(sessionId, 'k-crash');
    assert.equal(retry.status, 201, JSON.stringify(retry.body));
    const agentMessage = retry.body.agent_message as Message;
    assert.equal(agentMessage.role, 'assistant');
    assert.match(String(agentMessage.content[0]?.text), /You said: "please tell me a long story/);
    assert.equal(retry.headers['idempotent-replayed'], undefined, 'the reply was produced, not replayed');

    const stored = await second.client.messages(sessionId);
    assert.deepEqual(
      stored.map((m) => [m.id, m.role]),
      [
        [userMessage.id, 'user'],
        [agentMessage.id, 'assistant'],
      ],
      'exactly one user message and one reply',
    );
    assert.deepEqual(stored[1], agentMessage);

    const replay = await second.client.send(sessionId, 'k-crash');
    assert.equal(replay.status, 201, JSON.stringify(replay.body));
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body.agent_message, agentMessage);
    assert.equal((await second.client.messages(sessionId)).length, 2, 'a replay stores nothing');

    const session = await second.client.call('GET', `/v1/agents/sessions/${sessionId}`);
    assert.equal(session.status, 200);
    assert.equal(session.body.messages_count, 2);
    assert.equal(session.body.status, 'active');
  });

  test('after the restart the killed process holds a stale fencing epoch: a write with it is refused and changes nothing', async (t) => {
    const f = await fixture(t);
    const first = await start(t, f);
    const sessionId = await first.client.createSession();
    const attempt = first.client.send(sessionId, 'k-fence').catch(() => null);
    await waitForMessages(first.client, sessionId, (m) => byRole(m, 'user').length > 0);

    const store = new SqliteStore(join(f.dataDir, 'parley.db'));
    t.after(() => store.close());
    const loaded = await store.loadSession(sessionId);
    assert.ok(loaded);
    const { shard } = loaded.session;
    const old = shardOwner(f.dataDir, shard);
    assert.match(old.owner, new RegExp(`:${first.service.child.pid}$`));

    await first.service.stop('SIGKILL');
    await attempt;
    const second = await start(t, f);
    const now = shardOwner(f.dataDir, shard);
    assert.ok(now.epoch > old.epoch, `epoch ${now.epoch} should have grown past ${old.epoch}`);
    assert.match(now.owner, new RegExp(`:${second.service.child.pid}$`));

    // What the dead process would have committed next: its reply, fenced with its old epoch.
    const reloaded = await store.loadSession(sessionId);
    assert.ok(reloaded);
    await assert.rejects(
      store.commitSession({
        session_id: sessionId,
        fence: { shard, epoch: old.epoch },
        messages: [
          {
            id: 'msg_from_the_dead',
            role: 'assistant',
            content: [{ type: 'text', text: 'too late' }],
            metadata: null,
            turn_id: 'turn_from_the_dead',
          },
        ],
        patch: { snapshot: reloaded.snapshot ?? '' },
      }),
      StaleEpochError,
    );
    const stored = await second.client.messages(sessionId);
    assert.deepEqual(
      stored.map((m) => m.role),
      ['user'],
    );

    // The restarted service itself may still finish the turn.
    const retry = await second.client.send(sessionId, 'k-fence');
    assert.equal(retry.status, 201, JSON.stringify(retry.body));
    assert.deepEqual(
      (await second.client.messages(sessionId)).map((m) => m.role),
      ['user', 'assistant'],
    );
  });
});

describe('a finished send and a restart', { timeout: 120_000 }, () => {
  test('a retry after a clean restart replays the stored answer with Idempotent-Replayed and stores nothing', async (t) => {
    const f = await fixture(t);
    const first = await start(t, f);
    const sessionId = await first.client.createSession();
    const original = await first.client.send(sessionId, 'k-done', 'short one');
    assert.equal(original.status, 201, JSON.stringify(original.body));
    assert.equal(original.headers['idempotent-replayed'], undefined);
    assert.equal((await first.service.stop('SIGTERM', 30_000)).code, 0);

    const second = await start(t, f);
    const replay = await second.client.send(sessionId, 'k-done', 'short one');
    assert.equal(replay.status, 201, JSON.stringify(replay.body));
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body.agent_message, original.body.agent_message);
    assert.deepEqual(
      (await second.client.messages(sessionId)).map((m) => m.role),
      ['user', 'assistant'],
    );
  });

  test('a retry after a SIGKILL that came once the turn was answered replays the stored answer', async (t) => {
    const f = await fixture(t);
    const first = await start(t, f);
    const sessionId = await first.client.createSession();
    const original = await first.client.send(sessionId, 'k-done-kill', 'short one');
    assert.equal(original.status, 201, JSON.stringify(original.body));
    await first.service.stop('SIGKILL');

    const second = await start(t, f, first.service.port);
    const replay = await second.client.send(sessionId, 'k-done-kill', 'short one');
    assert.equal(replay.status, 201, JSON.stringify(replay.body));
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body.agent_message, original.body.agent_message);

    const reused = await second.client.send(sessionId, 'k-done-kill', 'a different body');
    assert.equal(reused.status, 409, JSON.stringify(reused.body));
    assert.equal((reused.body.error as { code?: string }).code, 'idempotency_key_reused');
    assert.equal((await second.client.messages(sessionId)).length, 2);
  });
});
