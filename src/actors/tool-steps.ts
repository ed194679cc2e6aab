// The step loop of a turn (DESIGN §13): each step is one model call; when the model asks for tools, the
// calls are committed before any runs, run in parallel, and each result is committed as it arrives. A turn
// retried under its Idempotency-Key goes on from what is committed: a stored result is not asked for again,
// a call without one is made again under the same Idempotency-Key. After `max_steps` tool steps the model is
// called once more without tools. What the model writes in every step is the reply's text.
import type { AgentConfig } from '../agents/catalogue.ts';
import type {
  ModelMessage,
  ModelReply,
  ModelToolCall,
  ModelToolResult,
  ModelToolSpec,
  Usage,
} from '../agents/provider.ts';
import { serviceUnavailable } from '../errors.ts';
import { mayCallTools } from '../machines/session.ts';
import type { NewToolCall, StopReason, ToolCallRecord, ToolCallSummary } from '../store/store.ts';
import type { AgentTools } from '../tools/agent-tools.ts';
import type { ToolOutcome } from '../tools/tool.ts';
import type { OperationContext, OperationDeps } from './operation-context.ts';

/**
 * One model call of the turn: the turn's steps so far after its history, the agent's tools, and whether it
 * may call them (out of steps, they are only declared).
 */
export type StepModel = (
  steps: readonly ModelMessage[],
  tools: { specs: readonly ModelToolSpec[]; choice: 'auto' | 'none' },
  onDelta: (text: string) => void,
) => Promise<ModelReply>;

/** The turn's reply: the text of every step, and its tool calls. */
export interface StepsReply {
  text: string;
  stop_reason: StopReason;
  /** Summed over the turn's model calls. */
  usage: Usage;
  tool_calls: ToolCallSummary[];
}

/** Between the texts of two steps, as stored and as streamed. */
const STEP_SEPARATOR = '\n\n';
/** Calls of one step that are kept and made; the model's further ones are dropped (DESIGN §16: every cost bounded). */
export const MAX_CALLS_PER_STEP = 16;

