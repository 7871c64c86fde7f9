/**
 * The signed-in session in Web Storage. sessionStorage (this tab, gone when it closes) unless the person ticked
 * "Keep me signed in on this computer", then localStorage (every tab, survives a restart). Exactly one of the two
 * holds it at a time.
 */

export interface User {
  id: string;
  email: string;
  full_name: string;
  role: 'staff' | 'manager' | 'owner' | 'admin';
  client_id: string;
  client_name: string;
}

export interface Session {
  access_token: string;
  refresh_token: string;
  expires_at: string;
  user: User;
}

const KEY = 'footfall.session';

function read(store: Storage): Session | null {
  try {
    const text = store.getItem(KEY);
    if (!text) return null;
    const s = JSON.parse(text) as Partial<Session>;
    if (typeof s.access_token !== 'string' || typeof s.refresh_token !== 'string' || !s.user || typeof s.user.role !== 'string') return null;
    return s as Session;
  } catch {
    return null;
  }
}

/** The current session, or null when signed out. */
export function load(): Session | null {
  return read(localStorage) ?? read(sessionStorage);
}

/** Whether the session lives in localStorage (the person asked to stay signed in). */
export function remembered(): boolean {
  return read(localStorage) !== null;
}

/** Stores a session (after sign-in, or a refresh: then in the same place as before). */
export function save(s: Session, remember = remembered()): void {
  const text = JSON.stringify(s);
  if (remember) {
    localStorage.setItem(KEY, text);
    sessionStorage.removeItem(KEY);
  } else {
    sessionStorage.setItem(KEY, text);
    localStorage.removeItem(KEY);
  }
}

export function clear(): void {
  localStorage.removeItem(KEY);
  sessionStorage.removeItem(KEY);
}

export const isPlatformAdmin = (u: User): boolean => u.role === 'admin' && u.client_id === '';

const RANK: Record<string, number> = { staff: 1, manager: 2, owner: 3 };

/** Whether a company user has at least this role (roles are nested: staff, manager, owner). */
export function atLeast(u: User, role: 'staff' | 'manager' | 'owner'): boolean {
  return (RANK[u.role] ?? 0) >= RANK[role]!;
}
