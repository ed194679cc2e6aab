// The Store's tool calls: each call of a turn, committed before it runs and completed by its result (both
// written by session commits: see SessionWrite), and the summary a model's reply shows of them.
import type { MessageUsage } from './common.ts';

/**
 * A tool call as an assistant message shows it (docs/internals/decisions.md#tool-calls-on-messages): what was
 * asked, what came back.
 */
export interface ToolCallSummary {
  id: string;
  name: string;
  input: unknown;
  output: unknown;
  status: 'ok' | 'error';
  duration_ms: number;
}

/**
 * A tool call of a turn in progress, committed before the tool runs; its result is committed when it
 * arrives. A step's first call (`position` 0) also keeps the text the model wrote in that step and the
 * step's usage, so that a turn resumed after a crash gives the model the same steps again.
 */
export interface ToolCallRecord {
  id: string;
  turn_id: string;
  /** The model call that asked for it, from 1. */
  step: number;
  /** Its place among the step's calls, from 0. */
  position: number;
  name: string;
  input: unknown;
  step_text: string | null;
  step_usage: MessageUsage | null;
  /** Null until the result is committed. */
  status: 'ok' | 'error' | null;
  output: unknown;
  duration_ms: number | null;
  created_at: string;
  /** When its result was committed. */
  completed_at: string | null;
  /** Its result's place among the turn's results, in the order they were committed (and streamed), from 1. */
  completed_seq: number | null;
}

export type NewToolCall = Omit<
  ToolCallRecord,
  'status' | 'output' | 'duration_ms' | 'created_at' | 'completed_at' | 'completed_seq'
>;

export interface ToolCallResult {
  id: string;
  turn_id: string;
  status: 'ok' | 'error';
  output: unknown;
  duration_ms: number;
}

export interface ToolCallStore {
  /** The tool calls a turn committed, by step and position, with their results where committed. */
  turnToolCalls(sessionId: string, turnId: string): Promise<ToolCallRecord[]>;
}
