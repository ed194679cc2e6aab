// What the console remembers, in this tab's sessionStorage only (gone when the tab closes, never sent
// anywhere but as the API key header): the API key and the name the operator signs replies with.
import { ParleyClient } from '@parley/client';

const KEY = 'parley-console-key';
const NAME = 'parley-console-operator';

function read(name: string): string | null {
  try {
    return sessionStorage.getItem(name);
  } catch {
    return null;
  }
}

export const storedKey = () => read(KEY);
export const storedName = () => read(NAME);

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, key);
}

export function storeName(name: string | null): void {
  if (name === null) sessionStorage.removeItem(NAME);
  else sessionStorage.setItem(NAME, name);
}

/** A client of this origin's API with `key`. */
export function clientFor(key: string): ParleyClient {
  return new ParleyClient({ baseUrl: location.origin, apiKey: key, maxRetries: 1 });
}

/** A stable id for the operator's name, as messages carry it (`author.id`). */
export function operatorId(name: string): string {
  const slug = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  return `op_${slug || 'operator'}`.slice(0, 200);
}
