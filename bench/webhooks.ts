// W1w: what a webhook endpoint costs a turn. On one fresh Parley process, W1 (c workers over N sessions) runs
// without an endpoint, then again once the tenant has one endpoint subscribed to turn.completed, on
// bench/webhook-receiver.ts over loopback: every turn then queues a delivery in its commit, which the
// deliverer sends and records. The differences (W1w − W1) are the endpoint's; the server's CPU is also given
// per turn until every delivery of the pass was received, since the deliverer may finish after the loop.
import { ioCounters } from './disk-writes.ts';
import type { PassReport } from './load.ts';
import type { Row } from './report.ts';
import { runLoad } from './run-load.ts';
import { cpuSeconds, createSessions, type Server, startParley, startWebhookReceiver } from './servers.ts';
import { errorCount, errorText, info, log, type Outcome, type Settings } from './workload.ts';

/** How long the deliveries of W1w's turns may take to arrive after its loop, at most. */
const DRAIN_TIMEOUT_MS = 120_000;

const received = async (receiver: Server) =>
  (await (await fetch(`${receiver.url}/count`)).json()) as { received: number; repeats: number };

export async function webhookCost(s: Settings): Promise<Outcome> {
  const receiver = await startWebhookReceiver();
  const parley = await startParley();
  try {
    log(`W1w: creating ${s.sessions} Parley sessions`);
    const sessions = await createSessions(parley, s.sessions);
    const pass = async (name: string) => {
      log(`${name}: c=${s.concurrency}, ${s.durationMs / 1000} s`);
      const cpu0 = cpuSeconds(parley);
      const io0 = ioCounters(parley.child.process.pid);
      const report = await runLoad({
        url: parley.url,
        apiKey: parley.apiKey,
        mode: 'plain',
        sessions,
        concurrency: s.concurrency,
        kind: 'duration',
        warmupMs: s.warmupMs,
        durationMs: s.durationMs,
      });
      const cpu1 = cpuSeconds(parley);
      const io1 = ioCounters(parley.child.process.pid);
      const cpuMs = cpu0 === null || cpu1 === null ? null : ((cpu1 - cpu0) * 1000) / report.sent;
      const written = io0 && io1 ? (io1.writeBytes - io0.writeBytes) / report.sent : null;
      return { report, cpuMs, written, cpuAfter: cpu1 };
    };
    const plain = await pass('W1 (no endpoint)');
    const hook = await fetch(`${parley.url}/v1/agents/webhooks`, {
      method: 'POST',
      headers: { 'x-api-key': parley.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/hooks`, events: ['turn.completed'] }),
    });
    if (hook.status !== 201) throw new Error(`registering the endpoint answered ${hook.status}`);
    const before = await received(receiver);
    const receiverCpu0 = cpuSeconds(receiver);
    const hooked = await pass('W1w (one endpoint)');
    const atLoopEnd = (await received(receiver)).received - before.received;
    // Every turn of the pass queued one delivery: wait until all arrived (or the drain's bound passed).
    const loopEnded = Date.now();
    let drained = atLoopEnd;
    while (drained < hooked.report.sent && Date.now() - loopEnded < DRAIN_TIMEOUT_MS) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      drained = (await received(receiver)).received - before.received;
    }
    const drainMs = Date.now() - loopEnded;
    const cpuDrained = cpuSeconds(parley);
    const receiverCpu1 = cpuSeconds(receiver);
    const repeats = (await received(receiver)).repeats - before.repeats;
    const perTurnDrained =
      cpuDrained === null || hooked.cpuAfter === null || hooked.cpuMs === null
        ? null
        : hooked.cpuMs + ((cpuDrained - hooked.cpuAfter) * 1000) / hooked.report.sent;
    const minus = (a: number | null, b: number | null) => (a === null || b === null ? null : a - b);
    // The floor column holds W1 on the same process without the endpoint, so that the ratio is the endpoint's.
    const w = 'W1w webhook';
    const rows: Row[] = [
      info(w, 'req/s', hooked.report.rps, plain.report.rps),
      info(w, 'p50 ms', hooked.report.latency.p50, plain.report.latency.p50),
      info(w, 'p99 ms', hooked.report.latency.p99, plain.report.latency.p99),
      {
        ...info(w, 'errors', errorCount(hooked.report), errorCount(plain.report)),
        target: '0',
        met: errorCount(hooked.report) + errorCount(plain.report) === 0,
      },
      info(w, 'server CPU ms per request', hooked.cpuMs, plain.cpuMs),
      info(w, 'endpoint: server CPU ms per request (W1w − W1)', minus(hooked.cpuMs, plain.cpuMs)),
      info(w, 'server CPU ms per turn, deliveries drained', perTurnDrained),
      info(w, 'bytes written per request', hooked.written, plain.written),
      info(w, 'endpoint: bytes written per request (W1w − W1)', minus(hooked.written, plain.written)),
      info(w, 'deliveries received by the loop’s end, % of turns', (100 * atLoopEnd) / hooked.report.sent),
      info(w, 'drain after the loop, s', drainMs / 1000),
    ];
    const line = (name: string, r: PassReport, cpuMs: number | null) =>
      `- ${name}: ${r.count} answered in the measured ${r.seconds} s (${r.sent} sent); latency ` +
      `${JSON.stringify(r.latency)}; errors ${errorText(r)}; server CPU ${cpuMs?.toFixed(3) ?? '?'} ms per request`;
    const receiverMs =
      receiverCpu0 === null || receiverCpu1 === null
        ? null
        : ((receiverCpu1 - receiverCpu0) * 1000) / drained;
    const details = [
      `### W1w (W1 without, then with, one webhook endpoint: c=${s.concurrency} over ${s.sessions} sessions, ` +
        'one fresh process)',
      '',
      '- The same sessions and process: W1, then an endpoint registered for `turn.completed` on ' +
        '`bench/webhook-receiver.ts` (its own process, answering 204), then W1 again (W1w). Each turn of W1w ' +
        'queues one delivery in its commit; the deliverer sends them beside the load.',
      '- In the table, the Parley column is W1w (one endpoint) and the floor column W1 on the same process ' +
        'without it, so that Parley/floor is what the endpoint changes.',
      '- "server CPU ms per turn, deliveries drained": the CPU of W1w\'s loop plus what the process used ' +
        'after it until every delivery of its turns was received, per turn sent.',
      `- Deliveries of W1w's ${hooked.report.sent} turns: ${atLoopEnd} received by the loop's end, ` +
        `${drained} after ${(drainMs / 1000).toFixed(1)} s more; sent again: ${repeats}; receiver CPU ` +
        `${receiverMs?.toFixed(3) ?? '?'} ms per delivery.`,
      line('W1 Parley (no endpoint)', plain.report, plain.cpuMs),
      line('W1w Parley (one endpoint)', hooked.report, hooked.cpuMs),
    ];
    return { rows, details };
  } finally {
    await Promise.all([parley.stop(), receiver.stop()]);
  }
}
