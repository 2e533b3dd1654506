import { LoopConfigError } from '../../src/contracts/errors.js';

/** The LoopConfigError `run` throws, or a test failure when it throws nothing or something else. */
export function configError(run: () => unknown): LoopConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof LoopConfigError) return error;
    throw error;
  }
  throw new Error('expected a LoopConfigError, but nothing was thrown');
}
