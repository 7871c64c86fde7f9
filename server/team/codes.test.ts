import { describe, expect, it } from 'vitest';
import { codePattern, generateInvitationCode, normaliseCode } from './codes.js';

describe('invitation codes', () => {
  it('are four groups of six upper-case letters and digits, joined by dashes, and do not repeat', () => {
    const seen = new Set<string>();
    const chars = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const code = generateInvitationCode();
      expect(code).toMatch(codePattern);
      seen.add(code);
      for (const ch of code.replaceAll('-', '')) chars.add(ch);
    }
    expect(seen.size).toBe(2000);
    expect(chars.size).toBe(36); // the whole alphabet is used: letters and digits
  });

  it('normalise: dashes, spaces and case do not matter', () => {
    expect(normaliseCode('abc123-def456-ghi789-jkl012')).toBe('ABC123DEF456GHI789JKL012');
    expect(normaliseCode(' ABC123 def456\tGHI789-jkl012 ')).toBe('ABC123DEF456GHI789JKL012');
    expect(normaliseCode('---')).toBe('');
  });
});
