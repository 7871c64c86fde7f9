import type { InferenceSession } from 'onnxruntime-node';

/**
 * How the shop PC runs every onnxruntime session (the face models, FaceRes, the person detector's backbone): one
 * thread each (the agent's cores are shared by its cameras), all graph optimisations, and
 * - no CPU memory arena: the arena keeps every model's peak allocations (tens of MB per session) for good; the agent
 *   measured smaller without it at the same speed (docs/benchmarks.md, agent-real);
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
