/**
 * CI's second step (`npm run test:shared`): the test files that use the photos and the stage clip in ../shared/faces,
 * run with that folder visible. `npm test` runs the same files too; without ../shared (or with
 * FOOTFALL_SHARED_FACES=off, as .ci/run's first step) their parts that need it skip with a printed reason.
 * The list is found, not kept by hand: every test file that calls one of the fixtures' ../shared helpers.
 */
import { readFileSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { testFilesUnder } from './test/support/test-files.js';

const SHARED_HELPERS = /\b(sharedFacesDir|sharedClip|testClip)\(/;
const roots = ['server', 'agent', 'shared', 'cli', 'test'];

export const sharedTestFiles = roots.flatMap(testFilesUnder).filter((f) => SHARED_HELPERS.test(readFileSync(f, 'utf8')));

// One project of just these files (the main config's projects split the whole suite by folder).
export default defineConfig({ test: { ...base.test, projects: undefined, include: sharedTestFiles } });
