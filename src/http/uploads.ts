// Multipart uploads shared by the API-key file pool and (later) conversation uploads: the body schema,
// the 415 for non-multipart requests, and turning the `file` part into a checked name, type and bytes.
import type { MultipartFile, MultipartValue } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError, ValidationError } from '../errors.ts';
import { sniffFileType } from '../files/sniff.ts';

const isFilePart = (v: unknown): v is MultipartFile =>
  typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'file';
const isFieldPart = (v: unknown): v is MultipartValue<string> =>
  typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'field';

export const filePart = z
  .custom<MultipartFile>(isFilePart, 'Expected a file part')
  .meta({ type: 'string', format: 'binary', description: 'The file (one per request)' });

export const textPart = z.custom<MultipartValue<string>>(isFieldPart, 'Expected a text field');

/** onRequest guard: upload routes take multipart/form-data only (checked before the body is read). */
export async function requireMultipart(request: FastifyRequest) {
  // isMultipart() is only known once the body parser ran; the header is known now.
  const type = request.headers['content-type']?.toLowerCase() ?? '';
  if (!type.startsWith('multipart/form-data')) {
    throw new AppError(
      'unsupported_media_type',
      'Send the file as multipart/form-data with a part named "file".',
      {
        context: { expected: 'multipart/form-data' },
      },
    );
  }
}

/** The file name without any client path, control characters or excess length. */
function cleanName(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? '';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return clean.slice(0, 255) || 'upload';
}

export interface CheckedUpload {
  name: string;
  mime_type: string;
  content: Buffer;
}

/** Reads the buffered `file` part and checks it: 422 when empty, 415 when its bytes are not an accepted type. */
export async function checkUpload(part: MultipartFile): Promise<CheckedUpload> {
  const content = await part.toBuffer();
  if (content.length === 0) throw ValidationError.at(['body', 'file'], 'The file is empty', 'value_error');
  const name = cleanName(part.filename);
  const sniffed = await sniffFileType(content, name, part.mimetype);
  if (!sniffed.ok) {
    throw new AppError('unsupported_media_type', sniffed.reason, {
      context: { declared: part.mimetype, ...(sniffed.detected ? { detected: sniffed.detected } : {}) },
    });
  }
  return { name, mime_type: sniffed.mime, content };
}
