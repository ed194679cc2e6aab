// Entry point: load the configuration, build the app, listen, say what started (a summary on a terminal,
// one JSON record in a log), and close gracefully on SIGTERM/SIGINT, saying so.
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { isMainModule } from './main-module.ts';
import { baseUrl, startupSummary } from './startup.ts';
import { VERSION } from './version.ts';

export async function serve(): Promise<void> {
  const terminal = process.stdout.isTTY === true;
  let app: Awaited<ReturnType<typeof buildApp>>;
  try {
    const config = loadConfig();
    app = await buildApp(config, { terminal });
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const address = app.server.address();
  const url = address && typeof address === 'object' ? baseUrl(address) : '';
  const { store, agents, demo } = app.startup;
  if (terminal) process.stdout.write(startupSummary(app.startup, url));
  else
    app.log.info(
      { version: VERSION, store, agents, url, docs: `${url}/docs`, ...(demo ? { demo: `${url}/demo` } : {}) },
      `Parley ${VERSION} started`,
    );
  const say = (line: string) => (terminal ? process.stdout.write(`${line}\n`) : app.log.info(line));
  // Room to hand every shard over (running turns get 10 s) and let the last answers go out.
  closeWithGrace({ delay: 30_000 }, async ({ err, signal }) => {
    if (err) app.log.error({ err }, 'closing after an error');
    const started = performance.now();
    say(`Parley is stopping${signal ? ` (${signal})` : ''}.`);
    await app.close();
    // What the logs still hold goes out before the stop is timed: it is part of the stop.
    flushLogs(app.log);
    say(`Parley stopped in ${((performance.now() - started) / 1000).toFixed(1)} s.`);
  });
}

/**
 * Writes out what the logger still holds, waiting for stdout's reader. pino writes stdout asynchronously, so
 * a slow reader (a busy log collector) leaves megabytes of logs in the process, which it wrote at exit, after
 * the stop line: "stopped in 0.0 s" came 1.5 s before the exit. pino keeps its stream under a symbol of its
 * own (`pino.stream`), found by its name; the stream's flushSync is what pino calls at exit.
 */
function flushLogs(log: object): void {
  for (const symbol of Object.getOwnPropertySymbols(log)) {
    if (symbol.description !== 'pino.stream') continue;
    const stream: unknown = Reflect.get(log, symbol);
    const flushSync: unknown = stream && typeof stream === 'object' && Reflect.get(stream, 'flushSync');
    try {
      if (typeof flushSync === 'function') flushSync.call(stream);
    } catch {
      // A stream that is closed or not open yet holds nothing to wait for.
    }
  }
}

if (isMainModule(import.meta.url)) await serve();
