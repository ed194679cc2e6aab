// HTTP tools (docs/guides/tools.md#http-tools): a tool call is a signed JSON POST to the integrator's URL,
// answered with a bounded JSON result. Every way the tool can fail becomes an `error` outcome for the model;
// only the turn's abort rejects.
import { Webhook } from 'standardwebhooks';
import { Agent, request as httpRequest } from 'undici';
import type { HttpToolConfig } from '../agents/catalogue-tools.ts';
import { errorCode, readBounded } from '../outbound/bounded-read.ts';
import {
  idempotencyKeyOf,
  MAX_TOOL_RESULT_BYTES,
  type Tool,
  type ToolCallRequest,
  type ToolOutcome,
} from './tool.ts';

/** How much of a failing answer's body is shown to the model. */
const ERROR_MESSAGE_CHARS = 500;
/** Enough bytes for ERROR_MESSAGE_CHARS characters of UTF-8 (at most 4 bytes each). */
const ERROR_BODY_BYTES = ERROR_MESSAGE_CHARS * 4;

// One pool for every HTTP tool. The tool's own timeout (an abort signal) bounds the whole call, headers and
// body, so undici's per-phase timeouts are off: their 5 min defaults would cut a tool allowed up to 10 min.
const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0, connections: 64 });

export function httpTool(config: HttpToolConfig, options: { secret?: string }): Tool {
  // Built once: a malformed secret fails the catalogue at start rather than every call.
  const webhook = options.secret ? new Webhook(options.secret) : null;
  return {
    spec: { name: config.name, description: config.description, input_schema: config.input_schema },
    call: (request) => callHttpTool(config, webhook, request),
  };
}

async function callHttpTool(
  config: HttpToolConfig,
  webhook: Webhook | null,
  request: ToolCallRequest,
): Promise<ToolOutcome> {
  request.signal.throwIfAborted();
  const body = JSON.stringify({
    tool: config.name,
    call_id: request.callId,
    turn_id: request.turnId,
    session_id: request.sessionId,
    agent_id: request.agentId,
    input: request.input ?? null,
    user: request.user ? { id: request.user.id, reference: request.user.reference } : null,
  });
  // The message id is the call's key, so a tool that dedupes on webhook-id sees every attempt as one message.
  const key = idempotencyKeyOf(request);
  const sentAt = new Date();
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'idempotency-key': key,
    'webhook-id': key,
    'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
  };
  if (webhook) headers['webhook-signature'] = webhook.sign(key, sentAt, body);

  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new Error('tool timeout')), config.timeout_ms);
  try {
    const response = await httpRequest(config.url, {
      dispatcher: agent,
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.any([request.signal, timeout.signal]),
    });
    const { statusCode } = response;
    if (statusCode < 200 || statusCode > 299) {
      const read = await readBounded(response.body, ERROR_BODY_BYTES);
      const text = Array.from(new TextDecoder().decode(read.bytes)).slice(0, ERROR_MESSAGE_CHARS).join('');
      return failed({ error: 'status', status: statusCode, message: text });
    }
    // A declared length over the bound is refused before a byte of it is read.
    if (Number(response.headers['content-length']) > MAX_TOOL_RESULT_BYTES) {
      response.body.destroy();
      return failed({ error: 'too_large', limit_bytes: MAX_TOOL_RESULT_BYTES });
    }
    const read = await readBounded(response.body, MAX_TOOL_RESULT_BYTES);
    if (read.over) return failed({ error: 'too_large', limit_bytes: MAX_TOOL_RESULT_BYTES });
    if (read.bytes.length === 0) return { status: 'ok', output: null };
    try {
      return {
        status: 'ok',
        output: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(read.bytes)),
      };
    } catch (err) {
      return failed({ error: 'not_json', message: `The tool's answer is not JSON: ${messageOf(err)}` });
    }
  } catch (err) {
    if (request.signal.aborted) throw request.signal.reason;
    if (timeout.signal.aborted) {
      return failed({ error: 'timeout', message: `The tool did not answer within ${config.timeout_ms} ms.` });
    }
    // The code, not undici's message: that names the tool's host and address, not the model's to repeat.
    return failed({ error: 'unreachable', message: `The tool could not be reached (${errorCode(err)}).` });
  } finally {
    clearTimeout(timer);
  }
}

const failed = (output: Record<string, unknown>): ToolOutcome => ({ status: 'error', output });

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
