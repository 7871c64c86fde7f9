import Router from '@koa/router';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { AppRouter, Mw } from '../context.js';
import { auth } from '../http/auth.js';
import { bodyOf, validate } from '../http/pipeline.js';
import { llmSettings } from './llm.js';
import { assistantPolicy } from './policy.js';
import { presentAnswer } from './presenter.js';
import { answer, charCount, maxAnswerChars } from './service.js';

/**
 * POST /api/assistant body: the conversation so far, held by the client, ending with the user's question.
 * Limits from the configuration (spec: Limits): at most FOOTFALL_ASSISTANT_MAX_TURNS turns, a user turn at most
 * FOOTFALL_ASSISTANT_MAX_CHARS characters; an assistant turn at most what an answer can be (maxAnswerChars).
 */
export function assistantBody(limits: { maxTurns: number; maxChars: number; maxAnswerChars: number }) {
  const Turn = z.strictObject({
    role: z.enum(['user', 'assistant'], 'must be "user" or "assistant"'),
    text: z.string(),
  });
  return z.strictObject({
    history: z
      .array(Turn)
      .min(1, 'must hold at least the question')
      .max(limits.maxTurns, `at most ${limits.maxTurns} turns; start a new conversation`)
      .superRefine((turns, c) => {
        turns.forEach((t, i) => {
          const n = charCount(t.text);
          if (t.role === 'user' && t.text.trim() === '') c.addIssue({ code: 'custom', path: [i, 'text'], message: 'must not be empty' });
          if (t.role === 'user' && n > limits.maxChars) {
            c.addIssue({ code: 'custom', path: [i, 'text'], message: `a question may be at most ${limits.maxChars} characters (this one has ${n})` });
          }
          if (t.role === 'assistant' && n > limits.maxAnswerChars) {
            c.addIssue({ code: 'custom', path: [i, 'text'], message: `an assistant turn may be at most ${limits.maxAnswerChars} characters` });
          }
        });
        if (turns.length > 0 && turns[turns.length - 1]!.role !== 'user') {
          c.addIssue({ code: 'custom', path: [turns.length - 1, 'role'], message: 'the last turn must be the user’s question' });
        }
      }),
  });
}

export type AssistantBody = ReturnType<typeof assistantBody>;

const bodies = new WeakMap<Config, AssistantBody>();

/** The body schema for this deployment's limits (made once per configuration). */
export function assistantBodyFor(config: Config): AssistantBody {
  let schema = bodies.get(config);
  if (!schema) {
    schema = assistantBody({ maxTurns: config.FOOTFALL_ASSISTANT_MAX_TURNS, maxChars: config.FOOTFALL_ASSISTANT_MAX_CHARS, maxAnswerChars: maxAnswerChars(config) });
    bodies.set(config, schema);
  }
  return schema;
}

/** 501 assistant_off without FOOTFALL_ASSISTANT_URL, 503 assistant_misconfigured without a model; before the body is read. */
const configured: Mw = async (ctx, next) => {
  llmSettings(ctx.deps.config);
  await next();
};

const validateBody: Mw = (ctx, next) => validate({ body: assistantBodyFor(ctx.deps.config) })(ctx, next);

export function assistantRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/assistant' });

  /**
   * Whether the assistant can be asked here (docs/console.md: the console shows its tab only then): 200
   * `{ available }`, false when POST would answer 501 assistant_off or 503 assistant_misconfigured.
   */
  r.get('/', auth(assistantPolicy.ask), (ctx) => {
    let available = true;
    try {
      llmSettings(ctx.deps.config);
    } catch {
      available = false;
    }
    ctx.body = { available };
  });

  /** Answers the history's last question as the signed-in user; keeps nothing. 200 `{ text, used }`. */
  r.post('/', auth(assistantPolicy.ask), configured, validateBody, async (ctx) => {
    const { history } = bodyOf(ctx, assistantBodyFor(ctx.deps.config));
    ctx.body = presentAnswer(await answer(ctx, history));
  });

  return r;
}
