// Parley's model messages as the AI SDK takes them (ai-sdk-provider.ts sends them): tool calls and results,
// images and files, and text files inlined as text (each file as a stand-in for its base64 or its text, which
// the request's body streams: file-stand-ins.ts); and the tools offered, without `execute`.
import { type JSONValue, jsonSchema, type ModelMessage as SdkMessage, type ToolSet, tool } from 'ai';
import type { FileStandIns } from './file-stand-ins.ts';
import { escapeBlock, fileBlock } from './prompt.ts';
import type { ModelMessage, ModelPart, ModelToolResult, ModelToolSpec } from './provider.ts';

// Inlined as text because most compatible servers (vLLM, Ollama, llama.cpp) reject `file` parts.
const INLINE_MIMES = new Set(['text/plain', 'text/markdown', 'text/csv', 'application/json']);

/** The tools offered, without `execute`: the SDK stops at the model's calls, which the step loop makes. */
export function toolSet(specs: readonly ModelToolSpec[]): ToolSet {
  return Object.fromEntries(
    specs.map((spec) => [
      spec.name,
      tool({ description: spec.description, inputSchema: jsonSchema(spec.input_schema) }),
    ]),
  );
}

/** One of Parley's model messages as the SDK's; its files' bytes go out as stand-ins from `files`. */
export function toSdkMessage(message: ModelMessage, files: FileStandIns): SdkMessage {
  if (message.role === 'tool') {
    return { role: 'tool', content: message.results.map(toSdkResult) };
  }
  if (message.role === 'assistant') {
    const text = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n\n');
    if (!message.tool_calls?.length) return { role: 'assistant', content: text };
    return {
      role: 'assistant',
      content: [
        ...(text === '' ? [] : [{ type: 'text' as const, text }]),
        ...message.tool_calls.map((call) => ({
          type: 'tool-call' as const,
          toolCallId: call.id,
          toolName: call.name,
          input: call.input,
        })),
      ],
    };
  }
  return { role: 'user', content: message.content.map((part) => toSdkPart(part, files)) };
}

function toSdkResult(result: ModelToolResult) {
  const value = jsonValue(result.output);
  return {
    type: 'tool-result' as const,
    toolCallId: result.call_id,
    toolName: result.name,
    // An error result is flagged as one where the wire can say so (Anthropic's `is_error`).
    output:
      result.status === 'ok' ? { type: 'json' as const, value } : { type: 'error-json' as const, value },
  };
}

/** A tool's output as JSON: it came as JSON (an HTTP body, an MCP result); a missing one is null. */
function jsonValue(output: unknown): JSONValue {
  return JSON.parse(JSON.stringify(output) ?? 'null');
}

function toSdkPart(part: ModelPart, files: FileStandIns) {
  if (part.type === 'text') return { type: 'text' as const, text: part.text };
  const mediaType = part.mime_type;
  if (part.type === 'file' && INLINE_MIMES.has(mediaType.split(';')[0]?.trim().toLowerCase() ?? '')) {
    // The file's text goes into the body as it streams, escaped as the wrapper escapes it.
    return { type: 'text' as const, text: fileBlock(part.name, files.addText(part.data, escapeBlock)) };
  }
  // Inline data given as a string is base64 to the SDK, which every provider copies into its body as it is.
  const data = { type: 'data' as const, data: files.add(part.data) };
  // An image is a file part of an image type (the SDK's `image` part is deprecated and warns on every call).
  return part.type === 'image'
    ? { type: 'file' as const, data, mediaType }
    : { type: 'file' as const, data, mediaType, filename: part.name };
}
