import { rule } from '../policy.js';

/** Sign-in routes: any signed-in person, platform admin included, manages their own sessions only. */
export const authPolicy = {
  self: rule('any', 'manage these sessions'),
};
