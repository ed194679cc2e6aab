// The calls of a committed step as the step loop (tool-steps.ts) makes them: in parallel, each result committed
// as it arrives and streamed once committed; a result an earlier attempt of the turn committed is told again
// instead of being asked for again. Every call gets its metrics and a log line.
import type { AgentConfig } from '../agents/catalogue.ts';
import type { ModelToolCall, ModelToolResult } from '../agents/provider.ts';
import { serviceUnavailable } from '../errors.ts';
import type { NewToolCall, ToolCallRecord, ToolCallSummary } from '../store/store.ts';
import type { AgentTools } from '../tools/agent-tools.ts';
import type { Tool, ToolOutcome } from '../tools/tool.ts';
import type { OperationContext, OperationDeps } from './operation-context.ts';

/** A step's call as committed: a new one, or an earlier attempt's with its result, if it has one. */
export type StepCall = ToolCallRecord | NewToolCall;

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
   * The results of a committed step's calls, in the calls' order: those committed already told again, the
   * others run. Every call settles before the turn goes on or fails: none writes after its operation has ended.
   */
  async settle(calls: readonly StepCall[]): Promise<ModelToolResult[]> {
    const earlier = this.#retellCommitted(calls);
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

  /** Results an earlier attempt committed, told again in the order they were committed (as they streamed). */
  #retellCommitted(calls: readonly StepCall[]): Map<string, ModelToolResult> {
    const earlier = new Map<string, ModelToolResult>();
    const committed = calls
      .filter((c): c is ToolCallRecord => 'status' in c && c.status !== null)
      .sort((x, y) => (x.completed_seq ?? 0) - (y.completed_seq ?? 0));
    for (const c of committed) {
      if (c.status === 'ok' || c.status === 'error')
        earlier.set(c.id, this.#retell({ id: c.id, name: c.name, input: c.input }, c, c.status));
    }
    return earlier;
  }

  /** A result committed by an earlier attempt: told again, not asked for again. */
  #retell(call: ModelToolCall, record: ToolCallRecord, status: ToolOutcome['status']): ModelToolResult {
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
      ? await this.#call(tool, call)
      : { status: 'error', output: missing(call.name, this.#tools) };
    const duration_ms = Math.round(performance.now() - started);
    await this.#context.commit({
      toolResults: [{ id: call.id, turn_id: this.#turn.turnId, ...outcome, duration_ms }],
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
