/**
 * Subnormal floats flushed to zero on the thread that starts the agent's model threads (docs/decisions.md,
 * "Subnormal floats flushed to zero").
 *
 * onnxruntime applies `session.set_denormal_as_zero` to the thread that creates a session, but only for the first
 * session of the process ("a main thread doesn't override changes from succeeding session options"): in an agent
 * with a door camera and a face camera, whichever of the detector's thread and the vision worker created its first
 * session first got the mode, and the other ran its models up to ten times slower on CPUs that take a microcode
 * assist for subnormals. Threads inherit the mode from the thread that spawns them, so the agent sets it once on its
 * main thread, before any model thread exists, with a one-node session made for that, and every model thread spawned
 * afterwards starts with it.
 */
import { AGENT_SESSION_OPTIONS } from './ort-options.js';

/** A model with one Identity node: the smallest session onnxruntime will create. */
async function identityModel(): Promise<Uint8Array> {
  const [{ encodeOnnxModel }, { default: { onnx } }] = await Promise.all([import('../bodies/tfjs-onnx.js'), import('onnx-proto')]);
  const value = { type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT, shape: { dim: [{ dimValue: 1 }] } } } };
  return encodeOnnxModel({ name: 'flush-subnormals', node: [{ opType: 'Identity', input: ['x'], output: ['y'] }], input: [{ name: 'x', ...value }], output: [{ name: 'y', ...value }] });
}

/** Does this thread flush subnormal results to zero? (A runtime value, so that nothing is folded at compile time.) */
export function flushesSubnormals(tiny = Number.MIN_VALUE * 2 ** 40): boolean {
  return tiny * 0.5 === 0;
}

let done: Promise<boolean> | undefined;

/**
 * Puts the calling thread in flush-to-zero mode through onnxruntime (once per process; later calls return the first
 * answer). Resolves true when the thread flushes; false when it cannot (a session without the option was created
 * first in this process, the CPU has no such mode, or onnxruntime does not load here: the agent's
 * FOOTFALL_PERSON_ENGINE=tfjs is for such a PC, so onnxruntime is imported only in here and its failure is not one):
 * the models then run correctly, only slower where subnormals occur.
 */
export function flushSubnormalsHere(): Promise<boolean> {
  done ??= (async () => {
    if (flushesSubnormals()) return true;
    try {
      const ort = await import('onnxruntime-node');
      const session = await ort.InferenceSession.create(await identityModel(), AGENT_SESSION_OPTIONS);
      await session.release();
    } catch {
      return false;
    }
    return flushesSubnormals();
  })();
  return done;
}
