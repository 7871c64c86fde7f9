/**
 * Why a camera is not connected, from ffmpeg's messages: a short phrase for a person ("wrong password") and
 * one of the protocol's reason words (`auth_failed`) for head office.
 */
import type { CAMERA_REASONS } from '../../shared/agent-api.js';

/**
 * The protocol's reason words (docs/agent-protocol.md 2.2) that capture can give, plus `failed` for a problem on
 * the shop PC itself (ffmpeg missing). `disabled` is the manager's business, not capture's.
 */
export type ReasonCode = Exclude<(typeof CAMERA_REASONS)[number], 'disabled'> | 'failed';

export interface Explanation {
  code: ReasonCode;
  /** Lower-case words a person understands, e.g. "wrong password". */
  reason: string;
}

/** The phrases used in more than one place, so tests and callers can name them. */
export const REASONS = {
  connecting: { code: 'connecting', reason: 'connecting' },
  wrongPassword: { code: 'auth_failed', reason: 'wrong password' },
  forbidden: { code: 'auth_failed', reason: 'the camera refused this user' },
  pathNotFound: { code: 'no_stream', reason: 'stream path not found' },
  refused: { code: 'unreachable', reason: 'connection refused' },
  noRoute: { code: 'unreachable', reason: 'no route to host' },
  networkUnreachable: { code: 'unreachable', reason: 'network unreachable' },
  hostNotFound: { code: 'unreachable', reason: 'camera host name not found' },
  noAnswer: { code: 'timeout', reason: 'camera did not answer in time' },
  stalled: { code: 'timeout', reason: 'camera stopped sending pictures' },
  closed: { code: 'no_stream', reason: 'camera closed the connection' },
  notRtsp: { code: 'no_stream', reason: 'not an RTSP stream (wrong port?)' },
  noVideo: { code: 'no_stream', reason: 'the stream has no video' },
  badVideo: { code: 'decode_error', reason: 'the camera sends video that cannot be decoded' },
  unsupported: { code: 'decode_error', reason: 'video format not supported' },
  noFfmpeg: { code: 'failed', reason: 'ffmpeg is not installed on this PC' },
} as const satisfies Record<string, Explanation>;

interface Rule {
  test: RegExp;
  explain: (match: RegExpMatchArray) => Explanation;
}

const fixed =
  (e: Explanation) =>
  (): Explanation =>
    e;

/** First match wins, in this order: the server's RTSP answer says most, then socket errors, then the rest. */
const RULES: Rule[] = [
  { test: /\b401 Unauthorized\b|authorization failed/i, explain: fixed(REASONS.wrongPassword) },
  { test: /\b403 Forbidden\b/i, explain: fixed(REASONS.forbidden) },
  { test: /\b404 Not Found\b/i, explain: fixed(REASONS.pathNotFound) },
  {
    test: /(?:method \w+ failed|Server returned): (\d{3}) ([^\r\n(]*)/i,
    explain: (m) => {
      const status = `RTSP ${m[1]}${m[2] ? ' ' + m[2].trim() : ''}`;
      return Number(m[1]) >= 500
        ? { code: 'no_stream', reason: `the camera reported an error (${status})` }
        : { code: 'no_stream', reason: `the camera refused the stream (${status})` };
    },
  },
  { test: /Connection refused/i, explain: fixed(REASONS.refused) },
  { test: /No route to host|Host is unreachable/i, explain: fixed(REASONS.noRoute) },
  { test: /Network is unreachable/i, explain: fixed(REASONS.networkUnreachable) },
  {
    test: /Failed to resolve hostname|Name or service not known|Temporary failure in name resolution|No address associated/i,
    explain: fixed(REASONS.hostNotFound),
  },
  { test: /timed out|Connection timeout/i, explain: fixed(REASONS.noAnswer) },
  { test: /Connection reset by peer|End of file|Broken pipe/i, explain: fixed(REASONS.closed) },
  { test: /does not contain any stream|Stream map .* matches no streams|no video/i, explain: fixed(REASONS.noVideo) },
  { test: /Decoder \(codec \w+\) not found|Unsupported codec|not supported/i, explain: fixed(REASONS.unsupported) },
  { test: /Could not find codec parameters|unspecified size|decode_slice|error while decoding/i, explain: fixed(REASONS.badVideo) },
  { test: /Invalid data found when processing input/i, explain: fixed(REASONS.notRtsp) },
];

/**
 * Explains ffmpeg's last messages (already redacted). `hadFrames`: the stream had been delivering pictures, so an
 * exit without a telling message means the camera ended it.
 */
export function explainFfmpeg(lines: readonly string[], hadFrames = false): Explanation {
  for (const rule of RULES) {
    for (let i = lines.length - 1; i >= 0; i--) {
      const m = lines[i]!.match(rule.test);
      if (m) return rule.explain(m);
    }
  }
  if (hadFrames) return REASONS.closed;
  const last = [...lines].reverse().find((l) => l.trim() !== '');
  return last ? { code: 'no_stream', reason: `ffmpeg: ${shorten(stripPrefix(last))}` } : REASONS.closed;
}

/** `[rtsp @ 0x55d…] message` -> `message`; `rtsp://…: message` -> `message`. */
function stripPrefix(line: string): string {
  return line
    .replace(/^\[[^\]]*\]\s*/, '')
    .replace(/^\S+:\/\/\S+?:\s+/, '')
    .trim();
}

function shorten(text: string, max = 200): string {
  return text.length <= max ? text : text.slice(0, max - 1) + '…';
}
