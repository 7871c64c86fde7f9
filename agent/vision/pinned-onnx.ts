/**
 * A face model shipped as a pinned TF.js graph (description-catalogue.ts: FaceRes, the mini expression model), run on
 * onnxruntime: its files checked against their sha256 as they are read, the graph converted in memory to ONNX
 * (agent/bodies/tfjs-onnx.ts) with the outputs the caller picks among the graph's sinks, one session with the agent's
 * options. Nothing is written or downloaded.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { base, graphOf, graphToOnnx, onnxOutput, type TfNode } from '../bodies/tfjs-onnx.js';
import { readPinnedGraph } from '../bodies/pinned-graph.js';
import { AGENT_SESSION_OPTIONS } from '../models/ort-options.js';
import type { FaceGraphSpec } from '../models/description-catalogue.js';

/** Whether either of the model's files is in `dir` (neither: not installed; one alone is a damaged install). */
export async function pinnedGraphInstalled(dir: string, spec: FaceGraphSpec): Promise<boolean> {
  const exists = (file: string) =>
    access(join(dir, file)).then(
      () => true,
      () => false,
    );
  return (await exists(spec.graph.file)) || (await exists(spec.weights.file));
}

/**
 * The model in `dir` as an onnxruntime session whose outputs are the TF nodes `pick` names among the graph's sinks
 * (the non-constant nodes nothing else reads); `outputs` are their names in the session, in that order. A damaged or
 * partial install throws.
 */
export async function pinnedGraphSession(
  dir: string,
  spec: FaceGraphSpec & { id: string },
  pick: (sinks: TfNode[]) => string[],
): Promise<{ session: ort.InferenceSession; outputs: string[] }> {
  const files = await readPinnedGraph(dir, spec.graph, spec.weights, 'Run `footfall models fetch` to reinstall it.');
  const { nodes, weights } = graphOf(files);
  const read = new Set(nodes.flatMap((n) => (n.input ?? []).map(base)));
  const sinks = nodes.filter((n) => n.op !== 'Const' && !read.has(n.name));
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const picked = pick(sinks);
  const onnx = graphToOnnx(
    nodes.filter((n) => n.op !== 'Const'),
    byName,
    weights,
    picked,
    spec.id,
  );
  return { session: await ort.InferenceSession.create(onnx, AGENT_SESSION_OPTIONS), outputs: picked.map(onnxOutput) };
}
