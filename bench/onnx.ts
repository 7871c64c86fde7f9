import { InferenceSession, Tensor } from 'onnxruntime-node';

/**
 * A one-node-pair ONNX model built in memory (protobuf written by hand, no file): S = Q x G^T (Gemm, float32),
 * then TopK along each row. Q is [b, 512] queries, G is [n, 512] rows, K is the int64 [1] count; outputs V [b, k]
 * scores and I [b, k] row indexes. Used by the gallery benchmark for exact ground truth, k-means and the
 * "matrix product" alternative.
 */
function varint(n: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}
const key = (field: number, wire: number) => varint((field << 3) | wire);
const int = (field: number, n: number) => [...key(field, 0), ...varint(n)];
const bytes = (field: number, b: number[]) => [...key(field, 2), ...varint(b.length), ...b];
const str = (field: number, s: string) => bytes(field, [...Buffer.from(s, 'utf8')]);
const dim = (d: number | string) => bytes(1, typeof d === 'number' ? int(1, d) : str(2, d));
const FLOAT = 1;
const INT64 = 7;
const valueInfo = (field: number, name: string, elem: number, dims: (number | string)[]) =>
  bytes(field, [...str(1, name), ...bytes(2, bytes(1, [...int(1, elem), ...bytes(2, dims.flatMap(dim))]))]);
const attrInt = (name: string, v: number) => bytes(5, [...str(1, name), ...int(3, v), ...int(20, 2)]);
const node = (op: string, ins: string[], outs: string[], attrs: number[][] = []) =>
  bytes(1, [...ins.flatMap((i) => str(1, i)), ...outs.flatMap((o) => str(2, o)), ...str(4, op), ...attrs.flat()]);

export function gemmTopKModel(dimension = 512): Uint8Array {
  const graph = [
    ...node('Gemm', ['Q', 'G'], ['S'], [attrInt('transB', 1)]),
    ...node('TopK', ['S', 'K'], ['V', 'I'], [attrInt('axis', -1)]),
    ...str(2, 'gemm_topk'),
    ...valueInfo(11, 'Q', FLOAT, ['b', dimension]),
    ...valueInfo(11, 'G', FLOAT, ['n', dimension]),
    ...valueInfo(11, 'K', INT64, [1]),
    ...valueInfo(12, 'V', FLOAT, ['b', 'k']),
    ...valueInfo(12, 'I', INT64, ['b', 'k']),
  ];
  // ir_version 8, opset 17 (default domain), the graph
  return new Uint8Array([...int(1, 8), ...bytes(8, [...str(1, ''), ...int(2, 17)]), ...bytes(7, graph)]);
}

export class GemmTopK {
  private constructor(private readonly session: InferenceSession) {}

  static async create(threads = 2): Promise<GemmTopK> {
    // No spinning: idle pool threads busy-waiting after a run would steal the CPU from the timings that follow.
    const session = await InferenceSession.create(gemmTopKModel(), {
      intraOpNumThreads: threads,
      graphOptimizationLevel: 'all',
      extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
    });
    return new GemmTopK(session);
  }

  /** For each of the b rows of `q` (b x 512), the k best rows of `g` (n x 512) by dot product. */
  async run(q: Float32Array, g: Float32Array, k: number): Promise<{ scores: Float32Array; index: BigInt64Array }> {
    const b = q.length / 512;
    const n = g.length / 512;
    const out = await this.session.run({
      Q: new Tensor('float32', q, [b, 512]),
      G: new Tensor('float32', g, [n, 512]),
      K: new Tensor('int64', BigInt64Array.from([BigInt(k)]), [1]),
    });
    return { scores: out.V!.data as Float32Array, index: out.I!.data as BigInt64Array };
  }
}
