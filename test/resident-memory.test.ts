// Issue 15, finding 1, as it was found: many sessions each sending many messages of sixteen 32,000-character
// blocks grew the heap without bound until the process died. A real process, its heap capped below what
// those histories take, must answer every send while keeping its resident bytes under PARLEY_MAX_RESIDENT_BYTES.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { makeTempDir } from './helpers/app.ts';
import { killLeftoverChildren, startService } from './helpers/process.ts';

after(killLeftoverChildren);

const MiB = 1024 * 1024;
const apiKey = 'memory-test-key-0123456789abcdef';
const boundBytes = 256 * MiB;
const sessions = 16;
const rounds = 12;
const concurrency = 2;

/** A metric's value from the Prometheus text (unlabelled series only). */
function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} is exported`);
  return Number(line.slice(name.length + 1));
}

test('long histories in many sessions stay within the resident bound, and the process lives on a heap smaller than them', async () => {
  const service = await startService({
    dataDir: await makeTempDir(),
    env: {
      PARLEY_BOOTSTRAP_API_KEY: apiKey,
      PARLEY_MAX_RESIDENT_BYTES: String(boundBytes),
      PARLEY_RATE_LIMIT_KEY: '1000000',
      // Turns read whole histories here (50 messages), so that only the resident bound holds memory back.
      PARLEY_MAX_TURN_HISTORY_CHARS: String(100_000_000),
      LOG_LEVEL: 'warn',
      // Every history together is about 190 MB of text: kept whole, as before the bound, they cannot fit.
      NODE_OPTIONS: '--max-old-space-size=160',
    },
  });
  try {
    const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
    const ids: string[] = [];
    for (let i = 0; i < sessions; i++) {
      const response = await fetch(`${service.url}/v1/agents/demo/sessions`, {
        method: 'POST',
        headers,
        body: '{}',
      });
      assert.equal(response.status, 201);
      ids.push(((await response.json()) as { id: string }).id);
    }
    const readMetrics = async () => (await fetch(`${service.url}/metrics`)).text();
    const send = async (sessionId: string, round: number) => {
      const content = Array.from({ length: 16 }, (_, b) => ({
        type: 'text',
        text: String.fromCharCode(97 + ((round + b) % 26)).repeat(32_000),
      }));
      const response = await fetch(`${service.url}/v1/agents/sessions/${sessionId}/messages`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ content }),
      });
      const body = await response.text();
      assert.equal(response.status, 201, body.slice(0, 500));
    };

    // Each worker drives its sessions one after another, as a client would: a history is used again while
    // it is still kept, and the sessions done with are the least recently used.
    let mostResident = 0;
    const queue = [...ids];
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let id = queue.shift(); id; id = queue.shift()) {
          for (let round = 0; round < rounds; round++) await send(id, round);
          const resident = metric(await readMetrics(), 'parley_resident_bytes');
          assert.ok(resident <= boundBytes, `${resident} resident bytes`);
          mostResident = Math.max(mostResident, resident);
        }
      }),
    );
    // Histories were kept (within the room the rest of the process left), and the process is still serving.
    assert.ok(mostResident > 0, 'no history was kept');
    const text = await readMetrics();
    assert.ok(metric(text, 'parley_actors_resident') >= 1);
    assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
  } finally {
    await service.kill();
  }
});
