// The makings of heavy turns, for the test and the measurement of what they cost (issue 28): large images
// that pass as PNGs, and long prose that V8 keeps two bytes a character, as most real text is kept.
import { randomBytes } from 'node:crypto';

/** A PNG of `bytes` bytes whose pixels nobody reads: the signature, a header and a private chunk of noise. */
export function bigPng(bytes: number): Buffer {
  const png = Buffer.alloc(bytes);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(png, 0);
  // A chunk: its length, its type, its data (written by the caller), and a CRC nobody checks.
  const chunk = (at: number, type: string, length: number) => {
    png.writeUInt32BE(length, at);
    png.write(type, at + 4, 'latin1');
    return at + 12 + length;
  };
  png.writeUInt32BE(1, 16);
  png.writeUInt32BE(1, 20);
  png[24] = 8;
  png[25] = 2;
  let at = chunk(8, 'IHDR', 13);
  const noise = bytes - at - 3 * 12;
  randomBytes(noise).copy(png, at + 8);
  at = chunk(at, 'prVt', noise);
  at = chunk(at, 'IDAT', 0);
  chunk(at, 'IEND', 0);
  return png;
}

/** Prose of `chars` characters with a curly apostrophe, so that V8 keeps it two bytes a character. */
export const prose = (chars: number, salt: number): string =>
  `${salt} it’s the quick brown fox `.repeat(Math.ceil(chars / 20)).slice(0, chars);

/** A message's content of `blocks` text blocks of 32,000 characters each (the most a block holds). */
export const longContent = (blocks: number, salt: number) =>
  Array.from({ length: blocks }, (_, b) => ({ type: 'text', text: prose(32_000, salt * 100 + b) }));
