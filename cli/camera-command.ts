/**
 * The `footfall camera` command (cli/camera.ts does the test): its options, and the report in plain words.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_AGENT_CONFIG_PATH, defaultModelsDir, loadAgentConfig } from '../agent/config/config.js';
import { redact } from '../agent/capture/source.js';
import { MAX_SECONDS, testCamera, type CameraTestReport } from './camera.js';

function secondsArg(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 1 || n > MAX_SECONDS) throw new InvalidArgumentError(`must be a number of seconds from 1 to ${MAX_SECONDS}`);
  return n;
}

/** The report in plain words, one line each. */
export function describeReport(r: CameraTestReport): string[] {
  const out = [`Camera ${r.url} (RTSP over ${r.transport.toUpperCase()})`];
  if (!r.connected) {
    out.push(`Not connected: ${r.reason ?? 'no pictures arrived'} (${r.code}).`);
    return out;
  }
  const s = r.stream;
  const sent = s ? [s.codec + (s.profile ? ` (${s.profile})` : ''), s.width ? `${s.width}x${s.height}` : '', s.fps ? `${s.fps} fps` : ''].filter(Boolean).join(', ') : 'format not reported';
  out.push(`Connected in ${((r.ms_to_first_picture ?? 0) / 1000).toFixed(1)} s. The camera sends ${sent}.`);
  if (r.decoded) out.push(`The agent gets ${r.decoded.fps} pictures a second at ${r.decoded.width}x${r.decoded.height}.`);
  out.push(`Pictures: ${r.frames} in ${r.seconds} s (${(r.frames / r.seconds).toFixed(1)} a second).`);
  if (r.reason) out.push(`The stream ended early: ${r.reason} (${r.code}).`);
  const g = r.recognition;
  if (!g.checked) out.push(`Recognition not checked: ${g.problem}.`);
  else {
    const widths = g.face_width_px ? `, ${g.face_width_px.min}-${g.face_width_px.max} px wide (median ${g.face_width_px.median})` : '';
    out.push(
      `Faces: ${g.faces} in ${g.analysed} pictures looked at (up to ${g.max_faces_per_picture} in one, ${g.faces_per_picture} on average)${widths}; ` +
        `${g.below_gate} below the quality gate ${g.gate}${g.fraction_below_gate !== null && g.fraction_below_gate !== undefined ? ` (${Math.round(g.fraction_below_gate * 100)}%)` : ''}.`,
    );
    out.push(`Placement: ${g.verdict}. ${g.headline}${g.advice ? ' ' + g.advice : ''}`);
  }
  if (r.snapshot) out.push(`Snapshot: ${r.snapshot.file} (${r.snapshot.width}x${r.snapshot.height} JPEG).`);
  return out;
}

export function cameraCommand(): Command {
  const camera = new Command('camera').description('Installer tools for cameras, run on the shop PC');
  camera
    .command('test')
    .description('Open a camera\'s RTSP stream as the agent does: connected or why not, the stream\'s format, pictures received and, with face models, faces seen and the placement verdict')
    .argument('<rtsp-url>', 'the camera\'s stream, e.g. rtsp://192.168.1.64:554/Streaming/Channels/101 (user and password may be in it)')
    .option('--seconds <n>', `how long to watch after the first picture (1-${MAX_SECONDS})`, secondsArg, 5)
    .option('--user <name>', 'the camera user (instead of in the URL)')
    .option('--password <password>', 'the camera password (instead of in the URL; never printed)')
    .addOption(new Option('--transport <tcp|udp>', 'RTP over the RTSP connection (tcp, as the agent) or over UDP').choices(['tcp', 'udp']).default('tcp'))
    .option('--snapshot <file>', 'write a JPEG of the best picture (most faces above the quality gate; else the last)')
    .option('--models <dir>', 'face models folder (default: the agent\'s, <data_dir>/models)')
    .option('--config <file>', 'the agent configuration, for its models folder and ffmpeg', DEFAULT_AGENT_CONFIG_PATH)
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      `
Exit status 0 when pictures arrived, 1 otherwise. A password typed on the command line stays in your shell history
and is visible to the PC's other users while this runs; ffmpeg itself never gets it on its command line.

Examples:
  footfall camera test 'rtsp://admin:PASSWORD@192.168.1.64:554/Streaming/Channels/101'
  footfall camera test rtsp://192.168.1.64/Streaming/Channels/101 --user admin --password PASSWORD --seconds 10 --snapshot /tmp/cam.jpg`,
    )
    .action(async (url: string, opts: { seconds: number; user?: string; password?: string; transport: 'tcp' | 'udp'; snapshot?: string; models?: string; config: string; json?: boolean }) => {
      if (!/^rtsps?:\/\//i.test(url)) {
        console.error(`Not an RTSP address: ${redact(url, [opts.password])} (it starts with rtsp://)`);
        process.exitCode = 1;
        return;
      }
      let ffmpegPath: string | undefined;
      try {
        ffmpegPath = (await loadAgentConfig(opts.config)).ffmpeg_path;
      } catch {
        // not enrolled yet, or not readable: ffmpeg on PATH
      }
      try {
        const report = await testCamera({
          url,
          seconds: opts.seconds,
          transport: opts.transport,
          models: opts.models ?? defaultModelsDir(opts.config),
          ...(opts.user !== undefined ? { user: opts.user } : {}),
          ...(opts.password !== undefined ? { password: opts.password } : {}),
          ...(opts.snapshot ? { snapshot: opts.snapshot } : {}),
          ...(ffmpegPath ? { ffmpegPath } : {}),
        });
        console.log(opts.json ? JSON.stringify(report, null, 2) : describeReport(report).join('\n'));
        process.exitCode = report.connected ? 0 : 1;
      } catch (err) {
        console.error(redact((err as Error).message, [opts.password]));
        process.exitCode = 1;
      }
    });
  return camera;
}
