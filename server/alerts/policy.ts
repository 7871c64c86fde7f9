import { rule } from '../policy.js';

/** Alerts (docs/operations.md, "Alerts"): every member sees them; managers and owners set the rules and recipients. */
export const alertsPolicy = {
  view: rule('staff', 'see alerts'),
  configure: rule('manager', 'change alert rules and recipients'),
};
