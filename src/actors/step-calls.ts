// The calls of a committed step as the step loop (tool-steps.ts) makes them: in parallel, each result committed
// as it arrives and streamed once committed; a result an earlier attempt of the turn committed is not asked
// for again (and told again when the loop says so); the calls of a cancelled turn are never sent. Every call
// gets its metrics and a log line.
import type { AgentConfig } from '../agents/catalogue.ts';
import type { ModelToolCall, ModelToolResult } from '../agents/provider.ts';
import { serviceUnavailable } from '../errors.ts';
import type {
  MessageUsage,
  NewToolCall,
  ToolCallDecision,
  ToolCallRecord,
  ToolCallSummary,
} from '../store/store.ts';
import type { AgentTools } from '../tools/agent-tools.ts';
import type { Tool, ToolOutcome } from '../tools/tool.ts';
import { traceToolCall } from '../tracing/tracer.ts';
import type { OperationContext, OperationDeps } from './operation-context.ts';
import { cancelledOutput, type StepCall } from './step-approvals.ts';

export type { StepCall } from './step-approvals.ts';

export class StepCalls {
  /** Each call with its result, in the order the results arrived. */
  readonly summaries: ToolCallSummary[] = [];
  readonly #deps: OperationDeps;
  readonly #context: OperationContext;
  readonly #turn: { agent: AgentConfig; turnId: string };
  readonly #tools: AgentTools | undefined;

  constructor(deps: OperationDeps, context: OperationContext, turn: { agent: AgentConfig; turnId: string }) {
    this.#deps = deps;
    this.#context = context;
    this.#turn = turn;
    this.#tools = deps.tools.get(turn.agent.id);
  }

