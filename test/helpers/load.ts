// A bounded load of sequence-numbered, idempotent sends for the failover tests (issue 6), and the checker
// that reads every session back afterwards. Each session sends "seq 1", "seq 2", … in order, each with
// Idempotency-Key `<session>-<n>`, spread over the processes; a send that meets a process going away
// (503, 502/504, refused, reset, timeout) is retried unchanged on another one, as a client behind a load
// balancer would, until it is acknowledged. What was acknowledged must then be stored exactly once. Some
// sessions may belong to a tool agent, whose every n-th send asks for a call of a key-honouring tool
// (tool-receiver.ts): each such turn's call must then have taken effect exactly once.

import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, errors, request } from 'undici';
import { inputValue, recordDirective, recordedOutput, type ToolReceiver } from './tool-receiver.ts';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field by the callers
  body: any;
  /** `x-parley-node` of the response. */
  node: string | undefined;
}

/** Why an attempt did not get an answer at all. */
export type NoAnswer = 'refused' | 'reset' | 'timeout' | 'other';

// One pool for every request of the harness; each request asks for `connection: close` (reset), so that
// no request is ever written on a kept-alive socket the server is closing: a reset then means the server
// really dropped a request it had read.
const dispatcher = new Agent({ connections: 512 });

function classify(err: unknown): NoAnswer {
  const code = (err as { code?: string }).code ?? (err as { cause?: { code?: string } }).cause?.code;
  if (code === 'ECONNREFUSED') return 'refused';
  if (
    err instanceof errors.HeadersTimeoutError ||
    err instanceof errors.BodyTimeoutError ||
    err instanceof errors.ConnectTimeoutError ||
    (err as Error).name === 'TimeoutError' ||
    (err as Error).name === 'AbortError'
  )
    return 'timeout';
  if (code === 'ECONNRESET' || code === 'EPIPE' || err instanceof errors.SocketError) return 'reset';
  return 'other';
}

/** One HTTP call to a node with the API key (none when empty); never throws for a missing answer. */
export async function call(
  baseUrl: string,
  apiKey: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  timeoutMs = 10_000,
): Promise<Answer | { error: NoAnswer; message: string }> {
  try {
    const response = await request(`${baseUrl}${path}`, {
      method,
      dispatcher,
      reset: true,
      headers: {
        // No key for the public family, which never takes one.
        ...(apiKey ? { 'x-api-key': apiKey } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs + 1_000),
    });
    const text = await response.body.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON (an event stream, say): keep the text
    }
    const node = response.headers['x-parley-node'];
    return {
      status: response.statusCode,
      headers: response.headers,
      body: parsed,
      node: Array.isArray(node) ? node[0] : node,
    };
  } catch (err) {
    return { error: classify(err), message: String((err as Error).message ?? err) };
  }
}

/** 503 (shard moving, draining, store away), 502/504 (a peer that did not answer a forward). */
export const retryableStatus = (status: number) => status === 503 || status === 502 || status === 504;

/**
 * Calls `path` on the nodes in turn, starting at `first`, until an answer that is not retryable;
 * throws after `deadlineMs`.
 */
export async function callAnyNode(
  urls: readonly string[],
  apiKey: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  options: { first?: number; deadlineMs?: number; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const deadline = Date.now() + (options.deadlineMs ?? 30_000);
  let last = '';
  for (let attempt = 0; ; attempt++) {
    const url = urls[((options.first ?? 0) + attempt) % urls.length] as string;
    const answer = await call(url, apiKey, method, path, body, options.headers, 5_000);
    if ('status' in answer && !retryableStatus(answer.status)) return answer;
    last = 'status' in answer ? `${answer.status} ${JSON.stringify(answer.body)}` : answer.message;
    if (Date.now() > deadline) throw new Error(`${method} ${path} got no answer in time; last: ${last}`);
    await sleep(100);
  }
}

/** Creates `count` sessions of `agent` (default `demo`), through the nodes in turn; no user, no context. */
export async function createSessions(urls: readonly string[], apiKey: string, count: number, agent = 'demo') {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await callAnyNode(urls, apiKey, 'POST', `/v1/agents/${agent}/sessions`, {}, { first: i });
    if (created.status !== 201)
      throw new Error(`session creation: ${created.status} ${JSON.stringify(created.body)}`);
    ids.push(String(created.body.id));
  }
  return ids;
}

/** What the built-in `demo` agent (scripted provider) answers to a message, in a session with no context. */
export const demoReply = (text: string) => `Hello! You said: "${text}".`;

