// W1 (plain send) and W2 (streamed send): c workers over N sessions, closed loop, Parley vs the floor; and W1t,
// W1 whose every send makes one HTTP tool call (a step) to bench/tool-server.ts, on the same Parley process.
// Each with the server's CPU and bytes written per request, and what the turn's stored rows take.
import { cpus } from 'node:os';
import { floorTurnRows, ioCounters, openDatabase, parleyTurnRows, type TurnRows } from './disk-writes.ts';
import type { PassReport } from './load.ts';
import { machineCpu, type Row } from './report.ts';
import { runLoad } from './run-load.ts';
import {
  AGENT_ID,
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
    // Bytes the server wrote per request: /proc/<pid>/io write_bytes (block layer) and wchar (write calls).
    const writes = new Map<PassReport, { block: number; calls: number } | null>();
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
      const ioBefore = ioCounters(server.child.process.pid);
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
      const ioAfter = ioCounters(server.child.process.pid);
      const toolAfter = tool && tools ? cpuSeconds(tools) : null;
      const machineAfter = machineCpu();
      const serverMs = cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) * 1000;
      const toolMs = toolBefore === null || toolAfter === null ? 0 : (toolAfter - toolBefore) * 1000;
      cpuMs.set(report, serverMs === null ? null : serverMs / report.sent);
      writes.set(
        report,
        ioBefore && ioAfter
          ? {
              block: (ioAfter.writeBytes - ioBefore.writeBytes) / report.sent,
              calls: (ioAfter.wchar - ioBefore.wchar) / report.sent,
            }
          : null,
      );
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
    const w2normal = await drive(normal, 'stream');
    // What the stored turns take, read from each server's database while it still runs (W1's, its c=1's and
    // W2's turns are alike: the bench agent's sessions; W1t's are the tool agent's).
    const turnRows = (label: string, read: (file: string) => TurnRows, server: Server): TurnRows | null => {
      const file = openDatabase(server.child.process.pid);
      try {
        if (!file) throw new Error('no open .db file found under /proc/<pid>/fd');
        return read(file);
      } catch (err) {
        log(`${label}: rows per turn not read: ${err instanceof Error ? err.message : String(err)}`);
        return null;
      }
    };
    const rowsW1 = turnRows('W1 Parley', (f) => parleyTurnRows(f, AGENT_ID), parley);
    const rowsW1t = tools ? turnRows('W1t Parley', (f) => parleyTurnRows(f, TOOL_AGENT_ID), parley) : null;
    const rowsFloor = turnRows('W1 floor', floorTurnRows, floor);
    const rowsNormal = turnRows('W1 floor sync=NORMAL', floorTurnRows, normal);
    const written = (r: PassReport) => writes.get(r)?.block ?? null;
    const overRows = (r: PassReport, rows: TurnRows | null) => {
      const w = written(r);
      return w === null || !rows ? null : w / rows.total;
    };
    /** Bytes written per request, the rows' bytes per turn, and their ratio against the target of 2x. */
    const writeRows = (
      workload: string,
      per: string,
      p: PassReport,
      f: PassReport | null,
      n: PassReport | null,
      rows: { parley: TurnRows | null; floor: TurnRows | null },
    ): Row[] => {
      const ratio = overRows(p, rows.parley);
      return [
        info(workload, `bytes written per ${per}`, written(p), f && written(f)),
        ...(n
          ? [info(workload, `bytes written per ${per} vs floor sync=NORMAL`, written(p), written(n))]
          : []),
        info(workload, "rows' bytes per turn", rows.parley?.total ?? null, rows.floor?.total ?? null),
        {
          ...info(workload, "bytes written / rows' bytes", ratio, f && overRows(f, rows.floor)),
          target: '≤ 2x',
          met: ratio === null ? null : ratio <= 2,
        },
      ];
    };
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
    /** A figure whose target is at most `times` the floor's. */
    const atMost = (
      workload: string,
      figure: string,
      parley: number | null | undefined,
      floor: number | null | undefined,
      times: number,
    ): Row => ({
      ...info(workload, figure, parley ?? null, floor ?? null),
      target: times === 1 ? '≤ floor' : `≤ ${times}x floor`,
      met:
        parley === undefined || parley === null || floor === undefined || floor === null
          ? null
          : parley <= times * floor,
    });
    const toolRows = (
      t: PassReport,
      one: PassReport,
      step = minus(cpuMs.get(t), cpuMs.get(w1.parley)),
    ): Row[] => [
      info('W1t tool step', 'req/s', t.rps),
      info('W1t tool step', 'p50 ms', t.latency.p50),
      info('W1t tool step', 'p99 ms', t.latency.p99),
      {
        ...info('W1t tool step', 'errors', errorCount(t) + errorCount(one)),
        target: '0',
        met: errorCount(t) + errorCount(one) === 0,
      },
      info('W1t tool step', 'server CPU ms per request', cpuMs.get(t) ?? null),
      {
        ...info('W1t tool step', 'step: server CPU ms (W1t − W1)', step),
        target: '≤ 0.25 ms',
        met: step === null ? null : step <= 0.25,
      },
      info('W1t tool step', 'tool server CPU ms per call', toolCpuMs.get(t) ?? null),
      ...writeRows('W1t tool step', 'request', t, null, null, { parley: rowsW1t, floor: null }),
      info(
        'W1t tool step',
        'step: bytes written per request (W1t − W1)',
        minus(written(t), written(w1.parley)),
      ),
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
        target: '≥ 1.5x floor',
        met: w1.parley.rps >= 1.5 * w1.floor.rps,
      },
      info('W1 send', 'p50 ms', w1.parley.latency.p50, w1.floor.latency.p50),
      { ...info('W1 send', 'p99 ms', p99, w1.floor.latency.p99), target: '≤ 20 ms', met: p99 <= 20 },
      errors(w1, 'W1 send'),
      atMost('W1 send', 'server CPU ms per request', cpuMs.get(w1.parley), cpuMs.get(w1.floor), 1),
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
      ...writeRows('W1 send', 'request', w1.parley, w1.floor, w1normal, { parley: rowsW1, floor: rowsFloor }),
      info('W1 send', 'c=1 req/s', w1one.parley.rps, w1one.floor.rps),
      atMost('W1 send', 'c=1 p50 ms', w1one.parley.latency.p50, w1one.floor.latency.p50, 2),
      atMost('W1 send', 'c=1 server CPU ms per request', cpuMs.get(w1one.parley), cpuMs.get(w1one.floor), 2),
      info('W1 send', 'c=1 p99 ms', w1one.parley.latency.p99, w1one.floor.latency.p99),
      ...(w1t && w1tOne ? toolRows(w1t, w1tOne) : []),
      {
        ...info('W2 stream', 'streams/s', w2.parley.rps, w2.floor.rps),
        target: '≥ 1.2x floor',
        met: w2.parley.rps >= 1.2 * w2.floor.rps,
      },
      info('W2 stream', 'first event p50 ms', w2.parley.ttfe?.p50 ?? null, w2.floor.ttfe?.p50 ?? null),
      {
        ...info('W2 stream', 'first event p99 ms', ttfe99, w2.floor.ttfe?.p99 ?? null),
        target: '≤ 10 ms',
        met: ttfe99 <= 10,
      },
      info('W2 stream', 'complete p50 ms', w2.parley.latency.p50, w2.floor.latency.p50),
      info('W2 stream', 'complete p99 ms', w2.parley.latency.p99, w2.floor.latency.p99),
      atMost('W2 stream', 'server CPU ms per stream', cpuMs.get(w2.parley), cpuMs.get(w2.floor), 1),
      {
        ...info(
          'W2 stream',
          'other processes CPU %',
          othersPct.get(w2.parley) ?? null,
          othersPct.get(w2.floor) ?? null,
        ),
        ratio: false,
      },
      info('W2 stream', 'streams/s vs floor sync=NORMAL', w2.parley.rps, w2normal.rps),
      info('W2 stream', 'first event p99 ms vs floor sync=NORMAL', ttfe99, w2normal.ttfe?.p99 ?? null),
      ...writeRows('W2 stream', 'stream', w2.parley, w2.floor, w2normal, {
        parley: rowsW1,
        floor: rowsFloor,
      }),
      errors(w2, 'W2 stream'),
    ];
    const line = (name: string, r: PassReport) =>
      `- ${name}: ${r.count} answered in the measured ${r.seconds} s; latency ${JSON.stringify(r.latency)}` +
      `${r.ttfe ? `; first event ${JSON.stringify(r.ttfe)}` : ''}; errors ${errorText(r)}; server CPU ` +
      `${cpuMs.get(r)?.toFixed(3) ?? '?'} ms per request; other processes ${othersPct.get(r)?.toFixed(0) ?? '?'}% CPU; ` +
      `written per request ${bytesText(writes.get(r) ?? null)}`;
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
      '- "bytes written per request": `write_bytes` of the server process\'s `/proc/<pid>/io` (bytes it sent ' +
        'to the block layer: counted when it dirties a clean page of the page cache, so a page rewritten ' +
        'before it reaches the disk counts once, and every page an fsync cleaned counts again) over warm-up ' +
        'and measured window, divided by every request sent in them; its database, WAL and checkpoints are ' +
        'on the temp dir (`os.tmpdir()`), which must be a real block device for the figure to mean anything ' +
        "(tmpfs reads 0). The details below also give `wchar` (bytes passed to write calls, the server's " +
        'socket writes included).',
      '- "rows\' bytes per turn": read from the server\'s SQLite file after the runs, averaged over the ' +
        "turns stored (W1, its c=1 pass and W2 alike: the bench agent's sessions; W1t: the tool agent's): " +
        'each value its byte length (text, blob), 8 (integer) or 0 (null), summed over the two messages, ' +
        'the session row once per write of it (its size now times `sessions.version`, which each write ' +
        "increments: every write rewrites the whole row, snapshot included), and the turn's tool-call and " +
        'idempotency rows at their final size. Record headers, page slack and index entries are left out, ' +
        "so it is what the rows need at least; the floor's turn is its two message rows.",
      rowsText('Parley (W1, W2)', rowsW1),
      ...(rowsW1t ? [rowsText('Parley (W1t)', rowsW1t)] : []),
      rowsText('floor', rowsFloor),
      rowsText('floor sync=NORMAL', rowsNormal),
      line('W1 Parley', w1.parley),
      line('W1 floor', w1.floor),
      line('W1 floor sync=NORMAL', w1normal),
      line('W1 Parley c=1', w1one.parley),
      line('W1 floor c=1', w1one.floor),
      line('W2 Parley', w2.parley),
      line('W2 floor', w2.floor),
      line('W2 floor sync=NORMAL', w2normal),
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
    const figures: Record<string, number | null> =
      w1t && w1tOne ? { w1tCpuMs: cpuMs.get(w1t) ?? null, w1tOneCpuMs: cpuMs.get(w1tOne) ?? null } : {};
    return { rows, details, figures };
  } finally {
    await Promise.all([parley.stop(), floor.stop(), normal.stop(), tools?.stop()]);
  }
}

const bytesText = (w: { block: number; calls: number } | null) =>
  w ? `${Math.round(w.block)} B to the block layer, ${Math.round(w.calls)} B in write calls` : '?';

const rowsText = (name: string, r: TurnRows | null) =>
  r
    ? `- Rows per turn, ${name}: ${Math.round(r.total)} B over ${r.turns} turns: messages ` +
      `${Math.round(r.messages)} B, session row ${Math.round(r.sessionRow)} B ` +
      `(${r.sessionWrites.toFixed(2)} writes of it per turn), tool calls ${Math.round(r.toolCalls)} B, ` +
      `idempotency records ${Math.round(r.idempotency)} B`
    : `- Rows per turn, ${name}: not read (see the log)`;

/** What the tool server counted: calls answered, and calls whose Idempotency-Key it had seen before. */
async function toolCalls(tools: Server): Promise<{ calls: number; repeats: number }> {
  const response = await fetch(`${tools.url}/calls`);
  return (await response.json()) as { calls: number; repeats: number };
}
