// The load generator, run as its own process: `node bench/load.ts <spec.json>`.
// Closed loop over loopback with undici: c workers, worker i owning sessions i, i+c, i+2c… so no two requests
// ever hit one session at once. Prints one JSON report on stdout (latencies in ms). With `tool`, every plain
// send asks for one tool call (W1t) and its reply must show that call answered; `approve` (W6) sends such a
// message to an agent whose tool waits for approval, then approves the call.
import { readFileSync, writeFileSync } from 'node:fs';
import { Pool } from 'undici';
import { msBetween, type Summary, summarize } from './stats.ts';

export interface LoadSpec {
  url: string;
  apiKey: string;
  /**
   * plain: POST …/messages; stream: POST …/messages/stream, read as SSE; approve: a plain send that must
   * answer 202 with the turn paused, then the decision approving its calls, which must answer 201 with the
   * reply (the decision waits for the turn, as a send does: an integrator's back office needs nothing else).
   */
  mode: 'plain' | 'stream' | 'approve';
  sessions: string[];
  concurrency: number;
  /** duration: loop over the sessions for warmupMs + durationMs; each: `passes` sends per session, back to back. */
  kind: 'duration' | 'each';
  warmupMs?: number;
  durationMs?: number;
  passes?: number;
  /** plain mode: every message asks the scripted model for one call of this tool (W1t); a reply without that
   * call answered `ok` counts as an error (`tool:<status>`), since a failing tool does not fail the turn. */
  tool?: string;
  /** plain mode: write every reply's id, when its answer arrived and whether in the measured window (W7). */
  answersFile?: string;
}

/** One answered send of `answersFile`: the reply's id, hrtime of its answer in ms, 1 if in the window. */
export type Answer = [id: string, atMs: number, measured: 0 | 1];

export interface PassReport {
  /** Requests answered successfully (measured window, or this pass). */
  count: number;
  seconds: number;
  rps: number;
  latency: Summary;
  /** stream mode: from sending to the first `event:` line. */
  ttfe?: Summary;
  /** approve mode: from sending to the 202 (paused), and from the decision to its 201 (reply stored). */
  paused?: Summary;
  decided?: Summary;
  /** Failures by status code (or error code, or `stream:incomplete` / `stream:turn.failed`). */
  errors: Record<string, number>;
  /** Every request sent, warm-up included (for CPU per request). */
  sent: number;
  /** CPU time of this load generator process so far (user + system), ms. */
  loaderCpuMs: number;
}

interface Sample {
  start: bigint;
  end: bigint;
  firstEvent?: bigint;
  /** approve mode: the 202's arrival, when the decision is sent. */
  paused?: bigint;
  /** plain mode with answersFile: the reply's id. */
  reply?: string;
  error?: string;
}

const spec = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as LoadSpec;
const pool = new Pool(spec.url, { connections: spec.concurrency, pipelining: 1 });
const headers = { 'x-api-key': spec.apiKey, 'content-type': 'application/json' };
const suffix = spec.mode === 'stream' ? '/stream' : '';
const content = (n: number) =>
  spec.tool ? `bench message ${n} [[tool:${spec.tool} {"n":${n}}]]` : `bench message ${n}`;

/** W1t, W6: the outcome of the reply's one tool call (`ok`, `error`, or `missing`). */
function toolStatus(text: string): string {
  const reply = (JSON.parse(text) as { agent_message?: { tool_calls?: Array<{ status?: string }> | null } })
    .agent_message;
  const calls = reply?.tool_calls ?? [];
  return calls.length === 1 ? String(calls[0]?.status) : 'missing';
}

/** W6: a send whose turn pauses for approval, then the decision approving what it waits for; never throws. */
async function roundTrip(sessionId: string, n: number): Promise<Sample> {
  const start = process.hrtime.bigint();
  let paused: bigint | undefined;
  try {
    const sent = await pool.request({
      method: 'POST',
      path: `/v1/agents/sessions/${sessionId}/messages`,
      headers,
      body: JSON.stringify({ content: content(n) }),
    });
    const text = await sent.body.text();
    paused = process.hrtime.bigint();
    if (sent.statusCode !== 202) return { start, end: paused, error: `send:${sent.statusCode}` };
    const turn = (JSON.parse(text) as { turn: { id: string; approvals: Array<{ call_id: string }> } }).turn;
    const decided = await pool.request({
      method: 'POST',
      path: `/v1/agents/sessions/${sessionId}/turns/${turn.id}/approvals`,
      headers,
      body: JSON.stringify({
        decisions: turn.approvals.map((a) => ({ call_id: a.call_id, approved: true })),
      }),
    });
    const reply = await decided.body.text();
    const end = process.hrtime.bigint();
    if (decided.statusCode !== 201) return { start, end, paused, error: `decision:${decided.statusCode}` };
    const tool = toolStatus(reply);
    return tool === 'ok' ? { start, end, paused } : { start, end, paused, error: `tool:${tool}` };
  } catch (err) {
    await new Promise((r) => setTimeout(r, 10));
    const error = (err as { code?: string }).code ?? String(err);
    return { start, end: process.hrtime.bigint(), ...(paused ? { paused } : {}), error };
  }
}

