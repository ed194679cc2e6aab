// A real HTTP tool on loopback that honours the Idempotency-Key (docs/guides/tools.md#exactly-once), for
// tests of tool calls across crashes and failovers: it records every call, takes effect once per key (a
// repeated key is answered with the stored result), and can hold its answers (all, or those a test picks) so
// that a test acts while a call is in flight, or keep calls at its gate, unread, so that a test acts before a
// call has reached the tool at all.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { z } from 'zod';
import { tempDir } from './process.ts';

/** The JSON body Parley POSTs for a call. */
const callBody = z.object({
  tool: z.string(),
  call_id: z.string(),
  turn_id: z.string(),
  session_id: z.string(),
  agent_id: z.string(),
  input: z.unknown(),
  user: z.object({ id: z.string(), reference: z.string().nullable() }).nullable(),
});
export type ToolCallBody = z.infer<typeof callBody>;

export interface ToolRequest {
  /** The Idempotency-Key header ('' when missing). */
  key: string;
  /** Every header as it arrived. */
  headers: IncomingHttpHeaders;
  /** The body parsed; null when it was not a call's JSON (then answered 400, with no effect). */
  body: ToolCallBody | null;
  /** The body exactly as sent. */
  raw: string;
  /** Date.now() on arrival. */
  at: number;
}

export interface ToolReceiver {
  /** The tool's URL, for an agent's `tools[].url`. */
  readonly url: string;
  /** Every request, in arrival order, repeated keys included. */
  readonly requests: readonly ToolRequest[];
  /** Per Idempotency-Key, how many times its effect was applied (1, once seen). */
  readonly applications: ReadonlyMap<string, number>;
  /** Per Idempotency-Key, the result its effect gave: what every request with the key is answered. */
  readonly results: ReadonlyMap<string, unknown>;
  /**
   * From now on the requests that `match` selects (by default every one) are not answered (their effect
   * still applies on arrival) until release(); the others are answered as they come.
   */
  hold(match?: (request: ToolRequest) => boolean): void;
  /** Answers every held request and stops holding. */
  release(): void;
  /**
   * From now on the requests that `match` selects wait at the gate, not read as calls (no effect, not in
   * `requests`) until openGate(); one whose caller goes away meanwhile never reaches the tool (`dropped`).
   */
  gate(match?: (body: ToolCallBody | null) => boolean): void;
  /** Lets every request waiting at the gate in, and stops gating. */
  openGate(): void;
  /** Resolves once `count` requests waiting at the gate in all have been dropped (their callers gone). */
  dropped(count: number): Promise<void>;
  /** Resolves once one more request waits at the gate. */
  nextGated(): Promise<void>;
  /** Resolves with the next request to arrive after this call that `match` selects (by default any). */
  nextRequest(match?: (request: ToolRequest) => boolean): Promise<ToolRequest>;
  /** Resolves once `count` requests in all have arrived (at once if they have), with the last of them. */
  received(count: number): Promise<ToolRequest>;
  /** The distinct keys of the requests that `match` selects, in order of first arrival. */
  keysOf(match: (request: ToolRequest) => boolean): string[];
  close(): Promise<void>;
}

export interface ToolReceiverOptions {
  /** The result of a call's effect; by default `{ recorded: <input.value> }` (recordedOutput). */
  effect?: (body: ToolCallBody) => unknown;
}

/** What the default effect answers for a call whose input is `{ value }`. */
export const recordedOutput = (value: unknown) => ({ recorded: value ?? null });

/** The `value` of a call's input, if it has one. */
export const inputValue = (input: unknown) =>
  input !== null && typeof input === 'object' && 'value' in input ? input.value : undefined;

/**
 * Starts a receiver on a free loopback port, closed when `t` ends. The effect is applied when a request is
 * read, before any hold: a held call has taken effect and only its answer is late, as when the process that
 * waited for it dies, which is what a retry under the same key must not repeat.
 */
