import { describe, expect, it } from 'vitest';
import { databaseUnavailable } from './unavailable.js';

const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('databaseUnavailable', () => {
  it('says yes to a database that cannot take the write now, wherever the error is in the cause chain', () => {
    for (const e of [
      coded('ECONNREFUSED'),
      coded('08006'),
      coded('57P01'),
      coded('53300'),
      coded('40001'),
      coded('40P01'),
      coded('SQLITE_BUSY'),
      coded('SQLITE_FULL'),
      coded('SQLITE_IOERR_WRITE'),
      coded('55000', 'database "x" is not currently accepting connections'),
      new Error('Connection terminated unexpectedly'),
      new Error('Failed query: insert ...', { cause: coded('08P01') }),
    ]) expect(databaseUnavailable(e), String((e as { code?: string }).code ?? e.message)).toBe(true);
  });

  it('says no to a refusal of the write itself', () => {
    for (const e of [coded('23505'), coded('22P02'), coded('SQLITE_CONSTRAINT_UNIQUE'), coded('55000', 'other'), new Error('boom'), undefined, 'text']) {
      expect(databaseUnavailable(e)).toBe(false);
    }
  });
});
