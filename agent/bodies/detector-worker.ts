/**
 * The person detector's worker thread (detector-thread.ts): loads the detector once and answers one picture at a
 * time. TF.js's WebAssembly backend computes synchronously, so on the agent's main thread each picture (~100-250 ms)
 * would hold up capture, MQTT and HTTP.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadBodyDetector, type BodyDetectorOptions } from './detector.js';
import type { DetectorReply, DetectorRequest } from './detector-thread.js';

const port = parentPort!;
const { modelsDir, options } = workerData as { modelsDir: string; options: BodyDetectorOptions };
const reply = (r: DetectorReply) => port.postMessage(r);
const ready = loadBodyDetector(modelsDir, options);
ready.then(
  (d) => reply({ op: 'ready', name: d.name }),
  (err: unknown) => reply({ op: 'failed', message: (err as Error).message }),
);

port.on('message', (m: DetectorRequest) => {
  void (async () => {
    if (m.op === 'close') {
      await ready.then((d) => d.close()).catch(() => undefined);
      port.close();
      return;
    }
    try {
      const d = await ready;
      const boxes = await d.detect({ width: m.width, height: m.height, data: Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength) }, m.maxScale !== undefined ? { maxScale: m.maxScale } : undefined);
      reply({ op: 'boxes', id: m.id, boxes });
    } catch (err) {
      reply({ op: 'error', id: m.id, message: (err as Error).message });
    }
  })();
});
