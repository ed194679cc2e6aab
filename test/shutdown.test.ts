// A graceful stop of the service as a real process (docs/internals/decisions.md#graceful-stop): SIGTERM
// drains within a few seconds plus the running turns, whatever connections clients left open (conversation
// event streams included), and a turn running at the SIGTERM is still completed and stored. Clients are raw sockets, so that each leaves its
// connection exactly as written.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, type TestContext, test } from 'node:test';
import { killLeftoverChildren, type ServiceProcess, startService, tempDir } from './helpers/process.ts';
import { httpRequest, openWire, streamRequest } from './helpers/wire.ts';

after(killLeftoverChildren);

const apiKey = 'shutdown-test-key-0123456789abcdef';
/** Each word of a reply takes this long, so that a turn is still running when the SIGTERM arrives. */
const tokenDelayMs = 150;
/**
 * The bound of the drain: what is left of the turn (under 2 s) and the second given to the last bytes,
 * with room for a loaded 2-core machine. Before the fix these clients held the process until
 * close-with-grace killed it, 30 s after the SIGTERM.
 */
const exitBoundMs = 15_000;

/** The service with one agent, `slow`, whose replies take about tokenDelayMs a word. */
async function startSlowService(t: TestContext, dataDir: string): Promise<ServiceProcess> {
  const agents = join(dataDir, 'agents.json');
  await writeFile(
    agents,
    JSON.stringify({ agents: [{ id: 'slow', scripted: { token_delay_ms: tokenDelayMs } }] }),
  );
  const service = await startService({
    dataDir,
    env: { PARLEY_BOOTSTRAP_API_KEY: apiKey, PARLEY_AGENTS_FILE: agents, LOG_LEVEL: 'warn' },
  });
  t.after(() => service.kill());
  return service;
}

async function createSlowSession(service: ServiceProcess): Promise<string> {
  const created = await fetch(`${service.url}/v1/agents/slow/sessions`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(created.status, 201);
  return ((await created.json()) as { id: string }).id;
}

/** A slow service with a streamed turn of `words` running on a raw connection. */
async function runningTurn(t: TestContext, words: string) {
  const service = await startSlowService(t, await tempDir(t));
  const sessionId = await createSlowSession(service);
  const stream = await openWire(service.port);
  stream.socket.write(streamRequest(sessionId, words, apiKey));
  await stream.until('event: turn.started');
  return { service, stream };
}

/** Sends SIGTERM and waits for the exit; how long that took. */
async function terminate(t: TestContext, service: ServiceProcess) {
  const termAt = Date.now();
  const exit = await service.stop('SIGTERM', 40_000);
  const drainMs = Date.now() - termAt;
  t.diagnostic(`exited ${drainMs} ms after SIGTERM`);
  assert.deepEqual(exit, { code: 0, signal: null }, service.stderr());
  assert.ok(drainMs < exitBoundMs, `exited ${drainMs} ms after SIGTERM, not within ${exitBoundMs} ms`);
}

test('SIGTERM exits 0 within seconds after a client abandoned an event stream mid-turn and left idle and silent connections open, and the turn is stored', {
  timeout: 60_000,
}, async (t) => {
  const dataDir = await tempDir(t);
  const service = await startSlowService(t, dataDir);
  const sessionId = await createSlowSession(service);

  // A kept-alive connection whose answer is complete: idle from then on.
  const idle = await openWire(service.port);
  idle.socket.write(httpRequest('GET', '/healthz'));
  await idle.until('{"status":"ok"}');
  // A connection opened and never used (a browser's preconnect, a pool's spare).
  const silent = await openWire(service.port);
  // A stream whose client reads its start, then neither reads on nor closes: the reply is still written,
  // and ends while the process is closing.
  const stream = await openWire(service.port);
  stream.socket.write(streamRequest(sessionId, 'one two three four five six seven eight nine ten', apiKey));
  await stream.until('event: turn.started');
  stream.socket.pause();

  await terminate(t, service);
  // The abandoned stream's client sees its connection end once it reads again.
  stream.socket.resume();
  await Promise.all([idle.closed, silent.closed, stream.closed]);

  // The turn running at the SIGTERM had its time: its reply was stored before the process exited.
  const again = await startSlowService(t, dataDir);
  const page = await fetch(`${again.url}/v1/agents/sessions/${sessionId}/messages`, {
    headers: { 'x-api-key': apiKey },
  });
  const { items } = (await page.json()) as { items: Array<{ role: string }> };
  assert.deepEqual(
    items.map((m) => m.role),
    ['user', 'assistant'],
  );
});

test('SIGTERM lets a stream running at the SIGTERM finish for a client still reading, then closes its kept-alive connection itself', {
  timeout: 60_000,
}, async (t) => {
  const { service, stream } = await runningTurn(t, 'one two three four five six');

  const stopped = terminate(t, service);
  await stream.until('event: turn.completed');
  // Once its answer is out, the connection is the server's to close: the client does not have to.
  await stream.closed;
  await stopped;
  assert.match(stream.received(), /event: message\.completed/);
});

test('a single process answers /readyz with 503 while a turn running at the SIGTERM finishes, rather than refusing connections', {
  timeout: 60_000,
}, async (t) => {
  const { service, stream } = await runningTurn(t, 'one two three four five six seven eight nine ten');

  const stopped = terminate(t, service);
  // Polled as a load balancer does, until the turn is over: a 200 comes only before the signal is handled.
  const seen: string[] = [];
  let finished = false;
  void stream.until('event: turn.completed').then(() => {
    finished = true;
  });
  while (!finished && !seen.includes('503')) {
    const answer = await fetch(`${service.url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (res) => String(res.status),
      (err: Error) => String((err.cause as { code?: string } | undefined)?.code ?? err.message),
    );
    if (seen.at(-1) !== answer) seen.push(answer);
  }
  assert.ok(seen.includes('503'), `readiness while draining: ${seen.join(', ')}`);
  assert.deepEqual(
    seen.filter((s) => s !== '200' && s !== '503'),
    [],
    `a refused connection before the turn was over: ${seen.join(', ')}`,
  );
  await stream.until('event: turn.completed');
  await stopped;
});

test('SIGTERM exits 0 within seconds while clients follow conversation event streams, which end so that they reconnect elsewhere', {
  timeout: 60_000,
}, async (t) => {
  const service = await startSlowService(t, await tempDir(t));
  const sessionId = await createSlowSession(service);
  // Two followers of one conversation: streams that never end by themselves.
  const followers = await Promise.all([openWire(service.port), openWire(service.port)]);
  for (const follower of followers) {
    follower.socket.write(
      httpRequest('GET', `/v1/agents/sessions/${sessionId}/events`, { headers: { 'x-api-key': apiKey } }),
    );
    await follower.until(': following');
  }
  await terminate(t, service);
  await Promise.all(followers.map((f) => f.closed));
});
