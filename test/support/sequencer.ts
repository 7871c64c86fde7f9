import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order of test files: vitest's own (failed first, then longest first from its cache, largest first on a fresh
 * clone), except that the systemd test starts first. It spends most of its minutes on debootstrap and apt-get in a
 * container (downloading and unpacking, not computing), so it runs on one worker beside everything else on the other
 * rather than at the end on its own (vitest.config.ts).
 */
export default class SlowWaitersFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (s: TestSpecification) => (s.moduleId.endsWith('test/systemd.test.ts') ? 0 : 1);
    return [...sorted].sort((a, b) => first(a) - first(b));
  }
}
