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
import onnxProto from 'onnx-proto';
import type { onnx as Onnx } from 'onnx-proto';

const { onnx } = onnxProto;
import type { tf } from './tfjs.js';

interface TfAttr {
  s?: string;
  i?: string;
  f?: number;
  b?: boolean;
  type?: string;
  list?: { i?: string[]; s?: string[] };
  tensor?: unknown;
  shape?: unknown;
}
export interface TfNode {
  name: string;
  op: string;
  input?: string[];
  attr?: Record<string, TfAttr>;
}
export interface TfWeightSpec {
  name: string;
  shape: number[];
  dtype: string;
  quantization?: { dtype: string; scale?: number; min?: number; original_dtype?: string };
}
interface Weight {
  shape: number[];
  dtype: 'float32' | 'int32';
  data: Float32Array | Int32Array;
}

/** The two halves: ONNX bytes of the backbone, and the TF.js post-processing graph fed by its outputs. */
export interface SplitGraph {
  backbone: Uint8Array;
  /** Names of the backbone's outputs (NHWC, float32), which are the head graph's inputs of the same names. */
  heads: string[];
  head: tf.io.ModelArtifacts;
}

const CONVS = new Set(['_FusedConv2D', 'FusedDepthwiseConv2dNative', 'DepthwiseConv2dNative']);

function half(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (m / 1024);
  if (e === 31) return m ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + m / 1024);
}

/** The weights file as plain float32 / int32 arrays (float16 and affine-quantized ones widened, as TF.js does). */
export function readWeights(specs: TfWeightSpec[], bin: Uint8Array): Map<string, Weight> {
  const out = new Map<string, Weight>();
  const view = new DataView(bin.buffer, bin.byteOffset, bin.byteLength);
  let at = 0;
  for (const w of specs) {
    const n = w.shape.reduce((a, b) => a * b, 1);
    const q = w.quantization;
    if (w.dtype !== 'float32' && w.dtype !== 'int32') throw new Error(`weight ${w.name}: dtype ${w.dtype} is not supported`);
    let data: Float32Array | Int32Array;
    if (!q) {
      data = w.dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
      for (let i = 0; i < n; i++) data[i] = w.dtype === 'float32' ? view.getFloat32(at + i * 4, true) : view.getInt32(at + i * 4, true);
      at += n * 4;
    } else if (q.dtype === 'float16') {
      data = new Float32Array(n);
      for (let i = 0; i < n; i++) data[i] = half(view.getUint16(at + i * 2, true));
      at += n * 2;
    } else if (q.dtype === 'uint8' || q.dtype === 'uint16') {
      const size = q.dtype === 'uint8' ? 1 : 2;
      const [scale, min] = [q.scale ?? 1, q.min ?? 0];
      data = w.dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
      for (let i = 0; i < n; i++) data[i] = (size === 1 ? view.getUint8(at + i) : view.getUint16(at + i * 2, true)) * scale + min;
      at += n * size;
    } else {
      throw new Error(`weight ${w.name}: quantization ${q.dtype} is not supported`);
    }
    out.set(w.name, { shape: w.shape, dtype: w.dtype, data });
  }
  if (at !== bin.byteLength) throw new Error(`the weights file has ${bin.byteLength} bytes, the manifest describes ${at}`);
  return out;
}

const base = (input: string) => input.split(':')[0]!.replace(/^\^/, '');
const str = (a: TfAttr | undefined) => (a?.s ? Buffer.from(a.s, 'base64').toString('utf8') : undefined);
const ints = (a: TfAttr | undefined) => (a?.list?.i ?? []).map(Number);

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
  return { backbone: toOnnx(nodes.filter((n) => backbone.has(n.name)), byName, weights, heads), heads, head: headArtifacts(rest, byName, weights, heads) };
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

type Layout = 'nhwc' | 'nchw';

