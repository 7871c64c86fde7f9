import { api, errorText, imageUrl } from './api.js';
import { busy, confirmStep, field, h, notice, replace } from './dom.js';
import { drawLine, insideWords, lineLength, overlay, pct, pointWords, setShape, SHORTEST, VIEW_W, viewHeight } from './line-overlay.js';
import { roleChoice, roleOf } from './roles.js';
import type { Camera, CountingLine, Point } from './types.js';

/**
 * Managers: the camera's counting line, drawn on its latest picture (docs/console.md "Counting line"). Press and
 * drag across the door, or click (tap) its two ends; drag an end to move it; or type the ends in percent (the
 * keyboard way; arrow keys step the numbers). "Flip inside" turns the arrow round. Saved with
 * PATCH /api/cameras/{id} {"tuning":{"line":{a,b,inside}}} (0..1 of the picture); "Remove line…" sends null.
 * A camera with no picture yet gets a blank 16:9 frame to draw on, and the page says so.
 */

/** Moves shorter than this (CSS pixels) between press and release are a click: the first end of a two-click line. */
const CLICK_PX = 6;

type Mode = 'idle' | 'new' | 'a' | 'b' | 'second';

export function lineEditor(c: Camera, signal: AbortSignal, saved: (c: Camera, text: string) => void, close: () => void): HTMLElement {
  const was = c.tuning?.line ?? null;
  let a: Point | null = was ? [...was.a] : null;
  let b: Point | null = was ? [...was.b] : null;
  let inside: 'left' | 'right' = was?.inside ?? 'left';
  let mode: Mode = 'idle';
  let pressedAt: [number, number] = [0, 0];
  let objectUrl = '';

  const name = c.label || c.camera_id;
  const svgEl = overlay('editing');
  svgEl.removeAttribute('aria-hidden');
  svgEl.setAttribute('role', 'img');
  const stage = h('div', { class: 'line-stage' });
  const status = h('p', { class: 'line-status', 'aria-live': 'polite' });
  const msg = notice();
  const confirmArea = h('div');
  const noPicture = h('p', { class: 'notice info', hidden: true });

  const num = (n: string) => h('input', { type: 'number', name: n, min: 0, max: 100, step: 0.1, inputmode: 'decimal' });
  const ax = num('a_x');
  const ay = num('a_y');
  const bx = num('b_x');
  const by = num('b_y');
  const flip = h('button', { type: 'button', class: 'flip-inside' }, 'Flip inside');
  const save = h('button', { type: 'button', class: 'primary' }, 'Save line');
  const again = h('button', { type: 'button' }, 'Start again');
  const remove = h('button', { type: 'button', class: 'danger' }, 'Remove line…');
  const cancel = h('button', { type: 'button' }, 'Close');
  remove.hidden = !was;
  // Drawing a line makes the camera count the door; whether it also recognises faces is chosen here (default: not).
  const current = roleOf(c);
  const role = roleChoice(`line-role-${c.camera_id}`, current === 'both' ? 'both' : 'door', ['door', 'both']);

  const el = h(
    'section',
    { class: 'line-editor', 'aria-label': `Counting line of ${name}` },
    h('h3', {}, 'Counting line'),
    h('p', { class: 'small' }, 'People whose bodies cross this line are counted: crossing towards the inside is an entry, crossing back an exit. Draw it across the doorway, where everyone passes.'),
    h('p', { class: 'small muted' }, 'Press and drag from one side of the door to the other, or click (tap) the two ends. Drag an end to move it. The arrow points into the shop; “Flip inside” turns it round.'),
    noPicture,
    stage,
    status,
    h(
      'fieldset',
      { class: 'line-ends' },
      h('legend', {}, 'Ends of the line, in percent of the picture'),
      h('div', { class: 'inline' }, field('A: from the left (%)', ax), field('A: from the top (%)', ay), field('B: from the left (%)', bx), field('B: from the top (%)', by)),
    ),
    role.el,
    msg.el,
    h('div', { class: 'actions' }, flip, save, again, remove, cancel),
    confirmArea,
  );

  // The picture: the latest snapshot, fetched with the session; without one, a blank frame of the usual 16:9 shape.
  const blank = h('div', { class: 'snapshot-blank' }, 'No picture yet');
  replace(stage, blank, svgEl);
  if (c.snapshot.available && c.snapshot.url) {
    const img = h('img', { class: 'snapshot', alt: `Latest picture from ${name}, to draw the line on` });
    img.addEventListener('load', () => {
      setShape(svgEl, img.naturalWidth / img.naturalHeight);
      render();
    });
    void imageUrl(c.snapshot.url, signal)
      .then((url) => {
        if (signal.aborted || !el.isConnected) return URL.revokeObjectURL(url);
        objectUrl = url;
        img.src = url;
        blank.replaceWith(img);
      })
      .catch(() => showNoPicture('The latest picture could not be loaded, so the line is drawn on a blank frame of the usual 16:9 shape.'));
  } else {
    showNoPicture(`${name} has sent no picture yet (${c.snapshot.reason || 'the shop PC sends one once it reaches the camera'}), so the line is drawn on a blank frame of the usual 16:9 shape. Check it again over the picture once one arrives.`);
  }
  function showNoPicture(text: string): void {
    noPicture.textContent = text;
    noPicture.hidden = false;
  }
  const forget = () => {
    if (objectUrl) URL.revokeObjectURL(objectUrl);
    objectUrl = '';
  };
  signal.addEventListener('abort', forget);

  /** The point of the picture under the pointer (0..1, kept inside the picture). */
  function pointAt(ev: PointerEvent): Point | null {
    const ctm = svgEl.getScreenCTM();
    if (!ctm) return null;
    const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(ctm.inverse());
    return [clamp(p.x / VIEW_W), clamp(p.y / viewHeight(svgEl))];
  }

  svgEl.addEventListener('pointerdown', (ev) => {
    if (ev.button !== 0) return;
    const p = pointAt(ev);
    if (!p) return;
    ev.preventDefault();
    svgEl.setPointerCapture(ev.pointerId);
    const handle = (ev.target as Element).closest('[data-handle]')?.getAttribute('data-handle');
    if (mode === 'second') {
      b = p;
      mode = 'b';
    } else if (handle === 'a' || handle === 'b') {
      mode = handle;
    } else {
      a = p;
      b = null;
      mode = 'new';
      pressedAt = [ev.clientX, ev.clientY];
    }
    msg.show('');
    render();
  });
  svgEl.addEventListener('pointermove', (ev) => {
    if (mode !== 'new' && mode !== 'a' && mode !== 'b') return;
    const p = pointAt(ev);
    if (!p) return;
    if (mode === 'a') a = p;
    else if (mode === 'new' && Math.hypot(ev.clientX - pressedAt[0], ev.clientY - pressedAt[1]) < CLICK_PX) return;
    else b = p;
    render();
  });
  const release = (ev: PointerEvent) => {
    if (svgEl.hasPointerCapture(ev.pointerId)) svgEl.releasePointerCapture(ev.pointerId);
    if (mode === 'new' && !b) mode = 'second'; // a click: the other end comes with the next one
    else if (mode !== 'second') mode = 'idle';
    render();
  };
  svgEl.addEventListener('pointerup', release);
  svgEl.addEventListener('pointercancel', release);

  // The keyboard way: the four numbers; a complete, valid set replaces the line.
  for (const input of [ax, ay, bx, by]) {
    input.addEventListener('input', () => {
      const v = [ax, ay, bx, by].map((i) => (i.value.trim() === '' ? NaN : Number(i.value) / 100));
      if (v.some((x) => !Number.isFinite(x) || x < 0 || x > 1)) return;
      a = [v[0]!, v[1]!];
      b = [v[2]!, v[3]!];
      mode = 'idle';
      render(false);
    });
  }

  flip.addEventListener('click', () => {
    inside = inside === 'left' ? 'right' : 'left';
    render();
  });
  again.addEventListener('click', () => {
    a = b = null;
    mode = 'idle';
    msg.show('');
    render();
  });
  cancel.addEventListener('click', () => {
    forget();
    close();
  });

  save.addEventListener('click', () => {
    msg.show('');
    if (!a || !b) return msg.show('Draw the line first: press and drag across the door, or click its two ends.');
    if (lineLength(a, b) < SHORTEST) return msg.show(`The line is too short: make it at least ${pct(SHORTEST)} of the picture long, across the whole doorway.`);
    const line: CountingLine = { a: [fix(a[0]), fix(a[1])], b: [fix(b[0]), fix(b[1])], inside };
    void busy(save, async () => {
      try {
        const cam = await api<Camera>('PATCH', `/api/cameras/${encodeURIComponent(c.id)}`, { body: { tuning: { line, role: role.value() } }, signal });
        forget();
        saved(cam, `Counting line saved for ${name} (revision ${cam.revision}). The shop PC counts crossings of it within a minute.`);
      } catch (err) {
        if (!signal.aborted) msg.show(errorText(err));
      }
    });
  });

  remove.addEventListener('click', () => {
    msg.show('');
    confirmStep(confirmArea, {
      label: `Confirm removing the counting line of ${name}`,
      question: `Remove the counting line of ${name}? The camera stops counting entries and exits within a minute and recognises faces only (role Faces); the counts so far are kept.`,
      yes: 'Remove line',
      act: async () => {
        const cam = await api<Camera>('PATCH', `/api/cameras/${encodeURIComponent(c.id)}`, { body: { tuning: { line: null, role: 'faces' } }, signal });
        forget();
        saved(cam, `Counting line removed from ${name}: it counts no entries or exits now.`);
      },
    });
  });

  /** Draws the line and says what it is; `fields` false while the person types in them. */
  function render(fields = true): void {
    drawLine(svgEl, a ? { a, b: mode === 'second' ? null : b, inside } : null, { handles: true });
    const line = a && b && mode !== 'second' ? { a, b, inside } : null;
    svgEl.setAttribute('aria-label', line ? `Counting line from ${pointWords(line.a)} to ${pointWords(line.b)}, inside ${insideWords(line, VIEW_W / viewHeight(svgEl))}` : 'No counting line drawn');
    if (mode === 'second' && a) status.textContent = `First end at ${pointWords(a)}: now click or tap the other end.`;
    else if (line) status.textContent = `Line from A (${pointWords(line.a)}) to B (${pointWords(line.b)}). Inside: ${insideWords(line, VIEW_W / viewHeight(svgEl))}.`;
    else status.textContent = 'No line drawn yet.';
    flip.disabled = !line;
    el.setAttribute('data-inside', inside);
    if (fields) {
      const show = (input: HTMLInputElement, v: number | undefined) => (input.value = v === undefined ? '' : String(Math.round(v * 1000) / 10));
      show(ax, a?.[0]);
      show(ay, a?.[1]);
      show(bx, line ? line.b[0] : undefined);
      show(by, line ? line.b[1] : undefined);
    }
  }
  render();
  return el;
}

function clamp(v: number): number {
  return Math.min(1, Math.max(0, v));
}

/** Four decimals: a tenth of a pixel on a 4K picture, and short JSON. */
function fix(v: number): number {
  return Math.round(v * 10_000) / 10_000;
}
