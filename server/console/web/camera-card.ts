import { api, errorText, imageUrl } from './api.js';
import { ago, busy, cardForm, confirmStep, field, h, notice, replace, timeAgo, when } from './dom.js';
import { watchLive } from './live.js';
import { lineEditor } from './line-editor.js';
import { drawLine, insideWords, overlay, setShape } from './line-overlay.js';
import { countingBlock, roleChoice, roleLine, roleOf, ROLE_NAMES } from './roles.js';
import { enrolWay } from './no-pc.js';
import type { Camera, Check, Shop } from './types.js';

/**
 * One camera's card on the shop page (web/shop.ts): status (unknown while the shop PC is offline), the latest
 * picture with its counting line drawn over it, live view with full screen, and for managers the camera checks, the
 * counting line (web/line-editor.ts), editing and removal. Split from shop.ts.
 */
export interface CameraCard {
  el: HTMLElement;
  update(c: Camera): void;
}

/**
 * Why the shop PC cannot be asked anything now (offline, never installed), or '' when it is online. Never installed:
 * the way to install one, pointing at the form below only where a manager has it (the shop page; not the live grid).
 */
export function pcUnreachable(s: Shop, manager: boolean, formBelow: boolean): string {
  if (s.online) return '';
  if (s.last_heartbeat_at) return `The shop PC is offline (last heard from ${ago(s.last_heartbeat_at)}), so it cannot send pictures or run checks. Check that it is switched on and connected.`;
  if (s.enrolled_at) return 'The shop PC was installed but has never reported, so it cannot send pictures or run checks yet.';
  return `This shop has no shop PC yet. ${manager && formBelow ? 'Install one with an installation code (“Install the shop PC”, below) first.' : enrolWay(manager)}`;
}

/** A check the shop PC has not answered in this long is shown as waiting too long (head office releases it after five minutes). */
const CHECK_PATIENCE_MS = 20_000;

export function cameraCard(first: Camera, manager: boolean, signal: AbortSignal, reload: () => void, said: (text: string) => void, shopOf: () => Shop): CameraCard {
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
  // The saved counting line over the picture (snapshot or live), scaled with it.
  const lineSvg = overlay('shown');
  img.addEventListener('load', () => {
    setShape(lineSvg, img.naturalWidth / img.naturalHeight);
    drawLine(lineSvg, current.tuning?.line ?? null);
  });
  const lineInfo = h('p', { class: 'small line-info' });
  const roleInfo = h('div', { class: 'camera-role' });
  const countingInfo = h('div', { class: 'camera-counting' });
  const showEmpty = (text: string) => replace(picture, h('div', { class: 'snapshot-empty' }, text));
  showEmpty('No picture yet');
  const liveButton = h('button', { type: 'button', class: 'live-button' }, 'Watch live');
  const fullButton = h('button', { type: 'button', class: 'full-button', hidden: true }, 'Full screen');
  fullButton.addEventListener('click', () => void picture.requestFullscreen?.().catch(() => undefined));
  const buttons = h('div', { class: 'actions' }, liveButton, fullButton);
  const connection = h('button', { type: 'button' }, 'Check connection');
  const place = h('button', { type: 'button' }, 'Check placement (30 s)');
  const lineButton = h('button', { type: 'button', class: 'line-button' }, 'Counting line…');
  const edit = h('button', { type: 'button' }, 'Edit…');
  const remove = h('button', { type: 'button', class: 'danger' }, 'Remove…');
  if (manager) buttons.append(connection, place, lineButton, edit, remove);
  const panel = h('div');

  const el = h('article', { class: 'card camera', 'data-camera': first.camera_id }, title, status, picture, caption, roleInfo, lineInfo, countingInfo, buttons, msg.el, checkOut, panel);

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
  lineButton.addEventListener('click', () => {
    msg.show('');
    replace(
      panel,
      lineEditor(
        current,
        signal,
        (c, text) => {
          replace(panel);
          msg.show(text, 'ok');
          current = c;
          showLine(c);
          reload();
        },
        () => replace(panel),
      ),
    );
    panel.querySelector('h3')?.scrollIntoView({ block: 'nearest' });
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
    const why = pcUnreachable(shopOf(), manager, true);
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
        if (!img.isConnected) replace(picture, img, lineSvg);
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
    const why = pcUnreachable(shopOf(), manager, true);
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
      const why = pcUnreachable(shopOf(), manager, true);
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
      if (!img.isConnected) replace(picture, img, lineSvg);
      caption.textContent = `Picture from ${when(c.snapshot_at)}`;
    } catch {
      shownSnapshot = '';
    }
  }

  function showLine(c: Camera): void {
    const line = c.tuning?.line ?? null;
    drawLine(lineSvg, line);
    replace(roleInfo, roleLine(c));
    replace(countingInfo, countingBlock(c));
    if (line && roleOf(c) === 'faces') {
      replace(lineInfo, h('span', { class: 'dot unknown' }, 'Counting line not used'), `: this camera’s role is ${ROLE_NAMES.faces}, so it counts no entries or exits.${manager ? ' Choose a door role with “Edit…” or “Counting line…”.' : ''}`);
      return;
    }
    const aspect = img.naturalWidth && img.naturalHeight ? img.naturalWidth / img.naturalHeight : 16 / 9;
    if (line) replace(lineInfo, h('span', { class: 'dot good' }, 'Counting entries and exits'), ` at the line drawn on the picture; the inside is ${insideWords(line, aspect)}.`);
    else replace(lineInfo, h('span', { class: 'dot unknown' }, 'No counting line'), manager ? ': this camera counts no entries or exits. Draw one with “Counting line…”.' : ': this camera counts no entries or exits. A manager can draw one.');
  }

  return {
    el,
    update(c) {
      current = c;
      showLine(c);
      replace(title, c.label || c.camera_id, ' ', h('span', { class: 'muted small' }, c.camera_id));
      const pcOff = !shopOf().online;
      // What the shop PC last said is only true while it is online: an offline PC's cameras are unknown.
      let [word, cls] = pcOff && c.connected !== null ? ['unknown: the shop PC is offline', 'unknown'] : c.connected === null ? ['not set up by the shop PC yet', 'unknown'] : c.connected ? ['connected', 'good'] : [`not connecting${c.connection_reason ? ` (${c.connection_reason})` : ''}`, 'bad'];
      // A door camera that counts nobody while the shop's other cameras see people is flagged like one that does not connect.
      if (!pcOff && c.connected && c.counting?.state === 'not_counting') [word, cls] = ['connected, but not counting', 'bad'];
      replace(status, h('span', { class: `dot ${cls}` }, c.enabled ? word : 'switched off'), h('span', { class: 'small muted' }, ` · last seen `, timeAgo(c.last_seen_at)));
      const check = c.check;
      connection.disabled = place.disabled = check.state === 'requested';
      renderCheck(check);
      void showSnapshot(c);
    },
  };
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
  const role = roleChoice(`role-${c.camera_id}`, roleOf(c));
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
      role.el,
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
      if (role.value() !== roleOf(c)) body.tuning = { role: role.value() };
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

