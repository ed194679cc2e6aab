// Heavy turns, for the test and the measurement of what they cost (issue 28): sessions of an agent, each with
// about 4M characters of history, and a message naming two 16 MB images; made of large images that pass as
// PNGs and long prose that V8 keeps two bytes a character, as most real text is kept.
import { randomBytes } from 'node:crypto';

/** Messages of sixteen 32,000-character blocks stored in each session: a turn reads about 4M characters. */
export const STORED_MESSAGES = 8;
/** The size of the images, near 16 MB (each a byte more than this, and one more for the second). */
export const IMAGE_BYTES = 16_000_000;

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

/** A service's API, as far as heavy turns need it: a POST of JSON, answered with its status and text. */
export type Post = (path: string, body: unknown) => Promise<{ status: number; text: string }>;

/**
 * `count` sessions of `agentId`, each with STORED_MESSAGES authored assistant messages (stored without a
 * model call), four sends at a time; and two images in the tenant's pool. Throws on any refusal.
 */
export async function heavySessions(
  service: { url: string; apiKey: string; post: Post },
  agentId: string,
  count: number,
): Promise<{ sessions: string[]; images: string[] }> {
  const created = async (path: string, body: unknown) => {
    const answer = await service.post(path, body);
    if (answer.status !== 201)
      throw new Error(`POST ${path} answered ${answer.status}: ${answer.text.slice(0, 500)}`);
    return JSON.parse(answer.text) as { id: string };
  };
  const images: string[] = [];
  for (const seed of [1, 2]) {
    const form = new FormData();
    form.append('file', new Blob([bigPng(IMAGE_BYTES + seed)], { type: 'image/png' }), `big-${seed}.png`);
    const response = await fetch(`${service.url}/v1/agents/files`, {
      method: 'POST',
      headers: { 'x-api-key': service.apiKey },
      body: form,
    });
    const text = await response.text();
    if (response.status !== 201) throw new Error(`the upload answered ${response.status}: ${text}`);
    images.push((JSON.parse(text) as { id: string }).id);
  }
  const sessions: string[] = [];
  for (let i = 0; i < count; i++) sessions.push((await created(`/v1/agents/${agentId}/sessions`, {})).id);
  const queue = sessions.flatMap((id) => Array.from({ length: STORED_MESSAGES }, (_, m) => ({ id, m })));
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const content = longContent(16, next.m);
        await created(`/v1/agents/sessions/${next.id}/messages`, { role: 'assistant', content });
      }
    }),
  );
  return { sessions, images };
}

/** A heavy turn's message: fourteen long blocks and the two images. */
export const heavyContent = (images: readonly string[]) => [
  ...longContent(14, STORED_MESSAGES),
  ...images.map((file_id) => ({ type: 'image', file_id })),
];