/** A tool call as a reply shows it (docs/internals/decisions.md#tool-calls-on-messages). */
export interface ToolCallSeen {
  id: string;
  name: string;
  input: unknown;
  output: unknown;
  status: string;
  duration_ms: number;
}

/** Which sends of the load ask for a tool call: every `every`-th send of the tool agent's sessions. */
export interface ToolSends {
  /** Sessions of an agent with the `record` tool (toolAgent in tool-receiver.ts). */
  sessions: ReadonlySet<string>;
  every: number;
}

/** The value a send's tool call records, unique to the send; undefined for a send that calls no tool. */
export function toolValueOf(tools: ToolSends | undefined, session: string, seq: number): string | undefined {
  return tools?.sessions.has(session) && seq % tools.every === 0 ? `${session}-${seq}` : undefined;
}

/** What a send of the load says: `seq <n>`, with the tool's directive on a tool send. */
export function sendText(tools: ToolSends | undefined, session: string, seq: number): string {
  const value = toolValueOf(tools, session, seq);
  return value === undefined ? `seq ${seq}` : `seq ${seq} ${recordDirective(value)}`;
}

export interface Acked {
  seq: number;
  replyId: string;
  replyText: string;
  /** x-parley-node of the acknowledgement. */
  node: string | undefined;
  /** Date.now() when it arrived. */
  at: number;
  replayed: boolean;
  /** The reply's tool calls, as acknowledged. */
  toolCalls?: ToolCallSeen[] | null;
}

/** An attempt that was not a 201. */
export interface Miss {
  session: string;
  seq: number;
  /** The index of the node it was sent to. */
  target: number;
  at: number;
  status?: number;
  code?: string;
  retryAfter?: string;
  error?: NoAnswer;
  message: string;
  /** Whether the load retried it (true) or gave the session up (false). */
  retried: boolean;
}

export interface LoadResult {
  /** Per session, the acknowledged sends in order. */
  acked: Map<string, Acked[]>;
  /** Per session, a seq that was sent and never acknowledged (given up), if any. */
  unacked: Map<string, number>;
  /** Every attempt that was not a 201. */
  misses: Miss[];
  /** Attempts in all. */
  attempts: number;
  /** The load's tool sends, if any. */
  tools?: ToolSends | undefined;
}

export interface LoadOptions {
  urls: readonly string[];
  apiKey: string;
  sessions: readonly string[];
  /** The most sends per session (default 200; a session holds at most 1,000 messages). */
  maxTurns?: number;
  /** Pause between a session's sends (default 50 ms). */
  thinkMs?: number;
  /** Pause before a retry (default 100 ms). */
  retryPauseMs?: number;
  /** Per-request timeout (default 5 s: a SIGSTOPped process must not hold a session up). */
  requestTimeoutMs?: number;
  /** A send unacknowledged after this long is given up (default 30 s). */
  messageDeadlineMs?: number;
  /** Whether a send may go to node i now (default: all); with none eligible, it goes where it would have. */
  eligible?: (i: number) => boolean;
  /**
   * Behave like a load balancer with health checks: poll GET /readyz of every node this often and send
   * only to the nodes whose last answer was 200 (on top of `eligible`). Off by default.
   */
  readinessPollMs?: number;
  /** Which sends ask for a tool call (none by default). */
  tools?: ToolSends;
}

export interface Load {
  /** Acknowledged sends so far, per session. */
  readonly acked: Map<string, Acked[]>;
  /** Stops after each session's send in flight is acknowledged (or given up); resolves with everything. */
  stop(): Promise<LoadResult>;
  /** Stops at once, retrying nothing more (for cleanup after a failure). */
  abort(): Promise<void>;
}

