/** The scripted model's one error: a test that calls the model more, or less, than its script says. */
import { LoopstateError } from '../contracts/errors.js';

/**
 * Thrown by the scripted test model when it is called more times than it has steps,
 * or by `assertComplete()` when steps were left unused.
 * @example
 * const model = scriptedModel([reply('done')]); await model.generate(request); await model.generate(request) // ScriptExhaustedError
 */
export class ScriptExhaustedError extends LoopstateError {
  constructor(message: string) {
    super({ code: 'script_exhausted', message });
  }
}
