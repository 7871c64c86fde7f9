import { ApiError, api, apiTagged, errorText, imageUrl } from './api.js';
import { facts, cardForm, confirmStep, field, h, plural, replace, stacked, timeAgo, type Child, type Props } from './dom.js';
import type { Page } from './main.js';
import { atLeast } from './session.js';
import { formatIn, internationalPhone, phoneHint, companyZone } from './zones.js';
import { PURCHASES_SHOWN, money, purchaseForm, purchaseIntro, purchasesTable } from './customer-purchases.js';
import { erasure, exportDownload, staffToggle } from './customer-actions.js';
import { attributesText, type Customer, type CustomerDetail, type HistoryRow, type ImageRef, type Profile, type Purchase, type Shop } from './types.js';

/* One customer's page at `#/customers/<ref>` (renderCustomer): facts, profile, purchases, visits, staff, merge, erasure. */

/** A message for the next customer page shown (after a merge, the survivor's page says what moved). */
let flash = '';

export function renderCustomer(p: Page, ref: string): void {
  const back = h('p', { class: 'small' }, h('a', { href: '#/customers' }, '← All customers'));
  replace(p.main, back, h('h1', {}, ref), h('p', { class: 'loading' }, 'Loading…'));
  const arrived = flash;
  flash = '';
  let photoUrl = '';
  p.signal.addEventListener('abort', () => {
    if (photoUrl) URL.revokeObjectURL(photoUrl);
  });

  void (async () => {
    let c: CustomerDetail;
    /** The profile's ETag as last read or saved: edits are sent with it as If-Match. */
    let tag = '';
    let history: HistoryRow[];
    let purchases: Purchase[];
    /** Every time on the page is in the company's zone (zones.ts), said once under the heading. */
    let zone = '';
    try {
      // GET /api/visitors/{ref} takes V-n, the number or the uuid; a merged-away customer answers the survivor.
      ({ body: c, etag: tag } = await apiTagged<CustomerDetail>('GET', `/api/visitors/${encodeURIComponent(ref)}`, { signal: p.signal }));
      const id = encodeURIComponent(c.id);
      let shops: Shop[];
      [history, purchases, shops] = await Promise.all([
        api<HistoryRow[]>('GET', `/api/visitors/${id}/history`, { signal: p.signal }),
        api<Purchase[]>('GET', `/api/visitors/${id}/purchases?limit=${PURCHASES_SHOWN}`, { signal: p.signal }),
        api<Shop[]>('GET', '/api/sites', { signal: p.signal }),
      ]);
      zone = companyZone(shops);
    } catch (err) {
      if (p.signal.aborted) return;
      if (err instanceof ApiError && err.status === 404) {
        replace(p.main, back, h('div', { class: 'card empty' }, h('h1', {}, 'No such customer'), h('p', {}, `Your company has no customer “${ref}”. An erased customer is gone for good.`)));
      } else replace(p.main, back, h('h1', {}, ref), h('p', { class: 'notice error', role: 'alert' }, errorText(err)));
      return;
    }
    if (p.signal.aborted) return;
    const photo = h('div', { class: 'customer-photo' });
    const known = c.ref.toLowerCase() === ref.toLowerCase() || c.id === ref;
    const staff = atLeast(p.user, 'staff');
    const manager = atLeast(p.user, 'manager');
    const profileBox = h('div', { class: 'profile' });
    const editArea = h('div', { id: 'profile-edit-area' });
    const heading = h('h1', { id: 'customer-heading' });
    let purchaseBox: HTMLElement | null = null;
    /** Everything on the page that says who the customer is and what they spent, from the latest answer about them. */
    const showProfile = (d: CustomerDetail) => {
      c = d;
      heading.textContent = d.full_name ? `${d.full_name} (${d.ref})` : d.label;
      replace(profileBox, facts(customerFacts(d, zone), { key: 'data-fact' }));
      const intro = purchaseBox?.querySelector('h2 + p');
      if (intro) intro.textContent = purchaseIntro(d);
    };
    showProfile(c);
    const purchasesBox = h('section', { id: 'purchases-section' });
    const showPurchases = (rows: Purchase[]) => {
      purchases = rows;
      replace(purchasesBox, h('h2', {}, 'Purchases'), purchasesTable(rows, zone));
    };
    showPurchases(purchases);
    // A purchase recorded: the list gets it at once, the lifetime spend from the customer read again (head office sums
    // it in the currency most purchases were in; the console does not guess).
    const recorded = async (r: Purchase) => {
      showPurchases([r, ...purchases].slice(0, PURCHASES_SHOWN));
      try {
        const now = await apiTagged<CustomerDetail>('GET', `/api/visitors/${encodeURIComponent(c.id)}`, { signal: p.signal });
        tag = now.etag;
        showProfile(now.body);
      } catch {
        // the purchase is recorded; the spend shows on the next visit to the page
      }
    };
    const edit = staff ? h('button', { type: 'button', id: 'edit-profile' }, 'Edit profile…') : null;
    const staffButton = manager ? staffToggle(c, p, showProfile) : null;
    const exportButton = manager ? exportDownload(c) : null;
    edit?.addEventListener('click', () => {
      edit.hidden = true;
      replace(
        editArea,
        profileForm(c, tag, p, zone, (d, newTag) => {
          tag = newTag;
          showProfile(d);
          replace(editArea, h('p', { class: 'notice ok', role: 'status', id: 'profile-saved' }, `Saved the profile of ${d.ref}.`));
          edit.hidden = false;
        }, () => {
          replace(editArea);
          edit.hidden = false;
          edit.focus();
        }),
      );
      editArea.querySelector('input')?.focus();
    });
    replace(
      p.main,
      back,
      h('div', { class: 'page-head' }, heading, h('p', { class: 'muted small', id: 'times-zone' }, `Times in ${zone}, the shops’ time zone.`)),
      arrived ? h('p', { class: 'notice ok', role: 'status', id: 'merged' }, arrived) : null,
      known ? null : h('p', { class: 'notice info', role: 'status', id: 'merged-into' }, `${ref} was merged into ${c.ref}: this is the customer kept.`),
      h('section', { class: 'card customer', id: 'customer' }, photo, profileBox, edit || staffButton ? h('div', { class: 'actions' }, edit, staffButton, exportButton) : null),
      editArea,
      staff ? (purchaseBox = purchaseForm(c, history, p, recorded)) : null,
      purchasesBox,
      h('h2', {}, `Visits (${plural(history.length, 'visit')})`),
      historyTable(history, zone),
      manager ? mergeSection(c, p) : null,
      manager ? erasure(c, p) : null,
    );
    void showPhoto(c, photo, p.signal).then((url) => (photoUrl = url));
  })();
}

