// Slow clients (issue 15, finding 3; docs/internals/decisions.md#slow-clients) on a real listening server,
// driven through raw sockets: receiving a request is bounded (headers, then the whole request), idle
// keep-alive sockets close, and connections beyond the cap are closed as they arrive; a streamed reply is not
// bounded by any of it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { request } from 'undici';
import { createSession, testAgents, useSessionApp } from '../../helpers/sessions.ts';
import { type SseEvent, StreamReader } from '../../helpers/sse.ts';
import { openWire, type Wire } from '../../helpers/wire.ts';

/** Writes `piece` every 50 ms for as long as the socket is open: a client that never finishes. */
function drip(wire: Wire, piece: string): void {
  const timer = setInterval(() => wire.socket.write(piece), 50);
  wire.closed.then(() => clearInterval(timer));
}

/** The responses on a connection, in order, as [status, body]. */
function responses(raw: string): [number, string][] {
  return [...raw.matchAll(/HTTP\/1\.1 (\d{3}) [^\r]*\r\n[\s\S]*?\r\n\r\n(\{[^\r]*?\})(?=HTTP\/1\.1|$)/g)].map(
    (m) => [Number(m[1]), m[2] ?? ''],
  );
}

function assertCutOff(wire: Wire) {
  const last = responses(wire.received()).at(-1);
  assert.equal(last?.[0], 408, wire.received());
  const body = JSON.parse(last?.[1] ?? '{}');
  assert.equal(body.error.code, 'request_timeout');
  assert.equal(body.error.name, 'RequestTimeoutError');
  assert.match(body.request_id, /^req_/);
  assert.equal(typeof body.timestamp, 'string');
}

// Generous for the few hundred milliseconds the short timeouts take; without them a test would hang.
const bounded = { timeout: 20_000 };

/**
 * useSessionApp, listening on a loopback port; `base()` is its URL and `port()` its port once the suite's
 * set-up has run.
 */
function useListeningApp(options: Parameters<typeof useSessionApp>[0] = {}) {
  let base = '';
  const t = useSessionApp({
    ...options,
    setUp: async (app) => {
      base = await app.app.listen({ port: 0, host: '127.0.0.1' });
    },
  });
  return { t, base: () => base, port: () => Number(new URL(base).port) };
}

describe('a server with short request timeouts', () => {
  const { t, base, port } = useListeningApp({
    env: {
      PARLEY_HEADERS_TIMEOUT_MS: '300',
      PARLEY_REQUEST_TIMEOUT_MS: '600',
      PARLEY_KEEP_ALIVE_TIMEOUT_MS: '300',
    },
    agents: [...testAgents, { id: 'drawl', scripted: { token_delay_ms: 100 } }],
  });

  /** Sends `head`, then `piece` every 50 ms for as long as the server keeps the connection open. */
  async function sendSlowly(head: string, piece: string): Promise<Wire> {
    const wire = await openWire(port());
    wire.socket.write(head);
    drip(wire, piece);
    await wire.closed;
    return wire;
  }

  test(
    'a client that sends its headers a line at a time is answered 408 request_timeout and disconnected',
    bounded,
    async () => {
      assertCutOff(await sendSlowly('GET /healthz HTTP/1.1\r\nHost: localhost\r\n', 'X-Slow: yes\r\n'));
    },
  );

  test(
    'a client that sends its body a byte at a time is answered 408 request_timeout and disconnected',
    bounded,
    async () => {
      const wire = await sendSlowly(
        `POST /v1/agents/users HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${t.apiKey}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
        ' ',
      );
      assertCutOff(wire);
      assert.equal(responses(wire.received()).length, 1, 'nothing was answered before the timeout');
    },
  );

  test(
    'an unauthenticated client still sending its body after its 401 is disconnected at the request timeout',
    bounded,
    async () => {
      const wire = await sendSlowly(
        'POST /v1/agents/users HTTP/1.1\r\nHost: localhost\r\n' +
          'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
        ' ',
      );
      assert.deepEqual(
        responses(wire.received()).map(([status]) => status),
        [401, 408],
        wire.received(),
      );
    },
  );

  test(
    'a connection that sends nothing is answered 408 request_timeout and disconnected',
    bounded,
    async () => {
      const wire = await openWire(port());
      await wire.closed;
      assertCutOff(wire);
    },
  );

  test(
    'bytes that are not HTTP are answered 400 bad_request in the envelope and disconnected',
    bounded,
    async () => {
      const wire = await openWire(port());
      wire.socket.write('HELLO THERE\r\n\r\n');
      await wire.closed;
      const [answer] = responses(wire.received());
      assert.equal(answer?.[0], 400, wire.received());
      assert.equal(JSON.parse(answer?.[1] ?? '{}').error.code, 'bad_request');
    },
  );

  test(
    "headers over Node's limit are answered 431 headers_too_large in the envelope and disconnected",
    bounded,
    async () => {
      const wire = await openWire(port());
      wire.socket.write(
        `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'x'.repeat(20 * 1024)}\r\n\r\n`,
      );
      await wire.closed;
      const [answer] = responses(wire.received());
      assert.equal(answer?.[0], 431, wire.received());
      assert.equal(JSON.parse(answer?.[1] ?? '{}').error.code, 'headers_too_large');
    },
  );

  test('an idle keep-alive connection is closed by the server after its answer', bounded, async () => {
    const wire = await openWire(port());
    wire.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await wire.closed;
    assert.deepEqual(
      responses(wire.received()).map(([status]) => status),
      [200],
    );
  });

  test('a streamed reply that lasts longer than the request timeout completes', bounded, async () => {
    const session = await createSession(t, 'drawl');
    const words = 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen';
    const started = Date.now();
    const res = await request(`${base()}/v1/agents/sessions/${session.id}/messages/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': t.apiKey },
      body: JSON.stringify({ content: words }),
    });
    assert.equal(res.statusCode, 200);
    const events: SseEvent[] = await new StreamReader(res.statusCode, res.headers, res.body).all();
    assert.ok(Date.now() - started > 600, 'the stream outlasted the request timeout');
    assert.equal(events.at(-1)?.event, 'turn.completed', events.map((e) => e.event).join(','));
  });
});

describe('a server with a cap of two connections', () => {
  const { port } = useListeningApp({ env: { PARLEY_MAX_CONNECTIONS: '2' } });

  test('a third connection is closed unanswered while the first two keep working', bounded, async () => {
    const health = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';
    const held = await Promise.all([openWire(port()), openWire(port())]);
    for (const wire of held) wire.socket.write(health);
    const answered = (count: number) => (raw: string) =>
      responses(raw).filter(([status]) => status === 200).length === count;
    await Promise.all(held.map((wire) => wire.until(answered(1))));

    const extra = await openWire(port());
    extra.socket.write(health);
    await extra.closed;
    assert.equal(extra.received(), '');

    for (const wire of held) wire.socket.write(health);
    await Promise.all(held.map((wire) => wire.until(answered(2))));
    for (const wire of held) wire.socket.destroy();
  });
});
