import { api, errorText, ApiError } from './api.js';
import { ago, facts, cardForm, confirmStep, busy, field, h, notice, plural, replace, timeAgo, when } from './dom.js';
import type { Page } from './main.js';
import { cameraCard, type CameraCard } from './camera-card.js';
import { camerasUp } from './camera-state.js';
import { atLeast } from './session.js';
import { placement, type Camera, type Shop } from './types.js';
import { hoursSummary, shopSettingsForm } from './shop-settings.js';

/**
 * One shop: its PC, the shop check, its cameras (status, latest snapshot, camera checks, live view), for managers
 * the installation code and adding, editing and removing a camera, for owners removing an empty shop. Camera state is re-read every 30 s, every 2 s while a check
 * waits for the shop PC.
 */
export function renderShop(p: Page, slug: string): void {
  const head = h('div', { class: 'page-head' }, h('h1', {}, 'Shop'));
  const error = notice('error');
  const status = notice('ok');
  const factsBox = h('div');
  const cams = h('div', { class: 'cameras', id: 'cameras' });
  replace(p.main, h('p', { class: 'small' }, h('a', { href: '#/' }, '← All shops')), head, error.el, status.el, factsBox, h('h2', {}, 'Cameras'), cams);

  const manager = atLeast(p.user, 'manager');
  const cards = new Map<string, CameraCard>();
  let timer = 0;
  p.signal.addEventListener('abort', () => clearTimeout(timer));
  let built = false;
  let removed = false;
  /** The shop as last read: camera cards ask it whether the shop PC is online. */
  let shopNow: Shop | null = null;

  async function load(): Promise<void> {
    clearTimeout(timer);
    if (removed) return;
    let pending = false;
    try {
      const [shops, cameras] = await Promise.all([api<Shop[]>('GET', '/api/sites', { signal: p.signal }), api<Camera[]>('GET', '/api/cameras', { signal: p.signal })]);
      if (p.signal.aborted || removed) return;
      const shop = shops.find((s) => s.slug === slug);
      if (!shop) {
        replace(p.main, h('p', { class: 'small' }, h('a', { href: '#/' }, '← All shops')), h('div', { class: 'card empty' }, h('h1', {}, 'No such shop'), h('p', {}, `Your company has no shop "${slug}".`)));
        return;
      }
      error.show('');
      shopNow = shop;
      replace(head, h('h1', {}, shop.name), h('span', { class: `badge ${shop.online ? 'good' : shop.last_heartbeat_at ? 'bad' : 'unknown'}` }, shop.online ? 'Shop PC online' : shop.last_heartbeat_at ? 'Shop PC offline' : 'No shop PC reporting'));
      if (!built) {
        built = true;
        factsBox.append(shopFacts(shop, cameras.filter((c) => c.site_id === shop.site_id)), shopCheck(() => shopNow ?? shop, p.signal));
        cams.before(h('p', { class: 'actions', id: 'live-grid-link' }, h('a', { href: `#/live/${encodeURIComponent(shop.slug)}` }, 'Watch all cameras live (grid)')));
        if (manager) p.main.append(shopSettingsForm(shop, () => void load()), enrolmentForm(shop), addCameraForm(shop, () => void load()));
        if (atLeast(p.user, 'owner')) p.main.append(
            removeShop(shop, () => {
              removed = true;
              clearTimeout(timer);
              for (const card of cards.values()) card.el.remove();
              replace(p.main, h('p', { class: 'small' }, h('a', { href: '#/' }, '← All shops')), h('div', { class: 'card', id: 'shop-removed' }, h('h1', {}, 'Shop removed'), h('p', { class: 'notice ok', role: 'status' }, `${shop.name} (${shop.slug}) is removed.`)));
            }),
          );
      } else {
        factsBox.firstChild?.replaceWith(shopFacts(shop, cameras.filter((c) => c.site_id === shop.site_id)));
      }
      const mine = cameras.filter((c) => c.site_id === shop.site_id);
      if (mine.length === 0) replace(cams, h('p', { class: 'muted', id: 'no-cameras' }, manager ? 'No cameras yet. Add one below; the shop PC picks it up within a minute.' : 'No cameras yet. A manager can add them.'));
      else cams.querySelector('#no-cameras')?.remove();
      for (const c of mine) {
        let card = cards.get(c.id);
        if (!card) {
          card = cameraCard(c, manager, p.signal, () => void load(), (text) => status.show(text), () => shopNow ?? shop);
          cards.set(c.id, card);
          cams.append(card.el);
        }
        card.update(c);
        if (c.check.state === 'requested') pending = true;
      }
      for (const [id, card] of cards) {
        if (!mine.some((c) => c.id === id)) {
          card.el.remove();
          cards.delete(id);
        }
      }
    } catch (err) {
      if (p.signal.aborted) return;
      error.show(err instanceof ApiError ? err.message : 'Head office could not be reached. Retrying…');
    }
    timer = window.setTimeout(() => void load(), pending ? 2000 : 30_000);
  }
  void load();
}