function toOnnx(nodes: TfNode[], byName: Map<string, TfNode>, weights: Map<string, Weight>, heads: string[]): Uint8Array {
  const out: Onnx.INodeProto[] = [];
  const inits: Onnx.ITensorProto[] = [];
  const layout = new Map<string, Layout>();
  const isConst = (name: string) => byName.get(name)?.op === 'Const';
  let serial = 0;
  const fresh = (hint: string) => `${hint}__${serial++}`;
  const weight = (name: string) => {
    const w = weights.get(name);
    if (!w) throw new Error(`constant ${name} has no weights`);
    return w;
  };
  const init = (name: string, dims: number[], data: Float32Array | number[], type: 'float' | 'int64' = 'float') => {
    inits.push(
      type === 'float'
        ? { name, dims, dataType: onnx.TensorProto.DataType.FLOAT, rawData: new Uint8Array(Float32Array.from(data).buffer) }
        : { name, dims, dataType: onnx.TensorProto.DataType.INT64, rawData: new Uint8Array(BigInt64Array.from(Array.from(data), (v) => BigInt(v)).buffer) },
    );
    return name;
  };
  const node = (opType: string, input: string[], output: string, attribute: Onnx.IAttributeProto[] = []) => {
    out.push({ opType, input, output: [output], name: output, attribute });
    return output;
  };
  const attrInts = (name: string, v: number[]): Onnx.IAttributeProto => ({ name, type: onnx.AttributeProto.AttributeType.INTS, ints: v });
  const attrInt = (name: string, v: number): Onnx.IAttributeProto => ({ name, type: onnx.AttributeProto.AttributeType.INT, i: v });
  const attrStr = (name: string, v: string): Onnx.IAttributeProto => ({ name, type: onnx.AttributeProto.AttributeType.STRING, s: Buffer.from(v) });
  /** The tensor `name` in the wanted layout (a Transpose the first time it is asked for the other one). */
  const converted = new Map<string, string>();
  const inLayout = (name: string, want: Layout): string => {
    const have = layout.get(name);
    if (have === undefined) throw new Error(`tensor ${name} is used before it is made`);
    if (have === want) return name;
    const key = `${name}>${want}`;
    let t = converted.get(key);
    if (!t) {
      t = node('Transpose', [name], fresh(`${name}/${want}`), [attrInts('perm', want === 'nchw' ? [0, 3, 1, 2] : [0, 2, 3, 1])]);
      layout.set(t, want);
      converted.set(key, t);
    }
    return t;
  };
  /** A constant operand of an elementwise op, shaped for the other operand's layout. */
  const operand = (name: string, other: Layout) => {
    const w = weight(name);
    const n = w.shape.reduce((a, b) => a * b, 1);
    const per = w.shape.length === 4 && w.shape[0] === 1 && w.shape[1] === 1 && w.shape[2] === 1;
    if (w.shape.length > 0 && n > 1 && !per) throw new Error(`constant ${name} of shape [${w.shape.join(', ')}] is not per channel`);
    const dims = w.shape.length === 0 ? [] : other === 'nchw' ? [1, n, 1, 1] : [1, 1, 1, n];
    return init(fresh(name), dims, Float32Array.from(w.data));
  };
  // Nodes that only compute a resize's output size (Shape, StridedSlice, Mul of constants): folded into the scales.
  const sizeOnly = new Set<string>();
  const scales = new Map<string, number[]>();
  for (const n of nodes) {
    if (n.op !== 'ResizeBilinear') continue;
    if (n.attr?.align_corners?.b || !n.attr?.half_pixel_centers?.b) throw new Error(`${n.name}: only half-pixel-centre resizing is supported`);
    const mul = byName.get(base(n.input![1]!));
    const slice = mul && byName.get(base(mul.input![0]!));
    const shape = slice && byName.get(base(slice.input![0]!));
    const factor = mul && isConst(base(mul.input![1]!)) ? Array.from(weight(base(mul.input![1]!)).data) : [];
    if (mul?.op !== 'Mul' || slice?.op !== 'StridedSlice' || shape?.op !== 'Shape' || factor.length !== 2 || base(shape.input![0]!) !== base(n.input![0]!)) {
      throw new Error(`${n.name}: only a resize by constant factors of its input's own size is supported`);
    }
    for (const x of [mul, slice, shape]) sizeOnly.add(x.name);
    scales.set(n.name, [1, 1, factor[0]!, factor[1]!]);
  }
  let input: Onnx.IValueInfoProto | undefined;
  for (const n of nodes) {
    if (sizeOnly.has(n.name)) continue;
    const ins = (n.input ?? []).map(base);
    switch (n.op) {
      case 'Placeholder': {
        if (input) throw new Error('the backbone has two inputs');
        input = {
          name: n.name,
          type: { tensorType: { elemType: onnx.TensorProto.DataType.INT32, shape: { dim: [{ dimValue: 1 }, { dimParam: 'height' }, { dimParam: 'width' }, { dimValue: 3 }] } } },
        };
        layout.set(n.name, 'nhwc');
        break;
      }
      case 'Cast': {
        if (n.attr?.DstT?.type !== 'DT_FLOAT') throw new Error(`${n.name}: only a cast to float is supported`);
        layout.set(node('Cast', [ins[0]!], n.name, [attrInt('to', onnx.TensorProto.DataType.FLOAT)]), layout.get(ins[0]!)!);
        break;
      }
      case 'Sub':
      case 'Mul':
      case 'AddV2': {
        const op = n.op === 'AddV2' ? 'Add' : n.op;
        const [a, b] = [ins[0]!, ins[1]!];
        if (isConst(a) && isConst(b)) throw new Error(`${n.name}: two constants`);
        let args: string[];
        let l: Layout;
        if (isConst(b)) {
          l = layout.get(a)!;
          args = [a, operand(b, l)];
        } else if (isConst(a)) {
          l = layout.get(b)!;
          args = [operand(a, l), b];
        } else {
          l = layout.get(a)!;
          args = [a, inLayout(b, l)];
        }
        layout.set(node(op, args, n.name), l);
        break;
      }
      case '_FusedConv2D':
      case 'FusedDepthwiseConv2dNative':
      case 'DepthwiseConv2dNative': {
        if (str(n.attr?.data_format) !== 'NHWC') throw new Error(`${n.name}: data format ${str(n.attr?.data_format)}`);
        const depthwise = n.op !== '_FusedConv2D';
        const f = weight(ins[1]!);
        const [kh, kw, cin, cout] = f.shape as [number, number, number, number];
        // TF filters are [kh, kw, in, out] (depthwise: [kh, kw, in, multiplier]); ONNX wants [out, in / group, kh, kw].
        const outCh = depthwise ? cin * cout : cout;
        const w = new Float32Array(outCh * (depthwise ? 1 : cin) * kh * kw);
        for (let y = 0; y < kh; y++)
          for (let x = 0; x < kw; x++)
            for (let i = 0; i < cin; i++)
              for (let o = 0; o < cout; o++) {
                const v = f.data[((y * kw + x) * cin + i) * cout + o]!;
                if (depthwise) w[((i * cout + o) * kh + y) * kw + x] = v;
                else w[((o * cin + i) * kh + y) * kw + x] = v;
              }
        const fused = (n.attr?.fused_ops?.list?.s ?? []).map((s) => Buffer.from(s, 'base64').toString('utf8'));
        const [bias, act, ...more] = n.op === 'DepthwiseConv2dNative' ? [] : fused;
        if (n.op !== 'DepthwiseConv2dNative' && bias !== 'BiasAdd') throw new Error(`${n.name}: fused ops ${fused.join(', ')}`);
        if (more.length || (act !== undefined && act !== 'Relu' && act !== 'Relu6')) throw new Error(`${n.name}: fused ops ${fused.join(', ')}`);
        const padding = str(n.attr?.padding);
        if (padding !== 'SAME' && padding !== 'VALID') throw new Error(`${n.name}: padding ${padding}`);
        const strides = ints(n.attr?.strides);
        const dilations = n.attr?.dilations ? ints(n.attr.dilations) : [1, 1, 1, 1];
        const args = [inLayout(ins[0]!, 'nchw'), init(fresh(`${n.name}/w`), [outCh, depthwise ? 1 : cin, kh, kw], w)];
        if (bias) args.push(init(fresh(`${n.name}/b`), [outCh], Float32Array.from(weight(ins[2]!).data)));
        const attrs = [
          attrInts('kernel_shape', [kh, kw]),
          attrInts('strides', [strides[1]!, strides[2]!]),
          attrInts('dilations', [dilations[1]!, dilations[2]!]),
          attrInt('group', depthwise ? cin : 1),
          attrStr('auto_pad', padding === 'SAME' ? 'SAME_UPPER' : 'VALID'),
        ];
        let t = node('Conv', args, act ? fresh(n.name) : n.name, attrs);
        if (act === 'Relu') t = node('Relu', [t], n.name);
        if (act === 'Relu6') t = node('Clip', [t, init(fresh('zero'), [], [0]), init(fresh('six'), [], [6])], n.name);
        layout.set(n.name, 'nchw');
        break;
      }
      case 'ResizeBilinear': {
        const attrs = [attrStr('mode', 'linear'), attrStr('coordinate_transformation_mode', 'half_pixel')];
        const args = [inLayout(ins[0]!, 'nchw'), '', init(fresh(`${n.name}/scales`), [4], scales.get(n.name)!)];
        layout.set(node('Resize', args, n.name, attrs), 'nchw');
        break;
      }
      default:
        throw new Error(`${n.name}: op ${n.op} is not supported in the backbone`);
    }
  }
  if (!input) throw new Error('the backbone has no input');
  const outputs: Onnx.IValueInfoProto[] = [];
  for (const h of heads) {
    const t = inLayout(h, 'nhwc');
    const name = `${h}:nhwc`;
    node('Identity', [t], name);
    outputs.push({ name, type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT } } });
  }
  const model: Onnx.IModelProto = {
    irVersion: 7,
    producerName: 'footfall',
    opsetImport: [{ domain: '', version: 13 }],
    graph: { name: 'movenet-backbone', node: out, initializer: inits, input: [input], output: outputs },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
}

/** The name of the backbone's output for head `h`. */
export const backboneOutput = (h: string) => `${h}:nhwc`;
