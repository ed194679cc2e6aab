// W7: what a conversation event stream subscriber costs. On one fresh Parley process, W1 (c workers over N
// sessions, plain sends) runs on N sessions without subscribers, then on N other sessions each followed by one
// open `GET …/sessions/{id}/events` stream, read by bench/subscribers.ts in its own process. The differences
// (W7 − W1) are the subscribers'; the subscribers check that they saw every answered turn's events.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PassReport } from './load.ts';
import { benchDir, type Child, sleep, spawnNode, tempDir } from './processes.ts';
import type { Row } from './report.ts';
import { runLoad } from './run-load.ts';
import { cpuSeconds, createSessions, type Server, startParley } from './servers.ts';
import type { SubscriberReport, SubscriberSpec } from './subscribers.ts';
import { errorCount, errorText, info, log, type Outcome, type Settings } from './workload.ts';

/** How long the subscribers may take to open their streams, and to report once told to, at most. */
const SUBSCRIBERS_TIMEOUT_MS = 60_000;
/** Parley is quiet when it used less than this share of one CPU over QUIET_MS (waited for at most 10 s). */
const QUIET_SHARE = 0.05;
const QUIET_MS = 200;

/**
 * Waits until the server is nearly idle, so that a pass's CPU is not charged with what came before it (the
 * sessions' creation, the streams' first reads of the log, which go on after their 200).
 */
async function quiet(server: Server): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    const before = cpuSeconds(server);
    await sleep(QUIET_MS);
    const after = cpuSeconds(server);
    if (before === null || after === null || (after - before) * 1000 < QUIET_SHARE * QUIET_MS) return;
  }
}

export async function eventStreamCost(s: Settings): Promise<Outcome> {
  // One stream per session, all on this process: its bound (default 1,000) must not refuse any of them.
  const parley = await startParley({ env: { PARLEY_MAX_EVENT_STREAMS: String(s.sessions) } });
  const dir = tempDir('w7');
  try {
    log(`W7: creating 2 × ${s.sessions} Parley sessions`);
    const plainSessions = await createSessions(parley, s.sessions);
    const followedSessions = await createSessions(parley, s.sessions);
    const pass = async (name: string, sessions: string[], answersFile: string) => {
      log(`${name}: c=${s.concurrency}, ${s.durationMs / 1000} s`);
      await quiet(parley);
      const cpu0 = cpuSeconds(parley);
      const report = await runLoad({
        url: parley.url,
        apiKey: parley.apiKey,
        mode: 'plain',
        sessions,
        concurrency: s.concurrency,
        kind: 'duration',
        warmupMs: s.warmupMs,
        durationMs: s.durationMs,
        // Both passes record their replies (the same work in the load generator); only W7's are checked.
        answersFile,
      });
      const cpu1 = cpuSeconds(parley);
      const cpuMs = cpu0 === null || cpu1 === null ? null : ((cpu1 - cpu0) * 1000) / report.sent;
      return { report, cpuMs };
    };
    const plain = await pass('W1 (no subscribers)', plainSessions, join(dir, 'answers-w1.json'));
    const answersFile = join(dir, 'answers-w7.json');
    log(`W7: opening ${s.sessions} event streams`);
    const subscribers = await startSubscribers(parley, followedSessions, answersFile, dir);
    let followed: Awaited<ReturnType<typeof pass>>;
    let seen: SubscriberReport;
    try {
      followed = await pass('W7 (one subscriber per session)', followedSessions, answersFile);
      seen = await subscribers.report();
    } finally {
      await subscribers.child.stop();
    }
    const minus = (a: number | null, b: number | null) => (a === null || b === null ? null : a - b);
    const streamErrors = Object.values(seen.streamErrors).reduce((a, b) => a + b, 0);
    const subscriberErrors = seen.missing + seen.gaps + streamErrors;
    const errors = errorCount(followed.report) + errorCount(plain.report) + subscriberErrors;
    // The floor column holds W1 on the same process without subscribers, so that the ratio is theirs.
    const w = 'W7 event stream';
    const rows: Row[] = [
      info(w, 'req/s', followed.report.rps, plain.report.rps),
      info(w, 'p50 ms', followed.report.latency.p50, plain.report.latency.p50),
      info(w, 'p99 ms', followed.report.latency.p99, plain.report.latency.p99),
      { ...info(w, 'errors', errors), target: '0', met: errors === 0 },
      info(w, 'server CPU ms per turn', followed.cpuMs, plain.cpuMs),
      info(w, 'subscriber: server CPU ms per turn (W7 − W1)', minus(followed.cpuMs, plain.cpuMs)),
      info(w, 'send answered → turn.completed seen p50 ms', seen.delayMeasured.p50),
      info(w, 'send answered → turn.completed seen p99 ms', seen.delayMeasured.p99),
      info(w, 'turns whose events a subscriber missed', seen.missing),
    ];
    const line = (name: string, r: PassReport, cpuMs: number | null) =>
      `- ${name}: ${r.count} answered in the measured ${r.seconds} s (${r.sent} sent); latency ` +
      `${JSON.stringify(r.latency)}; errors ${errorText(r)}; server CPU ${cpuMs?.toFixed(3) ?? '?'} ms per turn`;
    const details = [
      `### W7 (W1 without, then with, one conversation event stream subscriber per session: c=${s.concurrency} ` +
        `over ${s.sessions} sessions, one fresh process)`,
      '',
      `- One Parley process, ${2 * s.sessions} sessions: W1 on ${s.sessions} of them with nobody following, ` +
        `then W1 (W7) on the other ${s.sessions}, each followed by one open \`GET /v1/agents/sessions/{id}/events\` ` +
        'stream (API key), opened before W7 starts. Fresh sessions for each pass, so that both start alike and ' +
        'the streams have no history to catch up with. Each pass starts once Parley is quiet (under ' +
        `${QUIET_SHARE * 100}% of a CPU over ${QUIET_MS} ms), so that its CPU is not charged with the ` +
        "sessions' creation or the streams' opening.",
      "- The subscribers are `bench/subscribers.ts`, their own process (not Parley's CPU, nor the " +
        "senders'), reading the streams as SSE with undici. In the table, the Parley column is W7 and the floor " +
        'column W1 on the same process without subscribers, so that Parley/floor is what they change. Their ' +
        "process shares the machine's CPUs with Parley and the senders, so W7's req/s also pays for reading " +
        "the streams; the server CPU per turn is Parley's own.",
      '- "send answered → turn.completed seen": for each send of W7\'s measured window, from its 201 arriving ' +
        "at the load generator to the subscribers' process reading that turn's `turn.completed` " +
        "(`process.hrtime`, one monotonic clock for both processes; the turn is matched by its reply's id, " +
        'from `message.completed`). Both follow the same commit, so it may be below 0.',
      "- Errors count the senders' failures and, for the subscribers: every answered turn (warm-up included) " +
        'must be seen with `message.created`, `turn.started`, `message.completed` and `turn.completed` (else ' +
        "it is missing), every event id must follow the stream's previous one (else a gap), and no stream may " +
        'fail or end.',
      `- Subscribers: ${seen.streams} streams, ${seen.events} events seen for ${seen.turns} answered turns; ` +
        `turns by events seen ${JSON.stringify(seen.eventsPerTurn)}; missing ${seen.missing}, gaps ${seen.gaps}, ` +
        `stream errors ${streamErrors ? JSON.stringify(seen.streamErrors) : 'none'}; delay over every turn ` +
        `${JSON.stringify(seen.delay)}; subscriber process CPU ` +
        `${(seen.cpuMs / Math.max(1, seen.turns)).toFixed(3)} ms per turn.`,
      line('W1 Parley (no subscribers)', plain.report, plain.cpuMs),
      line('W7 Parley (one subscriber per session)', followed.report, followed.cpuMs),
    ];
    return { rows, details };
  } finally {
    await parley.stop();
  }
}

