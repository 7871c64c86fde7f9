import type { InferenceSession } from 'onnxruntime-node';

/**
 * How the shop PC runs every onnxruntime session (the face models, FaceRes, the person detector's backbone): one
 * thread each (the agent's cores are shared by its cameras), all graph optimisations, and no CPU memory arena: the
 * arena keeps every model's peak allocations (tens of MB per session) for good; the agent measured smaller without
 * it at the same speed (docs/benchmarks.md, agent-real).
 */
export const AGENT_SESSION_OPTIONS: Readonly<InferenceSession.SessionOptions> = {
  logSeverityLevel: 3,
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
  enableCpuMemArena: false,
};
