import { describe, expect, it } from 'vitest';
import { DoNotEnrolList, SKETCH_BYTES, hamming } from './erasure.js';
import { Gallery } from './gallery.js';
import { Matcher, Matchers, type Decision, type Visit } from './matcher.js';
import { Faces } from './synthetic.js';
import { runningMean } from './template.js';
import { DIM, dot, unitCopy } from './vector.js';

const KEY = new Uint8Array(32).fill(7);
const T0 = Date.parse('2025-03-01T10:00:00Z');

/** A matcher over a gallery of `n` random customers c0..c{n-1}, and an `enrol` numbering new customers v1, v2... */
function setup(n = 200, seed = 1, withList = true) {
  const faces = new Faces(seed);
  const ids = faces.identities(n);
  const gallery = Gallery.load(Array.from({ length: n }, (_, i) => ({ customerId: `c${i}`, template: ids.subarray(i * DIM, (i + 1) * DIM) })));
  const list = withList ? new DoNotEnrolList(KEY) : undefined;
  const matcher = new Matcher(gallery, {}, list);
  let made = 0;
  const enrolled: string[] = [];
  const enrol = () => {
    const id = `v${++made}`;
    enrolled.push(id);
    return id;
  };
  const visit = (embedding: Float32Array, at = T0, passedGate = true): Visit => ({ embedding, at, passedGate });
  return { faces, ids, gallery, matcher, list, enrol, enrolled, visit };
}

const customerOf = (d: Decision) => (d.kind === 'footfall' ? undefined : d.customerId);

describe('Matcher decisions', () => {
  it('links a known face above the threshold, with its similarity', () => {
    const { faces, ids, matcher, enrol, enrolled, visit } = setup();
    const d = matcher.decide(visit(faces.sighting(ids, 0.6, 17)), enrol);
    expect(d).toMatchObject({ kind: 'match', customerId: 'c17', via: 'gallery' });
    expect(d.kind === 'match' && d.similarity).toBeCloseTo(0.6, 5);
    expect(enrolled).toEqual([]);
  });

  it('enrols an unknown face that passed the gate, synchronously: it is in the gallery when decide returns', () => {
    const { faces, gallery, matcher, enrol, visit } = setup();
    const stranger = faces.identity();
    const d = matcher.decide(visit(stranger), enrol);
    expect(d).toMatchObject({ kind: 'new', customerId: 'v1', template: { count: 1 } });
    expect(gallery.has('v1')).toBe(true);
    expect(gallery.search(stranger, 1)[0]).toMatchObject({ customerId: 'v1' });
  });

  it('counts an unknown face under the gate as footfall without identity; a known one still links', () => {
    const { faces, ids, gallery, matcher, enrol, enrolled, visit } = setup();
    expect(matcher.decide(visit(faces.identity(), T0, false), enrol)).toEqual({ kind: 'footfall', reason: 'below_gate' });
    expect(enrolled).toEqual([]);
    const before = gallery.entry('c3')!;
    const d = matcher.decide(visit(faces.sighting(ids, 0.7, 3), T0, false), enrol);
    expect(d).toMatchObject({ kind: 'match', customerId: 'c3' });
    // ...but a face under the gate never updates a template
    expect(d.kind === 'match' && d.template).toBeUndefined();
    expect(gallery.entry('c3')).toEqual(before);
  });

  it('updates the template of a good, confident match as a running mean', () => {
    const { faces, ids, gallery, matcher, enrol, visit } = setup();
    const e = faces.sighting(ids, 0.7, 5);
    const d = matcher.decide(visit(e), enrol);
    expect(d.kind === 'match' && d.template?.count).toBe(2);
    const t = gallery.entry('c5')!;
    expect(t.count).toBe(2);
    const expected = runningMean({ template: unitCopy(ids.subarray(5 * DIM, 6 * DIM)), count: 1 }, unitCopy(e), 20);
    for (let i = 0; i < DIM; i++) expect(t.template[i]).toBeCloseTo(expected.template[i]!, 6);
    // a weak match (below the update threshold) links without updating
    const weak = matcher.decide(visit(faces.sighting(ids, 0.47, 6)), enrol);
    expect(weak).toMatchObject({ kind: 'match', customerId: 'c6' });
    expect(weak.kind === 'match' && weak.template).toBeUndefined();
  });
});

