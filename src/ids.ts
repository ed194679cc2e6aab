// Resource ids: a short type prefix plus a random nanoid, so an id says what it names in logs and support tickets.
import { customAlphabet } from 'nanoid';

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const random = customAlphabet(alphabet, 21);

export type IdPrefix =
  | 'usr'
  | 'file'
  | 'ses'
  | 'msg'
  | 'key'
  | 'turn'
  | 'fb'
  | 'tok'
  | 'call'
  | 'wh'
  | 'whd'
  | 'evt';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${random()}`;
}
