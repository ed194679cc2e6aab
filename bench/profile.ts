// `node bench/profile.ts [--duration=S] [--warmup=S] [--concurrency=N] [--tools-first=S] [--tool-step] [--webhook] [--stream] [--out=FILE]
// [--keep-profile=FILE]`: where a W1 turn's CPU goes. Parley runs under `--cpu-prof`; W1 (plain sends over
// 1,000 scripted-agent sessions, c=32 unless `--concurrency` says otherwise) is driven for a warm-up and then
// the measured window; Parley is stopped gracefully so it writes the profile, whose samples in that window are
// summed by category of code and by function (bench/cpu-profile.ts). `--tools-first` drives W1t (one HTTP tool
// call per send, bench/tool-server.ts) that long before the warm-up, to see what a process that has served
// tool turns spends on plain ones; `--tool-step` profiles W1t itself (every measured send makes one tool call);
// `--webhook` profiles W1w (an endpoint subscribed to turn.completed on bench/webhook-receiver.ts: every send
// queues a delivery, sent and recorded beside the load); `--stream` profiles W2 (every send streamed as SSE).
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { aggregate, type CpuProfile, formatAggregate } from './cpu-profile.ts';
import { installCleanup, tempDir } from './processes.ts';
import { cpuBusy } from './report.ts';
import { runLoad } from './run-load.ts';
import {
  cpuSeconds,
  createSessions,
  type Server,
  startParley,
  startToolServer,
  startWebhookReceiver,
  TOOL_AGENT_ID,
  TOOL_NAME,
  TOOL_SECRET_ENV,
  toolAgent,
  toolSecret,
} from './servers.ts';
import { errorText, log } from './workload.ts';

const SESSIONS = 1_000;
// V8's default; finer sampling costs the profiled process more.
const INTERVAL_US = 1_000;

const args = process.argv.slice(2);
const option = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const unknown = args.filter(
  (a) =>
    !/^--(duration=\d+(\.\d+)?|warmup=\d+(\.\d+)?|concurrency=\d+|tools-first=\d+(\.\d+)?|tool-step|webhook|stream|out=.+|keep-profile=.+)$/.test(
      a,
    ),
);
if (unknown.length) {
  process.stderr.write(
    `unknown option(s): ${unknown.join(' ')}\n` +
      'usage: node bench/profile.ts [--duration=S] [--warmup=S] [--concurrency=N] [--tools-first=S] [--tool-step] [--webhook] [--stream] [--out=FILE] [--keep-profile=FILE]\n',
  );
  process.exit(2);
}
// 32 is W1's; 1 shows what a lone turn costs (no group commit shares its fsync).
const CONCURRENCY = Number(option('concurrency') ?? 32);
const durationMs = Number(option('duration') ?? 10) * 1000;
const warmupMs = Number(option('warmup') ?? 2) * 1000;
const toolsFirstMs = Number(option('tools-first') ?? 0) * 1000;
const toolStep = args.includes('--tool-step');
const webhook = args.includes('--webhook');
const stream = args.includes('--stream');
const out = option('out');
const keep = option('keep-profile');

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** The main thread's profile in `dir` (`CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`, thread 0). */
function mainThreadProfile(dir: string, server: Server): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const main = files.find((f) => f.split('.')[4] === '0') ?? files[0];
  if (!main) throw new Error(`Parley wrote no CPU profile (was it killed?):\n${server.child.output()}`);
  if (files.length > 1) log(`profiles written: ${files.join(', ')}; using the main thread's, ${main}`);
  return join(dir, main);
}