describe('Running mean', () => {
  it('is the mean direction up to the cap, then a moving average that follows a drifting face', () => {
    const faces = new Faces(11);
    const a = faces.identity();
    const b = faces.identity();
    // two samples: the normalised sum
    const m = runningMean({ template: a, count: 1 }, b, 20);
    expect(dot(m.template, a)).toBeCloseTo(dot(m.template, b), 5);
    expect(m.count).toBe(2);
    // a face ageing from a to b over 300 good visits: capped weight follows it, an uncapped mean lags behind
    const follow = (cap: number) => {
      let t = { template: a, count: 1 };
      for (let i = 1; i <= 300; i++) {
        const now = unitCopy(a.map((v, k) => (1 - i / 300) * v + (i / 300) * b[k]!));
        t = runningMean(t, now, cap);
      }
      return dot(t.template, b);
    };
    expect(follow(20)).toBeGreaterThan(0.95);
    expect(follow(1e9)).toBeLessThan(0.85);
  });
});

describe('Burst protection', () => {
  it('two cameras see the same new person a second apart: one customer, even with a weak second view', () => {
    const { faces, matcher, enrol, enrolled, visit } = setup();
    const person = faces.identity();
    const first = faces.sighting(person, 0.8);
    // the second view is at 0.42 to the first: under the match threshold (0.45), over the burst threshold (0.40)
    const second = faces.sighting(first, 0.42);
    const d1 = matcher.decide(visit(first, T0), enrol);
    const d2 = matcher.decide(visit(second, T0 + 1000), enrol);
    expect(d1.kind).toBe('new');
    expect(d2).toMatchObject({ kind: 'match', customerId: customerOf(d1), via: 'burst' });
    expect(enrolled).toHaveLength(1);
  });

  it('the same weak view well after the burst window is a new person (the looser threshold is short-lived)', () => {
    const { faces, matcher, enrol, visit } = setup();
    const first = faces.identity();
    const second = faces.sighting(first, 0.42);
    matcher.decide(visit(first, T0), enrol);
    expect(matcher.decide(visit(second, T0 + 60_000), enrol).kind).toBe('new');
  });

  it('two different people entering together stay two customers', () => {
    const { faces, matcher, enrol, enrolled, visit } = setup();
    matcher.decide(visit(faces.identity(), T0), enrol);
    matcher.decide(visit(faces.identity(), T0 + 200), enrol);
    expect(enrolled).toHaveLength(2);
  });

  it('a batch holding several views of one new person enrols it once, like one-by-one decisions', () => {
    const a = setup(300, 4);
    const b = setup(300, 4);
    const person = a.faces.identity();
    const others = [a.faces.identity(), a.faces.identity()];
    const views = [0.8, 0.7, 0.75].map((c) => a.faces.sighting(person, c));
    const known = a.faces.sighting(a.ids, 0.6, 42);
    const visits = [views[0]!, others[0]!, views[1]!, known, views[2]!, others[1]!].map((e, i) => a.visit(e, T0 + i * 300));
    const batch = a.matcher.decideBatch(visits, a.enrol);
    const single = visits.map((v) => b.matcher.decide(v, b.enrol));
    expect(batch).toEqual(single);
    expect(batch.map((d) => d.kind)).toEqual(['new', 'new', 'match', 'match', 'match', 'new']);
    expect(customerOf(batch[2]!)).toBe(customerOf(batch[0]!));
    expect(customerOf(batch[4]!)).toBe(customerOf(batch[0]!));
    expect(customerOf(batch[3]!)).toBe('c42');
    expect(a.enrolled).toHaveLength(3);
  });

  it('a backlog batch (a shop PC sending hours of visits at once) enrols a new person once, like separate batches', () => {
    const a = setup(300, 5);
    const b = setup(300, 5);
    const person = a.faces.identity();
    // Hours apart: outside the recently enrolled list's window, so only the batch's own enrolments can find them.
    const visits = [0.8, 0.7, 0.75].map((c, i) => a.visit(a.faces.sighting(person, c), T0 + i * 3_600_000));
    const batch = a.matcher.decideBatch(visits, a.enrol);
    const separate = visits.map((v) => b.matcher.decideBatch([v], b.enrol)[0]!);
    expect(batch).toEqual(separate);
    expect(batch.map((d) => d.kind)).toEqual(['new', 'match', 'match']);
    expect(a.enrolled).toHaveLength(1);
  });

  it('forget takes back an enrolment whose transaction failed', () => {
    const { faces, gallery, matcher, enrol, enrolled, visit } = setup();
    const person = faces.identity();
    const d = matcher.decide(visit(person, T0), enrol);
    matcher.forget(customerOf(d)!);
    expect(gallery.has(customerOf(d)!)).toBe(false);
    expect(matcher.decide(visit(faces.sighting(person, 0.7), T0 + 100), enrol).kind).toBe('new');
    expect(enrolled).toHaveLength(2);
  });

  it('merge keeps one customer with the weighted template and re-points the burst list', () => {
    const { faces, gallery, matcher, enrol, visit } = setup();
    const person = faces.identity();
    const d1 = matcher.decide(visit(faces.sighting(person, 0.75), T0), enrol);
    // a second enrolment of the same person (e.g. before burst protection existed)
    gallery.add('dup', faces.sighting(person, 0.75), 3);
    const merged = matcher.merge(customerOf(d1)!, 'dup')!;
    expect(merged.count).toBe(4);
    expect(gallery.has('dup')).toBe(false);
    expect(dot(merged.template, person)).toBeGreaterThan(0.8);
    expect(matcher.decide(visit(faces.sighting(person, 0.7), T0 + 500), enrol)).toMatchObject({ customerId: customerOf(d1) });
    expect(matcher.merge('nobody', customerOf(d1)!)).toBeUndefined();
  });
});