export async function startToolReceiver(
  /** A test's context, or node:test's `after` for a whole file's receiver. */
  t: { after(fn: () => unknown): void },
  options: ToolReceiverOptions = {},
): Promise<ToolReceiver> {
  const effect = options.effect ?? ((body: ToolCallBody) => recordedOutput(inputValue(body.input)));
  const requests: ToolRequest[] = [];
  const applications = new Map<string, number>();
  const results = new Map<string, unknown>();
  const held: Array<() => void> = [];
  /** Each waiter is told of every request that arrives, and is done once it says so. */
  const waiters: Array<(request: ToolRequest) => boolean> = [];
  let holding: ((request: ToolRequest) => boolean) | null = null;
  let gating: ((body: ToolCallBody | null) => boolean) | null = null;
  const atGate = new Set<() => void>();
  let droppedAtGate = 0;
  const gateWaiters: Array<() => boolean> = [];
  const tellGate = () => {
    for (const waiter of gateWaiters.splice(0)) if (!waiter()) gateWaiters.push(waiter);
  };

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    // The caller may be gone (its process killed while the answer was held): nothing is left to tell.
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };

  const server = createServer(async (req, res) => {
    res.on('error', () => {});
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk);
    } catch {
      return;
    }
    const raw = Buffer.concat(chunks).toString('utf8');
    const header = req.headers['idempotency-key'];
    const key = typeof header === 'string' ? header : '';
    let body: ToolCallBody | null = null;
    try {
      body = callBody.parse(JSON.parse(raw));
    } catch {
      // Recorded as it came, for the test to see; no effect.
    }
    if (gating?.(body)) {
      const waiting = await new Promise<boolean>((enter) => {
        const letIn = () => enter(true);
        atGate.add(letIn);
        res.once('close', () => {
          if (!atGate.delete(letIn)) return;
          droppedAtGate++;
          enter(false);
        });
        tellGate();
      });
      tellGate();
      if (!waiting) return;
    }
    const request: ToolRequest = { key, headers: req.headers, body, raw, at: Date.now() };
    requests.push(request);
    if (body !== null && key !== '' && !results.has(key)) {
      results.set(key, effect(body));
      applications.set(key, (applications.get(key) ?? 0) + 1);
    }
    for (const waiter of waiters.splice(0)) if (!waiter(request)) waiters.push(waiter);
    const respond = () =>
      body === null || key === ''
        ? answer(res, 400, { error: 'not a tool call with an Idempotency-Key' })
        : answer(res, 200, results.get(key));
    if (holding?.(request)) held.push(respond);
    else respond();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');

  const release = () => {
    holding = null;
    for (const respond of held.splice(0)) respond();
  };
  const received = (count: number) =>
    new Promise<ToolRequest>((resolve) => {
      const last = requests[count - 1];
      if (last) resolve(last);
      else
        waiters.push((request) => {
          if (requests.length < count) return false;
          resolve(request);
          return true;
        });
    });
  const nextRequest = (match: (request: ToolRequest) => boolean = () => true) =>
    new Promise<ToolRequest>((resolve) => {
      waiters.push((request) => {
        if (!match(request)) return false;
        resolve(request);
        return true;
      });
    });
  const openGate = () => {
    gating = null;
    const waiting = [...atGate];
    atGate.clear();
    for (const letIn of waiting) letIn();
  };
  const receiver: ToolReceiver = {
    url: `http://127.0.0.1:${address.port}/record`,
    requests,
    applications,
    results,
    hold(match = () => true) {
      holding = match;
    },
    release,
    nextRequest,
    received,
    gate(match = () => true) {
      gating = match;
    },
    openGate,
    dropped: (count) =>
      new Promise<void>((resolve) => {
        const done = () => {
          if (droppedAtGate < count) return false;
          resolve();
          return true;
        };
        if (!done()) gateWaiters.push(done);
      }),
    nextGated: () =>
      new Promise<void>((resolve) => {
        const seen = atGate.size;
        gateWaiters.push(() => {
          if (atGate.size <= seen) return false;
          resolve();
          return true;
        });
      }),
    keysOf: (match) => [...new Set(requests.filter(match).map((r) => r.key))],
    async close() {
      openGate();
      release();
      server.closeAllConnections();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
  t.after(() => receiver.close());
  return receiver;
}

/**
 * A scripted agent with one HTTP tool, `record`, calling `url`: `[[tool:record {"value":"…"}]]` in a
 * message makes it call the tool (src/agents/scripted.ts). The timeout is long: a held call must not time out.
 */
export function toolAgent(url: string, id = 'toolbot') {
  return {
    id,
    name: 'Tool bot',
    instructions: 'Record what you are asked to record.',
    provider: 'scripted',
    tools: [
      {
        name: 'record',
        description: 'Records a value',
        input_schema: { type: 'object', properties: { value: { type: 'string' } } },
        url,
        timeout_ms: 30_000,
      },
    ],
  };
}

/** The message that makes a tool agent call `record` with `value` (and what else the message says). */
export const recordDirective = (value: string) => `[[tool:record ${JSON.stringify({ value })}]]`;

/** Writes `{ agents }` as an agents file (JSON, which YAML reads) in a temporary directory; its path. */
export async function writeAgentsFile(t: Pick<TestContext, 'after'>, agents: readonly object[]) {
  const file = join(await tempDir(t, 'parley-tool-agents-'), 'agents.json');
  await writeFile(file, `${JSON.stringify({ agents }, null, 2)}\n`);
  return file;
}
