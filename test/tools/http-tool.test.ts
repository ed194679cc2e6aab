// HTTP tools against a real receiver on loopback (docs/guides/tools.md#http-tools): the signed call an
// integrator gets, the same Idempotency-Key on every attempt, and each way a tool can fail given back as an
// error outcome, bounded in bytes and time; only the turn's abort rejects.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { after, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { httpToolSchema } from '../../src/agents/catalogue-tools.ts';
import { httpTool } from '../../src/tools/http-tool.ts';
import { MAX_TOOL_RESULT_BYTES, type ToolCallRequest } from '../../src/tools/tool.ts';
import { freePort } from '../../support/free-port.ts';

interface Received {
  url: string;
  headers: IncomingMessage['headers'];
  /** The body exactly as sent: what a signature is checked against. */
  raw: string;
}

interface Receiver {
  url: string;
  received: Received[];
  /** Resolves once `count` requests have arrived, for tests that act while the tool is waited for. */
  receivedCount(count: number): Promise<void>;
  close(): Promise<void>;
}

type Handler = (request: Received, response: ServerResponse) => void;

const receivers: Receiver[] = [];
after(() => Promise.all(receivers.map((r) => r.close())));

async function startReceiver(handler: Handler): Promise<Receiver> {
  const received: Received[] = [];
  const arrived = new EventTarget();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk);
    const request = { url: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') };
    received.push(request);
    arrived.dispatchEvent(new Event('request'));
    handler(request, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  const receiver: Receiver = {
    url: `http://127.0.0.1:${address.port}/tool`,
    received,
    receivedCount: async (count) => {
      while (received.length < count) await once(arrived, 'request');
    },
    close: async () => {
      // Receivers that never answer hold their connections open.
      server.closeAllConnections();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
  receivers.push(receiver);
  return receiver;
}

const answerJson =
  (status: number, value: unknown): Handler =>
  (_request, response) => {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  };

const toolConfig = (url: string, extra: { timeout_ms?: number } = {}) =>
  httpToolSchema.parse({
    name: 'lookup_order',
    description: 'Looks an order up by its number.',
    input_schema: { type: 'object', properties: { order: { type: 'string' } } },
    url,
    ...extra,
  });

const callRequest = (extra: Partial<ToolCallRequest> = {}): ToolCallRequest => ({
  callId: 'call_1',
  turnId: 'turn_1',
  sessionId: 'ses_1',
  agentId: 'support',
  user: { id: 'usr_1', reference: 'crm-42' },
  input: { order: 'A-1001' },
  signal: new AbortController().signal,
  ...extra,
});

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

test('a call posts the documented JSON body with the Idempotency-Key and a Standard Webhooks signature', async () => {
  const receiver = await startReceiver(answerJson(200, { status: 'shipped' }));
  const secret = newSecret();
  const tool = httpTool(toolConfig(receiver.url), { secret });

  assert.deepEqual(tool.spec, {
    name: 'lookup_order',
    description: 'Looks an order up by its number.',
    input_schema: { type: 'object', properties: { order: { type: 'string' } } },
  });
  const before = Math.floor(Date.now() / 1000);
  const outcome = await tool.call(callRequest());
  assert.deepEqual(outcome, { status: 'ok', output: { status: 'shipped' } });

  const [request] = receiver.received;
  assert.equal(request.url, '/tool');
  assert.deepEqual(JSON.parse(request.raw), {
    tool: 'lookup_order',
    call_id: 'call_1',
    turn_id: 'turn_1',
    session_id: 'ses_1',
    agent_id: 'support',
    input: { order: 'A-1001' },
    user: { id: 'usr_1', reference: 'crm-42' },
  });
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers['idempotency-key'], 'turn_1:call_1');
  assert.equal(request.headers['webhook-id'], 'turn_1:call_1');
  const timestamp = Number(request.headers['webhook-timestamp']);
  assert.ok(timestamp >= before && timestamp <= Math.floor(Date.now() / 1000), String(timestamp));
  assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
});

test('an integrator verifies the signature with the raw body and headers, and a wrong secret fails', async () => {
  const secret = newSecret();
  // What an integrator's endpoint does: verify the raw body before trusting it (here with node:http).
  const receiver = await startReceiver((request, response) => {
    try {
      const payload = new Webhook(secret).verify(request.raw, {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      });
      answerJson(200, { verified: true, payload })(request, response);
    } catch {
      answerJson(401, { verified: false })(request, response);
    }
  });

  const outcome = await httpTool(toolConfig(receiver.url), { secret }).call(callRequest());
  assert.equal(outcome.status, 'ok');
  assert.deepEqual(outcome.output, { verified: true, payload: JSON.parse(receiver.received[0].raw) });

  const forged = await httpTool(toolConfig(receiver.url), { secret: newSecret() }).call(callRequest());
  assert.deepEqual(forged, {
    status: 'error',
    output: { error: 'status', status: 401, message: '{"verified":false}' },
  });
});

test('a secret given without the whsec_ prefix signs the same as with it', async () => {
  const receiver = await startReceiver(answerJson(200, {}));
  const secret = newSecret();
  await httpTool(toolConfig(receiver.url), { secret: secret.slice('whsec_'.length) }).call(callRequest());
  const [request] = receiver.received;
  const headers = {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  };
  assert.doesNotThrow(() => new Webhook(secret).verify(request.raw, headers));
});

test('every attempt of a call carries the same Idempotency-Key and webhook-id; another call has its own', async () => {
  const receiver = await startReceiver(answerJson(200, { ok: true }));
  const tool = httpTool(toolConfig(receiver.url), { secret: newSecret() });
  await tool.call(callRequest());
  await tool.call(callRequest());
  await tool.call(callRequest({ callId: 'call_2' }));

  const keys = receiver.received.map((r) => [r.headers['idempotency-key'], r.headers['webhook-id']]);
  assert.deepEqual(keys, [
    ['turn_1:call_1', 'turn_1:call_1'],
    ['turn_1:call_1', 'turn_1:call_1'],
    ['turn_1:call_2', 'turn_1:call_2'],
  ]);
  // Each attempt is signed anew, and each signature verifies.
  for (const request of receiver.received) assert.ok(request.headers['webhook-signature']);
});

test('without a secret the call is unsigned but still carries webhook-id and webhook-timestamp', async () => {
  const receiver = await startReceiver(answerJson(200, { ok: true }));
  const outcome = await httpTool(toolConfig(receiver.url), {}).call(callRequest({ user: null }));
  assert.deepEqual(outcome, { status: 'ok', output: { ok: true } });

  const [request] = receiver.received;
  assert.equal(request.headers['webhook-signature'], undefined);
  assert.equal(request.headers['webhook-id'], 'turn_1:call_1');
  assert.match(String(request.headers['webhook-timestamp']), /^\d{10}$/);
  assert.equal(JSON.parse(request.raw).user, null);
});

test('a non-2xx answer is an error outcome with its status and the start of its body', async () => {
  const receiver = await startReceiver((_request, response) => {
    response.writeHead(503, { 'content-type': 'text/plain' }).end(`down for maintenance ${'x'.repeat(5000)}`);
  });
  const outcome = await httpTool(toolConfig(receiver.url), {}).call(callRequest());
  assert.equal(outcome.status, 'error');
  assert.deepEqual(outcome.output, {
    error: 'status',
    status: 503,
    message: `down for maintenance ${'x'.repeat(500 - 'down for maintenance '.length)}`,
  });
});

test('a redirect is not followed: it is an error outcome with its status', async () => {
  const receiver = await startReceiver((request, response) => {
    if (request.url === '/tool') response.writeHead(307, { location: '/elsewhere' }).end();
    else answerJson(200, { followed: true })(request, response);
  });
  const outcome = await httpTool(toolConfig(receiver.url), {}).call(callRequest());
  assert.deepEqual(outcome, { status: 'error', output: { error: 'status', status: 307, message: '' } });
  assert.deepEqual(
    receiver.received.map((r) => r.url),
    ['/tool'],
  );
});

test('a 204 or an empty 2xx body is ok with a null output', async () => {
  const noContent = await startReceiver((_request, response) => response.writeHead(204).end());
  assert.deepEqual(await httpTool(toolConfig(noContent.url), {}).call(callRequest()), {
    status: 'ok',
    output: null,
  });
  const empty = await startReceiver((_request, response) => response.writeHead(200).end());
  assert.deepEqual(await httpTool(toolConfig(empty.url), {}).call(callRequest()), {
    status: 'ok',
    output: null,
  });
});

test('a JSON result of exactly 64 KiB is ok; one byte more is too_large, counted as it streams', async () => {
  // A JSON string of n bytes in all: the quotes and n - 2 letters.
  const jsonOfBytes = (n: number) => JSON.stringify('a'.repeat(n - 2));
  let size = MAX_TOOL_RESULT_BYTES;
  const receiver = await startReceiver((_request, response) => {
    // Written in two parts, so sent chunked, without a length: the bound is counted as the bytes arrive.
    const json = jsonOfBytes(size);
    response.writeHead(200, { 'content-type': 'application/json' }).write(json.slice(0, 1000));
    response.end(json.slice(1000));
  });
  const tool = httpTool(toolConfig(receiver.url), {});
  const fits = await tool.call(callRequest());
  assert.equal(fits.status, 'ok');
  assert.equal(JSON.stringify(fits.output).length, MAX_TOOL_RESULT_BYTES);

  size = MAX_TOOL_RESULT_BYTES + 1;
  assert.deepEqual(await tool.call(callRequest()), {
    status: 'error',
    output: { error: 'too_large', limit_bytes: 65536 },
  });
});

test('a huge streamed result without a length is cut off at the bound, not read to its end', async () => {
  const total = 64 * 1024 * 1024;
  let written = 0;
  let finished = false;
  let answered: Promise<unknown> = Promise.resolve();
  const receiver = await startReceiver((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    // One JSON string of 64 MiB, written as fast as the caller reads it.
    async function* huge() {
      yield '"';
      while (written < total) {
        written += chunk.length;
        yield chunk;
      }
      yield '"';
      finished = true;
    }
    answered = pipeline(huge, response).catch((err) => err);
  });
  const outcome = await httpTool(toolConfig(receiver.url), {}).call(callRequest());
  assert.deepEqual(outcome, { status: 'error', output: { error: 'too_large', limit_bytes: 65536 } });
  // The caller hung up: the receiver's answer was cut short, far from its 64 MiB.
  await answered;
  assert.equal(finished, false);
  assert.ok(written < total, `${written} bytes written`);
});

test('a declared length over the bound is too_large', async () => {
  const receiver = await startReceiver((_request, response) => {
    response.writeHead(200, {
      'content-type': 'application/json',
      'content-length': String(10 * 1024 * 1024),
    });
    response.write('"');
  });
  const outcome = await httpTool(toolConfig(receiver.url), {}).call(callRequest());
  assert.deepEqual(outcome, { status: 'error', output: { error: 'too_large', limit_bytes: 65536 } });
});

test('a 2xx body that is not JSON is a not_json error outcome', async () => {
  const receiver = await startReceiver((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' }).end('<html>Sign in</html>');
  });
  const outcome = await httpTool(toolConfig(receiver.url), {}).call(callRequest());
  assert.equal(outcome.status, 'error');
  assert.ok(outcome.output !== null && typeof outcome.output === 'object');
  assert.equal('error' in outcome.output && outcome.output.error, 'not_json');
  assert.ok('message' in outcome.output && typeof outcome.output.message === 'string');
});

test('a tool that never answers is a timeout error outcome after timeout_ms', async () => {
  const receiver = await startReceiver(() => {});
  const started = Date.now();
  const outcome = await httpTool(toolConfig(receiver.url, { timeout_ms: 200 }), {}).call(callRequest());
  assert.deepEqual(outcome, {
    status: 'error',
    output: { error: 'timeout', message: 'The tool did not answer within 200 ms.' },
  });
  assert.ok(Date.now() - started >= 190, `${Date.now() - started} ms`);
});

test('the timeout covers the body too: headers then silence is a timeout', async () => {
  const receiver = await startReceiver((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.write('{"partial":');
  });
  const outcome = await httpTool(toolConfig(receiver.url, { timeout_ms: 200 }), {}).call(callRequest());
  assert.deepEqual(outcome, {
    status: 'error',
    output: { error: 'timeout', message: 'The tool did not answer within 200 ms.' },
  });
});

test('a refused connection is an unreachable error outcome that does not name the address', async () => {
  const port = await freePort();
  const outcome = await httpTool(toolConfig(`http://127.0.0.1:${port}/tool`), {}).call(callRequest());
  assert.equal(outcome.status, 'error');
  assert.deepEqual(outcome.output, {
    error: 'unreachable',
    message: 'The tool could not be reached (ECONNREFUSED).',
  });
});

test('a connection reset before an answer is an unreachable error outcome', async () => {
  const receiver = await startReceiver((_request, response) => response.socket?.destroy());
  const outcome = await httpTool(toolConfig(receiver.url), {}).call(callRequest());
  assert.equal(outcome.status, 'error');
  assert.ok(outcome.output !== null && typeof outcome.output === 'object' && 'error' in outcome.output);
  assert.equal(outcome.output.error, 'unreachable');
});

test("the turn's abort rejects the call with its reason, while the tool is waited for", async () => {
  const receiver = await startReceiver(() => {});
  const turn = new AbortController();
  const reason = new Error('turn given up');
  const call = httpTool(toolConfig(receiver.url), {}).call(callRequest({ signal: turn.signal }));
  await receiver.receivedCount(1);
  turn.abort(reason);
  await assert.rejects(call, (err) => err === reason);
});

test('a turn already aborted rejects at once, and the tool is not called', async () => {
  const receiver = await startReceiver(answerJson(200, {}));
  const turn = new AbortController();
  turn.abort(new Error('shutting down'));
  await assert.rejects(httpTool(toolConfig(receiver.url), {}).call(callRequest({ signal: turn.signal })), {
    message: 'shutting down',
  });
  assert.equal(receiver.received.length, 0);
});
