import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../paths.js';

/**
 * Build step (`npm run build`, after tsc has compiled server/console/web into dist/console): copies the console's
 * files that are not TypeScript (index.html, console.css) next to the compiled modules.
 */
const from = path.join(packageRoot(), 'server', 'console', 'web');
const to = path.join(packageRoot(), 'dist', 'console');
fs.mkdirSync(to, { recursive: true });
for (const name of fs.readdirSync(from)) {
  if (/\.(html|css|svg|png|ico)$/.test(name)) fs.copyFileSync(path.join(from, name), path.join(to, name));
}