/** The customer's facts and profile, as shown on their page. */
function customerFacts(c: CustomerDetail, zone: string): [string, Child][] {
  const pr = c.profile;
  const dash = (v: string) => v || '—';
  const consent = pr.consent ? 'Agreed to be recognised' : 'Not agreed to be recognised';
  return [
    ['Customer', c.ref],
    ['Full name', dash(pr.full_name)],
    ['Phone', dash(pr.phone)],
    ['Email', dash(pr.email)],
    ['Gender', dash(pr.gender)],
    ['Date of birth', dash(pr.date_of_birth)],
    ['Notes', pr.notes ? h('span', { class: 'notes' }, pr.notes) : '—'],
    ['Consent', h('span', {}, h('span', { class: `badge ${pr.consent ? 'good' : 'unknown'}` }, consent), pr.consent_changed_at ? h('span', { class: 'muted small' }, ' since ', timeAgo(pr.consent_changed_at)) : null)],
    ['Visits', String(c.visit_count)],
    ['Lifetime spend', c.spend_currency ? `${money(c.spend, c.spend_currency)} (${plural(c.purchases, 'purchase')})` : c.purchases ? plural(c.purchases, 'purchase') : 'No purchases'],
    ['First seen', h('span', {}, formatIn(c.first_seen_at, zone), ' (', timeAgo(c.first_seen_at), ')')],
    ['Last seen', h('span', {}, formatIn(c.last_seen_at, zone), ' (', timeAgo(c.last_seen_at), ')')],
    ['Staff', c.staff ? h('span', { class: 'badge unknown' }, 'Staff: not counted in footfall') : 'No'],
  ];
}

/**
 * Staff and above: the profile form (PUT /api/visitors/{id}/profile). The API replaces the whole profile, so every
 * field starts with the stored value and all of them are sent. Before saving, the profile is read again: if someone
 * changed it since the form was filled, nothing is sent and the form shows their version.
 */
