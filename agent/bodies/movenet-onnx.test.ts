import { describe, expect, it } from 'vitest';
import { splitMoveNet } from './movenet-onnx.js';
import { readWeights, type TfNode } from './tfjs-onnx.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('reading a TF.js weights file', () => {
  it('widens float16 and uint8-quantized weights, reads plain ones, and refuses a file of the wrong length', () => {
    const bin = Buffer.alloc(2 * 2 + 2 + 4);
    bin.writeUInt16LE(0x3c00, 0); // 1.0
    bin.writeUInt16LE(0xc000, 2); // -2.0
    bin.writeUInt8(0, 4);
    bin.writeUInt8(10, 5);
    bin.writeInt32LE(-7, 6);
    const w = readWeights(
      [
        { name: 'h', shape: [2], dtype: 'float32', quantization: { dtype: 'float16' } },
        { name: 'q', shape: [2], dtype: 'float32', quantization: { dtype: 'uint8', scale: 0.5, min: -1 } },
        { name: 'i', shape: [], dtype: 'int32' },
      ],
      bin,
    );
    expect(Array.from(w.get('h')!.data)).toEqual([1, -2]);
    expect(Array.from(w.get('q')!.data)).toEqual([-1, 4]);
    expect(Array.from(w.get('i')!.data)).toEqual([-7]);
    expect(() => readWeights([{ name: 'i', shape: [1], dtype: 'int32' }], bin)).toThrow(/has 10 bytes, the manifest describes 4/);
  });
});

describe('splitting a graph at its convolutions', () => {
  const conv = (name: string, input: string, fused: string[]): TfNode => ({
    name,
    op: '_FusedConv2D',
    input: [input, `${name}/w`, `${name}/b`],
    attr: { data_format: { s: b64('NHWC') }, padding: { s: b64('SAME') }, strides: { list: { i: ['1', '1', '1', '1'] } }, fused_ops: { list: { s: fused.map(b64) } } },
  });
  const weights = new Map([
    ['c/w', { shape: [1, 1, 3, 2], dtype: 'float32' as const, data: new Float32Array(6) }],
    ['c/b', { shape: [2], dtype: 'float32' as const, data: new Float32Array(2) }],
  ]);
  const consts: TfNode[] = ['c/w', 'c/b'].map((name) => ({ name, op: 'Const' }));

  it('puts the convolutions and what they need in the ONNX half, and what reads them in the TF.js half', () => {
    const nodes: TfNode[] = [{ name: 'input', op: 'Placeholder' }, { name: 'f', op: 'Cast', input: ['input'], attr: { DstT: { type: 'DT_FLOAT' } } }, ...consts, conv('c', 'f', ['BiasAdd', 'Relu6']), { name: 'out', op: 'Sigmoid', input: ['c'] }];
    const split = splitMoveNet(nodes, weights);
    expect(split.heads).toEqual(['c']);
    expect(split.backbone.byteLength).toBeGreaterThan(100);
    const topology = split.head.modelTopology as { node: TfNode[] };
    expect(topology.node.map((n) => `${n.name}:${n.op}`)).toEqual(['c:Placeholder', 'out:Sigmoid']);
  });

  it('names an op it cannot convert, and a fused activation it does not know', () => {
    const pool: TfNode[] = [{ name: 'input', op: 'Placeholder' }, { name: 'p', op: 'AvgPool', input: ['input'] }, ...consts, conv('c', 'p', ['BiasAdd']), { name: 'out', op: 'Sigmoid', input: ['c'] }];
    expect(() => splitMoveNet(pool, weights)).toThrow('p: op AvgPool is not supported');
    const elu: TfNode[] = [{ name: 'input', op: 'Placeholder' }, ...consts, conv('c', 'input', ['BiasAdd', 'Elu']), { name: 'out', op: 'Sigmoid', input: ['c'] }];
    expect(() => splitMoveNet(elu, weights)).toThrow('c: fused ops BiasAdd, Elu');
  });
});