function shopFacts(s: Shop, cameras: Camera[]): HTMLElement {
  const worst = cameras.find((c) => c.camera_id === s.worst_camera_id);
  const pl = placement(s.fraction_below_gate, worst ? worst.label || worst.camera_id : s.worst_camera_id);
  const up = camerasUp(s, cameras);
  const rows: [string, HTMLElement | string][] = [
    ['Short name', s.slug],
    ['Time zone', s.timezone],
    ['Last heartbeat', timeAgo(s.last_heartbeat_at)],
    ['Last visit', timeAgo(s.last_event_at)],
    ['Cameras up', h('span', { class: `dot ${up.cls}`, id: 'cameras-up' }, up.text)],
    ['Placement', h('span', { class: `dot ${pl.cls}`, id: 'placement' }, pl.word)],
    ['Shop PC version', s.agent_version || 'not reported yet'],
    ['Recognition model', s.recognition_model || (s.last_heartbeat_at ? 'none loaded (the shop PC reports none)' : 'not reported yet')],
    ['Waiting on the shop PC', plural(s.queued, 'visit')],
    ['Region', s.region ?? 'none'],
    ['Opening hours', s.opening_hours ? hoursSummary(s.opening_hours) : 'not set'],
    ['Occupancy limit', s.occupancy_limit == null ? 'none' : String(s.occupancy_limit)],
  ];
  return h('section', { class: 'card', id: 'shop-facts' }, facts(rows), droppedNotice(s));
}

/** Visits the shop PC lost (its queue overflowed), when there are any: on the overview's card and the shop page. */
export function droppedNotice(s: Shop): HTMLElement | null {
  return s.dropped > 0 ? h('p', { class: 'notice error' }, `${plural(s.dropped, 'visit')} lost on the shop PC (its queue overflowed): reports are missing them.`) : null;
}

interface Step {
  name: string;
  status: string;
  detail: string;
  advice?: string;
}

/**
 * GET /api/sites/{site}/check: the five steps; head office stops at the first failure (spec) and marks the later
 * ones unknown. The page names the failed step in the headline, and for a step not checked says what it does know
 * (the last visit, from the shop's own facts) instead of a bare "Not checked" beside a visit "just now".
 */
function shopCheck(shopOf: () => Shop, signal: AbortSignal): HTMLElement {
  const out = h('div', { 'aria-live': 'polite' });
  const button = h('button', { type: 'button' }, 'Check this shop');
  button.addEventListener('click', () => {
    void busy(button, async () => {
      try {
        const s = shopOf();
        const r = await api<{ ok: boolean; steps: Step[] }>('GET', `/api/sites/${encodeURIComponent(s.slug)}/check`, { signal });
        const failed = r.steps.findIndex((st) => st.status === 'fail');
        const headline = r.ok ? 'Everything needed for counting works.' : failed >= 0 ? `Step ${failed + 1} needs attention (${r.steps[failed]!.name}): ${r.steps[failed]!.detail}` : 'Something needs attention.';
        replace(
          out,
          h('p', { class: `notice ${r.ok ? 'ok' : 'error'}`, id: 'shop-check-headline' }, headline),
          h(
            'ol',
            { class: 'steps' },
            ...r.steps.map((st, i) => {
              const skipped = st.status === 'unknown' && failed >= 0 && i > failed;
              const detail = skipped ? notCheckedDetail(st, i, failed, s) : st.detail;
              return h('li', { 'data-step': i + 1 }, h('span', { class: `badge ${stepClass(st.status)}` }, skipped ? 'not checked' : st.status), ' ', h('strong', {}, st.name), ': ', detail, st.advice ? h('div', { class: 'small muted' }, st.advice) : null);
            }),
          ),
        );
      } catch (err) {
        replace(out, h('p', { class: 'notice error' }, errorText(err)));
      }
    });
  });
  return h('section', { class: 'card', id: 'shop-check' }, h('div', { class: 'actions' }, button), out);
}

/** What the page knows about a step head office did not check (an earlier one failed). */
function notCheckedDetail(_st: Step, i: number, failed: number, s: Shop): string {
  const why = `not checked because step ${failed + 1} failed`;
  if (i === 4) return s.last_event_at ? `The last visit arrived ${ago(s.last_event_at)} (${why}).` : `No visit has arrived yet (${why}).`;
  return `Fix step ${failed + 1} first: this one is ${why}.`;
}

const stepClass = (status: string) => (status === 'pass' ? 'good' : status === 'warn' ? 'warn' : status === 'fail' ? 'bad' : 'unknown');

