import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../paths.js';

/**
 * Build step (`npm run build`, after tsc has compiled server/console/web into dist/console): copies the console's
 * files that are not TypeScript (index.html, console.css) next to the compiled modules, and uPlot's ES module and
 * stylesheet from node_modules into dist/console/vendor (served from head office itself under the console's CSP;
 * docs/console.md, Charts). The names are lower-case: the console's file server only serves such names.
 */
const root = packageRoot();
const from = path.join(root, 'server', 'console', 'web');
const to = path.join(root, 'dist', 'console');
fs.mkdirSync(to, { recursive: true });
for (const name of fs.readdirSync(from)) {
  if (/\.(html|css|svg|png|ico)$/.test(name)) fs.copyFileSync(path.join(from, name), path.join(to, name));
}
const uplot = path.join(root, 'node_modules', 'uplot', 'dist');
fs.mkdirSync(path.join(to, 'vendor'), { recursive: true });
fs.copyFileSync(path.join(uplot, 'uPlot.esm.js'), path.join(to, 'vendor', 'uplot.js'));
fs.copyFileSync(path.join(uplot, 'uPlot.min.css'), path.join(to, 'vendor', 'uplot.css'));
