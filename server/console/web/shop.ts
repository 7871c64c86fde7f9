import { api, errorText, ApiError, imageUrl } from './api.js';
import { ago, facts, cardForm, confirmStep, busy, field, h, notice, plural, replace, timeAgo, when } from './dom.js';
import type { Page } from './main.js';
import { watchLive } from './live.js';
import { atLeast } from './session.js';
import { placement, type Camera, type Check, type Shop } from './types.js';

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
        factsBox.append(shopFacts(shop), shopCheck(() => shopNow ?? shop, p.signal));
        cams.before(h('p', { class: 'actions', id: 'live-grid-link' }, h('a', { href: `#/live/${encodeURIComponent(shop.slug)}` }, 'Watch all cameras live (grid)')));
        if (manager) p.main.append(enrolmentForm(shop), addCameraForm(shop, () => void load()));
        if (atLeast(p.user, 'owner')) p.main.append(
            removeShop(shop, () => {
              removed = true;
              clearTimeout(timer);
              for (const card of cards.values()) card.el.remove();
              replace(p.main, h('p', { class: 'small' }, h('a', { href: '#/' }, '← All shops')), h('div', { class: 'card', id: 'shop-removed' }, h('h1', {}, 'Shop removed'), h('p', { class: 'notice ok', role: 'status' }, `${shop.name} (${shop.slug}) is removed.`)));
            }),
          );
      } else {
        factsBox.firstChild?.replaceWith(shopFacts(shop));
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

function shopFacts(s: Shop): HTMLElement {
  const pl = placement(s.fraction_below_gate);
  const rows: [string, HTMLElement | string][] = [
    ['Short name', s.slug],
    ['Time zone', s.timezone],
    ['Last heartbeat', timeAgo(s.last_heartbeat_at)],
    ['Last visit', timeAgo(s.last_event_at)],
    ['Cameras up', s.last_heartbeat_at ? `${s.cameras_up} of ${s.cameras_total}` : 'not reported yet'],
    ['Placement', h('span', { class: `dot ${pl.cls}` }, pl.word)],
    ['Shop PC version', s.agent_version || '—'],
    ['Recognition model', s.recognition_model || '—'],
    ['Waiting on the shop PC', plural(s.queued, 'visit')],
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

interface CameraCard {
  el: HTMLElement;
  update(c: Camera): void;
}

/** Why the shop PC cannot be asked anything now (offline, never installed), or '' when it is online. */
export function pcUnreachable(s: Shop): string {
  if (s.online) return '';
  if (s.last_heartbeat_at) return `The shop PC is offline (last heard from ${ago(s.last_heartbeat_at)}), so it cannot send pictures or run checks. Check that it is switched on and connected.`;
  if (s.enrolled_at) return 'The shop PC was installed but has never reported, so it cannot send pictures or run checks yet.';
  return 'This shop has no shop PC yet: install one with an installation code (below) first.';
}

/** A check the shop PC has not answered in this long is shown as waiting too long (head office releases it after five minutes). */
const CHECK_PATIENCE_MS = 20_000;

function cameraCard(first: Camera, manager: boolean, signal: AbortSignal, reload: () => void, said: (text: string) => void, shopOf: () => Shop): CameraCard {
  const title = h('h3');
  const status = h('p');
  const picture = h('div', { class: 'picture' });
  const caption = h('p', { class: 'small muted' });
  const checkOut = h('div', { class: 'check-result', 'aria-live': 'polite' });
  const msg = notice();
  let current = first;
  let shownSnapshot = '';
  let objectUrl = '';
  let live: { stop(): void } | null = null;

  const img = h('img', { class: 'snapshot', alt: '' });
  const showEmpty = (text: string) => replace(picture, h('div', { class: 'snapshot-empty' }, text));
  showEmpty('No picture yet');
  const liveButton = h('button', { type: 'button', class: 'live-button' }, 'Watch live');
  const fullButton = h('button', { type: 'button', class: 'full-button', hidden: true }, 'Full screen');
  fullButton.addEventListener('click', () => void picture.requestFullscreen?.().catch(() => undefined));
  const buttons = h('div', { class: 'actions' }, liveButton, fullButton);
  const connection = h('button', { type: 'button' }, 'Check connection');
  const place = h('button', { type: 'button' }, 'Check placement (30 s)');
  const edit = h('button', { type: 'button' }, 'Edit…');
  const remove = h('button', { type: 'button', class: 'danger' }, 'Remove…');
  if (manager) buttons.append(connection, place, edit, remove);
  const panel = h('div');

  const el = h('article', { class: 'card camera', 'data-camera': first.camera_id }, title, status, picture, caption, buttons, msg.el, checkOut, panel);

  edit.addEventListener('click', () => {
    msg.show('');
    replace(
      panel,
      editCameraForm(
        current,
        (c) => {
          replace(panel);
          msg.show(`Saved (revision ${c.revision}). The shop PC picks up the change within a minute.`, 'ok');
          reload();
        },
        () => replace(panel),
      ),
    );
    panel.querySelector('input')?.focus();
  });
  remove.addEventListener('click', () => {
    msg.show('');
    const name = current.label || current.camera_id;
    confirmStep(panel, {
      label: `Confirm removing ${name}`,
      question: `Remove ${name} (${current.camera_id})? The shop PC stops using it within a minute and its latest picture is deleted. Visits it counted are kept. Its name can be used again.`,
      yes: `Remove ${name}`,
      act: async () => {
        await api('DELETE', `/api/cameras/${encodeURIComponent(current.id)}`);
        said(`Removed ${name}. The shop PC stops using it within a minute.`);
        reload();
      },
    });
  });

  const stopLive = () => {
    live?.stop();
    live = null;
    liveButton.textContent = 'Watch live';
    shownSnapshot = ''; // show the snapshot again
    void showSnapshot(current);
  };
  signal.addEventListener('abort', () => {
    live?.stop();
    if (objectUrl) URL.revokeObjectURL(objectUrl);
  });

  liveButton.addEventListener('click', () => {
    if (live) return stopLive();
    const why = pcUnreachable(shopOf());
    if (why) {
      caption.textContent = '';
      msg.show(`Live view is not possible now. ${why}`, 'info');
      return;
    }
    msg.show('');
    liveButton.textContent = 'Stop live view';
    // The old picture leaves the frame: what shows is live or nothing.
    showEmpty('Connecting to the shop PC…');
    img.alt = `Live view of ${current.label || current.camera_id}`;
    caption.textContent = 'Connecting…';
    live = watchLive(current.id, signal, {
      frame(url) {
        img.src = url;
        if (!img.isConnected) replace(picture, img);
        fullButton.hidden = false;
        caption.textContent = 'Live';
      },
      status(text) {
        caption.textContent = text;
      },
      ended(text) {
        live = null;
        fullButton.hidden = true;
        liveButton.textContent = 'Watch live';
        shownSnapshot = '';
        void showSnapshot(current).then(() => {
          if (text) msg.show(text, 'info');
        });
      },
    });
  });

  let checkAskedAt = 0;
  async function requestCheck(button: HTMLButtonElement, body: Record<string, unknown>): Promise<void> {
    msg.show('');
    const why = pcUnreachable(shopOf());
    if (why) return msg.show(`The check cannot run now. ${why}`, 'info');
    checkAskedAt = Date.now();
    await busy(button, async () => {
      try {
        const check = await api<Check>('POST', `/api/cameras/${current.id}/check`, { body, signal });
        renderCheck({ ...check, state: 'requested' });
        reload();
      } catch (err) {
        msg.show(errorText(err));
      }
    });
  }
  connection.addEventListener('click', () => void requestCheck(connection, { kind: 'connection' }));
  place.addEventListener('click', () => void requestCheck(place, { kind: 'placement', seconds: 30 }));

  function renderCheck(c: Check): void {
    if (c.state === 'absent' || !c.state) return replace(checkOut);
    if (c.state === 'requested') {
      const waited = checkAskedAt ? Date.now() - checkAskedAt : 0;
      const patience = c.kind === 'placement' ? CHECK_PATIENCE_MS + 30_000 : CHECK_PATIENCE_MS;
      const why = pcUnreachable(shopOf());
      if (why || waited > patience) {
        replace(checkOut, h('p', { class: 'notice error', role: 'alert' }, why ? `The shop PC cannot answer the check. ${why}` : `The shop PC has not answered the check in ${Math.round(waited / 1000)} seconds: it may be offline or busy. Head office drops the request after five minutes; run the shop check to see why.`));
        return;
      }
      replace(checkOut, h('p', { class: 'notice info' }, c.kind === 'placement' ? 'Placement check running: walk through the camera’s view now. Waiting for the shop PC…' : 'Connection check requested. Waiting for the shop PC…'));
      return;
    }
    replace(
      checkOut,
      h(
        'div',
        { class: `notice ${c.ok ? 'ok' : 'error'}` },
        h('strong', {}, `${c.kind === 'placement' ? 'Placement' : 'Connection'} check: `),
        c.headline,
        c.advice.length ? h('ul', { class: 'advice' }, ...c.advice.map((a) => h('li', {}, a))) : null,
      ),
    );
  }

  async function showSnapshot(c: Camera): Promise<void> {
    if (live) return;
    if (!c.snapshot.available || !c.snapshot.url) {
      showEmpty(c.snapshot.reason || 'No picture yet');
      shownSnapshot = '';
      return;
    }
    const key = `${c.snapshot.url}@${c.snapshot_at ?? ''}`;
    if (key === shownSnapshot) return;
    shownSnapshot = key;
    try {
      const url = await imageUrl(c.snapshot.url, signal);
      if (live) return URL.revokeObjectURL(url);
      img.src = url;
      img.alt = `Latest picture from ${c.label || c.camera_id}`;
      if (objectUrl) URL.revokeObjectURL(objectUrl);
      objectUrl = url;
      if (!img.isConnected) replace(picture, img);
      caption.textContent = `Picture from ${when(c.snapshot_at)}`;
    } catch {
      shownSnapshot = '';
    }
  }

  return {
    el,
    update(c) {
      current = c;
      replace(title, c.label || c.camera_id, ' ', h('span', { class: 'muted small' }, c.camera_id));
      const pcOff = !shopOf().online;
      // What the shop PC last said is only true while it is online: an offline PC's cameras are unknown.
      const [word, cls] = pcOff && c.connected !== null ? ['unknown: the shop PC is offline', 'unknown'] : c.connected === null ? ['not set up by the shop PC yet', 'unknown'] : c.connected ? ['connected', 'good'] : [`not connecting${c.connection_reason ? ` (${c.connection_reason})` : ''}`, 'bad'];
      replace(status, h('span', { class: `dot ${cls}` }, c.enabled ? word : 'switched off'), h('span', { class: 'small muted' }, ` · last seen `, timeAgo(c.last_seen_at)));
      const check = c.check;
      connection.disabled = place.disabled = check.state === 'requested';
      renderCheck(check);
      void showSnapshot(c);
    },
  };
}

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
        h('code', { class: 'secret small' }, `footfall enrol --server ${location.origin} --code ${r.code}`),
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

/**
 * Managers: PATCH /api/cameras/{id}, only the fields that changed (an edit made meanwhile elsewhere is not undone).
 * The password is sent only when a new one is typed: blank keeps it (the API takes `''` as "no password", so a blank
 * field is never sent); removing it is a separate tick.
 */
function editCameraForm(c: Camera, saved: (c: Camera) => void, cancel: () => void): HTMLElement {
  const label = h('input', { name: 'label', maxlength: 100, autocomplete: 'off', value: c.label });
  const host = h('input', { name: 'host', required: true, autocomplete: 'off', value: c.host });
  const port = h('input', { name: 'port', type: 'number', required: true, min: 1, max: 65535, value: c.port });
  const path = h('input', { name: 'path', autocomplete: 'off', value: c.path ?? '' });
  const username = h('input', { name: 'username', autocomplete: 'off', value: c.username ?? '' });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'new-password' });
  const maxWidth = h('input', { name: 'max_width', type: 'number', required: true, min: 160, max: 7680, value: c.max_width ?? 1280 });
  const drop = h('input', { type: 'checkbox', name: 'remove_password' });
  drop.addEventListener('change', () => {
    password.disabled = drop.checked;
    if (drop.checked) password.value = '';
  });
  const close = h('button', { type: 'button' }, 'Cancel');
  close.addEventListener('click', cancel);
  const form = cardForm({
    id: `edit-${c.camera_id}`,
    title: `Edit ${c.label || c.camera_id}`,
    intro: `The camera name (${c.camera_id}) cannot be changed; remove the camera and add it again to rename it.`,
    fields: [
      h('div', { class: 'inline' }, field('Label', label), field('Address (host or IP)', host)),
      h('div', { class: 'inline' }, field('RTSP port', port), field('Largest picture width', maxWidth, '160 to 7680 pixels.')),
      field('Stream path', path),
      h('div', { class: 'inline' }, field('Camera user name', username), field('New camera password', password, c.has_password ? 'A password is stored. Leave blank to keep it.' : 'No password is stored. Leave blank for none.')),
      c.has_password ? h('div', { class: 'check' }, drop, h('label', { for: (drop.id = `drop-${c.camera_id}`) }, 'Remove the stored password')) : null,
    ],
    submitLabel: 'Save camera',
    submit: async ({ msg }) => {
      const body: Record<string, unknown> = {};
      const text: [string, HTMLInputElement, string][] = [
        ['label', label, c.label],
        ['host', host, c.host],
        ['path', path, c.path ?? ''],
        ['username', username, c.username ?? ''],
      ];
      for (const [key, input, was] of text) {
        const v = key === 'username' ? input.value : input.value.trim();
        if (v !== was) body[key] = v;
      }
      for (const [key, input, was] of [['port', port, c.port], ['max_width', maxWidth, c.max_width]] as [string, HTMLInputElement, number][]) {
        const n = Number(input.value);
        if (n !== was) body[key] = n;
      }
      if (drop.checked) body.password = '';
      else if (password.value !== '') body.password = password.value;
      if (Object.keys(body).length === 0) return msg.show('Nothing changed.', 'info');
      saved(await api<Camera>('PATCH', `/api/cameras/${encodeURIComponent(c.id)}`, { body }));
    },
  });
  form.classList.add('edit-camera');
  form.querySelector('.actions')?.append(close);
  return form;
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
