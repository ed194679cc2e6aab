// A load of turns that wait for approvals, for the chaos test (docs/internals/decisions.md#approvals): each
// session sends "approval <n>" asking for `refund` (approved) and `email` (denied), under Idempotency-Key
// `<session>-a<n>`, then decides both, each request retried unchanged on another process when it meets one
// going away, as a client behind a balancer would. So at any moment some turns wait and some decisions are in
// flight. The checker then asks of every acknowledged turn: its approved call applied exactly once, its denied
// call never seen by the tool, its reply stored once.
import { setTimeout as sleep } from 'node:timers/promises';
import { type Answer, call, readMessages, retryableStatus } from './load.ts';
import type { ToolReceiver } from './tool-receiver.ts';

export interface ApprovalAck {
  session: string;
  seq: number;
  turnId: string;
  refund: string;
  replyId: string;
}

export interface ApprovalLoad {
  readonly acked: ApprovalAck[];
  /** Requests that got no usable answer and were sent again. */
  readonly retries: number;
  stop(): Promise<{ acked: ApprovalAck[]; failures: string[]; retries: number }>;
}

const content = (session: string, seq: number) =>
  `approval ${seq} [[tool:refund {"value":"${session}-${seq}"}]] [[tool:email {"value":"${session}-${seq}"}]]`;

/** Starts one driver per session of the `shop` agent (approvalAgents in approvals.ts). */
export function startApprovalLoad(o: {
  urls: readonly string[];
  apiKey: string;
  sessions: readonly string[];
  /** A request unanswered for this long is given up, and the test fails (default 60 s). */
  deadlineMs?: number;
}): ApprovalLoad {
  const acked: ApprovalAck[] = [];
  const failures: string[] = [];
  let retries = 0;
  let stopping = false;

  /** POSTs until an answer that is not a process going away; the answer, or null when given up. */
  const post = async (path: string, body: unknown, headers: Record<string, string>, start: number) => {
    const deadline = Date.now() + (o.deadlineMs ?? 60_000);
    for (let attempt = 0; ; attempt++) {
      const url = o.urls[(start + attempt) % o.urls.length] as string;
      const answer = await call(url, o.apiKey, 'POST', path, body, headers, 10_000);
      if ('status' in answer && !retryableStatus(answer.status)) return answer;
      retries++;
      if (Date.now() > deadline) return null;
      await sleep(100);
    }
  };

  const turn = async (session: string, index: number, seq: number): Promise<boolean> => {
    const path = `/v1/agents/sessions/${session}/messages`;
    const sent = await post(
      path,
      { content: content(session, seq) },
      { 'idempotency-key': `${session}-a${seq}` },
      index + seq,
    );
    if (sent?.status !== 202) return fail(session, seq, 'send', sent);
    const turnId = String(sent.body.turn.id);
    const approvals = sent.body.turn.approvals as { call_id: string; tool: string }[];
    const idOf = (tool: string) => approvals.find((a) => a.tool === tool)?.call_id ?? '';
    const decisions = [
      { call_id: idOf('refund'), approved: true },
      { call_id: idOf('email'), approved: false, reason: 'no' },
    ];
    const decided = await post(
      `/v1/agents/sessions/${session}/turns/${turnId}/approvals`,
      { decisions },
      {},
      index + seq + 1,
    );
    if (decided?.status !== 201) return fail(session, seq, 'decision', decided);
    acked.push({
      session,
      seq,
      turnId,
      refund: idOf('refund'),
      replyId: String(decided.body.agent_message.id),
    });
    return true;
  };

  const fail = (session: string, seq: number, what: string, answer: Answer | null) => {
    failures.push(
      `${session} approval ${seq}: the ${what} got ${answer ? `${answer.status} ${JSON.stringify(answer.body)}` : 'no answer in time'}`,
    );
    return false;
  };

  const running = Promise.all(
    o.sessions.map(async (session, index) => {
      for (let seq = 1; !stopping; seq++) {
        if (!(await turn(session, index, seq))) return;
        await sleep(50);
      }
    }),
  );
  return {
    acked,
    get retries() {
      return retries;
    },
    async stop() {
      stopping = true;
      await running;
      return { acked, failures, retries };
    },
  };
}

/**
 * What is wrong with the approval turns (empty when all is well): every acknowledged turn's approved call
 * applied exactly once, no denied call seen by the tool at all, and each session's turns stored once each, with
 * the acknowledged reply.
 */
export async function checkApprovalTurns(
  urls: readonly string[],
  apiKey: string,
  acked: readonly ApprovalAck[],
  sessions: readonly string[],
  receiver: ToolReceiver,
): Promise<string[]> {
  const problems: string[] = [];
  for (const ack of acked) {
    const key = `${ack.turnId}:${ack.refund}`;
    const applied = receiver.applications.get(key) ?? 0;
    const seen = receiver.requests.filter((r) => r.key === key).length;
    if (applied !== 1) problems.push(`${ack.session} approval ${ack.seq}: applied ${applied} times`);
    if (seen > 2) problems.push(`${ack.session} approval ${ack.seq}: seen ${seen} times`);
  }
  const denied = receiver.requests.filter(
    (r) => r.body?.tool === 'email' && sessions.includes(r.body.session_id),
  );
  if (denied.length > 0)
    problems.push(`denied calls reached the tool: ${denied.map((r) => r.key).join(', ')}`);
  for (const session of sessions) {
    const messages = await readMessages(urls, apiKey, session);
    const acks = acked.filter((a) => a.session === session);
    const users = messages.filter((m) => m.role === 'user');
    // A turn may have been sent and not yet decided when the load stopped: one user message more, no reply.
    if (users.length !== acks.length && users.length !== acks.length + 1)
      problems.push(`${session}: ${users.length} user messages for ${acks.length} acknowledged turns`);
    for (const ack of acks) {
      const replies = messages.filter((m) => m.id === ack.replyId);
      if (replies.length !== 1)
        problems.push(`${session} approval ${ack.seq}: its reply is stored ${replies.length} times`);
    }
  }
  return problems;
}