export async function runSteps(
  deps: OperationDeps,
  context: OperationContext,
  turn: { agent: AgentConfig; turnId: string; ask: StepModel; resumed: readonly ToolCallRecord[] },
): Promise<StepsReply> {
  const { agent, turnId, ask } = turn;
  const { entry, observer } = context;
  const tools = deps.tools.get(agent.id);
  const steps: ModelMessage[] = [];
  const summaries: ToolCallSummary[] = [];
  const usage: Usage = { input_tokens: 0, output_tokens: 0 };
  const add = (more: Usage | null) => {
    usage.input_tokens += more?.input_tokens ?? 0;
    usage.output_tokens += more?.output_tokens ?? 0;
  };
  let text = '';
  /** Streams a step's text, set apart from an earlier step's. */
  const stepText = () => {
    let first = true;
    return (piece: string) => {
      if (piece === '') return;
      if (first && text !== '') {
        text += STEP_SEPARATOR;
        observer?.delta(STEP_SEPARATOR);
      }
      first = false;
      text += piece;
      observer?.delta(piece);
    };
  };

  /** A call's metrics and its log line; a name the agent does not have is counted as `unknown`. */
  const account = (
    call: ModelToolCall,
    outcome: ToolOutcome['status'],
    duration_ms: number,
    known: boolean,
  ) => {
    const label = known ? call.name : 'unknown';
    deps.metrics.toolCalls.inc({ tool: label, outcome });
    deps.metrics.toolDuration.observe({ tool: label }, duration_ms / 1000);
    const { id: call_id, name: tool } = call;
    deps.log.info(
      { session_id: entry.session.id, turn_id: turnId, call_id, tool, outcome, duration_ms },
      'tool call',
    );
  };

  /** Runs one committed call (again, when resumed without a result) and commits its result. */
  const run = async (call: ModelToolCall): Promise<ModelToolResult> => {
    const tool = tools?.find(call.name);
    const started = performance.now();
    let outcome: ToolOutcome;
    try {
      outcome = tool
        ? await tool.call({
            callId: call.id,
            turnId,
            sessionId: entry.session.id,
            agentId: agent.id,
            user: entry.session.user,
            input: call.input,
            signal: context.signal,
          })
        : { status: 'error', output: missing(call.name, tools) };
      // A result that cannot be stored (JSON nested too deep to write) would fail every retry of the turn.
      JSON.stringify(outcome.output);
    } catch (err) {
      // Stopping: the call is stored without a result, so a retry under the same key makes it again.
      if (context.signal.aborted) throw serviceUnavailable('The service is shutting down.', err);
      outcome = { status: 'error', output: { error: 'failed', message: 'The tool gave no usable result.' } };
    }
    const duration_ms = Math.round(performance.now() - started);
    await context.commit({
      toolResults: [{ id: call.id, turn_id: turnId, ...outcome, duration_ms }],
      event: { type: 'TOOL_RESULT' },
    });
    account(call, outcome.status, duration_ms, tool !== undefined);
    observer?.toolCompleted?.({ call_id: call.id, name: call.name, ...outcome });
    summaries.push({ ...call, ...outcome, duration_ms });
    return { call_id: call.id, name: call.name, ...outcome };
  };

  /** A result committed by an earlier attempt: told again, not asked for again. */
  const told = (call: ModelToolCall, record: ToolCallRecord, status: ToolOutcome['status']) => {
    observer?.toolCompleted?.({ call_id: call.id, name: call.name, status, output: record.output });
    summaries.push({ ...call, status, output: record.output, duration_ms: record.duration_ms ?? 0 });
    return { call_id: call.id, name: call.name, status, output: record.output };
  };

  /** A committed step: its calls, run where their results are missing. */
  const act = async (calls: readonly (ToolCallRecord | NewToolCall)[], said: string) => {
    const asked = calls.map(({ id, name, input }) => ({ id, name, input }));
    steps.push({
      role: 'assistant',
      content: said === '' ? [] : [{ type: 'text', text: said }],
      tool_calls: asked,
    });
    for (const c of asked) observer?.toolStarted?.({ call_id: c.id, name: c.name, input: c.input });
    // Results an earlier attempt committed are told again in the order they were committed (as they streamed).
    const earlier = new Map<string, ModelToolResult>();
    const committed = calls
      .filter((c): c is ToolCallRecord => 'status' in c && c.status !== null)
      .sort((x, y) => (x.completed_seq ?? 0) - (y.completed_seq ?? 0));
    for (const c of committed) {
      if (c.status !== null) earlier.set(c.id, told({ id: c.id, name: c.name, input: c.input }, c, c.status));
    }
    // Every call settles before the turn goes on or fails: none writes after its operation has ended.
    const settled = await Promise.allSettled(
      calls.map((c) => earlier.get(c.id) ?? run({ id: c.id, name: c.name, input: c.input })),
    );
    const results = settled.map((r) => {
      if (r.status === 'rejected') throw r.reason;
      return r.value;
    });
    steps.push({ role: 'tool', results });
  };

  // Resumed: the committed steps again, as the model wrote them, and the calls that still lack a result.
  const byStep = new Map<number, ToolCallRecord[]>();
  for (const c of turn.resumed) byStep.set(c.step, [...(byStep.get(c.step) ?? []), c]);
  if (byStep.size > 0) {
    const pending = turn.resumed.filter((c) => c.status === null).length;
    entry.actor.send({ type: 'STEPS_RESUMED', steps: byStep.size, pending });
    for (const calls of byStep.values()) {
      const said = calls[0]?.step_text ?? '';
      stepText()(said);
      add(calls[0]?.step_usage ?? null);
      await act(calls, said);
    }
  }

  for (;;) {
    const specs = tools?.specs() ?? [];
    const choice = mayCallTools(entry.actor.getSnapshot(), agent.max_steps) ? 'auto' : 'none';
    const before = text;
    const reply = await ask(steps, { specs, choice }, stepText());
    add(reply.usage);
    if (reply.tool_calls.length === 0 || choice === 'none' || specs.length === 0) {
      // Out of steps, the model had to answer in text: the turn says why it ended there.
      const outOfSteps = choice === 'none' && specs.length > 0;
      const stop_reason = outOfSteps && reply.stop_reason === 'end' ? 'max_steps' : reply.stop_reason;
      return { text, stop_reason, usage, tool_calls: inAskedOrder(summaries, steps) };
    }
    const said = text.slice(before === '' ? 0 : before.length + STEP_SEPARATOR.length);
    const step = entry.actor.getSnapshot().context.steps + 1;
    const asked = reply.tool_calls.slice(0, MAX_CALLS_PER_STEP);
    const calls: NewToolCall[] = asked.map((c, position) => ({
      id: c.id,
      turn_id: turnId,
      step,
      position,
      name: c.name,
      input: c.input,
      step_text: position === 0 && said !== '' ? said : null,
      step_usage: position === 0 ? reply.usage : null,
    }));
    // A call whose input the model botched is answered at once, in the same write: it never runs.
    const refused = asked.flatMap((c) =>
      c.invalid === undefined
        ? []
        : [
            {
              id: c.id,
              turn_id: turnId,
              status: 'error' as const,
              output: invalidInput(c.invalid),
              duration_ms: 0,
            },
          ],
    );
    // Committed before any runs: a crash from here on resumes these very calls, under the same keys.
    await context.commit({
      toolCalls: calls,
      ...(refused.length > 0 ? { toolResults: refused } : {}),
      event: { type: 'TOOLS_CALLED', calls: calls.length - refused.length },
    });
    for (const c of asked)
      if (c.invalid !== undefined) account(c, 'error', 0, tools?.find(c.name) !== undefined);
    const answered = new Map(refused.map((r) => [r.id, r]));
    await act(
      calls.map((c) => {
        const result = answered.get(c.id);
        return result ? { ...c, ...result, created_at: '' } : c;
      }),
      said,
    );
  }
}

/** Why a call named no tool the agent offers now: its MCP server is down, or there is no such tool. */
const missing = (name: string, tools: AgentTools | undefined) =>
  tools?.unreachable(name)
    ? { error: 'unavailable', message: `The server of ${name} cannot be reached now; try later.` }
    : { error: 'unknown_tool', message: `This agent has no tool ${name}.` };

/** The error result of a call whose input was not JSON, or not what the tool's schema asks. */
const invalidInput = (why: string) => ({
  error: 'invalid_input',
  message: `The input of this call was not usable: ${why.slice(0, 500)}`,
});

/** The calls in the order the model asked for them (results arrive in any order). */
function inAskedOrder(summaries: ToolCallSummary[], steps: readonly ModelMessage[]): ToolCallSummary[] {
  const asked = steps.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []));
  const byId = new Map(summaries.map((s) => [s.id, s]));
  return asked.flatMap((c) => byId.get(c.id) ?? []);
}