/** One send (or W6 round trip); never throws. */
async function send(sessionId: string, n: number): Promise<Sample> {
  if (spec.mode === 'approve') return roundTrip(sessionId, n);
  const start = process.hrtime.bigint();
  try {
    const { statusCode, body } = await pool.request({
      method: 'POST',
      path: `/v1/agents/sessions/${sessionId}/messages${suffix}`,
      headers,
      body: JSON.stringify({ content: content(n) }),
    });
    if (spec.mode === 'plain' || statusCode !== 200) {
      const text = await body.text();
      const end = process.hrtime.bigint();
      const ok = spec.mode === 'plain' ? statusCode === 201 : false;
      if (!ok) return { start, end, error: String(statusCode) };
      const tool = spec.tool ? toolStatus(text) : 'ok';
      if (tool !== 'ok') return { start, end, error: `tool:${tool}` };
      if (!spec.answersFile) return { start, end };
      return { start, end, reply: (JSON.parse(text) as { agent_message: { id: string } }).agent_message.id };
    }
    let firstEvent: bigint | undefined;
    let text = '';
    for await (const chunk of body) {
      text += (chunk as Buffer).toString('utf8');
      if (firstEvent === undefined && text.includes('event:')) firstEvent = process.hrtime.bigint();
    }
    const end = process.hrtime.bigint();
    if (text.includes('event: turn.failed')) return { start, end, firstEvent, error: 'stream:turn.failed' };
    if (!text.includes('event: turn.completed'))
      return { start, end, firstEvent, error: 'stream:incomplete' };
    return { start, end, firstEvent };
  } catch (err) {
    await new Promise((r) => setTimeout(r, 10));
    return { start, end: process.hrtime.bigint(), error: (err as { code?: string }).code ?? String(err) };
  }
}

function report(samples: Sample[], seconds: number, completedInWindow: number, sent: number): PassReport {
  const errors: Record<string, number> = {};
  const ok: Sample[] = [];
  for (const s of samples) {
    if (s.error) errors[s.error] = (errors[s.error] ?? 0) + 1;
    else ok.push(s);
  }
  const out: PassReport = {
    count: ok.length,
    seconds: Math.round(seconds * 1000) / 1000,
    rps: Math.round((completedInWindow / seconds) * 10) / 10,
    latency: summarize(ok.map((s) => msBetween(s.start, s.end))),
    errors,
    sent,
    loaderCpuMs: 0,
  };
  if (spec.mode === 'stream') {
    out.ttfe = summarize(
      ok.filter((s) => s.firstEvent).map((s) => msBetween(s.start, s.firstEvent ?? s.end)),
    );
  }
  if (spec.mode === 'approve') {
    out.paused = summarize(ok.map((s) => msBetween(s.start, s.paused ?? s.end)));
    out.decided = summarize(ok.map((s) => msBetween(s.paused ?? s.start, s.end)));
  }
  return out;
}

/** The sessions worker w owns. */
const owned = (w: number) => spec.sessions.filter((_, i) => i % spec.concurrency === w);

async function runDuration(): Promise<PassReport> {
  const warmupNs = BigInt(Math.round((spec.warmupMs ?? 0) * 1e6));
  const durationNs = BigInt(Math.round((spec.durationMs ?? 10_000) * 1e6));
  const t0 = process.hrtime.bigint();
  const from = t0 + warmupNs;
  const until = from + durationNs;
  const recorded: Sample[] = [];
  const answers: Answer[] = [];
  let completedInWindow = 0;
  let n = 0;
  const worker = async (w: number) => {
    const mine = owned(w);
    if (mine.length === 0) return;
    for (let i = 0; ; i = (i + 1) % mine.length) {
      if (process.hrtime.bigint() >= until) return;
      const sample = await send(mine[i] as string, n++);
      if (sample.start >= from) recorded.push(sample);
      if (sample.reply) answers.push([sample.reply, Number(sample.end) / 1e6, sample.start >= from ? 1 : 0]);
      if (!sample.error && sample.end >= from && sample.end < until) completedInWindow++;
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, (_, w) => worker(w)));
  if (spec.answersFile) writeFileSync(spec.answersFile, JSON.stringify(answers));
  return report(recorded, Number(durationNs) / 1e9, completedInWindow, n);
}

async function runEach(): Promise<PassReport[]> {
  const passes = spec.passes ?? 1;
  const byPass: Sample[][] = Array.from({ length: passes }, () => []);
  const t0 = process.hrtime.bigint();
  let n = 0;
  const worker = async (w: number) => {
    for (const session of owned(w)) {
      for (let p = 0; p < passes; p++) byPass[p]?.push(await send(session, n++));
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, (_, w) => worker(w)));
  const seconds = msBetween(t0, process.hrtime.bigint()) / 1000;
  return byPass.map((samples) =>
    report(samples, seconds, samples.filter((s) => !s.error).length, samples.length),
  );
}

const result = spec.kind === 'each' ? await runEach() : await runDuration();
await pool.close();
const cpu = process.cpuUsage();
for (const r of Array.isArray(result) ? result : [result])
  r.loaderCpuMs = Math.round((cpu.user + cpu.system) / 1000);
process.stdout.write(`${JSON.stringify(result)}\n`);
