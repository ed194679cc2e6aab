// File bytes sent to a model without a copy of them in memory. Every wire Parley speaks carries a file as
// base64 inside its JSON body (a text file as text), and the AI SDK builds that body as one string: two 16 MB
// images made 43 MB of base64, then a 46 MB body, then its 46 MB UTF-8 copy, all held while a slow model
// thought. Here the SDK is handed a stand-in for each file's base64 or text (a short token it copies into the
// body as it is), and the fetch the providers are given streams the body with each stand-in replaced by what
// it stands for, made a chunk at a time from the bytes (docs/internals/decisions.md#files-a-turn-sends).
import { randomBytes } from 'node:crypto';

/** Stand-ins are this and 24 hex digits: base64 characters, 32 of them, so any base64 check passes them. */
const PREFIX = 'PRLYFILE';
const TOKEN_LENGTH = PREFIX.length + 24;
/** Base64 is made from this many bytes at a time: a multiple of 3, so that only the last chunk is padded. */
const FILE_CHUNK = 3 * 16_384;
/** The body's text is encoded this many characters at a time. */
const TEXT_CHUNK = 65_536;

/**
 * What a stand-in stands for: a file's base64, or its text (UTF-8, as `map` makes it) escaped as in a JSON
 * string.
 */
type Standing = { data: Uint8Array; text?: (text: string) => string };

/** The files whose stand-ins are out, by stand-in; 96 random bits each, so no text can name one by chance. */
const live = new Map<string, Standing>();

/** The stand-ins of one model call: given out while its request is built, let go once the call is over. */
export class FileStandIns {
  readonly #tokens: string[] = [];

  /** A stand-in for `data`'s base64, valid until release(). */
  add(data: Uint8Array): string {
    return this.#add({ data });
  }

  /** A stand-in, inside a JSON string, for `data` read as UTF-8 and passed through `map`; valid until release(). */
  addText(data: Uint8Array, map: (text: string) => string): string {
    return this.#add({ data, text: map });
  }

  #add(standing: Standing): string {
    const token = PREFIX + randomBytes(12).toString('hex');
    live.set(token, standing);
    this.#tokens.push(token);
    return token;
  }

  release(): void {
    for (const token of this.#tokens) live.delete(token);
    this.#tokens.length = 0;
  }
}

type Fetch = typeof globalThis.fetch;

/**
 * `base` (the global fetch as it is at each call, by default), with a string body that holds stand-ins sent as
 * a stream in which each is what it stands for (a file's base64, or its escaped text), with its exact
 * Content-Length. Any other request goes as it is.
 */
export function fetchWithFiles(given?: Fetch): Fetch {
  return (input, init) => {
    const base = given ?? globalThis.fetch;
    const body = init?.body;
    const parts = typeof body === 'string' && body.includes(PREFIX) ? split(body) : null;
    if (!init || !parts) return base(input, init);
    let length = 0;
    for (const part of parts) {
      if (typeof part === 'string') length += Buffer.byteLength(part);
      else if (!part.text) length += 4 * Math.ceil(part.data.length / 3);
      // A text's escaped length is known only by escaping it: once here, a chunk at a time, and again as sent.
      else for (const piece of escapedText(part)) length += Buffer.byteLength(piece);
    }
    const headers = new Headers(init.headers);
    headers.set('content-length', String(length));
    return base(input, { ...init, headers, body: chunks(parts), duplex: 'half' } as RequestInit);
  };
}

/** The body as its text between stand-ins and the files they stand for; null when it holds none that is out. */
function split(body: string): (string | Standing)[] | null {
  const parts: (string | Standing)[] = [];
  let from = 0;
  let at = body.indexOf(PREFIX);
  while (at >= 0) {
    const standing = live.get(body.slice(at, at + TOKEN_LENGTH));
    if (standing) {
      parts.push(body.slice(from, at), standing);
      from = at + TOKEN_LENGTH;
    }
    at = body.indexOf(PREFIX, standing ? from : at + 1);
  }
  if (parts.length === 0) return null;
  parts.push(body.slice(from));
  return parts;
}

/** The body's bytes, a chunk at a time, made as the connection takes them. */
async function* chunks(parts: readonly (string | Standing)[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) {
    if (typeof part === 'string') {
      for (let at = 0; at < part.length; ) {
        let end = Math.min(part.length, at + TEXT_CHUNK);
        // A surrogate pair is encoded whole: cut between its halves, each would become U+FFFD.
        const last = part.charCodeAt(end - 1);
        if (end < part.length && last >= 0xd800 && last <= 0xdbff) end++;
        yield Buffer.from(part.slice(at, end), 'utf8');
        at = end;
      }
    } else if (part.text) {
      for (const piece of escapedText(part)) yield Buffer.from(piece, 'utf8');
    } else {
      const { data } = part;
      for (let at = 0; at < data.length; at += FILE_CHUNK) {
        const bytes = Buffer.from(data.buffer, data.byteOffset + at, Math.min(FILE_CHUNK, data.length - at));
        yield Buffer.from(bytes.toString('base64'), 'latin1');
      }
    }
  }
}

/**
 * A text stand-in's text, mapped and escaped as JSON.stringify escapes a string's content, a chunk at a time:
 * the decoder keeps a character cut between chunks for the next one, so that no chunk escapes half of one.
 */
function* escapedText({ data, text }: Standing): Generator<string> {
  const map = text ?? ((t: string) => t);
  const decoder = new TextDecoder();
  const escaped = (piece: string) => JSON.stringify(map(piece)).slice(1, -1);
  for (let at = 0; at < data.length; at += FILE_CHUNK) {
    yield escaped(decoder.decode(data.subarray(at, at + FILE_CHUNK), { stream: true }));
  }
  yield escaped(decoder.decode());
}
