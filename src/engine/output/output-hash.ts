/** What a review decision is bound to: the reply text the person saw, hashed. */
import { digest64 } from '../progress/digest.js';

/**
 * The digest of an output's text (16 hex characters), as `pendingReview.outputHash` carries it: a review
 * decision that names another hash is refused, so a person never decides on an output they did not see.
 * @example
 * const decision = { accept: true, outputHash: outputHash(result.pendingReview!.rawOutput) } as const;
 */
export function outputHash(rawOutput: string): string {
  return digest64(rawOutput);
}
