import { rule } from '../policy.js';

/** Shops (spec: Shops). Viewing is for every member; opening and removing shops for owners. */
export const shopsPolicy = {
  view: rule('staff', 'see shops'),
  open: rule('owner', 'open shops'),
  remove: rule('owner', 'remove shops'),
  edit: rule('manager', "change a shop's opening hours, region and occupancy limit"),
  enrolmentCode: rule('manager', 'create enrolment codes for shop PCs'),
};
