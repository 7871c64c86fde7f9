import { z } from 'zod';
import type { Config } from '../config.js';
import type { HttpError } from '../http/errors.js';
import { assistantMisconfigured, assistantOff, assistantUnavailable } from './errors.js';

/**
 * The client of the assistant's LLM: an OpenAI-compatible Chat Completions API (`POST {base}/chat/completions` with
 * `messages`, `tools` and `tool_choice`), as served by llama.cpp's server, vLLM, Ollama's /v1 and hosted services.
 * Node's fetch, no SDK. Every failure becomes an LlmError: the answer for the client (502 or 503, never the API key
 * nor anything the service sent) and details for the log.
 */

export interface LlmSettings {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:8081/v1. */
  baseUrl: string;
  model: string;
  apiKey: string | undefined;
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools: ToolSpec[];
  tool_choice: 'auto' | 'none';
}

export interface Completion {
  /** The reply's text, '' when it has none (a reply that only calls tools). */
  content: string;
  toolCalls: ToolCall[];
  finishReason: string | null;
}

/** A failed call: `answer` goes to the client, `detail` to the log. */
export class LlmError extends Error {
  constructor(
    readonly answer: HttpError,
    readonly detail: Record<string, unknown>,
  ) {
    super(answer.message);
  }
}

/** The configured service, or the 501/503 that says why there is none. */
export function llmSettings(config: Config): LlmSettings {
  const baseUrl = config.FOOTFALL_ASSISTANT_URL;
  if (!baseUrl) throw assistantOff();
  const model = config.FOOTFALL_ASSISTANT_MODEL;
  if (!model) throw assistantMisconfigured('FOOTFALL_ASSISTANT_URL is set but FOOTFALL_ASSISTANT_MODEL is not: set it to the model the LLM service should use.');
  return { baseUrl, model, apiKey: config.FOOTFALL_ASSISTANT_API_KEY };
}

/** Where the service is, for messages: scheme, host and port only. */
export function serviceName(s: LlmSettings): string {
  return new URL(s.baseUrl).origin;
}

const Content = z.union([z.string(), z.null(), z.array(z.object({ text: z.string().optional() }))]).optional();

const Reply = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: Content,
          tool_calls: z
            .array(
              z.object({
                id: z.string().nullish(),
                function: z.object({ name: z.string(), arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish() }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
});

/** The service's own reason from an error body (OpenAI, vLLM, Ollama and llama.cpp shapes), short and without the key. */
function remoteReason(body: string, s: LlmSettings): string {
  let reason = body;
  try {
    const j = JSON.parse(body) as { error?: unknown; message?: unknown; detail?: unknown };
    const e = j.error;
    const picked = typeof e === 'string' ? e : e && typeof e === 'object' && 'message' in e ? (e as { message: unknown }).message : (j.message ?? j.detail);
    if (typeof picked === 'string') reason = picked;
  } catch {
    // not JSON: the text itself
  }
  if (s.apiKey) reason = reason.split(s.apiKey).join('[redacted]');
  return reason.replace(/\s+/g, ' ').trim().slice(0, 300);
}

function failure(s: LlmSettings, status: number, reason: string): LlmError {
  const where = serviceName(s);
  const detail = { status, reason };
  if (status === 401 || status === 403) {
    return new LlmError(assistantMisconfigured(`the LLM service at ${where} refused this server's credentials (HTTP ${status}). Check FOOTFALL_ASSISTANT_API_KEY.`), detail);
  }
  if (status === 404) {
    return new LlmError(
      assistantMisconfigured(
        `the LLM service at ${where} answered 404 (no such model or path). Check FOOTFALL_ASSISTANT_MODEL ("${s.model}") and that FOOTFALL_ASSISTANT_URL is the API's base, where /chat/completions is served (usually ending in /v1).`,
      ),
      detail,
    );
  }
  if (status >= 300 && status < 400) {
    return new LlmError(assistantMisconfigured(`the LLM service at ${where} redirects elsewhere (HTTP ${status}). Set FOOTFALL_ASSISTANT_URL to the final address.`), detail);
  }
  if ((status === 400 || status === 422) && /\btools?\b|function.?call/i.test(reason)) {
    return new LlmError(
      assistantMisconfigured(`model "${s.model}" at ${where} does not take tool calls. Choose a model with tool (function) calling in FOOTFALL_ASSISTANT_MODEL, or turn tool calling on in the LLM server.`),
      detail,
    );
  }
  if (status === 400 || status === 413 || status === 422) {
    return new LlmError(
      assistantUnavailable(`the LLM service refused the request (HTTP ${status}), perhaps because the conversation is too long for its model. Start a new conversation; if that does not help, the server log has the reason.`),
      detail,
    );
  }
  if (status === 429) return new LlmError(assistantUnavailable(`the LLM service is busy (HTTP 429). Try again in a minute.`), detail);
  return new LlmError(assistantUnavailable(`the LLM service at ${where} failed (HTTP ${status}). Try again later.`), detail);
}

function textOf(content: z.infer<typeof Content>): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => p.text ?? '').join('');
  return '';
}

/** One Chat Completions call. `signal` bounds it (the question's deadline, or the client going away). */
export async function complete(s: LlmSettings, req: ChatRequest, signal: AbortSignal): Promise<Completion> {
  const where = serviceName(s);
  const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'application/json' };
  if (s.apiKey) headers.Authorization = `Bearer ${s.apiKey}`;
  const body = JSON.stringify({ model: s.model, ...req, stream: false });
  let status: number;
  let text: string;
  try {
    const res = await fetch(`${s.baseUrl}/chat/completions`, { method: 'POST', headers, body, signal, redirect: 'manual' });
    status = res.status;
    text = await res.text();
  } catch (err) {
    if (signal.aborted) {
      const timedOut = (signal.reason as { name?: string } | undefined)?.name === 'TimeoutError';
      throw timedOut
        ? new LlmError(assistantUnavailable(`the LLM service at ${where} did not answer in time. Try again, or ask a shorter question.`), { reason: 'timeout' })
        : new LlmError(assistantUnavailable('the request was cancelled.'), { reason: 'cancelled' });
    }
    const code = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    throw new LlmError(assistantUnavailable(`the LLM service at ${where} cannot be reached. Try again later; if it persists, tell whoever runs head office.`), {
      reason: 'unreachable',
      code,
    });
  }
  if (status < 200 || status >= 300) throw failure(s, status, remoteReason(text, s));
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = Reply.safeParse(json);
  if (!parsed.success) {
    throw new LlmError(
      assistantMisconfigured(`the service at ${where} did not answer as a Chat Completions API. Check FOOTFALL_ASSISTANT_URL (the API's base, usually ending in /v1).`),
      { status, reason: 'not_chat_completions' },
    );
  }
  const choice = parsed.data.choices[0]!;
  const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).map((c, i) => ({
    id: c.id || `call_${i + 1}`,
    type: 'function',
    function: { name: c.function.name, arguments: typeof c.function.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function.arguments ?? {}) },
  }));
  return { content: textOf(choice.message.content), toolCalls, finishReason: choice.finish_reason ?? null };
}
