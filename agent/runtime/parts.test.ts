/**
 * The runtime's pure parts: placement verdicts and words, camera reasons as verdicts, the wire form of a visit,
 * network errors in words, the --server address.
 */
import { describe, expect, it } from 'vitest';
import { CheckAnswered } from '../../shared/agent-api.js';
import { VisitMessage, decodeEmbedding } from '../../shared/messages.js';
import { EnrolError, serverUrl } from '../enrol/enrol.js';
import type { Visit } from '../vision/types.js';
import { placementVerdict, placementWords, verdictForCamera } from './checks.js';
import { describeNetworkError, parseAnswer, type AgentHttpError } from './http.js';
import { visitMessage } from './visits.js';

const none = { size: 0, sharpness: 0, pose: 0, detector: 0 };

describe('placement', () => {
  it('good under 20% below the gate, marginal under 50%, poor from 50%, no_faces without faces', () => {
    expect(placementVerdict(0, 0)).toBe('no_faces');
    expect(placementVerdict(100, 19)).toBe('good');
    expect(placementVerdict(100, 20)).toBe('marginal');
    expect(placementVerdict(100, 49)).toBe('marginal');
    expect(placementVerdict(100, 50)).toBe('poor');
  });

  it('speaks to the person next to the camera about the commonest weakness', () => {
    expect(placementWords({ faces: 50, below: 20, frames: 40, causes: { ...none, size: 15, sharpness: 5 } }, 10)).toEqual({
      headline: 'Faces are too small: 40% of 50 faces were too poor to use.',
      advice: 'Move the camera closer to the door or zoom in.',
    });
    expect(placementWords({ faces: 10, below: 9, frames: 40, causes: { ...none, pose: 9 } }, 10).headline).toMatch(/^Faces are turned away/);
    expect(placementWords({ faces: 10, below: 1, frames: 40, causes: { ...none, sharpness: 1 } }, 10)).toEqual({
      headline: 'Faces are seen well: 10 faces, 10% too poor to use.',
      advice: '',
    });
    expect(placementWords({ faces: 0, below: 0, frames: 40, causes: none }, 8).headline).toBe('Nobody was seen in 8 seconds (40 pictures looked at).');
  });

  it('maps capture reasons to check verdicts', () => {
    expect(verdictForCamera('auth_failed')).toBe('auth_failed');
    expect(verdictForCamera('timeout')).toBe('unreachable');
    expect(verdictForCamera('decode_error')).toBe('no_stream');
    expect(verdictForCamera('failed')).toBe('failed');
  });
});

describe('visit on the wire', () => {
  const base: Visit = {
    visit_id: '0190f4c2-7a3b-7c1d-9e2f-0123456789ab',
    occurred_at: '2026-05-01T10:15:29.500Z',
    camera_id: 'entrance',
    quality: 0.81,
    passed_gate: true,
    track: { id: 't-1', first_seen_at: '2026-05-01T10:15:29.500Z', last_seen_at: '2026-05-01T10:15:31.000Z', frames: 23, faces_passed: 9, faces_embedded: 3, ended_by: 'lost' },
  };

  it('carries the embedding in the contract byte order, drops what the contract does not know', () => {
    const embedding = Float32Array.from({ length: 512 }, (_, i) => i / 1000);
    const msg = visitMessage(
      { ...base, embedding, recognition_model: 'faceplugin-0.0.1', attributes: { gender: 'female', age: 31.2, raw: { age: 31.2 } }, face_jpeg: Buffer.from([0xff, 0xd8]) },
      'q3Xb1234567890abcdef',
    );
    expect(VisitMessage.safeParse(msg).success).toBe(true);
    expect(decodeEmbedding(msg.embedding!)).toEqual(embedding);
    expect(msg).toMatchObject({ recognition_model: 'faceplugin-0.0.1', attributes: { gender: 'female', age: 31.2 }, face_image_id: 'q3Xb1234567890abcdef' });
    expect(msg.attributes).not.toHaveProperty('raw');
    expect(msg.track).toEqual({ id: 't-1', first_seen_at: base.track.first_seen_at, last_seen_at: base.track.last_seen_at, frames: 23 });
    expect(msg).not.toHaveProperty('face_jpeg');
  });

  it('without an embedding: counted, not identified', () => {
    const msg = visitMessage({ ...base, passed_gate: false, quality: 0.2 });
    expect(VisitMessage.safeParse(msg).success).toBe(true);
    expect(msg).not.toHaveProperty('embedding');
    expect(msg).not.toHaveProperty('recognition_model');
  });
});

describe('head office in words', () => {
  it('names the network problem', () => {
    const cause = (code: string) => Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(code), { code }) });
    expect(describeNetworkError(cause('ECONNREFUSED'), 'http://10.0.0.5:8080/api').message).toBe(
      '10.0.0.5:8080 refused the connection (is head office running there, and is the port right?)',
    );
    expect(describeNetworkError(cause('ENOTFOUND'), 'http://ho.example:8080/x').code).toBe('dns');
    expect(describeNetworkError(Object.assign(new Error('t'), { name: 'TimeoutError' }), 'http://h:1/', 2500).message).toBe(
      'h:1 did not answer within 2.5 s (is the address right, is a firewall in the way?)',
    );
  });

  it('turns an error envelope into its code, and a non-contract answer into a readable error', () => {
    expect(() => parseAnswer(409, '{"error":"conflict","message":"This check was already answered."}', CheckAnswered, 'x')).toThrow(
      expect.objectContaining({ status: 409, code: 'conflict', message: 'This check was already answered.' }),
    );
    const html = (() => {
      try {
        parseAnswer(404, '<html>', CheckAnswered, 'the enrolment');
      } catch (e) {
        return e as AgentHttpError;
      }
    })();
    expect(html).toMatchObject({ status: 404, code: 'http_error' });
    expect(parseAnswer(200, '{"state":"done","ok":true,"verdict":"good","extra":1}', CheckAnswered, 'x')).toEqual({ state: 'done', ok: true, verdict: 'good' });
  });

  it('--server: scheme optional, only http(s), no path tricks', () => {
    expect(serverUrl('head-office:8080')).toBe('http://head-office:8080');
    expect(serverUrl('https://ho.example/')).toBe('https://ho.example');
    expect(() => serverUrl('ftp://ho')).toThrow(EnrolError);
    expect(() => serverUrl('http://user:pw@ho:8080')).toThrow(/only the address/);
  });
});
