/**
 * `footfall enrol` and `footfall agent`: the shop PC's two commands (docs/agent.md).
 */
import { Command, Option } from 'commander';
import type { Logger } from 'pino';
import { AgentConfigError, DEFAULT_AGENT_CONFIG_PATH, loadAgentConfig, permissionWarning, type LocalSettings } from '../agent/config/config.js';
import { EnrolError, enrolShopPc } from '../agent/enrol/enrol.js';
import { createAgentLogger } from '../agent/runtime/log.js';
import { AgentRuntime } from '../agent/runtime/runtime.js';

export function enrolCommand(): Command {
  return new Command('enrol')
    .description('Join this shop PC to its shop: exchange the installation code from head office for its token and broker login')
    .requiredOption('--server <url>', 'head office address, e.g. http://head-office:8080')
    .requiredOption('--code <code>', 'installation code from head office (Shops, then Enrolment code), e.g. 7KQ2ZD-M4XH9A-0PLW3C-TT8RNE')
    .option('--config <file>', 'where to write the agent configuration', DEFAULT_AGENT_CONFIG_PATH)
    .option('--force', 'replace an existing configuration (re-installing this PC, or moving it to another shop); its local settings are kept')
    .option('--data-dir <dir>', 'folder for the visit queue and the face models (default /var/lib/footfall)')
    .option('--ffmpeg <path>', 'the ffmpeg program (default: ffmpeg on PATH)')
    .option('--hostname <name>', 'this PC\'s name as head office shows it (default: the host name)')
    .addHelpText(
      'after',
      `
The code works once. The configuration holds the PC's secrets: it is written with mode 0600.

Examples:
  sudo footfall enrol --server http://192.168.1.10:8080 --code 7KQ2ZD-M4XH9A-0PLW3C-TT8RNE
  footfall enrol --server head-office:8080 --code "7kq2zd m4xh9a 0plw3c tt8rne" --config ./agent.json --force`,
    )
    .action(async (opts: { server: string; code: string; config: string; force?: boolean; dataDir?: string; ffmpeg?: string; hostname?: string }) => {
      const local: LocalSettings = {};
      if (opts.dataDir) local.data_dir = opts.dataDir;
      if (opts.ffmpeg) local.ffmpeg_path = opts.ffmpeg;
      try {
        const result = await enrolShopPc({
          server: opts.server,
          code: opts.code,
          configPath: opts.config,
          force: opts.force ?? false,
          local,
          ...(opts.hostname ? { hostname: opts.hostname } : {}),
        });
        process.stdout.write(
          [
            `Enrolled: this PC now reports for the shop "${result.shopName}" (${result.companyName}).`,
            `Configuration written to ${result.configPath} (readable by its owner only).`,
            `Head office: ${result.config.server_url}, broker ${result.broker}.`,
            `Start (or restart) the agent: sudo systemctl restart footfall-agent   (or: footfall agent --config ${result.configPath})`,
            '',
          ].join('\n'),
        );
      } catch (err) {
        process.stderr.write(`${err instanceof EnrolError || err instanceof AgentConfigError ? err.message : `Enrolment failed: ${(err as Error).message}`}\n`);
        process.exitCode = 1;
      }
    });
}

export function agentCommand(): Command {
  return new Command('agent')
    .description('Run the shop-PC agent: cameras, recognition, visits to head office (as a service: see docs/agent.md)')
    .option('--config <file>', 'the agent configuration written by footfall enrol', DEFAULT_AGENT_CONFIG_PATH)
    .option('--models <dir>', 'face and person models folder (default <data_dir>/models; install with footfall models fetch --dir <dir>)')
    .addOption(new Option('--no-recognition', 'do not load face models (cameras with a counting line still count entries and exits)'))
    .action(async (opts: { config: string; models?: string; recognition: boolean }) => {
      // Signals are handled from the first moment: a stop during start-up (systemctl stop while head office or the
      // face models are awaited) is a clean stop too, the queue file closed and exit status 0.
      let log: Logger | undefined = undefined; // set once the configuration says the level
      let runtime: AgentRuntime | undefined;
      const startUp = new AbortController();
      let stopping = false;
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) {
          log?.warn({ signal }, 'second signal: exiting now');
          process.exit(1);
        }
        stopping = true;
        if (!runtime) {
          // Still starting: start() closes what it opened and rejects; the code after it exits.
          log?.info({ signal }, 'shutting down during start-up');
          startUp.abort(new Error(`${signal} during start-up`));
          return;
        }
        log?.info({ signal }, 'shutting down');
        runtime.stop().then(
          () => process.exit(0),
          (err: unknown) => {
            log?.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));

      let config;
      try {
        config = await loadAgentConfig(opts.config);
      } catch (err) {
        process.stderr.write(`${err instanceof AgentConfigError ? err.message : (err as Error).message}\n`);
        process.exit(1);
      }
      log = createAgentLogger(config.log_level);
      const warning = await permissionWarning(opts.config).catch(() => undefined);
      if (warning) log.warn(warning);

      try {
        runtime = await AgentRuntime.start({
          config,
          log,
          modelsDir: opts.recognition ? (opts.models ?? undefined) : false,
          // The person model (counting lines) sits in the same folder and is used with recognition off too.
          ...(opts.models ? { bodyModelsDir: opts.models } : {}),
          signal: startUp.signal,
        });
      } catch (err) {
        if (startUp.signal.aborted) process.exit(0); // stopped during start-up; start() logged 'agent stopped'
        log.fatal({ err }, 'agent could not start');
        process.stderr.write(`The agent could not start: ${(err as Error).message}\n`);
        process.exit(1);
      }
    });
}
