// Entry point: load the configuration, build the app, listen, and close gracefully on SIGTERM/SIGINT.
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { isMainModule } from './main-module.ts';

export async function serve(): Promise<void> {
  let app: Awaited<ReturnType<typeof buildApp>>;
  try {
    const config = loadConfig();
    app = await buildApp(config);
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  // Room to hand every shard over (running turns get 10 s) and let the last answers go out.
  closeWithGrace({ delay: 30_000 }, async ({ err }) => {
    if (err) app.log.error({ err }, 'closing after an error');
    await app.close();
  });
}

if (isMainModule(import.meta.url)) await serve();