/** Starts one sender per session; they run until stop() or maxTurns. */
export function startLoad(options: LoadOptions): Load {
  const {
    urls,
    apiKey,
    maxTurns = 200,
    thinkMs = 50,
    retryPauseMs = 100,
    requestTimeoutMs = 5_000,
    messageDeadlineMs = 30_000,
    eligible: allowed = () => true,
    readinessPollMs,
    tools,
  } = options;
  const acked = new Map<string, Acked[]>();
  const unacked = new Map<string, number>();
  const misses: Miss[] = [];
  let attempts = 0;
  let stopping = false;
  let aborted = false;

  const ready = urls.map(() => true);
  const probes =
    readinessPollMs === undefined
      ? []
      : urls.map(async (url, i) => {
          while (!stopping) {
            const answer = await call(url, '', 'GET', '/readyz', undefined, {}, 500);
            ready[i] = 'status' in answer && answer.status === 200;
            await sleep(readinessPollMs);
          }
        });
  const eligible = (i: number) => allowed(i) && ready[i] === true;

  const sendOne = async (session: string, index: number, seq: number): Promise<boolean> => {
    const text = sendText(tools, session, seq);
    const deadline = Date.now() + messageDeadlineMs;
    for (let attempt = 0; ; attempt++) {
      // Successive attempts go to successive nodes: a retry lands elsewhere, as behind a balancer.
      let target = (index + seq + attempt) % urls.length;
      for (let k = 0; k < urls.length && !eligible(target); k++) target = (target + 1) % urls.length;
      attempts++;
      const answer = await call(
        urls[target] as string,
        apiKey,
        'POST',
        `/v1/agents/sessions/${session}/messages`,
        { content: text },
        { 'idempotency-key': `${session}-${seq}` },
        requestTimeoutMs,
      );
      if ('status' in answer && answer.status === 201) {
        const reply = answer.body?.agent_message;
        const list = acked.get(session) ?? [];
        list.push({
          seq,
          replyId: String(reply?.id),
          replyText: (reply?.content ?? []).map((b: { text?: string }) => b.text ?? '').join(''),
          node: answer.node,
          at: Date.now(),
          replayed: answer.headers['idempotent-replayed'] === 'true',
          toolCalls: reply?.tool_calls ?? null,
        });
        acked.set(session, list);
        return true;
      }
      const retried =
        ('error' in answer || retryableStatus(answer.status)) && Date.now() < deadline && !aborted;
      const retryAfter = 'status' in answer ? answer.headers['retry-after'] : undefined;
      misses.push({
        session,
        seq,
        target,
        at: Date.now(),
        ...('status' in answer
          ? {
              status: answer.status,
              code: answer.body?.error?.code,
              ...(retryAfter === undefined ? {} : { retryAfter: String(retryAfter) }),
              message: JSON.stringify(answer.body).slice(0, 300),
            }
          : { error: answer.error, message: answer.message }),
        retried,
      });
      if (!retried) {
        unacked.set(session, seq);
        return false;
      }
      await sleep(retryPauseMs);
    }
  };

  const run = async (session: string, index: number) => {
    // Spread the senders' starts so that they do not move in lockstep.
    await sleep((index * 7) % Math.max(1, thinkMs));
    for (let seq = 1; seq <= maxTurns && !stopping; seq++) {
      if (!(await sendOne(session, index, seq))) return;
      await sleep(thinkMs);
    }
  };

  const running = Promise.all([...options.sessions.map((session, index) => run(session, index)), ...probes]);
  return {
    acked,
    async stop() {
      stopping = true;
      await running;
      return { acked, unacked, misses, attempts, tools };
    },
    async abort() {
      stopping = true;
      aborted = true;
      await running;
    },
  };
}

/** Reads every message of a session, 100 at a time, through any node. */
export async function readMessages(urls: readonly string[], apiKey: string, session: string, first = 0) {
  const messages: Array<{ id: string; role: string; text: string; toolCalls: ToolCallSeen[] | null }> = [];
  let offset: number | null = 0;
  while (offset !== null) {
    const page = await callAnyNode(
      urls,
      apiKey,
      'GET',
      `/v1/agents/sessions/${session}/messages?limit=100&offset=${offset}`,
      undefined,
      { first },
    );
    if (page.status !== 200)
      throw new Error(`messages of ${session}: ${page.status} ${JSON.stringify(page.body)}`);
    for (const m of page.body.items as Array<{
      id: string;
      role: string;
      content: { text?: string }[];
      tool_calls?: ToolCallSeen[] | null;
    }>) {
      messages.push({
        id: m.id,
        role: m.role,
        text: m.content.map((b) => b.text ?? '').join(''),
        toolCalls: m.tool_calls ?? null,
      });
    }
    offset = page.body.next_offset as number | null;
  }
  return messages;
}

/**
 * Reads every session back and lists what is wrong (empty when all is well): user messages exactly
 * "seq 1".."seq n" in order, each once; every acknowledged send stored, with the very reply that was
 * acknowledged; exactly one reply after each user message, which shows one `record` call, ok, after a tool
 * send and none after another; messages_count agrees.
 */
