// Resource ids: a short type prefix, so an id says what it names in logs and support tickets, then 21
// characters: the creation time and a random part.
import { customAlphabet } from 'nanoid';

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const random = customAlphabet(alphabet, 14);
/** Base 62 in 7 characters reaches 62^7 ms, past the year 2080. */
const TIME_CHARS = 7;

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
  | 'evt'
  // An operation of a session that is no turn of its own (a decision, a cancel, a paused turn going on).
  | 'op';

/**
 * `prefix_`, the time in milliseconds (7 characters of base 62, in ASCII order, so ids of one kind sort by
 * creation) and 14 random characters (83 bits). A row keyed by such an id goes at the end of its index, where
 * the other rows of the same commit go, instead of onto a page of its own: fewer pages per commit to write.
 */
export function newId(prefix: IdPrefix): string {
  let time = Date.now();
  let encoded = '';
  for (let i = 0; i < TIME_CHARS; i++) {
    encoded = alphabet[time % 62] + encoded;
    time = Math.floor(time / 62);
  }
  return `${prefix}_${encoded}${random()}`;
}
