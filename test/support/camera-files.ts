import fs from 'node:fs';

/** What a camera file calls first (test/support/camera-slot.ts; not imported here: it registers vitest hooks). */
const CAMERA_SLOT_CALL = 'useCameraSlot(';

/** Whether a test file holds the camera slot: read by the sequencer (main process) and the priority setup (workers). */
export function usesCameraSlot(file: string): boolean {
  try {
    return fs.readFileSync(file, 'utf8').includes(CAMERA_SLOT_CALL);
  } catch {
    return false;
  }
}
