/**
 * The person detector (detector.ts) in a worker thread of its own, behind the same BodyDetector interface: the
 * agent's main thread (capture, MQTT, HTTP, the queue) stays free while a picture is looked at. One picture at a
 * time, as the interface says; the picture's bytes are copied and the copy moved (not cloned) to the thread.
 */
import { startThread } from '../thread.js';
import type { RawImage } from '../capture/ppm.js';
import { flushSubnormalsHere } from '../models/subnormals.js';
import type { BodyDetectorOptions } from './detector.js';
import type { BodyBox, BodyDetector, DetectHint } from './types.js';

export type DetectorRequest = { op: 'detect'; id: number; width: number; height: number; data: Uint8Array; maxScale?: number } | { op: 'close' };
export type DetectorReply =
  | { op: 'ready'; name: string }
  | { op: 'failed'; message: string }
  | { op: 'boxes'; id: number; boxes: BodyBox[] }
  | { op: 'error'; id: number; message: string };

/** Starts the thread and resolves once its detector is loaded (rejects with the loading error, the thread ended). */
export async function startBodyDetectorThread(modelsDir: string, options: BodyDetectorOptions = {}): Promise<BodyDetector> {
  // Before the thread exists: it inherits the mode (agent/models/subnormals.ts).
  await flushSubnormalsHere();
  const worker = startThread(new URL('./detector-worker.js', import.meta.url), { modelsDir, options });
  worker.unref();
  const waiting = new Map<number, { resolve: (b: BodyBox[]) => void; reject: (e: Error) => void }>();
  let next = 0;
  let gone: Error | undefined;
  const fail = (err: Error) => {
    gone ??= err;
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  };
  return new Promise<BodyDetector>((resolve, reject) => {
    worker.on('error', (err) => {
      fail(err);
      reject(err);
    });
    worker.on('exit', (code) => {
      const err = new Error(`the person detector thread ended (${code})`);
      fail(err);
      reject(err);
    });
    worker.on('message', (m: DetectorReply) => {
      if (m.op === 'ready') {
        resolve({
          name: m.name,
          detect(image: RawImage, hint?: DetectHint): Promise<BodyBox[]> {
            if (gone) return Promise.reject(gone);
            const id = ++next;
            const data = new Uint8Array(image.data.subarray(0, image.width * image.height * 3));
            return new Promise<BodyBox[]>((res, rej) => {
              waiting.set(id, { resolve: res, reject: rej });
              worker.postMessage({ op: 'detect', id, width: image.width, height: image.height, data, ...(hint?.maxScale !== undefined ? { maxScale: hint.maxScale } : {}) } satisfies DetectorRequest, [data.buffer]);
            });
          },
          async close(): Promise<void> {
            if (gone) return;
            gone = new Error('The person detector is closed.');
            const exited = new Promise((r) => worker.once('exit', r));
            worker.postMessage({ op: 'close' } satisfies DetectorRequest);
            await Promise.race([exited, new Promise((r) => setTimeout(r, 2000).unref())]);
            await worker.terminate();
          },
        });
      } else if (m.op === 'failed') {
        reject(new Error(m.message));
        void worker.terminate();
      } else {
        const w = waiting.get(m.id);
        waiting.delete(m.id);
        if (m.op === 'boxes') w?.resolve(m.boxes);
        else w?.reject(new Error(m.message));
      }
    });
  });
}