  /**
   * The results of a committed step's calls, in the calls' order: those committed already taken as they are
   * (told again when `retell`), the others run. Every call settles before the turn goes on or fails: none
   * writes after its operation has ended.
   */
  async settle(calls: readonly StepCall[], retell: boolean): Promise<ModelToolResult[]> {
    const earlier = this.#committed(calls, retell);
    const settled = await Promise.allSettled(
      calls.map((c) => earlier.get(c.id) ?? this.#run({ id: c.id, name: c.name, input: c.input })),
    );
    return settled.map((r) => {
      if (r.status === 'rejected') throw r.reason;
      return r.value;
    });
  }

  /** Counts a call refused for its input: it never ran. */
  refused(call: ModelToolCall): void {
    this.#account(call, 'error', 0, this.#tools?.find(call.name) !== undefined);
  }

  /**
   * A cancelled turn's step: of `toRun`, those without a result are never sent (each gets the error result of
   * a cancelled call), and `denials` deny the step's waiting calls, in one commit; told when `tell`.
   */
  async cancel(
    step: readonly StepCall[],
    toRun: readonly StepCall[],
    denials: readonly ToolCallDecision[],
    tell: boolean,
  ): Promise<void> {
    const unsent = toRun.filter((c) => !('status' in c) || c.status === null);
    if (unsent.length === 0 && denials.length === 0) return;
    const turn_id = this.#turn.turnId;
    await this.#context.commit({
      toolResults: unsent.map((c) => ({
        id: c.id,
        turn_id,
        name: c.name,
        status: 'error',
        output: cancelledOutput,
        duration_ms: 0,
      })),
      decisions: [...denials],
      ...(denials.length > 0 ? { event: { type: 'DECIDED', callIds: denials.map((d) => d.id) } } : {}),
    });
    const ended = [
      ...unsent.map((c) => ({ call: c, output: cancelledOutput as unknown })),
      ...denials.flatMap((d) =>
        step.filter((c) => c.id === d.id).map((c) => ({ call: c, output: d.output })),
      ),
    ];
    for (const { call, output } of ended) {
      const { id, name, input } = call;
      this.summaries.push({ id, name, input, status: 'error', output, duration_ms: 0 });
      if (tell) this.#context.observer?.toolCompleted?.({ call_id: id, name, status: 'error', output });
    }
  }

  /** Results an earlier attempt committed, in the order they were committed (as they streamed). */
  #committed(calls: readonly StepCall[], retell: boolean): Map<string, ModelToolResult> {
    const earlier = new Map<string, ModelToolResult>();
    const committed = calls
      .filter((c): c is ToolCallRecord => 'status' in c && c.status !== null)
      .sort((x, y) => (x.completed_seq ?? 0) - (y.completed_seq ?? 0));
    for (const c of committed) {
      if (c.status === 'ok' || c.status === 'error')
        earlier.set(c.id, this.#retell({ id: c.id, name: c.name, input: c.input }, c, c.status, retell));
    }
    return earlier;
  }

  /** A result committed by an earlier attempt: not asked for again, and told again when `tell`. */
  #retell(
    call: ModelToolCall,
    record: ToolCallRecord,
    status: ToolOutcome['status'],
    tell: boolean,
  ): ModelToolResult {
    if (tell)
      this.#context.observer?.toolCompleted?.({
        call_id: call.id,
        name: call.name,
        status,
        output: record.output,
      });
    this.summaries.push({ ...call, status, output: record.output, duration_ms: record.duration_ms ?? 0 });
    return { call_id: call.id, name: call.name, status, output: record.output };
  }

  /** Runs one committed call (again, when resumed without a result) and commits its result. */
  async #run(call: ModelToolCall): Promise<ModelToolResult> {
    const tool = this.#tools?.find(call.name);
    const started = performance.now();
    const outcome: ToolOutcome = tool
      ? await traceToolCall(tool.spec, call, () => this.#call(tool, call))
      : { status: 'error', output: missing(call.name, this.#tools) };
    const duration_ms = Math.round(performance.now() - started);
    await this.#context.commit({
      toolResults: [{ id: call.id, turn_id: this.#turn.turnId, name: call.name, ...outcome, duration_ms }],
      event: { type: 'TOOL_RESULT' },
    });
    this.#account(call, outcome.status, duration_ms, tool !== undefined);
    this.#context.observer?.toolCompleted?.({ call_id: call.id, name: call.name, ...outcome });
    this.summaries.push({ ...call, ...outcome, duration_ms });
    return { call_id: call.id, name: call.name, ...outcome };
  }

  /** What calling `tool` gave; an error outcome when it gave nothing usable. */
  async #call(tool: Tool, call: ModelToolCall): Promise<ToolOutcome> {
    const { entry, signal } = this.#context;
    try {
      const outcome = await tool.call({
        callId: call.id,
        turnId: this.#turn.turnId,
        sessionId: entry.session.id,
        agentId: this.#turn.agent.id,
        user: entry.session.user,
        input: call.input,
        signal,
      });
      // A result that cannot be stored (JSON nested too deep to write) would fail every retry of the turn.
      JSON.stringify(outcome.output);
      return outcome;
    } catch (err) {
      // Stopping: the call is stored without a result, so a retry under the same key makes it again.
      if (signal.aborted) throw serviceUnavailable('The service is shutting down.', err);
      return { status: 'error', output: { error: 'failed', message: 'The tool gave no usable result.' } };
    }
  }

  /** A call's metrics and its log line; a name the agent does not have is counted as `unknown`. */
  #account(call: ModelToolCall, outcome: ToolOutcome['status'], duration_ms: number, known: boolean): void {
    const { metrics, log } = this.#deps;
    const label = known ? call.name : 'unknown';
    metrics.toolCalls.inc({ tool: label, outcome });
    metrics.toolDuration.observe({ tool: label }, duration_ms / 1000);
    const { id: call_id, name: tool } = call;
    const ids = { session_id: this.#context.entry.session.id, turn_id: this.#turn.turnId };
    log.info({ ...ids, call_id, tool, outcome, duration_ms }, 'tool call');
  }
}

/** Why a call named no tool the agent offers now: its MCP server is down, or there is no such tool. */
const missing = (name: string, tools: AgentTools | undefined) =>
  tools?.unreachable(name)
    ? { error: 'unavailable', message: `The server of ${name} cannot be reached now; try later.` }
    : { error: 'unknown_tool', message: `This agent has no tool ${name}.` };

/** A step's calls as they are committed; the first also keeps the step's text and usage, for a resumed turn. */
export function newCalls(
  asked: readonly ModelToolCall[],
  step: { turnId: string; step: number; said: string; usage: MessageUsage | null },
): NewToolCall[] {
  return asked.map((c, position) => ({
    id: c.id,
    turn_id: step.turnId,
    step: step.step,
    position,
    name: c.name,
    input: c.input,
    step_text: position === 0 && step.said !== '' ? step.said : null,
    step_usage: position === 0 ? step.usage : null,
  }));
}

/** The error results of the calls whose input the model botched. */
export function refusals(asked: readonly ModelToolCall[], turnId: string) {
  return asked.flatMap((c) =>
    c.invalid === undefined
      ? []
      : [
          {
            id: c.id,
            turn_id: turnId,
            name: c.name,
            status: 'error' as const,
            output: invalidInput(c.invalid),
            duration_ms: 0,
          },
        ],
  );
}

/** The error result of a call whose input was not JSON, or not what the tool's schema asks. */
const invalidInput = (why: string) => ({
  error: 'invalid_input',
  message: `The input of this call was not usable: ${why.slice(0, 500)}`,
});
