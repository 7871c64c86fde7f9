/**
 * A vision worker thread: loads the models once and serves analyze / embed /
 * attributes requests from WorkerPoolEngine (engine.ts), one at a time.
 *
 * Frames first: a frame's analysis (what tracking waits for) goes before the
 * face work of visits being made (embeddings, attributes), passing at most one
 * such task at a time, so face work still gets at least every other turn when
 * frames keep coming. In order, the visits of four people leaving at once
 * (a dozen embeddings and four attribute runs) held the next frame for 3-5 s
 * on a loaded machine, and someone in view for 2 s then was seen in one frame,
 * too few for a visit (docs/decisions.md, issue 26).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { FaceAnalyzer } from './analyzer.js';
import type { FoundFace, ObservedFace } from './analyzer.js';
import type { WorkerInit, WorkerNotice, WorkerReply, WorkerRequest } from './engine.js';
import { threadCpuMs } from './cpu.js';
import { ModelSessions } from './models.js';

const port = parentPort;
if (!port) throw new Error('agent/vision/worker must run in a worker thread');
const init = workerData as WorkerInit;

function reply(msg: WorkerReply, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(msg, transfer);
}

// Requests are served one at a time (ORT blocks this thread while it runs anyway), after the models load.
// No top-level await: in tests and dev this file is loaded through tsx's CommonJS hook (see engine.ts).
const ready: Promise<FaceAnalyzer | undefined> = ModelSessions.load({ modelsDir: init.modelsDir, intraOpThreads: init.intraOpThreads }).then(
  (models) => {
    const analyzer = new FaceAnalyzer(models, init.config, { measureCpu: init.measureCpu });
    // The gender and age model and the mini expression model load now, not at the first visit's end: their load would
    // hold up the frames.
    analyzer.prepareAttributes();
    reply({ type: 'ready', modelSet: analyzer.modelSet });
    return analyzer;
  },
  (err: unknown) => {
    reply({ type: 'init-error', message: err instanceof Error ? err.message : String(err) });
    return undefined;
  },
);

/** Shared frame buffers from the engine (frameBuffer), read in place. */
const frames = new Map<number, Uint8Array>();

/** Waiting requests: frames' analyses, and the rest (face work, stats), each in arrival order. */
const frameLane: WorkerRequest[] = [];
const otherLane: WorkerRequest[] = [];
let lastWasFrame = false;
let serving = false;

port.on('message', (req: WorkerRequest | WorkerNotice) => {
  // Buffer notices take effect at once: a buffer is announced before the analyses that read it, and forgotten only
  // once none is under way or waiting (the pipeline releases a buffer when its analysis has settled).
  if (req.op === 'frame-buffer') frames.set(req.frame, new Uint8Array(req.buffer));
  else if (req.op === 'forget-frame') frames.delete(req.frame);
  else {
    (req.op === 'analyze' || req.op === 'analyze-shared' ? frameLane : otherLane).push(req);
    void serveAll();
  }
});

/** The next request: a frame, unless the last one served was a frame and other work waits. */
function next(): WorkerRequest | undefined {
  const frame = frameLane.length > 0 && (otherLane.length === 0 || !lastWasFrame);
  const req = frame ? frameLane.shift() : otherLane.shift();
  lastWasFrame = frame;
  return req;
}

async function serveAll(): Promise<void> {
  if (serving) return;
  serving = true;
  try {
    const analyzer = await ready;
    for (let req = next(); req; req = next()) {
      if (analyzer) await serve(analyzer, req);
    }
  } finally {
    serving = false;
  }
}

/** The buffers of the faces' aligned crops and context regions (analyze), handed over rather than copied. */
function pixelsOf(faces: (FoundFace | ObservedFace)[]): ArrayBuffer[] {
  return faces.flatMap((f) => ('aligned' in f ? [f.aligned.data.buffer as ArrayBuffer, f.context.data.buffer as ArrayBuffer] : []));
}

async function serve(analyzer: FaceAnalyzer, req: WorkerRequest): Promise<void> {
  try {
    switch (req.op) {
      case 'analyze-shared': {
        const data = frames.get(req.frame);
        if (!data) throw new Error(`shared frame ${req.frame} is unknown to this worker`);
        const img = { width: req.width, height: req.height, data };
        const result = req.pixels ? await analyzer.analyze(img) : await analyzer.scan(img);
        // The buffer stays where it is (shared): nothing to hand back.
        delete result.input;
        reply({ type: 'result', id: req.id, ok: true, value: result }, pixelsOf(result.faces));
        return;
      }
      case 'analyze': {
        const result = req.pixels ? await analyzer.analyze(req.img) : await analyzer.scan(req.img);
        const transfer = pixelsOf(result.faces);
        const input = result.input;
        if (input && input.byteOffset === 0 && input.byteLength === input.buffer.byteLength) transfer.push(input.buffer as ArrayBuffer);
        else delete result.input;
        reply({ type: 'result', id: req.id, ok: true, value: result }, transfer);
        return;
      }
      case 'embed-face': {
        const e = await analyzer.embedFace(req.region, req.landmarks);
        reply({ type: 'result', id: req.id, ok: true, value: e }, [e.buffer as ArrayBuffer]);
        return;
      }
      case 'embed': {
        const e = await analyzer.embed(req.aligned);
        reply({ type: 'result', id: req.id, ok: true, value: e }, [e.buffer as ArrayBuffer]);
        return;
      }
      case 'attributes':
        reply({ type: 'result', id: req.id, ok: true, value: await analyzer.attributes(req.context, req.regions, req.parts) });
        return;
      case 'stats':
        reply({ type: 'result', id: req.id, ok: true, value: { models: analyzer.models.timings, stages: analyzer.stageMs, cpuMs: threadCpuMs() } });
        return;
    }
  } catch (err) {
    reply({ type: 'result', id: req.id, ok: false, message: err instanceof Error ? err.message : String(err) });
  }
}
