import type { InferenceSession } from 'onnxruntime-node';

/**
 * How the shop PC runs every onnxruntime session (the face models, FaceRes, the person detector's backbone): one
 * thread each (the agent's cores are shared by its cameras), all graph optimisations, and
 * - no CPU memory arena for a model run now and then (the embedding, the attributes): the arena keeps a model's peak
 *   allocations for good, and without it those few calls cost the same. A model run on every frame takes
 *   EVERY_FRAME_SESSION_OPTIONS instead (below);
 * - denormal floats flushed to zero (`session.set_denormal_as_zero`): the face models' weights hold ~50,000
 *   subnormal floats and their activations make more; on CPUs that take a microcode assist for every subnormal
 *   operand (the Intel Xeons measured here) the embedding took 85-92 ms a call instead of 8-11 ms, and the gender
 *   model 24 ms instead of 1.2 ms. A subnormal float is below 1.2e-38, nothing a face model's answer depends on.
 *   onnxruntime applies it only for the first session of a process, on the thread that creates it: the agent
 *   therefore sets it on its main thread before any model thread starts, and the threads inherit it
 *   (agent/models/subnormals.ts; docs/decisions.md).
 */
export const AGENT_SESSION_OPTIONS: Readonly<InferenceSession.SessionOptions> = {
  logSeverityLevel: 3,
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
  enableCpuMemArena: false,
  extra: { session: { set_denormal_as_zero: '1' } },
};

/**
 * For a model run on every analysed frame (the face detector, the landmarks): the same, with onnxruntime's CPU memory
 * arena. Without it every call gets its activations from malloc, which under the unit's MALLOC_MMAP_THRESHOLD_ are
 * fresh mmap pages, faulted in and zeroed by the kernel on each call and unmapped after: the face detector measured
 * 6.1 ms a call (2.2 of them in the kernel) against 3.5 ms with the arena, for ~5 MiB kept (docs/decisions.md,
 * "Faces at a real door, second pass").
 */
export const EVERY_FRAME_SESSION_OPTIONS: Readonly<InferenceSession.SessionOptions> = { ...AGENT_SESSION_OPTIONS, enableCpuMemArena: true };