function profileForm(c: CustomerDetail, readTag: string, p: Page, zone: string, saved: (d: CustomerDetail, tag: string) => void, cancel: () => void): HTMLFormElement {
  const pr = c.profile;
  let tag = readTag;
  const input = (name: string, value: string, type = 'text', extra: Props = {}) => h('input', { name, type, value, autocomplete: 'off', ...extra });
  const fullName = input('full_name', pr.full_name, 'text', { maxlength: 200 });
  const phone = input('phone', pr.phone, 'tel', { maxlength: 40 });
  const email = input('email', pr.email, 'email', { maxlength: 254 });
  const gender = input('gender', pr.gender, 'text', { maxlength: 32 });
  const dob = input('date_of_birth', pr.date_of_birth, 'date', { min: '1900-01-01', max: new Date().toISOString().slice(0, 10) });
  const notes = h('textarea', { name: 'notes', rows: 3, maxlength: 2000 });
  notes.value = pr.notes;
  const consent = h('input', { type: 'checkbox', name: 'consent', id: 'profile-consent', checked: pr.consent, 'aria-describedby': 'profile-consent-hint' });
  const fill = (d: Profile) => {
    fullName.value = d.full_name;
    phone.value = d.phone;
    email.value = d.email;
    gender.value = d.gender;
    dob.value = d.date_of_birth;
    notes.value = d.notes;
    consent.checked = d.consent;
  };
  const cancelButton = h('button', { type: 'button' }, 'Cancel');
  cancelButton.addEventListener('click', cancel);
  const form = cardForm({
    id: 'profile-form',
    title: `Edit the profile of ${c.ref}`,
    intro: 'Every field is saved as shown here; empty a field to clear it.',
    fields: [
      field('Full name', fullName),
      h('div', { class: 'inline' }, field('Phone', phone, phoneHint(zone)), field('Email', email)),
      h('div', { class: 'inline' }, field('Gender', gender), field('Date of birth', dob)),
      field('Notes', notes, 'Visible to everyone in your company.'),
      h(
        'div',
        { class: 'consent' },
        h('div', { class: 'check' }, consent, h('label', { for: 'profile-consent' }, 'Agreed to be recognised')),
        h('small', { class: 'hint', id: 'profile-consent-hint' }, 'Tick only if the customer told you they agree that the cameras recognise them on their visits. Untick if they withdraw it; the change is recorded with your name.'),
      ),
    ],
    submitLabel: 'Save profile',
    submit: async ({ msg }) => {
      const path = `/api/visitors/${encodeURIComponent(c.id)}`;
      const body = { full_name: fullName.value, phone: internationalPhone(phone.value, zone), email: email.value, gender: gender.value, date_of_birth: dob.value, notes: notes.value, consent: consent.checked };
      try {
        // If-Match: head office saves only if the profile is still the one this form was filled from.
        const r = await apiTagged<CustomerDetail>('PUT', `${path}/profile`, { body, signal: p.signal, ...(tag ? { ifMatch: tag } : {}) });
        saved(r.body, r.etag);
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 412) throw err;
        const now = await apiTagged<CustomerDetail>('GET', path, { signal: p.signal });
        tag = now.etag;
        fill(now.body.profile);
        msg.show('Someone changed this profile since you opened the form. It now shows their version: make your change again and save.');
      }
    },
  });
  form.querySelector('.actions')?.append(cancelButton);
  return form;
}

/**
 * Managers: merge this customer (a duplicate) into another one, who is kept. Find the one to keep by name, phone,
 * email or number (V-12), pick it, confirm with both shown, then POST /api/visitors/{id}/merge; the survivor's page
 * opens and says how many visits moved.
 */
