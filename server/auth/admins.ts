import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { z } from 'zod';
import type { Store } from '../db/open.js';
import { writeAudit } from '../audit/service.js';
import { generatePassword, hashPassword } from './passwords.js';
import { one } from '../db/query.js';
import { users } from '../db/tables.js';

export async function adminExists(store: Store): Promise<boolean> {
  return (await one(store.db.select({ id: users.id }).from(users).where(eq(users.role, 'admin')).limit(1))) !== undefined;
}

export class AdminError extends Error {}

/** Creates a platform admin. Returns the password (generated when none is given): shown once, never stored. */
export async function createAdmin(store: Store, email: string, password?: string): Promise<{ email: string; password: string; generated: boolean }> {
  const address = email.trim().toLowerCase();
  if (!z.email().safeParse(address).success) throw new AdminError(`"${email}" is not an email address.`);
  if (password !== undefined && password.length < 8) throw new AdminError('The password must be at least 8 characters.');
  const plain = password ?? generatePassword();
  const hash = await hashPassword(plain);
  await store.tx(async () => {
    if (await one(store.db.select({ id: users.id }).from(users).where(eq(users.email, address)))) {
      throw new AdminError(`${address} already has an account.`);
    }
    const id = randomUUID();
    (await store.db.insert(users).values({ id, companyId: null, email: address, fullName: 'Platform admin', role: 'admin', passwordHash: hash, active: true, createdAt: new Date().toISOString() }));
    await writeAudit(store, { action: 'admin.create', companyId: null, target: id, detail: { email: address } });
  });
  return { email: address, password: plain, generated: password === undefined };
}