describe('Erasure', () => {
  it('an erased face is not enrolled again; other new faces are; the marker holds no id and no template', () => {
    const { faces, gallery, matcher, enrol, enrolled, visit } = setup();
    const person = faces.identity();
    const d = matcher.decide(visit(faces.sighting(person, 0.8), T0), enrol);
    const id = customerOf(d)!;
    for (let i = 1; i <= 4; i++) matcher.decide(visit(faces.sighting(person, 0.8), T0 + i * 60_000), enrol);
    const marker = matcher.erase(id, T0 + 3_600_000)!;
    expect(Object.keys(marker).sort()).toEqual(['expiresAt', 'sketch']);
    expect(marker.sketch).toHaveLength(SKETCH_BYTES);
    expect(gallery.has(id)).toBe(false);
    expect(gallery.search(person, 5).map((m) => m.customerId)).not.toContain(id);

    const later = T0 + 7 * 24 * 3_600_000;
    let blocked = 0;
    for (let i = 0; i < 50; i++) {
      const dd = matcher.decide(visit(faces.sightingIn(person, 0.7, 0.8), later + i), enrol);
      if (dd.kind === 'footfall' && dd.reason === 'do_not_enrol') blocked++;
    }
    expect(blocked).toBe(50);
    expect(enrolled).toEqual([id]);
    expect(matcher.decide(visit(faces.identity(), later), enrol).kind).toBe('new');

    // after the marker expires, the face is a new person again
    const expired = marker.expiresAt + 1;
    expect(matcher.decide(visit(faces.sighting(person, 0.75), expired), enrol).kind).toBe('new');
  });

  it('markers block most sightings of erased faces and few strangers (synthetic rates)', () => {
    const faces = new Faces(21);
    const list = new DoNotEnrolList(KEY);
    const erased = faces.identities(10);
    // each erased template is a running mean of 5 good views
    for (let p = 0; p < 10; p++) {
      let t = { template: faces.sighting(erased, 0.75, p), count: 1 };
      for (let i = 0; i < 4; i++) t = runningMean(t, faces.sighting(erased, 0.75, p), 20);
      list.mark(t.template, T0);
    }
    let blocked = 0;
    for (let p = 0; p < 10; p++) for (let i = 0; i < 30; i++) if (list.blocks(faces.sightingIn(erased, 0.6, 0.8, p), T0)) blocked++;
    let strangers = 0;
    for (let i = 0; i < 500; i++) if (list.blocks(faces.identity(), T0)) strangers++;
    expect(blocked / 300).toBeGreaterThanOrEqual(0.97);
    // 10 live markers: expected well under 1 % of strangers blocked (0.03 % per marker at cosine 0)
    expect(strangers / 500).toBeLessThanOrEqual(0.01);
  });

  it('markers survive a restart from storage, mean nothing under another key, and expire', () => {
    const faces = new Faces(22);
    const person = faces.identity();
    const list = new DoNotEnrolList(KEY);
    const marker = list.mark(person, T0);
    const restored = new DoNotEnrolList(KEY);
    restored.load([{ sketch: Buffer.from(marker.sketch), expiresAt: marker.expiresAt }], T0 + 1);
    expect(restored.size).toBe(1);
    expect(restored.blocks(faces.sighting(person, 0.7), T0 + 2)).toBe(true);
    // another company's key: the same face gives an unrelated sketch
    const other = new DoNotEnrolList(new Uint8Array(32).fill(8));
    const d = hamming(other.sketch(person), marker.sketch);
    expect(d).toBeGreaterThan(90);
    expect(d).toBeLessThan(166);
    expect(restored.blocks(faces.sighting(person, 0.7), marker.expiresAt)).toBe(false);
    expect(restored.size).toBe(0);
    const stale = new DoNotEnrolList(KEY);
    stale.load([marker], marker.expiresAt + 1);
    expect(stale.size).toBe(0);
  });

  it('erasing a customer that is not in the gallery, or without a list, returns no marker', () => {
    const { faces, matcher, enrol, visit } = setup(50, 3, false);
    expect(matcher.erase('nobody', T0)).toBeUndefined();
    const d = matcher.decide(visit(faces.identity()), enrol);
    expect(matcher.erase(customerOf(d)!, T0)).toBeUndefined();
  });
});

