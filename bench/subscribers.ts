// W7's subscribers, run as their own process (so that their CPU is not Parley's nor the senders'):
// `node bench/subscribers.ts <spec.json>` opens one conversation event stream (`GET …/sessions/{id}/events`,
// SSE) per session and prints {"ready":true} once every stream answered. On SIGUSR2 it reads the senders'
// answers (bench/load.ts's answersFile: each reply's id and when its answer arrived), waits until each of
// those turns was seen completed (or a bound passed), closes the streams and prints one JSON report.
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';
import type { Answer } from './load.ts';
import { type Summary, summarize } from './stats.ts';

export interface SubscriberSpec {
  url: string;
  apiKey: string;
  sessions: string[];
  answersFile: string;
}

export interface SubscriberReport {
  streams: number;
  /** Turns answered to the senders, and those of them whose events were not all seen (missing). */
  turns: number;
  missing: number;
  /** Events whose id was not the one after the stream's last (events lost or repeated). */
  gaps: number;
  /** Failures of the streams themselves: status codes, ended streams, error codes. */
  streamErrors: Record<string, number>;
  /** Events seen, all streams together. */
  events: number;
  /** From a send's answer to this process seeing its turn.completed, ms: every turn, and the measured window's. */
  delay: Summary;
  delayMeasured: Summary;
  /** How many events each answered turn was seen with, and how many turns so. */
  eventsPerTurn: Record<string, number>;
  /** CPU time of this process (user + system), ms. */
  cpuMs: number;
}

/** The events a plain send's turn tells its conversation's stream, each at least once. */
const TURN_EVENTS = ['message.created', 'turn.started', 'message.completed', 'turn.completed'];
/** How long the last turns' events may take to arrive after the senders stopped, at most. */
const SETTLE_TIMEOUT_MS = 30_000;

const spec = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as SubscriberSpec;
const pool = new Pool(spec.url, {
  connections: spec.sessions.length,
  pipelining: 1,
  bodyTimeout: 0,
  headersTimeout: 30_000,
});

/** Per turn: the events seen, and when (hrtime ms) its turn.completed arrived. */
const turns = new Map<string, { types: string[]; completedAt?: number }>();
/** The reply message id of each turn (from message.completed), to join the senders' answers. */
const turnOfReply = new Map<string, string>();
const streamErrors: Record<string, number> = {};
let gaps = 0;
let events = 0;
let stopping = false;
const countError = (key: string) => {
  streamErrors[key] = (streamErrors[key] ?? 0) + 1;
};

/** One SSE message (the lines between blank lines) of a session's stream, seen at `atMs`. */
function onMessage(block: string, atMs: number, last: { seq: number }): void {
  let type = '';
  let id = '';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('event: ')) type = line.slice(7);
    else if (line.startsWith('id: ')) id = line.slice(4);
    else if (line.startsWith('data: ')) data += line.slice(6);
  }
  if (!type) return; // a comment (`: following`, `: ping`)
  events++;
  const seq = Number(id);
  if (seq !== last.seq + 1) gaps++;
  last.seq = seq;
  const body = JSON.parse(data) as { turn_id?: string; message?: { id: string } };
  if (!body.turn_id) return;
  let turn = turns.get(body.turn_id);
  if (!turn) {
    turn = { types: [] };
    turns.set(body.turn_id, turn);
  }
  turn.types.push(type);
  if (type === 'message.completed' && body.message) turnOfReply.set(body.message.id, body.turn_id);
  if (type === 'turn.completed') turn.completedAt = atMs;
}

/** Follows one session's stream until the process stops it; resolves once it answered (or failed to). */
function follow(sessionId: string, answered: () => void): Promise<void> {
  const last = { seq: 0 };
  let told = false;
  const once = () => {
    if (!told) answered();
    told = true;
  };
  return (async () => {
    try {
      const { statusCode, body } = await pool.request({
        method: 'GET',
        path: `/v1/agents/sessions/${sessionId}/events`,
        headers: { 'x-api-key': spec.apiKey, accept: 'text/event-stream' },
      });
      once();
      if (statusCode !== 200) {
        countError(`status:${statusCode}`);
        await body.text();
        return;
      }
      let buffered = '';
      for await (const chunk of body) {
        const atMs = Number(process.hrtime.bigint()) / 1e6;
        buffered += (chunk as Buffer).toString('utf8');
        let end = buffered.indexOf('\n\n');
        while (end >= 0) {
          onMessage(buffered.slice(0, end), atMs, last);
          buffered = buffered.slice(end + 2);
          end = buffered.indexOf('\n\n');
        }
      }
      if (!stopping) countError('ended');
    } catch (err) {
      once();
      if (!stopping) countError((err as { code?: string }).code ?? String(err));
    }
  })();
}

/** Whether every answered turn's events were seen, by what the turn was seen with. */
function seenWhole(answer: Answer): boolean {
  const turnId = turnOfReply.get(answer[0]);
  const turn = turnId ? turns.get(turnId) : undefined;
  return !!turn?.completedAt && TURN_EVENTS.every((t) => turn.types.includes(t));
}

let open = spec.sessions.length;
let followed: Promise<void>[] = [];
await new Promise<void>((resolve) => {
  followed = spec.sessions.map((id) =>
    follow(id, () => {
      if (--open === 0) resolve();
    }),
  );
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);

await new Promise((resolve) => process.once('SIGUSR2', resolve));
const answers = JSON.parse(readFileSync(spec.answersFile, 'utf8')) as Answer[];
const settleFrom = Date.now();
while (!answers.every(seenWhole) && Date.now() - settleFrom < SETTLE_TIMEOUT_MS) {
  await new Promise((resolve) => setTimeout(resolve, 50));
}
stopping = true;
await pool.destroy();
await Promise.all(followed);

const delays = (which: Answer[]) =>
  summarize(
    which.flatMap((a) => {
      const turnId = turnOfReply.get(a[0]);
      const at = turnId ? turns.get(turnId)?.completedAt : undefined;
      return at === undefined ? [] : [at - a[1]];
    }),
  );
const eventsPerTurn: Record<string, number> = {};
for (const a of answers) {
  const turnId = turnOfReply.get(a[0]);
  const n = String((turnId ? turns.get(turnId)?.types.length : 0) ?? 0);
  eventsPerTurn[n] = (eventsPerTurn[n] ?? 0) + 1;
}
const cpu = process.cpuUsage();
const result: SubscriberReport = {
  streams: spec.sessions.length,
  turns: answers.length,
  missing: answers.filter((a) => !seenWhole(a)).length,
  gaps,
  streamErrors,
  events,
  delay: delays(answers),
  delayMeasured: delays(answers.filter((a) => a[2] === 1)),
  eventsPerTurn,
  cpuMs: Math.round((cpu.user + cpu.system) / 1000),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