installCleanup();
const busyBefore = await cpuBusy();
log(`CPUs ${busyBefore.toFixed(0)}% busy before the run (other processes skew the figures)`);
const startedAt = new Date();
const profileDir = tempDir('cpuprof');
const tools = toolsFirstMs > 0 || toolStep ? await startToolServer() : null;
const receiver = webhook ? await startWebhookReceiver() : null;
const parley = await startParley({
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-interval=${INTERVAL_US}`],
  ...(tools ? { moreAgents: [toolAgent(tools.url)], env: { [TOOL_SECRET_ENV]: toolSecret() } } : {}),
});
let stopped = false;
try {
  log(`creating ${SESSIONS} sessions`);
  const sessions = await createSessions(parley, SESSIONS);
  const toolSessions = tools ? await createSessions(parley, SESSIONS, TOOL_AGENT_ID) : [];
  if (receiver) {
    const hook = await fetch(`${parley.url}/v1/agents/webhooks`, {
      method: 'POST',
      headers: { 'x-api-key': parley.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/hooks`, events: ['turn.completed'] }),
    });
    if (hook.status !== 201) throw new Error(`registering the endpoint answered ${hook.status}`);
  }
  if (toolsFirstMs > 0) {
    log(`W1t first: c=${CONCURRENCY}, ${toolsFirstMs / 1000} s`);
    const w1t = await runLoad({
      url: parley.url,
      apiKey: parley.apiKey,
      mode: 'plain',
      sessions: toolSessions,
      concurrency: CONCURRENCY,
      kind: 'duration',
      warmupMs: 0,
      durationMs: toolsFirstMs,
      tool: TOOL_NAME,
    });
    log(`W1t: ${w1t.sent} sends, ${w1t.rps} req/s, errors ${errorText(w1t)}`);
  }
  const load = (ms: number) =>
    runLoad({
      url: parley.url,
      apiKey: parley.apiKey,
      mode: stream ? 'stream' : 'plain',
      sessions: toolStep ? toolSessions : sessions,
      concurrency: CONCURRENCY,
      kind: 'duration',
      warmupMs: 0,
      durationMs: ms,
      ...(toolStep ? { tool: TOOL_NAME } : {}),
    });
  log(`W1 warm-up: c=${CONCURRENCY}, ${warmupMs / 1000} s`);
  const warm = await load(warmupMs);
  // The measured window is one load run of its own, so every request Parley served in it is in `sent`.
  log(`W1 measured: c=${CONCURRENCY}, ${durationMs / 1000} s`);
  const cpuBefore = cpuSeconds(parley);
  const fromUs = nowUs();
  const w1 = await load(durationMs);
  const untilUs = nowUs();
  const cpuAfter = cpuSeconds(parley);
  log('stopping Parley (SIGTERM) so that it writes the profile');
  await parley.stop();
  stopped = true;
  const file = mainThreadProfile(profileDir, parley);
  if (keep) copyFileSync(file, keep);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const a = aggregate(profile, fromUs, untilUs);
  const procMs = cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) * 1000;
  const perRequest = (ms: number) => (ms / w1.sent).toFixed(4);
  const markdown = [
    `### CPU profile of ${toolStep ? 'W1t' : webhook ? 'W1w' : stream ? 'W2' : 'W1'} (c=${CONCURRENCY} ${toolStep ? 'sends making one tool call each' : stream ? 'streamed sends' : 'plain sends'} ` +
      `over ${SESSIONS} sessions of the scripted \`${toolStep ? TOOL_AGENT_ID : 'bench'}\` agent` +
      `${toolsFirstMs > 0 ? `, after ${toolsFirstMs / 1000} s of W1t` : ''})`,
    '',
    `- Date: ${startedAt.toISOString()}; command: \`node bench/profile.ts${args.length ? ` ${args.join(' ')}` : ''}\`; ` +
      `CPUs ${busyBefore.toFixed(0)}% busy before the run`,
    `- Parley under \`--cpu-prof --cpu-prof-interval=${INTERVAL_US}\` (µs); ${warmupMs / 1000} s warm-up ` +
      `(${warm.sent} sends, errors ${errorText(warm)}), then ${durationMs / 1000} s measured: ` +
      `**${w1.sent} requests sent** (${w1.count} answered ok, ${w1.rps} req/s, p50 ${w1.latency.p50} ms, ` +
      `p99 ${w1.latency.p99} ms, errors ${errorText(w1)}; the profiler slows Parley, so these are not W1's figures)`,
    `- Samples of the main thread in the measured window: ${a.samples} over ${(a.windowMs / 1000).toFixed(2)} s; ` +
      `busy (all but idle) ${a.busyMs.toFixed(0)} ms = ${perRequest(a.busyMs)} ms per request. The process's ` +
      `user + system CPU (/proc, all threads: libuv's pool, GC helpers, the profiler's own thread) in the ` +
      `same window: ${procMs === null ? '?' : `${procMs.toFixed(0)} ms = ${perRequest(procMs)} ms per request`}`,
    '- The profile samples the main thread by the clock, not by CPU: "busy" (all but `(idle)`) includes time ' +
      'blocked in fsync and time the thread was runnable but descheduled (the load generator shares the ' +
      "machine's CPUs), which is why it can exceed the /proc CPU figure.",
    "- Self time: the function on top of the stack when sampled. V8 shows no frame for node:sqlite's methods: " +
      "their time is the calling function's, so on the lines of src/store/sqlite/*.ts that call one " +
      "(`exec`: BEGIN IMMEDIATE, COMMIT and its fsync under `synchronous = FULL`, savepoints; the statements' " +
      "`run`/`get`/`all`/`prepare`) that line's share of the function's samples is counted as SQLite's. Other " +
      "natives count in their caller's category. `(program)` is native time V8 cannot attribute to a script " +
      "(libuv, the HTTP parser's C side, the profiler).",
    '',
    formatAggregate(a, w1.sent),
    '',
  ].join('\n');
  process.stdout.write(`${markdown}\n`);
  if (out) {
    writeFileSync(out, markdown);
    log(`wrote ${out}`);
  }
} finally {
  if (!stopped) await parley.stop();
  await tools?.stop();
  await receiver?.stop();
}
