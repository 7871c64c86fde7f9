import { rule } from '../policy.js';

/** Purchases (spec: Customers and purchases). Any member records a sale. */
export const purchasesPolicy = {
  record: rule('staff', 'record purchases'),
  view: rule('staff', 'see purchases'),
};
