/**
 * TF.js on the shop PC for the person detector: the WebAssembly backend (its .wasm binaries ship inside
 * @tensorflow/tfjs-backend-wasm, nothing is downloaded), one thread, and graph models read from files that were
 * verified against their pinned sha256 (no fetch, no http).
 */
import * as tf from '@tensorflow/tfjs-core';
import { loadGraphModel } from '@tensorflow/tfjs-converter';
import type { GraphModel } from '@tensorflow/tfjs-converter';
import { setThreadsCount } from '@tensorflow/tfjs-backend-wasm';
import { readPinnedGraph, type PinnedFile } from './pinned-graph.js';

export { tf };
export type { GraphModel };
export { readPinnedGraph, type GraphFiles, type PinnedFile } from './pinned-graph.js';

let ready: Promise<void> | undefined;

/**
 * Select the WebAssembly backend with a single thread (idempotent, process-wide: TF.js keeps one engine per
 * process). SIMD is used when the runtime has it (Node 20 does); the threaded build is never loaded.
 */
export function useWasmBackend(): Promise<void> {
  ready ??= (async () => {
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
    setThreadsCount(1);
    const ok = await tf.setBackend('wasm');
    if (!ok) throw new Error('TF.js could not start its WebAssembly backend.');
    await tf.ready();
  })().catch((err: unknown) => {
    ready = undefined;
    throw err;
  });
  return ready;
}

/** Load a TF.js graph model from its pinned files (readPinnedGraph). */
export async function loadPinnedGraphModel(dir: string, graph: PinnedFile, weights: PinnedFile, hint: string): Promise<GraphModel> {
  await useWasmBackend();
  const { json, weights: weightBytes } = await readPinnedGraph(dir, graph, weights, hint);
  const weightData = weightBytes.buffer.slice(weightBytes.byteOffset, weightBytes.byteOffset + weightBytes.byteLength) as ArrayBuffer;
  const artifacts: tf.io.ModelArtifacts = {
    modelTopology: json.modelTopology as tf.io.ModelArtifacts['modelTopology'],
    weightSpecs: json.weightsManifest.flatMap((g) => g.weights),
    weightData,
    ...(json.format ? { format: json.format } : {}),
    ...(json.generatedBy ? { generatedBy: json.generatedBy } : {}),
    ...(json.convertedBy ? { convertedBy: json.convertedBy } : {}),
    ...(json.signature ? { signature: json.signature } : {}),
  };
  return loadGraphModel(tf.io.fromMemory(artifacts));
}
