// What tracing costs a turn: W1 (plain sends, 32 at a time) against Parley with tracing off, with it on
// exporting to a local OTLP/HTTP receiver (in this process, answering every export at once), and, given
// `--main=DIR` (a copy of another checkout, e.g. `git archive main | tar -x -C DIR` with node_modules
// linked), against that code, to compare off with the code before tracing existed. The servers run side by
// side and are measured in interleaved rounds, so that the machine's noise falls on all of them. Reports the
// server's CPU per send and the throughput. `node bench/tracing-cost.ts [--main=DIR] [--rounds=N]
// [--duration=S]`; writes nothing.
import { once } from 'node:events';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { runLoad } from './run-load.ts';
import { cpuSeconds, createSessions, type Server, startParley } from './servers.ts';

const args = process.argv.slice(2);
const option = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const mainDir = option('main');
const rounds = Number(option('rounds') ?? 3);
const durationMs = Number(option('duration') ?? 8) * 1000;
const SESSIONS = 500;

let exports = 0;
let exportBytes = 0;
const receiver = createServer((req, res) => {
  req.on('data', (chunk: Buffer) => {
    exportBytes += chunk.length;
  });
  req.on('end', () => {
    exports++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
});
receiver.listen(0, '127.0.0.1');
await once(receiver, 'listening');
const address = receiver.address();
if (address === null || typeof address !== 'object') throw new Error('no receiver port');

const servers: Server[] = [];
if (mainDir) servers.push(await startParley({ name: 'main', script: join(mainDir, 'src/server.ts') }));
servers.push(await startParley({ name: 'tracing off' }));
servers.push(
  await startParley({
    name: 'tracing on',
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${address.port}` },
  }),
);
const sessions = new Map<Server, string[]>();
for (const server of servers) sessions.set(server, await createSessions(server, SESSIONS));

const results = new Map<Server, { cpuMs: number[]; rps: number[] }>(
  servers.map((s) => [s, { cpuMs: [], rps: [] }]),
);
try {
  for (let round = 0; round < rounds; round++) {
    // Each round in another order: the first of a round is not always the same one.
    const order = servers.map((_, i) => servers[(i + round) % servers.length] as Server);
    for (const server of order) {
      const before = cpuSeconds(server);
      const report = await runLoad({
        url: server.url,
        apiKey: server.apiKey,
        mode: 'plain',
        sessions: sessions.get(server) ?? [],
        concurrency: 32,
        kind: 'duration',
        warmupMs: 1_000,
        durationMs,
      });
      const after = cpuSeconds(server);
      if (before === null || after === null) throw new Error('no CPU figures (is /proc there?)');
      const cpuMs = ((after - before) * 1000) / report.sent;
      results.get(server)?.cpuMs.push(cpuMs);
      results.get(server)?.rps.push(report.count / report.seconds);
      process.stderr.write(
        `round ${round + 1} ${server.name}: ${cpuMs.toFixed(3)} ms CPU/send, ${Math.round(report.count / report.seconds)} req/s, errors ${JSON.stringify(report.errors)}\n`,
      );
    }
  }
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  receiver.close();
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};
process.stdout.write('| server | CPU ms per send (median; each round) | req/s (median) |\n|---|---|---|\n');
for (const server of servers) {
  const r = results.get(server) as { cpuMs: number[]; rps: number[] };
  const each = r.cpuMs.map((v) => v.toFixed(3)).join(', ');
  process.stdout.write(
    `| ${server.name} | ${median(r.cpuMs).toFixed(3)} (${each}) | ${Math.round(median(r.rps))} |\n`,
  );
}
process.stdout.write(`\nexports received: ${exports}, ${Math.round(exportBytes / 1024)} KiB\n`);
