// Decides a file's type from its bytes: binary formats by signature (file-type), text formats by a
// strict UTF-8 check plus the declared type or extension. The declared type alone is never trusted.
import { extname } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';

export const allowedMimeTypes: readonly string[] = [
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'application/pdf',
  'text/plain',
  'text/markdown',
  'text/csv',
  'application/json',
];

const textTypes: Record<string, string> = {
  'text/plain': 'text/plain',
  'text/markdown': 'text/markdown',
  'text/x-markdown': 'text/markdown',
  'text/csv': 'text/csv',
  'application/json': 'application/json',
};

const textExtensions: Record<string, string> = {
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.csv': 'text/csv',
  '.json': 'application/json',
};

export type SniffResult = { ok: true; mime: string } | { ok: false; reason: string; detected?: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

function asText(content: Buffer): string | null {
  if (content.includes(0)) return null;
  try {
    return utf8.decode(content);
  } catch {
    return null;
  }
}

/** The allowed MIME type of `content`, or why it is refused. `declared` is the client's Content-Type of the part. */
export async function sniffFileType(
  content: Buffer,
  filename: string,
  declared: string,
): Promise<SniffResult> {
  const detected = await fileTypeFromBuffer(content);
  if (detected) {
    return allowedMimeTypes.includes(detected.mime)
      ? { ok: true, mime: detected.mime }
      : { ok: false, reason: `Files of type ${detected.mime} are not accepted.`, detected: detected.mime };
  }
  const text = asText(content);
  if (text === null) return { ok: false, reason: 'The bytes are not of any accepted type.' };

  const declaredType = declared.split(';')[0]?.trim().toLowerCase() ?? '';
  let mime = textTypes[declaredType];
  if (!mime) {
    if (allowedMimeTypes.includes(declaredType)) {
      return {
        ok: false,
        reason: `The file was declared ${declaredType} but its bytes are text.`,
        detected: 'text',
      };
    }
    mime = textExtensions[extname(filename).toLowerCase()] ?? 'text/plain';
  }
  if (mime === 'application/json') {
    try {
      JSON.parse(text);
    } catch {
      return { ok: false, reason: 'The file was declared JSON but does not parse as JSON.' };
    }
  }
  return { ok: true, mime };
}
