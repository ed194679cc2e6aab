// W1 (plain send) and W2 (streamed send): c workers over N sessions, closed loop, Parley vs the floor; and W1t,
// W1 whose every send makes one HTTP tool call (a step) to bench/tool-server.ts, on the same Parley process.
import { cpus } from 'node:os';
import type { PassReport } from './load.ts';
import { machineCpu, type Row } from './report.ts';
import { runLoad } from './run-load.ts';
import {
  cpuSeconds,
  createSessions,
  floorSessions,
  type Server,
  startFloor,
  startParley,
  startToolServer,
  TOOL_AGENT_ID,
  TOOL_NAME,
  TOOL_SECRET_ENV,
  toolAgent,
  toolSecret,
} from './servers.ts';
import { errorCount, errorText, info, log, type Outcome, type Settings } from './workload.ts';

/** `toolStep`: run W1t too (its tool server, and a second agent with that tool on the same Parley). */
export async function throughput(s: Settings, options: { toolStep?: boolean } = {}): Promise<Outcome> {
  const tools = options.toolStep ? await startToolServer() : null;
  const secret = toolSecret();
  const parley = await startParley(
    tools ? { moreAgents: [toolAgent(tools.url)], env: { [TOOL_SECRET_ENV]: secret } } : {},
  );
  const floor = await startFloor('full');
  const normal = await startFloor('normal');
  try {
    log(`W1/W2: creating ${s.sessions} Parley sessions`);
    const parleySessions = await createSessions(parley, s.sessions);
    const toolSessions = tools ? await createSessions(parley, s.sessions, TOOL_AGENT_ID) : [];
    const cpuMs = new Map<PassReport, number | null>();
    // CPU used by processes other than the server and the load generator (other sessions, tests), in % of one CPU.
    const othersPct = new Map<PassReport, number | null>();
    // W1t: the tool server's CPU per call, apart from Parley's (and so not among the other processes either).
    const toolCpuMs = new Map<PassReport, number | null>();
    const drive = async (
      server: Server,
      mode: 'plain' | 'stream',
      concurrency = s.concurrency,
      tool = false,
    ) => {
      const durationMs = concurrency === 1 ? Math.min(3_000, s.durationMs) : s.durationMs;
      const name = tool ? 'W1t' : mode === 'plain' ? 'W1' : 'W2';
      log(`${name}: ${server.name}, c=${concurrency}, ${durationMs / 1000} s`);
      const cpuBefore = cpuSeconds(server);
      const toolBefore = tool && tools ? cpuSeconds(tools) : null;
      const machineBefore = machineCpu();
      const t0 = Date.now();
      const report = await runLoad({
        url: server.url,
        apiKey: server.apiKey,
        mode,
        sessions: tool ? toolSessions : server === parley ? parleySessions : floorSessions(s.sessions),
        concurrency,
        kind: 'duration',
        warmupMs: concurrency === 1 ? 500 : s.warmupMs,
        durationMs,
        ...(tool ? { tool: TOOL_NAME } : {}),
      });
      const cpuAfter = cpuSeconds(server);
      const toolAfter = tool && tools ? cpuSeconds(tools) : null;
      const machineAfter = machineCpu();
      const serverMs = cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) * 1000;
      const toolMs = toolBefore === null || toolAfter === null ? 0 : (toolAfter - toolBefore) * 1000;
      cpuMs.set(report, serverMs === null ? null : serverMs / report.sent);
      if (tool) toolCpuMs.set(report, toolBefore === null ? null : toolMs / report.sent);
      const others = machineAfter.busy - machineBefore.busy - report.loaderCpuMs - (serverMs ?? 0) - toolMs;
      othersPct.set(report, serverMs === null ? null : Math.max(0, (100 * others) / (Date.now() - t0)));
      return report;
    };
    // W1t right after W1 on the same process, so the difference is the step's and not the machine's mood.
    const w1parley = await drive(parley, 'plain');
    const w1t = tools ? await drive(parley, 'plain', s.concurrency, true) : null;
    const w1 = { parley: w1parley, floor: await drive(floor, 'plain') };
    const w1normal = await drive(normal, 'plain');
    const w1oneParley = await drive(parley, 'plain', 1);
    const w1tOne = tools ? await drive(parley, 'plain', 1, true) : null;
    const w1one = { parley: w1oneParley, floor: await drive(floor, 'plain', 1) };
    const w2 = { parley: await drive(parley, 'stream'), floor: await drive(floor, 'stream') };
    const p99 = w1.parley.latency.p99;
    const ttfe99 = w2.parley.ttfe?.p99 ?? Number.NaN;
    const errors = (r: { parley: PassReport; floor: PassReport }, workload: string): Row => ({
      workload,
      figure: 'errors',
      parley: errorCount(r.parley),
      floor: errorCount(r.floor),
      target: '0',
      met: errorCount(r.parley) === 0,
    });
    const minus = (a: number | null | undefined, b: number | null | undefined) =>
      a === null || a === undefined || b === null || b === undefined ? null : a - b;
    const toolRows = (t: PassReport, one: PassReport): Row[] => [
      info('W1t tool step', 'req/s', t.rps),
      info('W1t tool step', 'p50 ms', t.latency.p50),
      info('W1t tool step', 'p99 ms', t.latency.p99),
      {
        ...info('W1t tool step', 'errors', errorCount(t) + errorCount(one)),
        target: '0',
        met: errorCount(t) + errorCount(one) === 0,
      },
      info('W1t tool step', 'server CPU ms per request', cpuMs.get(t) ?? null),
      info('W1t tool step', 'step: server CPU ms (W1t − W1)', minus(cpuMs.get(t), cpuMs.get(w1.parley))),
      info('W1t tool step', 'tool server CPU ms per call', toolCpuMs.get(t) ?? null),
      { ...info('W1t tool step', 'other processes CPU %', othersPct.get(t) ?? null), ratio: false },
      info('W1t tool step', 'c=1 req/s', one.rps),
      info('W1t tool step', 'c=1 p50 ms', one.latency.p50),
      info('W1t tool step', 'c=1 p99 ms', one.latency.p99),
      info('W1t tool step', 'c=1 step: p50 ms (W1t − W1)', one.latency.p50 - w1one.parley.latency.p50),
      info(
        'W1t tool step',
        'c=1 step: server CPU ms (W1t − W1)',
        minus(cpuMs.get(one), cpuMs.get(w1one.parley)),
      ),
    ];
    const rows: Row[] = [
      {
        workload: 'W1 send',
        figure: 'req/s',
        parley: w1.parley.rps,
        floor: w1.floor.rps,
        target: '≥ 1.0x floor',
        met: w1.parley.rps >= w1.floor.rps,
      },
      info('W1 send', 'p50 ms', w1.parley.latency.p50, w1.floor.latency.p50),
      { ...info('W1 send', 'p99 ms', p99, w1.floor.latency.p99), target: '≤ 20 ms', met: p99 <= 20 },
      errors(w1, 'W1 send'),
      info('W1 send', 'server CPU ms per request', cpuMs.get(w1.parley) ?? null, cpuMs.get(w1.floor) ?? null),
      {
        ...info(
          'W1 send',
          'other processes CPU %',
          othersPct.get(w1.parley) ?? null,
          othersPct.get(w1.floor) ?? null,
        ),
        ratio: false,
      },
      info('W1 send', 'req/s vs floor sync=NORMAL', w1.parley.rps, w1normal.rps),
      info('W1 send', 'p99 ms vs floor sync=NORMAL', p99, w1normal.latency.p99),
      info('W1 send', 'c=1 req/s', w1one.parley.rps, w1one.floor.rps),
      info('W1 send', 'c=1 p50 ms', w1one.parley.latency.p50, w1one.floor.latency.p50),
      info('W1 send', 'c=1 p99 ms', w1one.parley.latency.p99, w1one.floor.latency.p99),
      ...(w1t && w1tOne ? toolRows(w1t, w1tOne) : []),
      info('W2 stream', 'streams/s', w2.parley.rps, w2.floor.rps),
      info('W2 stream', 'first event p50 ms', w2.parley.ttfe?.p50 ?? null, w2.floor.ttfe?.p50 ?? null),
      {
        ...info('W2 stream', 'first event p99 ms', ttfe99, w2.floor.ttfe?.p99 ?? null),
        target: '≤ 10 ms',
        met: ttfe99 <= 10,
      },
      info('W2 stream', 'complete p50 ms', w2.parley.latency.p50, w2.floor.latency.p50),
      info('W2 stream', 'complete p99 ms', w2.parley.latency.p99, w2.floor.latency.p99),
      info(
        'W2 stream',
        'server CPU ms per stream',
        cpuMs.get(w2.parley) ?? null,
        cpuMs.get(w2.floor) ?? null,
      ),
      {
        ...info(
          'W2 stream',
          'other processes CPU %',
          othersPct.get(w2.parley) ?? null,
          othersPct.get(w2.floor) ?? null,
        ),
        ratio: false,
      },
      errors(w2, 'W2 stream'),
    ];
    const line = (name: string, r: PassReport) =>
      `- ${name}: ${r.count} answered in the measured ${r.seconds} s; latency ${JSON.stringify(r.latency)}` +
      `${r.ttfe ? `; first event ${JSON.stringify(r.ttfe)}` : ''}; errors ${errorText(r)}; server CPU ` +
      `${cpuMs.get(r)?.toFixed(3) ?? '?'} ms per request; other processes ${othersPct.get(r)?.toFixed(0) ?? '?'}% CPU`;
    const details = [
      `### W1, W2 (c=${s.concurrency} over ${s.sessions} sessions, ${s.warmupMs / 1000} s warm-up, ` +
        `${s.durationMs / 1000} s measured)`,
      '',
      '- Latency summaries count the requests started in the measured window; req/s counts those answered in it.',
      '- Server CPU per request: user + system CPU time of the server process (from /proc) over warm-up and ' +
        'measured window, divided by every request sent in them; less sensitive to other load than req/s.',
      '- "floor sync=NORMAL" is the same floor with `synchronous = NORMAL` (better-sqlite3\'s default under WAL: ' +
        'no fsync per commit), for comparison only; the ratios and targets use the `FULL` floor.',
      '- "other processes CPU %": machine CPU time during the run (os.cpus) minus the server\'s and the load ' +
        "generator's, in % of one CPU (the machine has " +
        `${cpus().length}): anything well above 0 (other tests, builds) makes that run's figures pessimistic.`,
      '- "c=1": one worker, 0.5 s warm-up, at most 3 s measured: the latency of a turn without queueing.',
      line('W1 Parley', w1.parley),
      line('W1 floor', w1.floor),
      line('W1 floor sync=NORMAL', w1normal),
      line('W1 Parley c=1', w1one.parley),
      line('W1 floor c=1', w1one.floor),
      line('W2 Parley', w2.parley),
      line('W2 floor', w2.floor),
    ];
    if (tools && w1t && w1tOne) {
      const served = await toolCalls(tools);
      const sent = w1t.sent + w1tOne.sent;
      const toolLine = (name: string, r: PassReport) =>
        `${line(name, r)}; tool server CPU ${toolCpuMs.get(r)?.toFixed(3) ?? '?'} ms per call`;
      details.push(
        '',
        `### W1t (W1 with one tool step per send: c=${s.concurrency} over ${s.sessions} sessions of its own, ` +
          'and c=1)',
        '',
        `- Each message asks the scripted model for one call of the agent's HTTP tool \`${TOOL_NAME}\` ` +
          '(`[[tool:echo {"n":N}]]`): a model call asking for the tool, the call committed, a signed POST ' +
          '(Standard Webhooks) to `bench/tool-server.ts` on loopback, the result committed, a second model ' +
          'call, the reply. A reply without that call answered ok counts as an error.',
        '- The tool server is its own process: its CPU is not Parley\'s (nor among "other processes"); its ' +
          'own figure is per call.',
        '- W1t runs on the same Parley process right after W1 (and its c=1 right after W1 c=1), so the ' +
          'differences (W1t − W1) are what a tool step adds to a turn.',
        `- Tool calls answered by the tool server: ${served.calls} for ${sent} turns sent ` +
          `(repeated Idempotency-Keys: ${served.repeats}).`,
        toolLine('W1t Parley', w1t),
        toolLine('W1t Parley c=1', w1tOne),
      );
    }
    return { rows, details };
  } finally {
    await Promise.all([parley.stop(), floor.stop(), normal.stop(), tools?.stop()]);
  }
}

/** What the tool server counted: calls answered, and calls whose Idempotency-Key it had seen before. */
async function toolCalls(tools: Server): Promise<{ calls: number; repeats: number }> {
  const response = await fetch(`${tools.url}/calls`);
  return (await response.json()) as { calls: number; repeats: number };
}
