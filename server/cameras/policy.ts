import { rule } from '../policy.js';

/** Cameras (spec: Cameras). Every member sees them and their pictures; managers set them up and run checks. */
export const camerasPolicy = {
  view: rule('staff', 'see cameras'),
  manage: rule('manager', 'add, change or remove cameras'),
  check: rule('manager', 'run camera checks'),
};
