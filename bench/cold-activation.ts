// W4: the first send to a passivated session (its actor activated from the store) vs the next send, warm.
import type { PassReport } from './load.ts';
import { waitPassivated } from './memory.ts';
import { runLoad } from './run-load.ts';
import { createSessions, metric, readMetrics, startParley } from './servers.ts';
import { errorCount, errorText, info, log, type Outcome, type Settings } from './workload.ts';

export async function coldActivation(s: Settings): Promise<Outcome> {
  const parley = await startParley({ idleSeconds: 1, sweepSeconds: 1 });
  try {
    log(`W4: creating ${s.coldSessions} sessions with one message each`);
    const sessions = await createSessions(parley, s.coldSessions);
    const base = {
      url: parley.url,
      apiKey: parley.apiKey,
      mode: 'plain' as const,
      sessions,
      kind: 'each' as const,
    };
    const [first] = await runLoad({ ...base, concurrency: s.coldConcurrency, passes: 1 });
    log('W4: waiting for passivation');
    await waitPassivated(parley, 30_000);
    const activations = async () => metric(await readMetrics(parley), 'parley_actor_activations_total');
    const before = await activations();
    log(`W4: a cold then a warm send to each session, c=${s.coldConcurrency}`);
    const [cold, warm] = (await runLoad({ ...base, concurrency: s.coldConcurrency, passes: 2 })) as [
      PassReport,
      PassReport,
    ];
    const activated = (await activations()) - before;
    const errors = errorCount(cold) + errorCount(warm);
    const rows = [
      info('W4 cold', 'cold p50 ms', cold.latency.p50),
      { ...info('W4 cold', 'cold p99 ms', cold.latency.p99), target: '≤ 5 ms', met: cold.latency.p99 <= 5 },
      info('W4 cold', 'warm p50 ms', warm.latency.p50),
      info('W4 cold', 'warm p99 ms', warm.latency.p99),
      { ...info('W4 cold', 'errors', errors), target: '0', met: errors === 0 },
    ];
    const details = [
      `### W4 (${s.coldSessions} sessions, c=${s.coldConcurrency}; idle 1 s, sweep 1 s)`,
      '',
      `- Set-up sends: errors ${first ? errorText(first) : 'no report'}.`,
      `- Actor activations during the cold + warm pass: ${activated} (one per session means every cold send was ` +
        'cold and no warm one was).',
      `- Cold: ${JSON.stringify(cold.latency)}; errors ${errorText(cold)}.`,
      `- Warm: ${JSON.stringify(warm.latency)}; errors ${errorText(warm)}.`,
    ];
    return { rows, details };
  } finally {
    await parley.stop();
  }
}
