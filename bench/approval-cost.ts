// W6: the approval round trip. On one fresh Parley process, with an agent whose HTTP tool (bench/tool-server.ts)
// waits for the integrator's approval: a plain send whose turn pauses (202 with the waiting call), then the
// API key's decision approving it, which runs the tool, resumes the turn and answers 201 once its reply is
// stored. c workers over N sessions of their own, then one worker; CPU per round trip against W1t's per turn.
import type { Row } from './report.ts';
import { runLoad } from './run-load.ts';
import {
  APPROVAL_AGENT_ID,
  approvalAgent,
  cpuSeconds,
  createSessions,
  startParley,
  startToolServer,
  TOOL_NAME,
  TOOL_SECRET_ENV,
  toolSecret,
} from './servers.ts';
import { errorCount, errorText, info, log, type Outcome, type Settings } from './workload.ts';

/** W1t's server CPU ms per turn (W1 with a tool step, no approval), when it ran in the same run. */
export interface ToolStepCpu {
  concurrent: number | null;
  one: number | null;
}

export async function approvalCost(s: Settings, w1t?: ToolStepCpu): Promise<Outcome> {
  const tools = await startToolServer();
  const parley = await startParley({
    moreAgents: [approvalAgent(tools.url)],
    env: { [TOOL_SECRET_ENV]: toolSecret() },
  });
  try {
    log(`W6: creating ${s.sessions} Parley sessions`);
    const sessions = await createSessions(parley, s.sessions, APPROVAL_AGENT_ID);
    const pass = async (concurrency: number) => {
      // c=1 as W1t's: a short warm-up and at most 3 s, a few hundred round trips.
      const durationMs = concurrency === 1 ? Math.min(3_000, s.durationMs) : s.durationMs;
      log(`W6: c=${concurrency}, ${durationMs / 1000} s`);
      const cpu0 = cpuSeconds(parley);
      const tool0 = cpuSeconds(tools);
      const calls0 = await toolCalls(tools.url);
      const report = await runLoad({
        url: parley.url,
        apiKey: parley.apiKey,
        mode: 'approve',
        sessions,
        concurrency,
        kind: 'duration',
        warmupMs: concurrency === 1 ? 500 : s.warmupMs,
        durationMs,
        tool: TOOL_NAME,
      });
      const cpu1 = cpuSeconds(parley);
      const tool1 = cpuSeconds(tools);
      const calls1 = await toolCalls(tools.url);
      const perTrip = (a: number | null, b: number | null) =>
        a === null || b === null ? null : ((b - a) * 1000) / report.sent;
      return {
        report,
        cpuMs: perTrip(cpu0, cpu1),
        toolCpuMs: perTrip(tool0, tool1),
        calls: calls1.calls - calls0.calls,
        repeats: calls1.repeats - calls0.repeats,
      };
    };
    const many = await pass(s.concurrency);
    const one = await pass(1);
    const minus = (a: number | null, b: number | null | undefined) =>
      a === null || b === null || b === undefined ? null : a - b;
    const w = 'W6 approval';
    const errors = errorCount(many.report) + errorCount(one.report);
    const rows: Row[] = [
      info(w, 'round trips/s', many.report.rps),
      info(w, 'send → 202 p50 ms', many.report.paused?.p50 ?? null),
      info(w, 'send → 202 p99 ms', many.report.paused?.p99 ?? null),
      info(w, 'decision → reply stored p50 ms', many.report.decided?.p50 ?? null),
      info(w, 'decision → reply stored p99 ms', many.report.decided?.p99 ?? null),
      { ...info(w, 'errors', errors), target: '0', met: errors === 0 },
      ...(w1t
        ? [
            // The floor column holds W1t's CPU per turn (its own process, same run): the ratio is the
            // approval's, a turn with a tool step against the same turn paused and decided.
            info(w, 'server CPU ms per round trip vs W1t per turn', many.cpuMs, w1t.concurrent),
            info(w, 'pause + decision: server CPU ms (W6 − W1t)', minus(many.cpuMs, w1t.concurrent)),
          ]
        : [info(w, 'server CPU ms per round trip', many.cpuMs)]),
      info(w, 'c=1 round trips/s', one.report.rps),
      info(w, 'c=1 send → 202 p50 ms', one.report.paused?.p50 ?? null),
      info(w, 'c=1 send → 202 p99 ms', one.report.paused?.p99 ?? null),
      info(w, 'c=1 decision → reply stored p50 ms', one.report.decided?.p50 ?? null),
      info(w, 'c=1 decision → reply stored p99 ms', one.report.decided?.p99 ?? null),
      ...(w1t
        ? [
            info(w, 'c=1 server CPU ms per round trip vs W1t per turn', one.cpuMs, w1t.one),
            info(w, 'c=1 pause + decision: server CPU ms (W6 − W1t)', minus(one.cpuMs, w1t.one)),
          ]
        : [info(w, 'c=1 server CPU ms per round trip', one.cpuMs)]),
    ];
    const line = (name: string, p: Awaited<ReturnType<typeof pass>>) =>
      `- ${name}: ${p.report.count} round trips in the measured ${p.report.seconds} s (${p.report.sent} ` +
      `started); send → 202 ${JSON.stringify(p.report.paused)}; decision → reply ` +
      `${JSON.stringify(p.report.decided)}; whole ${JSON.stringify(p.report.latency)}; errors ` +
      `${errorText(p.report)}; server CPU ${p.cpuMs?.toFixed(3) ?? '?'} ms per round trip; tool server CPU ` +
      `${p.toolCpuMs?.toFixed(3) ?? '?'} ms per round trip; tool calls answered ${p.calls} (repeated ` +
      `Idempotency-Keys: ${p.repeats})`;
    const details = [
      `### W6 (approval round trips: c=${s.concurrency} over ${s.sessions} sessions, then c=1; one fresh process)`,
      '',
      `- The agent is W1t's with its tool \`${TOOL_NAME}\` set \`approval: operator\`. A round trip: a plain ` +
        'send asking for one call (`[[tool:echo {"n":N}]]`) must answer 202 with the turn paused and the ' +
        'call waiting; the API key then approves it (`POST …/turns/{turn_id}/approvals`), which runs the ' +
        'call (a signed POST to `bench/tool-server.ts`), resumes the turn and answers 201 with the reply ' +
        'once stored; the reply must show the call answered ok. The decision waiting for the turn is what ' +
        "an integrator's back office uses, so nothing else (stream, messages) is read.",
      '- "send → 202": from sending the message to its 202; "decision → reply stored": from sending the ' +
        'decision (as soon as the 202 arrived) to its 201. Round trips/s counts those whose 201 arrived in ' +
        'the measured window; each worker owns its sessions, so a session never has two round trips at once.',
      "- Server CPU per round trip: as W1's, over warm-up and measured window, divided by every round trip " +
        'started. c=1: one worker, 0.5 s warm-up, at most 3 s measured.',
      w1t
        ? '- Against W1t (same run, its own process: the same tool step without the approval): the ' +
          'difference is what the pause, its 202 and the decision request add to a turn with a tool step.'
        : '- W1t did not run in this run: no comparison with a tool step without approval.',
      line(`W6 Parley c=${s.concurrency}`, many),
      line('W6 Parley c=1', one),
    ];
    return { rows, details };
  } finally {
    await Promise.all([parley.stop(), tools.stop()]);
  }
}

/** What the tool server counted: calls answered, and calls whose Idempotency-Key it had seen before. */
async function toolCalls(url: string): Promise<{ calls: number; repeats: number }> {
  const response = await fetch(`${url}/calls`);
  return (await response.json()) as { calls: number; repeats: number };
}
