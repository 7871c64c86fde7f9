/**
 * A TF.js graph model's files (model.json and its one weights file) read from the models folder and checked against
 * their pinned sha256, without TF.js: the face worker reads FaceRes's this way and runs it on onnxruntime.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as tf from '@tensorflow/tfjs-core';

/** A file that must have this sha256. */
export interface PinnedFile {
  file: string;
  sha256: string;
}

async function readPinned(dir: string, f: PinnedFile, hint: string): Promise<Buffer> {
  const path = join(dir, f.file);
  let data: Buffer;
  try {
    data = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`Model file ${path} is missing. ${hint}`);
    throw err;
  }
  const sha256 = createHash('sha256').update(data).digest('hex');
  if (sha256 !== f.sha256) throw new Error(`Model file ${path} has sha256 ${sha256.slice(0, 12)}..., not the pinned ${f.sha256.slice(0, 12)}.... ${hint}`);
  return data;
}

export interface ModelJson {
  modelTopology: unknown;
  weightsManifest: { paths: string[]; weights: tf.io.WeightsManifestEntry[] }[];
  format?: string;
  generatedBy?: string;
  convertedBy?: string;
  signature?: object;
}

/** The parts of a TF.js model.json used here (the file's sha256 was checked, so only its shape is). */
function parseModelJson(text: string, path: string): ModelJson {
  const j = JSON.parse(text) as Partial<ModelJson>;
  if (typeof j.modelTopology !== 'object' || !Array.isArray(j.weightsManifest)) throw new Error(`${path} is not a TF.js graph model.`);
  return j as ModelJson;
}

/** A TF.js graph model's model.json (parsed) and its one weights file, both checked against their sha256 first. */
export interface GraphFiles {
  json: ModelJson;
  weights: Uint8Array;
}

/**
 * Read `<dir>/<graph.file>` (model.json) and its one weights file, both checked against their sha256 first. The
 * weights manifest must name exactly that one file.
 */
export async function readPinnedGraph(dir: string, graph: PinnedFile, weights: PinnedFile, hint: string): Promise<GraphFiles> {
  // One after the other, graph first: with both missing, the error always names the graph (in parallel, whichever
  // read failed first was reported).
  const graphBytes = await readPinned(dir, graph, hint);
  const weightBytes = await readPinned(dir, weights, hint);
  const path = join(dir, graph.file);
  const json = parseModelJson(graphBytes.toString('utf8'), path);
  const paths = json.weightsManifest.flatMap((g) => g.paths);
  if (paths.length !== 1 || paths[0] !== weights.file) throw new Error(`${path} names weights ${paths.join(', ')}, expected ${weights.file} only.`);
  return { json, weights: weightBytes };
}

