/**
 * MoveNet MultiPose split in two, in memory, when it is loaded: its convolutional backbone (the MobileNetV2 FPN and
 * the six heads: 97 % of a look's CPU) as an ONNX graph for onnxruntime-node, and the rest (peaks, regression,
 * boxes: a few hundred small ops) as a TF.js graph that takes the six heads' outputs as its inputs.
 *
 * Why: on the shop PC's one thread onnxruntime's kernels run the backbone in less CPU than TF.js's WebAssembly ones
 * (docs/decisions.md, "The person detector's backbone on onnxruntime"), and the WebAssembly heap (which never
 * shrinks) then holds only the small tensors of the post-processing. The post-processing stays TF.js's own graph, so
 * what is decoded from the heads is exactly what the model's authors wrote.
 *
 * Nothing is written to disk and nothing is downloaded: the ONNX bytes are built from the pinned model.json and
 * weights already checked against their sha256 (onnx-proto encodes the protobuf). The conversion knows the ops this
 * graph's backbone uses (Cast, Sub, Mul, _FusedConv2D, FusedDepthwiseConv2dNative, DepthwiseConv2dNative, AddV2,
 * ResizeBilinear with its size from Shape/StridedSlice/Mul) and throws on anything else.
 */
import type { tf } from './tfjs.js';
import { base, graphToOnnx, onnxOutput, type TfNode, type Weight } from './tfjs-onnx.js';

/** The two halves: ONNX bytes of the backbone, and the TF.js post-processing graph fed by its outputs. */
export interface SplitGraph {
  backbone: Uint8Array;
  /** Names of the backbone's outputs (NHWC, float32), which are the head graph's inputs of the same names. */
  heads: string[];
  head: tf.io.ModelArtifacts;
}

const CONVS = new Set(['_FusedConv2D', 'FusedDepthwiseConv2dNative', 'DepthwiseConv2dNative']);

/** Split the graph at its convolutions: everything they need is the backbone, what reads the backbone is the head. */
export function splitMoveNet(nodes: TfNode[], weights: Map<string, Weight>): SplitGraph {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const isConst = (name: string) => byName.get(name)?.op === 'Const';
  // The backbone: the convolutions and every non-constant node they depend on.
  const backbone = new Set<string>();
  const visit = (name: string) => {
    if (backbone.has(name) || isConst(name)) return;
    const n = byName.get(name);
    if (!n) throw new Error(`the graph has no node ${name}`);
    backbone.add(name);
    for (const i of n.input ?? []) visit(base(i));
  };
  for (const n of nodes) if (CONVS.has(n.op)) visit(n.name);
  const rest = nodes.filter((n) => n.op !== 'Const' && !backbone.has(n.name));
  const heads = [...new Set(rest.flatMap((n) => (n.input ?? []).map(base)).filter((i) => backbone.has(i)))];
  if (heads.length === 0) throw new Error('the graph has nothing after its convolutions');
  return { backbone: graphToOnnx(nodes.filter((n) => backbone.has(n.name)), byName, weights, heads, 'movenet-backbone'), heads, head: headArtifacts(rest, byName, weights, heads) };
}

/** The post-processing graph: its own nodes, the constants they read, and a Placeholder per head. */
function headArtifacts(rest: TfNode[], byName: Map<string, TfNode>, weights: Map<string, Weight>, heads: string[]): tf.io.ModelArtifacts {
  const consts = [...new Set(rest.flatMap((n) => (n.input ?? []).map(base)).filter((i) => byName.get(i)?.op === 'Const'))];
  const placeholders: TfNode[] = heads.map((name) => ({ name, op: 'Placeholder', attr: { dtype: { type: 'DT_FLOAT' } } }));
  const specs: tf.io.WeightsManifestEntry[] = [];
  const parts: Uint8Array[] = [];
  for (const name of consts) {
    const w = weights.get(name);
    if (!w) throw new Error(`constant ${name} has no weights`);
    specs.push({ name, shape: w.shape, dtype: w.dtype });
    parts.push(new Uint8Array(w.data.buffer, w.data.byteOffset, w.data.byteLength));
  }
  const bytes = new Uint8Array(parts.reduce((a, p) => a + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.byteLength;
  }
  return {
    modelTopology: { node: [...placeholders, ...consts.map((c) => byName.get(c)!), ...rest], versions: { producer: 808 } },
    weightSpecs: specs,
    weightData: bytes.buffer,
    format: 'graph-model',
  };
}

/** The name of the backbone's output for head `h`. */
export const backboneOutput = onnxOutput;
