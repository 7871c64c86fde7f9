import type { Config } from '../config.js';
import { actorOf, type Ctx } from '../context.js';
import { assistantUnavailable } from './errors.js';
import { complete, llmSettings, LlmError, type ChatMessage } from './llm.js';
import { systemPrompt } from './prompt.js';
import { isTool, refusedTools, runTool, toolSpecs } from './tools.js';

export interface Turn {
  role: 'user' | 'assistant';
  text: string;
}

/** At most this many tool calls are run per round; more are answered "not run". */
export const MAX_CALLS_PER_ROUND = 8;

/** Said when the model still wants tools after the last round and gave no text. */
export const OUT_OF_STEPS =
  'I could not finish looking this up within the steps I am allowed for one question. Please ask about one shop or one thing at a time.';

/**
 * Longest assistant turn a client may resend (8 questions' worth: answers that list cameras run long); an answer is
 * cut to it, so whatever the server answers can be sent back.
 */
export function maxAnswerChars(config: Config): number {
  return 8 * config.FOOTFALL_ASSISTANT_MAX_CHARS;
}

/** Characters as people count them (code points: an emoji is one). */
export const charCount = (text: string) => Array.from(text).length;

function capped(text: string, max: number): string {
  return charCount(text) <= max ? text : `${Array.from(text).slice(0, max - 1).join('')}…`;
}

/** A model's hidden reasoning some servers leave in the text (`<think>...</think>`). */
const thinking = /^\s*<think>[\s\S]*?<\/think>/;

/**
 * Answers the last question of a conversation the client holds. The model gets the system prompt, the history as
 * sent, and the tools; each round it either answers or calls tools, which run as the signed-in user and whose results
 * go back to it as `tool` messages. After FOOTFALL_ASSISTANT_MAX_ROUNDS rounds of tools it must answer (tool_choice
 * "none"). One deadline (FOOTFALL_ASSISTANT_TIMEOUT_MS) covers the whole question; a client that hangs up cancels it.
 * Logs tools and timings, never the question or the answer. Nothing is stored.
 */
export async function answer(ctx: Ctx, history: Turn[], now = new Date()): Promise<{ text: string; used: string[] }> {
  const { config } = ctx.deps;
  const settings = llmSettings(config);
  const actor = actorOf(ctx);
  const started = performance.now();
  const gone = new AbortController();
  const onClose = () => {
    if (!ctx.res.writableFinished) gone.abort();
  };
  ctx.res.once('close', onClose);
  const signal = AbortSignal.any([AbortSignal.timeout(config.FOOTFALL_ASSISTANT_TIMEOUT_MS), gone.signal]);

  const messages: ChatMessage[] = [
    {
      role: 'system',
      content: systemPrompt({
        companyName: actor.companyName,
        userName: actor.fullName,
        email: actor.email,
        role: actor.role,
        notAllowed: refusedTools(actor.role),
        now,
      }),
    },
    ...history.map((t): ChatMessage => ({ role: t.role, content: t.text })),
  ];
  const used: string[] = [];
  const stats = { llm_calls: 0, llm_ms: 0, tool_calls: 0, tools_ms: 0, tool_errors: 0 };
  const log = (extra: Record<string, unknown>) => ({
    assistant: { model: settings.model, turns: history.length, tools: used, ...stats, ms: Math.round(performance.now() - started), ...extra },
  });

  try {
    for (let round = 1; ; round++) {
      const last = round > config.FOOTFALL_ASSISTANT_MAX_ROUNDS;
      const t0 = performance.now();
      stats.llm_calls++;
      const reply = await complete(settings, { messages, tools: toolSpecs, tool_choice: last ? 'none' : 'auto' }, signal);
      stats.llm_ms += Math.round(performance.now() - t0);
      const text = reply.content.replace(thinking, '').trim();

      if (reply.toolCalls.length === 0 || last) {
        if (!text && !last) {
          throw new LlmError(assistantUnavailable('the LLM service gave an empty answer. Try again.'), { reason: 'empty_answer' });
        }
        ctx.log.info(log({ rounds: round - 1, finish: reply.finishReason }), 'assistant answered');
        return { text: capped(text || OUT_OF_STEPS, maxAnswerChars(config)), used };
      }

      messages.push({ role: 'assistant', content: reply.content || null, tool_calls: reply.toolCalls });
      for (const [i, call] of reply.toolCalls.entries()) {
        const name = call.function.name;
        if (isTool(name) && !used.includes(name)) used.push(name);
        if (i >= MAX_CALLS_PER_ROUND) {
          const message = `Not run: at most ${MAX_CALLS_PER_ROUND} tool calls are run at a time. Call it again if you still need it.`;
          messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ error: 'too_many_calls', message }) });
          continue;
        }
        const t1 = performance.now();
        const outcome = await runTool(ctx, name, call.function.arguments);
        const ms = Math.round(performance.now() - t1);
        stats.tool_calls++;
        stats.tools_ms += ms;
        if (!outcome.ok) stats.tool_errors++;
        ctx.log.debug({ assistant_tool: { name, ms, ok: outcome.ok, ...(outcome.error ? { error: outcome.error } : {}) } }, 'assistant tool');
        messages.push({ role: 'tool', tool_call_id: call.id, content: outcome.content });
      }
    }
  } catch (err) {
    if (err instanceof LlmError) {
      ctx.log.warn(log({ failed: err.answer.code, ...err.detail }), 'assistant failed');
      throw err.answer;
    }
    throw err;
  } finally {
    ctx.res.off('close', onClose);
  }
}
