// What an MCP tool's result is to the model (docs/guides/tools.md#mcp-tools): its structured content, or its
// content parts made plain, as one bounded ToolOutcome. Separate from mcp-tools.ts, which holds the
// connection.
import type {
  CallToolResult,
  CompatibilityCallToolResult,
  ContentBlock,
} from '@modelcontextprotocol/sdk/types.js';
import { MAX_TOOL_RESULT_BYTES, type ToolOutcome } from './tool.ts';

/** A content part as the model reads it: text as a string, other parts described without their bytes. */
function simplifyPart(part: ContentBlock): unknown {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'image':
    case 'audio':
      return { type: part.type, mime_type: part.mimeType, note: 'binary content not shown' };
    case 'resource':
      return 'text' in part.resource
        ? { type: 'resource', uri: part.resource.uri, text: part.resource.text }
        : { type: 'resource', uri: part.resource.uri, note: 'binary content not shown' };
    case 'resource_link':
      return { type: 'resource_link', uri: part.uri, name: part.name };
  }
}

/**
 * A result's output: its `structuredContent` when present; else its content, where a single text part is
 * that text (parsed when it is a JSON object or array, as servers often send JSON as text), no part is null
 * and several parts are a list.
 */
export function outputOf(result: Pick<CallToolResult, 'content' | 'structuredContent'>): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const parts = result.content ?? [];
  if (parts.length === 0) return null;
  if (parts.length > 1) return parts.map(simplifyPart);
  const only = simplifyPart(parts[0]);
  if (typeof only === 'string' && /^\s*[[{]/.test(only)) {
    try {
      return JSON.parse(only);
    } catch {
      // Not JSON after all: the text it is.
    }
  }
  return only;
}

const hasContent = (result: CompatibilityCallToolResult): result is CallToolResult =>
  Array.isArray(result.content);

/** A result as the model is given it; beyond MAX_TOOL_RESULT_BYTES of JSON, an error saying so. */
export function outcomeOf(result: CompatibilityCallToolResult): ToolOutcome {
  // A result without `content` is the `{ toolResult }` of servers of the protocol's first version.
  const output = hasContent(result) ? outputOf(result) : (result.toolResult ?? null);
  if (Buffer.byteLength(JSON.stringify(output)) > MAX_TOOL_RESULT_BYTES) {
    return { status: 'error', output: { error: 'too_large', limit_bytes: MAX_TOOL_RESULT_BYTES } };
  }
  return { status: result.isError === true ? 'error' : 'ok', output };
}
