/**
 * The only module that listens. Loads configuration (failing fast with the variable's
 * name), opens the stores, serves, and shuts down gracefully on SIGTERM/SIGINT: stop
 * accepting, finish in-flight requests, stop the projections, close the stores.
 */
import { ConfigError, loadConfig, type Config } from './config.js';
import { openServices } from './services.js';
import { buildApp } from './app.js';

export async function serve(config: Config) {
  const services = await openServices(config);
  const app = await buildApp(services);
  app.addHook('onClose', async () => {
    await services.close();
  });
  await app.listen({ port: config.port, host: config.host });
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      app.log.error('shutdown took longer than 10 s; exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    app.close().then(
      () => process.exit(0),
      (err) => {
        app.log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  return app;
}

export async function main() {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  try {
    await serve(config);
  } catch (err) {
    process.stderr.write(`failed to start: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

const isEntry = process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry) void main();
