/**
 * The `settings` option every model adapter takes (`ModelSettings`), checked the same way by each: a
 * temperature of 3 or an unknown setting is a config error naming the field, not a 400 at the first call.
 */
import { z } from 'zod';

export const modelSettingsSchema = z
  .object({
    temperature: z.number().min(0).max(2),
    topP: z.number().min(0).max(1),
    maxOutputTokens: z.number().int().positive(),
    seed: z.number().int(),
    stopSequences: z.array(z.string()),
    presencePenalty: z.number().min(-2).max(2),
    frequencyPenalty: z.number().min(-2).max(2),
    reasoningEffort: z.enum(['minimal', 'low', 'medium', 'high']),
  })
  .partial()
  .strict();
