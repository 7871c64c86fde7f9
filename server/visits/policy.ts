import { rule } from '../policy.js';

/** Arrivals (spec: Arrivals). Every member of the company reads the feed and the stream. */
export const visitsPolicy = {
  view: rule('staff', 'see arrivals'),
};