export async function checkSessions(
  urls: readonly string[],
  apiKey: string,
  result: LoadResult,
  sessions: readonly string[],
  expectedReply: (text: string) => string = demoReply,
): Promise<string[]> {
  const problems: string[] = [];
  for (const [index, session] of sessions.entries()) {
    const acks = result.acked.get(session) ?? [];
    const lastAcked = acks.at(-1)?.seq ?? 0;
    const pending = result.unacked.get(session);
    const messages = await readMessages(urls, apiKey, session, index);
    const say = (what: string) => problems.push(`${session}: ${what}`);

    acks.forEach((ack, k) => {
      if (ack.seq !== k + 1) say(`acknowledgement ${k + 1} is for seq ${ack.seq}`);
    });
    // A send given up may or may not have been stored; nothing beyond it was ever sent.
    const users = messages.filter((m) => m.role === 'user');
    const allowed = pending === undefined ? [lastAcked] : [lastAcked, pending];
    if (!allowed.includes(users.length)) {
      say(
        `${users.length} user messages stored, ${lastAcked} acknowledged${pending ? `, seq ${pending} unanswered` : ''}`,
      );
    }
    users.forEach((m, k) => {
      if (m.text !== sendText(result.tools, session, k + 1))
        say(`user message ${k + 1} is ${JSON.stringify(m.text)}`);
    });

    // user, assistant, user, assistant…; only a given-up last send may lack its reply.
    for (let k = 0; k < messages.length; k += 2) {
      const user = messages[k];
      const reply = messages[k + 1];
      if (user?.role !== 'user') {
        say(`message ${k + 1} is a ${user?.role} message where a user message belongs: ${user?.text}`);
        break;
      }
      if (reply === undefined) {
        if (pending === undefined || user.text !== sendText(result.tools, session, pending))
          say(`${user.text} has no reply`);
        break;
      }
      if (reply.role !== 'assistant') {
        say(`${user.text} is followed by a ${reply.role} message (${reply.text}), not one reply`);
        break;
      }
      const value = toolValueOf(result.tools, session, k / 2 + 1);
      if (reply.text !== withTool(expectedReply(user.text), value))
        say(`the reply to ${user.text} is ${JSON.stringify(reply.text)}`);
      const calls = reply.toolCalls ?? [];
      if (value === undefined ? calls.length > 0 : !isRecordCall(calls, value)) {
        say(`the reply to ${user.text} shows the tool calls ${JSON.stringify(reply.toolCalls)}`);
      }
      const ack = acks[k / 2];
      if (ack && ack.replyId !== reply.id) {
        say(`seq ${ack.seq} was acknowledged with reply ${ack.replyId}, but ${reply.id} is stored`);
      }
      if (ack && ack.replyText !== reply.text) say(`seq ${ack.seq} was acknowledged with ${ack.replyText}`);
    }

    const got = await callAnyNode(urls, apiKey, 'GET', `/v1/agents/sessions/${session}`, undefined, {
      first: index,
    });
    if (got.status !== 200) say(`GET answered ${got.status}`);
    else if (got.body.messages_count !== messages.length)
      say(`messages_count ${got.body.messages_count}, ${messages.length} messages listed`);
  }
  return problems;
}

/**
 * The scripted agent's reply to a tool send, around what it answers to any message: the first step's text,
 * then the final step's, which tells what the tool gave (src/agents/scripted.ts).
 */
const withTool = (reply: string, value: string | undefined) =>
  value === undefined
    ? reply
    : `Let me use record.\n\n${reply} Tools: record ok ${JSON.stringify(recordedOutput(value))}.`;

/** Whether a reply's tool calls are exactly one `record` call of `value`, ok. */
const isRecordCall = (calls: readonly ToolCallSeen[], value: string) =>
  calls.length === 1 &&
  calls[0]?.name === 'record' &&
  calls[0].status === 'ok' &&
  JSON.stringify(calls[0].output) === JSON.stringify(recordedOutput(value));

/**
 * Lists what is wrong with the acknowledged tool sends (empty when all is well), with the tool's own record
 * and the store's (SQLite, read-only): each one's reply was acknowledged with one `record` call, ok; the
 * turn of its reply (from `messages`) has exactly one row in `tool_calls`, with its result; the tool saw
 * exactly one Idempotency-Key for that turn (`<turn_id>:<call_id>`, that call's), applied once; and every
 * request carrying the send's value came under that key, so that no other turn of the same send took effect.
 */