/** Managers: POST /api/sites/{site}/enrolment-code. The code is shown once. */
function enrolmentForm(s: Shop): HTMLElement {
  const label = h('input', { name: 'label', maxlength: 100, placeholder: 'e.g. till PC', autocomplete: 'off' });
  const days = h('input', { name: 'days', type: 'number', min: 1, max: 30, value: 7 });
  return cardForm({
    id: 'enrolment',
    title: 'Install the shop PC',
    intro: 'An installation code connects a shop PC to this shop once. It is shown only now; make a new one if it is lost. A new enrolment replaces the shop’s earlier PC.',
    fields: [h('div', { class: 'inline' }, field('Label (optional)', label), field('Valid for (days)', days))],
    submitLabel: 'Create installation code',
    submit: async ({ out }) => {
      const body: Record<string, unknown> = { days: Number(days.value) || 7 };
      if (label.value.trim()) body.label = label.value.trim();
      const r = await api<{ code: string; expires_at: string }>('POST', `/api/sites/${encodeURIComponent(s.slug)}/enrolment-code`, { body });
      replace(
        out,
        h('p', {}, 'Installation code (valid until ', when(r.expires_at), '):'),
        h('code', { class: 'secret', id: 'enrolment-code' }, r.code),
        h('p', { class: 'small' }, 'On the shop PC run:'),
        // Each word unbreakable (a browser breaks after a hyphen: "--code", "ABC-DEF"); lines break between words only.
        h('code', { class: 'secret small command', id: 'enrol-command' }, ...['footfall', 'enrol', '--server', location.origin, '--code', r.code].flatMap((w, i) => (i ? [' ', h('span', {}, w)] : [h('span', {}, w)]))),
      );
    },
  });
}

/** Managers: POST /api/sites/{site}/cameras. */
function addCameraForm(s: Shop, done: () => void): HTMLElement {
  const cameraId = h('input', { name: 'camera_id', required: true, maxlength: 64, pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]*', autocomplete: 'off', placeholder: 'entrance' });
  const label = h('input', { name: 'label', maxlength: 100, autocomplete: 'off', placeholder: 'Front door' });
  const host = h('input', { name: 'host', required: true, autocomplete: 'off', placeholder: '192.168.1.64' });
  const port = h('input', { name: 'port', type: 'number', min: 1, max: 65535, value: 554 });
  const path = h('input', { name: 'path', autocomplete: 'off', placeholder: '/Streaming/Channels/101' });
  const username = h('input', { name: 'username', autocomplete: 'off' });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'new-password' });
  return cardForm({
    id: 'add-camera',
    title: 'Add a camera',
    fields: [
      h('div', { class: 'inline' }, field('Camera name (id)', cameraId, 'Lands on every visit; cannot be changed.'), field('Label', label)),
      h('div', { class: 'inline' }, field('Address (host or IP)', host), field('RTSP port', port)),
      field('Stream path', path),
      h('div', { class: 'inline' }, field('Camera user name', username), field('Camera password', password, 'Stored encrypted; never shown again.')),
    ],
    submitLabel: 'Add camera',
    submit: async ({ form, msg }) => {
      const body: Record<string, unknown> = { camera_id: cameraId.value.trim(), host: host.value.trim(), port: Number(port.value) || 554, path: path.value.trim(), username: username.value };
      if (label.value.trim()) body.label = label.value.trim();
      if (password.value) body.password = password.value;
      const c = await api<Camera>('POST', `/api/sites/${encodeURIComponent(s.slug)}/cameras`, { body });
      msg.show(`Added ${c.label || c.camera_id}. The shop PC sets it up within a minute.`, 'ok');
      form.reset();
      done();
    },
  });
}

/** Owners: DELETE /api/sites/{site} after a confirmation step. The API refuses a shop with cameras or visits. */
function removeShop(s: Shop, removed: () => void): HTMLElement {
  const open = h('button', { type: 'button', class: 'danger' }, 'Remove this shop…');
  const area = h('div', { 'aria-live': 'polite' });
  const card = h('section', { class: 'card', id: 'remove-shop' }, h('h2', {}, 'Remove this shop'), h('p', { class: 'small muted' }, 'Only a shop with no cameras and no visits can be removed (one opened by mistake). Its short name can then be used again.'), h('div', { class: 'actions' }, open), area);
  open.addEventListener('click', () =>
    confirmStep(area, {
      label: `Confirm removing ${s.name}`,
      question: `Remove the shop ${s.name} (${s.slug})? Its installation codes stop working and its shop PC is disconnected.`,
      yes: `Remove ${s.name}`,
      act: async () => {
        await api('DELETE', `/api/sites/${encodeURIComponent(s.slug)}`);
        removed();
      },
    }),
  );
  return card;
}
