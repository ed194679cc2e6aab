// A chat request's newest user message read as a send (the AI SDK chat routes): its text parts become text
// blocks, its file parts naming uploaded Parley files become image or file blocks, and whatever cannot be sent
// is a 422 naming it.
import { MAX_BLOCKS, MAX_TEXT, type UIMessageInput } from '#schemas';
import type { BlockInput } from '../../actors/session-service.ts';
import { ValidationError, type ValidationIssue } from '../../errors.ts';

/** A user message id doubles as the Idempotency-Key, so it must be one (as idempotencyHeaders). */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;
/** A Parley file id, as a file part's url names an uploaded file. */
const FILE_ID = /^file_[0-9A-Za-z]{1,195}$/;

/** What a chat request sends: the newest user message, as content blocks, and its id. */
export interface ChatSend {
  id: string;
  content: BlockInput[];
  /** Where the body names the file of content block `i` (its file part's `url`), for a refusal. */
  fileAt: (i: number) => (string | number)[];
}

/**
 * The newest user message of `messages` as a send, or a 422 naming what in it cannot be sent. Empty text
 * parts are skipped (a message of files only may carry one); parts other than text and file are ignored.
 */
export function chatSend(messages: readonly UIMessageInput[]): ChatSend {
  const index = messages.findLastIndex((m) => m.role === 'user');
  const message = messages[index];
  if (!message) {
    throw ValidationError.at(
      ['body', 'messages'],
      'No user message: the newest user message is what is sent',
      'value_error',
    );
  }
  const issues: ValidationIssue[] = [];
  const at = (path: (string | number)[], msg: string, type: string) =>
    issues.push({ loc: ['body', 'messages', index, ...path], msg, type });
  if (!KEY_PATTERN.test(message.id)) {
    at(['id'], 'A user message id is 1 to 255 printable ASCII characters', 'string_pattern_mismatch');
  }
  const content: BlockInput[] = [];
  /** The part each block came from. */
  const partOf: number[] = [];
  message.parts.forEach((part, p) => {
    if (part.type === 'text') {
      const { text } = part;
      if (typeof text !== 'string') at(['parts', p, 'text'], 'Field required', 'missing');
      else if (/\p{Cs}/u.test(text))
        at(
          ['parts', p, 'text'],
          'Input should be well-formed Unicode (no lone surrogates)',
          'string_unicode',
        );
      else if (text.length > MAX_TEXT)
        at(['parts', p, 'text'], `String should have at most ${MAX_TEXT} characters`, 'string_too_long');
      else if (text !== '') {
        content.push({ type: 'text', text });
        partOf.push(p);
      }
    } else if (part.type === 'file') {
      const { url, mediaType } = part;
      if (typeof url !== 'string' || !FILE_ID.test(url)) {
        at(
          ['parts', p, 'url'],
          "Only files uploaded to Parley can be sent: upload the file first and give its id (file_…) as the part's url",
          'value_error',
        );
      } else {
        const image = typeof mediaType === 'string' && mediaType.startsWith('image/');
        content.push({ type: image ? 'image' : 'file', file_id: url });
        partOf.push(p);
      }
    }
  });
  if (issues.length > 0) throw new ValidationError(issues);
  if (content.length === 0) {
    at(['parts'], 'The user message has no text or file to send', 'too_short');
  } else if (content.length > MAX_BLOCKS) {
    at(['parts'], `At most ${MAX_BLOCKS} text and file parts`, 'too_long');
  }
  if (issues.length > 0) throw new ValidationError(issues);
  return {
    id: message.id,
    content,
    fileAt: (i) => ['body', 'messages', index, 'parts', partOf[i] ?? i, 'url'],
  };
}
