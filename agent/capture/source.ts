/**
 * Where a camera's stream is, and how to say it without giving its password away.
 *
 * The camera list gives URL parts (host, port, path, username, password); `rtspUrl` joins them the way the
 * protocol says (`rtsp://<user>:<password>@<host>:<port><path>`, user and password URL-encoded). Anything that is
 * logged or reported goes through `redact` first: ffmpeg repeats the URL, password included, in its messages.
 */

export interface CameraSource {
  host: string;
  port: number;
  /** Stream path, camera-model specific, e.g. `/Streaming/Channels/101`; may be empty; may carry a query. */
  path: string;
  username?: string;
  /** Empty or absent: the camera has no password. */
  password?: string;
}

export function rtspUrl(source: CameraSource): string {
  const user = source.username ?? '';
  const password = source.password ?? '';
  const auth = user || password ? `${encodeURIComponent(user)}${password ? ':' + encodeURIComponent(password) : ''}@` : '';
  const host = source.host.includes(':') && !source.host.startsWith('[') ? `[${source.host}]` : source.host;
  const path = source.path === '' || source.path.startsWith('/') ? source.path : '/' + source.path;
  return `rtsp://${auth}${host}:${source.port}${path}`;
}

/** The user-info of any rtsp(s)/http(s) URL in a text: `rtsp://admin:secret@` becomes `rtsp://admin:***@`. */
const urlPassword = /\b((?:rtsps?|https?):\/\/[^\s/@:]*):[^\s/@]*@/gi;

/**
 * Replaces passwords in `text`: the user-info of every URL, and each given secret, raw and URL-encoded, wherever
 * it appears (secrets shorter than 4 characters only inside URLs, so that a password like `1` does not blank every
 * digit of a message).
 */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text.replace(urlPassword, '$1:***@');
  for (const secret of secrets) {
    if (!secret || secret.length < 4) continue;
    for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join('***');
  }
  return out;
}

/** The URL for logs: password replaced by `***`. */
export function describeSource(source: CameraSource): string {
  return redact(rtspUrl(source), [source.password]);
}
