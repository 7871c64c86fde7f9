/**
 * Subnormal floats flushed to zero (docs/decisions.md, "Subnormal floats flushed to zero"): on the Intel CPUs
 * measured, the face embedding took 85-92 ms a call with IEEE subnormals and 8-11 ms without. onnxruntime sets the
 * mode only for the first session of a process and only on the thread that creates it, and ignores a session config
 * key it does not know, so a renamed key or a model thread started before the mode was set would silently bring the
 * slow path back: this file is what notices. It runs in its own process (vitest's forks pool), so setting the mode on
 * the test's thread touches no other test file.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { modelPath } from './fetch.js';
import { flushSubnormalsHere, flushesSubnormals } from './subnormals.js';
import { ensureTestModels, testModelsDir } from './test-cache.js';

const require = createRequire(import.meta.url);

/**
 * A thread started now: does it flush, and (given a model) does it still after it creates a session of its own
 * without the option? (Without a model it creates none: the first session of the process decides the mode.)
 */
function freshThread(model?: string): Promise<{ before: boolean; after: boolean; output: number }> {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const ort = require(${JSON.stringify(require.resolve('onnxruntime-node'))});
    const flushes = () => workerData.tiny * 0.5 === 0;
    (async () => {
      const before = flushes();
      if (!workerData.model) return parentPort.postMessage({ before, after: before, output: NaN });
      const session = await ort.InferenceSession.create(workerData.model, { logSeverityLevel: 3, intraOpNumThreads: 1 });
      const out = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', new Float32Array(64 * 64).fill(0.5), [1, 1, 64, 64]) });
      parentPort.postMessage({ before, after: flushes(), output: Object.values(out)[0].data[0] });
      await session.release();
    })().catch((err) => parentPort.postMessage({ error: String(err) }));
  `;
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { model, tiny: 1e-310 } });
    w.once('message', (m: { error?: string; before: boolean; after: boolean; output: number }) => {
      void w.terminate();
      if (m.error) reject(new Error(m.error));
      else resolve(m);
    });
    w.once('error', reject);
  });
}

describe('subnormal floats on the agent\'s model threads', () => {
  it('are kept by a thread started before the agent sets the mode, and flushed by every thread started after', async () => {
    const manifest = await ensureTestModels();
    const landmarks = modelPath(testModelsDir(), manifest, 'landmark');
    expect(flushesSubnormals()).toBe(false);
    const early = await freshThread();
    expect(early.before).toBe(false);

    await expect(flushSubnormalsHere()).resolves.toBe(true);
    expect(flushesSubnormals()).toBe(true);
    // Asked again (each engine and detector thread asks): the same answer, nothing created twice.
    await expect(flushSubnormalsHere()).resolves.toBe(true);

    const late = await freshThread(landmarks);
    expect(late).toMatchObject({ before: true, after: true });
    expect(Number.isFinite(late.output)).toBe(true);
  }, 60_000);
});
