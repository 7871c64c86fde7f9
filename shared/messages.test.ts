import { describe, expect, it } from 'vitest';
import { EMBEDDING_DIMS, Embedding, decodeEmbedding, encodeEmbedding } from './messages.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** The character with the lowest of its six bits set: a pad bit when it is the last before `=` (2,048 bytes end in 16 bits of 18). */
const padBitSet = (c: string) => ALPHABET[ALPHABET.indexOf(c) | 1]!;

describe('the embedding on the wire', () => {
  const values = Array.from({ length: EMBEDDING_DIMS }, (_, i) => Math.sin(i) / 10);
  const text = encodeEmbedding(values);

  it('takes what encodeEmbedding writes, and decodes it to the same float32 values', () => {
    expect(text).toHaveLength(2732);
    expect(Embedding.safeParse(text).success).toBe(true);
    expect([...decodeEmbedding(text)]).toEqual([...Float32Array.from(values)]);
  });

  it('refuses what is not padded base64 of 2,048 bytes, saying which', () => {
    const message = (s: unknown) => {
      const r = Embedding.safeParse(s);
      return r.success ? 'accepted' : r.error.issues[0]!.message;
    };
    const cases: [string, string][] = [
      [text.slice(0, -1), 'must be base64'], // unpadded: not groups of four
      [`${text.slice(0, 100)}*${text.slice(101)}`, 'must be base64'], // a character outside the alphabet
      [`${text.slice(0, 100)}=${text.slice(101)}`, 'must be base64'], // padding in the middle
      [`${text.slice(0, -4)}A===`, 'must be base64'], // three padding characters
      [`${text.slice(0, -4)}\n${text.slice(-3)}`, 'must be base64'],
      [`${text.slice(0, 100)}-${text.slice(101)}`, 'must be base64'], // base64url's alphabet
      [`${text.slice(0, -2)}${padBitSet(text.at(-2)!)}=`, 'must be base64'], // a pad bit that is not zero
      [Buffer.alloc(2051).toString('base64'), `must encode ${EMBEDDING_DIMS} float32 values (2048 bytes)`],
      [text.slice(0, -4), `must encode ${EMBEDDING_DIMS} float32 values (2048 bytes)`],
    ];
    for (const [s, want] of cases) expect(message(s), JSON.stringify(s.slice(-8))).toBe(want);
    expect(message(42)).toMatch(/string/);
  });
});