describe('Matchers', () => {
  it('keeps companies apart, loads each once, and reloads after drop', () => {
    const faces = new Faces(6);
    const a = faces.identity();
    const b = faces.identity();
    const stored: Record<string, { customerId: string; template: Float32Array }[]> = {
      one: [{ customerId: 'a', template: a }],
      two: [{ customerId: 'b', template: b }],
    };
    let loads = 0;
    const matchers = new Matchers((company) => {
      loads++;
      return { templates: stored[company] ?? [], markers: [], key: new TextEncoder().encode(`key of ${company}, 16+ bytes`) };
    });
    const enrol = () => 'new';
    expect(matchers.of('one').decide({ embedding: faces.sighting(a, 0.7), passedGate: true, at: T0 }, enrol)).toMatchObject({ customerId: 'a' });
    // b's face at company one is a stranger there, whatever company two knows
    expect(matchers.of('one').decide({ embedding: faces.sighting(b, 0.7), passedGate: false, at: T0 }, enrol).kind).toBe('footfall');
    expect(matchers.of('two').gallery.has('a')).toBe(false);
    expect(loads).toBe(2);
    matchers.drop('one');
    expect(matchers.has('one')).toBe(false);
    matchers.of('one');
    expect(loads).toBe(3);
  });

  it('loads live do-not-enrol markers with the company key', () => {
    const faces = new Faces(8);
    const person = faces.identity();
    const key = new Uint8Array(32).fill(3);
    const marker = new DoNotEnrolList(key).mark(person, T0);
    const matchers = new Matchers(() => ({ templates: [], markers: [marker], key }), { now: () => T0 + 1 });
    const d = matchers.of('c').decide({ embedding: faces.sighting(person, 0.7), passedGate: true, at: T0 + 2 }, () => 'x');
    expect(d).toEqual({ kind: 'footfall', reason: 'do_not_enrol' });
  });
});

describe('Matcher: taking back a failed transaction’s decisions', () => {
  /** Every customer's template (bits) and weight, by id. */
  const snapshot = (g: Gallery, ids: string[]) => new Map(ids.map((id) => [id, g.entry(id) && { bits: Buffer.from(g.entry(id)!.template.buffer).toString('hex'), count: g.entry(id)!.count }]));

  it('rollback undoes enrolments, template updates (bit for bit) and the recently enrolled list; commit keeps them', () => {
    const { faces, ids, gallery, matcher, enrol, enrolled, visit } = setup(50);
    const known = Array.from({ length: 50 }, (_, i) => `c${i}`);
    // An enrolment before, so the recently enrolled list holds one.
    const early = faces.identity();
    matcher.decide(visit(early), enrol);
    const all = [...known, 'v1'];
    const before = snapshot(gallery, all);

    matcher.begin();
    const stranger = faces.identity();
    const ds = matcher.decideBatch([visit(faces.sighting(ids, 0.8, 3)), visit(faces.sighting(ids, 0.8, 3)), visit(stranger, T0 + 1000), visit(faces.sighting(ids, 0.7, 9))], enrol);
    expect(ds.map((d) => d.kind)).toEqual(['match', 'match', 'new', 'match']);
    expect(gallery.size).toBe(52);
    expect(matcher.rollback()).toBe(true);
    expect(gallery.size).toBe(51);
    expect(gallery.has(enrolled[1]!)).toBe(false);
    expect(snapshot(gallery, all)).toEqual(before);
    // The list as it was: the early enrolment is still found at the burst threshold; the taken-back one is gone.
    expect(matcher.decide(visit(faces.sighting(early, 0.42), T0 + 2000), enrol)).toMatchObject({ kind: 'match', customerId: 'v1', via: 'burst' });
    expect(matcher.decide(visit(stranger, T0 + 3000), enrol)).toMatchObject({ kind: 'new' });

    matcher.begin();
    matcher.decide(visit(faces.sighting(ids, 0.8, 4)), enrol);
    matcher.commit();
    expect(matcher.rollback()).toBe(false);
    expect(gallery.entry('c4')!.count).toBe(2);
  });

  it('refuses (false) when something else changed the gallery meanwhile: an erasure or merge', () => {
    const { faces, ids, matcher, enrol, visit } = setup(20);
    matcher.begin();
    matcher.decide(visit(faces.sighting(ids, 0.8, 1)), enrol);
    matcher.forget('c2');
    expect(matcher.rollback()).toBe(false);
    matcher.begin();
    matcher.merge('c3', 'c4');
    expect(matcher.rollback()).toBe(false);
  });
});
