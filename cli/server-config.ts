import { ConfigError, loadConfig, type Config } from '../server/config.js';

/** Head office's configuration from FOOTFALL_* variables; a bad value prints its message and exits 1. */
export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(err.message + '\n');
      process.exit(1);
    }
    throw err;
  }
}
