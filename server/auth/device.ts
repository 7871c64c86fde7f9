/**
 * The device label of a session: coarse and human ("Chrome on Windows"), never a device identifier.
 * A label the client sends wins; otherwise one is guessed from the User-Agent.
 */
export function deviceLabel(given: string | undefined, userAgent: string | undefined): string {
  const clean = given?.replace(/[\p{C}]/gu, '').trim().slice(0, 64);
  if (clean) return clean;
  const ua = userAgent ?? '';
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrome\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : /curl\//i.test(ua) ? 'curl' : undefined;
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad|iOS/.test(ua) ? 'iOS' : /Windows/.test(ua) ? 'Windows' : /Mac OS X|Macintosh/.test(ua) ? 'macOS' : /Linux/.test(ua) ? 'Linux' : undefined;
  if (browser && os) return `${browser} on ${os}`;
  return browser ?? os ?? 'Unknown device';
}
