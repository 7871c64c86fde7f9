import { h, type Child } from './dom.js';
import type { Shop } from './types.js';

/**
 * A shop whose PC was never installed counts nothing: its zeros are not "no visitors". Reports, arrivals and the live
 * grid say so, with the way to install one, instead of zeros, "Conversion 0%" or "No arrivals yet" (issue 28).
 */

/** Never enrolled and never heard from: no shop PC installed yet. */
export function withoutPc(s: Shop): boolean {
  return !s.enrolled_at && !s.last_heartbeat_at;
}

const shopLink = (s: Shop) => h('a', { href: `#/shop/${encodeURIComponent(s.slug)}`, 'data-no-pc': s.slug }, s.name);

/** "A, B and C" */
function listed(items: Child[]): Child[] {
  return items.flatMap((x, i) => (i === 0 ? [x] : [i === items.length - 1 ? ' and ' : ', ', x]));
}

/**
 * How a shop PC gets installed, said where no installation-code form is on the page: a manager makes a code on the
 * shop's page ("Install the shop PC") and runs the enrol command it shows on the shop's PC.
 */
export function enrolWay(manager: boolean): string {
  return manager
    ? 'Install one: on the shop’s page, “Install the shop PC” makes an installation code and shows the enrol command to run on the shop’s PC.'
    : 'A manager installs one from the shop’s page with an installation code.';
}

/**
 * The notice for the shops of a page's scope that have no shop PC (null when all have one): each shop linked to its
 * page, what that means for `what` ("nothing is counted there"), and the way to install one.
 */
export function noPcNotice(shops: Shop[], manager: boolean, what = 'so nothing is counted there'): HTMLElement | null {
  const missing = shops.filter(withoutPc);
  if (missing.length === 0) return null;
  const verb = missing.length === 1 ? 'has' : 'have';
  return h('p', { class: 'notice info no-pc', id: 'no-shop-pc', role: 'status' }, ...listed(missing.map(shopLink)), ` ${verb} no shop PC installed yet, ${what}. ${enrolWay(manager)}`);
}