export function checkToolTurns(
  result: LoadResult,
  receiver: Pick<ToolReceiver, 'requests' | 'applications'>,
  sqliteFile: string,
): string[] {
  const problems: string[] = [];
  const db = new DatabaseSync(sqliteFile, { readOnly: true });
  try {
    const turnOf = db.prepare('SELECT turn_id FROM messages WHERE id = ?');
    const callsOf = db.prepare(
      'SELECT id, status FROM tool_calls WHERE session_id = ? AND turn_id = ? ORDER BY step, position',
    );
    const keysOfValue = new Map<unknown, Set<string>>();
    for (const request of receiver.requests) {
      const value = inputValue(request.body?.input);
      keysOfValue.set(value, (keysOfValue.get(value) ?? new Set()).add(request.key));
    }
    let checked = 0;
    for (const [session, acks] of result.acked) {
      for (const ack of acks) {
        const value = toolValueOf(result.tools, session, ack.seq);
        if (value === undefined) continue;
        checked++;
        const say = (what: string) => problems.push(`${session} seq ${ack.seq}: ${what}`);
        if (!isRecordCall(ack.toolCalls ?? [], value))
          say(`acknowledged with the tool calls ${JSON.stringify(ack.toolCalls)}`);
        const turn = (turnOf.get(ack.replyId) as { turn_id?: string } | undefined)?.turn_id;
        if (turn === undefined) {
          say(`its reply ${ack.replyId} is not stored`);
          continue;
        }
        const stored = callsOf.all(session, turn) as unknown as { id: string; status: string | null }[];
        if (stored.length !== 1 || stored[0]?.status !== 'ok')
          say(`turn ${turn} stored the tool calls ${JSON.stringify(stored)}`);
        const keys = [...receiver.applications].filter(([key]) => key.startsWith(`${turn}:`));
        const expected = `${turn}:${ack.toolCalls?.[0]?.id}`;
        if (keys.length !== 1 || keys[0]?.[0] !== expected || keys[0][1] !== 1)
          say(`the tool applied ${JSON.stringify(keys)} for turn ${turn}, not ${expected} once`);
        const ofValue = [...(keysOfValue.get(value) ?? [])];
        if (ofValue.length !== 1 || ofValue[0] !== expected)
          say(`the tool was called for ${value} under the keys ${JSON.stringify(ofValue)}`);
      }
    }
    if (checked === 0) problems.push('no acknowledged tool send to check');
    return problems;
  } finally {
    db.close();
  }
}

/**
 * No write committed under a stale epoch (SQLite): within each shard, the `epoch` of `messages` in
 * commit (rowid) order never decreases. Reads the shared file read-only while the processes may run.
 */
export function checkEpochOrder(sqliteFile: string, sessions?: readonly string[]): string[] {
  const db = new DatabaseSync(sqliteFile, { readOnly: true });
  try {
    const columns = db.prepare('SELECT name FROM pragma_table_info(?)').all('messages') as unknown as {
      name: string;
    }[];
    if (!columns.some((c) => c.name === 'epoch')) return ['table messages has no epoch column'];
    const rows = db
      .prepare(
        `SELECT m.rowid AS rowid, m.session_id AS session, s.shard AS shard, m.epoch AS epoch
           FROM messages m JOIN sessions s ON s.id = m.session_id ORDER BY m.rowid`,
      )
      .all() as unknown as { rowid: number; session: string; shard: number; epoch: number | null }[];
    const wanted = sessions ? new Set(sessions) : undefined;
    const last = new Map<number, { rowid: number; epoch: number }>();
    const problems: string[] = [];
    let checked = 0;
    for (const row of rows) {
      if (wanted && !wanted.has(row.session)) continue;
      checked++;
      if (row.epoch === null) {
        problems.push(`message rowid ${row.rowid} (shard ${row.shard}) has no epoch`);
        continue;
      }
      const before = last.get(row.shard);
      if (before && row.epoch < before.epoch) {
        problems.push(
          `shard ${row.shard}: rowid ${row.rowid} was committed under epoch ${row.epoch} after rowid ${before.rowid} under ${before.epoch}`,
        );
      }
      last.set(row.shard, { rowid: row.rowid, epoch: row.epoch });
    }
    if (checked === 0) problems.push('no message to check');
    return problems;
  } finally {
    db.close();
  }
}

/** A readable summary of the misses: counts by kind, e.g. `503 shard_moving ×12, refused ×3`. */
export function summarizeMisses(misses: readonly Miss[]): string {
  const counts = new Map<string, number>();
  for (const miss of misses) {
    const kind = miss.status === undefined ? String(miss.error) : `${miss.status} ${miss.code ?? ''}`.trim();
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...counts].map(([kind, n]) => `${kind} ×${n}`).join(', ') || 'none';
}
