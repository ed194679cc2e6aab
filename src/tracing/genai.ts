// The OpenTelemetry GenAI semantic conventions as Parley follows them (version pinned in
// docs/reference/traces.md): attribute names, finish reasons, error types, and the messages of a model
// call in the conventions' JSON form, for when content capture is on. File and image bytes never appear:
// a file is its type only. Long texts are cut, so that one span stays within what collectors take.
import type {
  TracedModelMessage,
  TracedModelReply,
  TracedPart,
  TracedToolCall,
  TracedToolOutcome,
} from './tracer.ts';

/** The version of the GenAI conventions these attributes follow. */
export const GENAI_SEMCONV_VERSION = '1.41.0';

/** Longest text of one message part (or one tool input or result) recorded when content is captured. */
export const MAX_CONTENT_CHARS = 8192;
/** Longest captured attribute as a whole: the oldest messages are left out beyond it. */
export const MAX_CAPTURED_CHARS = 128 * 1024;

/** Parley's stop reasons as the conventions' finish reasons. */
export function finishReason(reply: Pick<TracedModelReply, 'stop_reason' | 'tool_calls'>): string {
  if (reply.tool_calls.length > 0) return 'tool_call';
  switch (reply.stop_reason) {
    case 'end':
      return 'stop';
    case 'max_tokens':
      return 'length';
    default:
      return reply.stop_reason;
  }
}

/**
 * A low-cardinality name of what went wrong: Parley's error code (agent_timeout, agent_rate_limited, …),
 * else the error's class name, else `_OTHER`. Never its message, which may quote a prompt or a provider.
 */
export function errorType(err: unknown): string {
  if (err !== null && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && /^[a-z][a-z0-9_]{0,63}$/.test(code)) return code;
    const name = (err as { name?: unknown }).name;
    if (typeof name === 'string' && name !== 'Error' && name.length <= 64) return name;
  }
  return '_OTHER';
}

/** A failed tool outcome's kind (`{ error: 'timeout', … }`), as for errorType. */
export function toolErrorType(outcome: TracedToolOutcome): string {
  const error = (outcome.output as { error?: unknown } | null)?.error;
  return typeof error === 'string' && /^[a-z][a-z0-9_]{0,63}$/.test(error) ? error : '_OTHER';
}

const cut = (text: string) =>
  text.length <= MAX_CONTENT_CHARS ? text : `${text.slice(0, MAX_CONTENT_CHARS)}… (${text.length} chars)`;

/** A JSON value as text, cut when long. */
export const capturedJson = (value: unknown): string => cut(JSON.stringify(value ?? null));

function part(p: TracedPart) {
  if (p.type === 'text') return { type: 'text', content: cut(p.text) };
  // Generic parts: the conventions' file and blob parts need an id or the bytes, and neither is given away.
  return p.type === 'image'
    ? { type: 'image', mime_type: p.mime_type, modality: 'image' }
    : { type: 'file', mime_type: p.mime_type };
}

const toolCallPart = (c: TracedToolCall) => ({
  type: 'tool_call',
  id: c.id,
  name: c.name,
  arguments: capturedJson(c.input),
});

/** The messages sent, oldest first, as `gen_ai.input.messages` (JSON text), within MAX_CAPTURED_CHARS. */
export function inputMessages(messages: readonly TracedModelMessage[]): string {
  const all = messages.map((m) =>
    m.role === 'tool'
      ? {
          role: 'tool',
          parts: m.results.map((r) => ({
            type: 'tool_call_response',
            id: r.call_id,
            response: capturedJson(r.output),
          })),
        }
      : { role: m.role, parts: [...m.content.map(part), ...(m.tool_calls ?? []).map(toolCallPart)] },
  );
  return withinLimit(all);
}

/** The reply, as `gen_ai.output.messages` (JSON text). */
export function outputMessages(reply: TracedModelReply): string {
  const parts = [
    ...(reply.text === '' ? [] : [{ type: 'text', content: cut(reply.text) }]),
    ...reply.tool_calls.map(toolCallPart),
  ];
  return withinLimit([{ role: 'assistant', parts, finish_reason: finishReason(reply) }]);
}

/** The system prompt, as `gen_ai.system_instructions` (JSON text). */
export const systemInstructions = (system: string): string =>
  JSON.stringify([{ type: 'text', content: cut(system) }]);

/** The newest messages whose JSON fits MAX_CAPTURED_CHARS (at least the newest one). */
function withinLimit(messages: readonly object[]): string {
  let kept = messages;
  let text = JSON.stringify(kept);
  while (text.length > MAX_CAPTURED_CHARS && kept.length > 1) {
    kept = kept.slice(Math.ceil(kept.length / 4));
    text = JSON.stringify(kept);
  }
  return text;
}