function mergeSection(c: CustomerDetail, p: Page): HTMLElement {
  const q = h('input', { name: 'q', type: 'search', autocomplete: 'off' });
  const results = h('div', { id: 'merge-results', 'aria-live': 'polite' });
  const area = h('div', { id: 'merge-confirm-area' });
  const form = cardForm({
    id: 'merge-form',
    title: 'Merge a duplicate',
    intro: `When ${c.ref} and another customer are the same person: find the one to keep, and ${c.ref} is merged into them.`,
    fields: [field('Customer to keep', q, 'Name, phone, email or customer number (V-12).')],
    submitLabel: 'Find',
    submit: async ({ msg }) => {
      replace(area);
      const text = q.value.trim();
      if (!text) return msg.show('Type a name, phone, email or customer number.');
      const found = (await api<Customer[]>('GET', `/api/visitors?limit=10&q=${encodeURIComponent(text)}`, { signal: p.signal })).filter((x) => x.id !== c.id);
      if (found.length === 0) return replace(results, h('p', { class: 'muted' }, `Nobody else matches “${text}”.`));
      replace(
        results,
        h(
          'ul',
          { class: 'pick' },
          ...found.map((x) => {
            const b = h('button', { type: 'button', 'data-keep': x.ref }, `Keep ${x.ref}`);
            b.addEventListener('click', () => confirmMerge(x));
            return h('li', {}, b, ' ', h('strong', {}, x.full_name || x.label), h('span', { class: 'muted small' }, ` · ${plural(x.visit_count, 'visit')} · last seen `, timeAgo(x.last_seen_at), x.phone ? ` · ${x.phone}` : '', x.email ? ` · ${x.email}` : ''));
          }),
        ),
      );
    },
  });
  form.append(results, area);

  function confirmMerge(keep: Customer): void {
    const side = (title: string, x: Customer) =>
      h('div', { class: 'merge-side' }, h('h3', {}, title), facts([['Customer', x.ref], ['Name', x.full_name || x.label], ['Phone', x.phone || '—'], ['Email', x.email || '—'], ['Visits', String(x.visit_count)], ['Last seen', timeAgo(x.last_seen_at)]]));
    confirmStep(area, {
      id: 'merge-confirm',
      label: `Confirm merging ${c.ref} into ${keep.ref}`,
      question: `Merge ${c.ref} into ${keep.ref}? ${keep.ref} is kept and gets all ${plural(c.visit_count, 'visit')}, photos and purchases of ${c.ref}. Where ${keep.ref}'s profile is empty it is filled from ${c.ref}; notes are joined; consent stays given if either gave it. ${c.ref} then leads to ${keep.ref} and no longer appears in search. This cannot be undone.`,
      yes: `Merge ${c.ref} into ${keep.ref}`,
      act: async () => {
        const r = await api<CustomerDetail>('POST', `/api/visitors/${encodeURIComponent(c.id)}/merge`, { body: { into: keep.id }, signal: p.signal });
        const joined = r.merged?.visits_joined ?? 0;
        flash =
          `${r.merged?.ref ?? c.ref} was merged into ${r.ref}: ${plural(r.merged?.visits_moved ?? 0, 'visit')} moved` +
          (joined > 0 ? `; ${plural(joined, 'visit')} became part of a visit in the same shop at the same time (one stay).` : '.');
        location.hash = `#/customers/${encodeURIComponent(r.ref)}`;
      },
    });
    area.querySelector('.confirm')?.insertBefore(h('div', { class: 'merge-pair' }, side('Merged away', c), side('Kept', keep)), area.querySelector('.confirm p')?.nextSibling ?? null);
  }
  return form;
}

/** The customer's newest photo (GET /api/visitors/{id}/image, then the bytes with the token); nothing when none. */
async function showPhoto(c: Customer, box: HTMLElement, signal: AbortSignal): Promise<string> {
  try {
    const ref = await api<ImageRef>('GET', `/api/visitors/${encodeURIComponent(c.id)}/image`, { signal });
    if (!ref.available || !ref.url?.startsWith('/')) return '';
    const url = await imageUrl(ref.url, signal);
    if (signal.aborted) {
      URL.revokeObjectURL(url);
      return '';
    }
    box.append(h('img', { class: 'face', src: url, alt: `Photo of ${c.ref}`, width: 96, height: 96 }));
    return url;
  } catch {
    return ''; // no_image, images_disabled: a missing photo is data, not an error
  }
}

/** A visit's length: "under a minute", "12 min", "1 h 05 min". */
function stayed(s: number): string {
  const m = Math.round(s / 60);
  if (m < 1) return 'under a minute';
  return m < 60 ? `${m} min` : `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

function historyTable(rows: HistoryRow[], zone: string): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted' }, 'No visits.');
  return h(
    'div',
    { class: 'table-wrap' },
    stacked(h(
      'table',
      { id: 'history' },
      h('thead', {}, h('tr', {}, ...['When', 'Stayed', 'Shop', 'Camera', '', 'Attributes'].map((t) => h('th', { scope: 'col' }, t || h('span', { class: 'visually-hidden' }, 'First visit'))))),
      h(
        'tbody',
        {},
        ...rows.map((r) =>
          h(
            'tr',
            { 'data-visit': r.id },
            h('td', {}, h('time', { datetime: r.occurred_at }, formatIn(r.occurred_at, zone))),
            h('td', {}, stayed(r.dwell_s ?? 0)),
            h('td', {}, r.site),
            h('td', {}, r.camera_id),
            h('td', {}, r.is_new_visitor ? h('span', { class: 'badge warn' }, 'First visit') : ''),
            h('td', { class: 'muted' }, attributesText(r.attributes)),
          ),
        ),
      ),
    )),
  );
}
