import { rule } from '../policy.js';

/** Customers and photos (spec: Customers and purchases, Photos). */
export const customersPolicy = {
  view: rule('staff', 'see customers'),
  photos: rule('staff', 'see customer photos'),
  editProfile: rule('staff', 'edit customer profiles'),
  erase: rule('manager', 'erase customers'),
  merge: rule('manager', 'merge customers'),
  markStaff: rule('manager', 'mark customers as staff'),
  export: rule('manager', "export a customer's data"),
};
