/**
 * graphToOnnx on small graphs against TF.js itself (the WebAssembly backend the repo already has): the ops added for
 * the mini-Xception expression model, MaxPool (SAME and VALID, odd sizes) and Identity. The whole model is checked
 * against TF.js on real faces in agent/vision/emotion.test.ts.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { tf, useWasmBackend } from './tfjs.js';
import { graphToOnnx, onnxOutput, type TfNode } from './tfjs-onnx.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const ints = (v: number[]) => ({ list: { i: v.map(String) } });

function maxPool(name: string, input: string, k: number, s: number, padding: 'SAME' | 'VALID'): TfNode {
  return { name, op: 'MaxPool', input: [input], attr: { data_format: { s: b64('NHWC') }, padding: { s: b64(padding) }, ksize: ints([1, k, k, 1]), strides: ints([1, s, s, 1]) } };
}

describe('graphToOnnx: MaxPool and Identity', () => {
  it('pools as tf.maxPool does (SAME and VALID, odd sizes, negative values) and passes the layout through Identity', async () => {
    await useWasmBackend();
    const nodes: TfNode[] = [
      { name: 'x', op: 'Placeholder', attr: { dtype: { type: 'DT_FLOAT' } } },
      maxPool('same', 'x', 3, 2, 'SAME'),
      { name: 'same_id', op: 'Identity', input: ['same'] },
      maxPool('valid', 'x', 2, 2, 'VALID'),
    ];
    const onnx = graphToOnnx(nodes, new Map(nodes.map((n) => [n.name, n])), new Map(), ['same_id', 'valid'], 'pool');
    const session = await ort.InferenceSession.create(onnx);
    try {
      for (const [h, w] of [
        [7, 9],
        [8, 8],
        [5, 6],
      ] as const) {
        const c = 3;
        const data = Float32Array.from({ length: h * w * c }, () => Math.random() * 2 - 1.5);
        const out = await session.run({ x: new ort.Tensor('float32', data, [1, h, w, c]) });
        const x = tf.tensor4d(data, [1, h, w, c]);
        for (const [name, k, s, padding] of [
          ['same_id', 3, 2, 'same'],
          ['valid', 2, 2, 'valid'],
        ] as const) {
          const want = tf.maxPool(x, k, s, padding);
          const got = out[onnxOutput(name)]!;
          expect(got.dims).toEqual(want.shape);
          expect(Array.from(got.data as Float32Array)).toEqual(Array.from(want.dataSync()));
          want.dispose();
        }
        x.dispose();
      }
    } finally {
      await session.release();
    }
  });

  it('refuses a pooling over channels', () => {
    const nodes: TfNode[] = [{ name: 'x', op: 'Placeholder' }, { ...maxPool('p', 'x', 2, 2, 'VALID'), attr: { ...maxPool('p', 'x', 2, 2, 'VALID').attr, ksize: ints([1, 2, 2, 2]) } }];
    expect(() => graphToOnnx(nodes, new Map(nodes.map((n) => [n.name, n])), new Map(), ['p'], 'bad')).toThrow(/p: only a pooling over height and width/);
  });
});
