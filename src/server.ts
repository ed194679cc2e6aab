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
    say(`Parley stopped in ${((performance.now() - started) / 1000).toFixed(1)} s.`);
  });
}

if (isMainModule(import.meta.url)) await serve();