/** Starts bench/subscribers.ts on `sessions`; resolves once every stream answered. */
async function startSubscribers(
  parley: Server,
  sessions: string[],
  answersFile: string,
  dir: string,
): Promise<{ child: Child; report(): Promise<SubscriberReport> }> {
  const file = join(dir, 'subscribers.json');
  const spec: SubscriberSpec = { url: parley.url, apiKey: parley.apiKey, sessions, answersFile };
  writeFileSync(file, JSON.stringify(spec));
  let stdout = '';
  let onLine: () => void = () => {};
  const child = spawnNode(
    [],
    join(benchDir, 'subscribers.ts'),
    [file],
    {},
    {
      onStdout: (chunk) => {
        stdout += chunk;
        onLine();
      },
    },
  );
  /** Resolves with the first line of stdout matching `test`; fails if the process exits or times out first. */
  const lineOf = (test: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the subscribers did not answer within ${SUBSCRIBERS_TIMEOUT_MS / 1000} s`)),
        SUBSCRIBERS_TIMEOUT_MS,
      );
      onLine = () => {
        const found = stdout.split('\n').find((l) => test.test(l));
        if (!found) return;
        clearTimeout(timer);
        resolve(found);
      };
      onLine();
      // 'close' comes after the last of stdout (its 'exit' may come before).
      child.process.once('close', (code) => {
        onLine();
        clearTimeout(timer);
        reject(new Error(`the subscribers exited (${code}):\n${child.output()}`));
      });
    });
  await lineOf(/^\{"ready":true\}$/);
  return {
    child,
    async report() {
      child.process.kill('SIGUSR2');
      return JSON.parse(await lineOf(/^\{"streams":/)) as SubscriberReport;
    },
  };
}
