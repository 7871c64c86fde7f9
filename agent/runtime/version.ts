/** The agent's version: `version` of the package.json above this file (sources or dist/). */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

export function agentVersion(): string {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const version = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
        cached = typeof version === 'string' && version ? version.slice(0, 64) : '0.0.0';
      } catch {
        cached = '0.0.0';
      }
      return cached;
    }
    const up = path.dirname(dir);
    if (up === dir) return (cached = '0.0.0');
    dir = up;
  }
}
