/**
 * MoveNet MultiPose with its backbone on onnxruntime-node and its post-processing on TF.js (movenet-onnx.ts says
 * why and how it is split). One thread each, like the rest of the shop PC's models.
 */
import * as ort from 'onnxruntime-node';
import { loadGraphModel } from '@tensorflow/tfjs-converter';
import { AGENT_SESSION_OPTIONS } from '../models/ort-options.js';
import type { MoveNetRun } from './movenet.js';
import { backboneOutput, splitMoveNet } from './movenet-onnx.js';
import { graphOf } from './tfjs-onnx.js';
import type { GraphFiles } from './pinned-graph.js';
import { tf, useWasmBackend } from './tfjs.js';

export interface MoveNetHybrid {
  run: MoveNetRun;
  dispose(): Promise<void>;
}

export async function loadMoveNetHybrid(files: GraphFiles): Promise<MoveNetHybrid> {
  await useWasmBackend();
  const { nodes, weights } = graphOf(files);
  const split = splitMoveNet(nodes, weights);
  const session = await ort.InferenceSession.create(split.backbone, AGENT_SESSION_OPTIONS);
  const head = await loadGraphModel(tf.io.fromMemory(split.head));
  const inputName = session.inputNames[0]!;
  // Only the names are kept: the ONNX bytes (19 MB) and the weights read for them go with `split`.
  const heads = split.heads;
  const run: MoveNetRun = async (input) => {
    const [, height, width] = input.shape;
    const data = (await input.data()) as Int32Array;
    const out = await session.run({ [inputName]: new ort.Tensor('int32', data, [1, height, width, 3]) });
    const feeds: Record<string, tf.Tensor> = {};
    try {
      for (const name of heads) {
        const t = out[backboneOutput(name)]!;
        feeds[name] = tf.tensor(t.data as Float32Array, t.dims as number[], 'float32');
      }
      return head.execute(feeds) as tf.Tensor;
    } finally {
      tf.dispose(Object.values(feeds));
      for (const t of Object.values(out)) t.dispose();
    }
  };
  return {
    run,
    async dispose() {
      head.dispose();
      await session.release();
    },
  };
}
