/**
 * The id of one review stop of a run: the journal position it stopped at and the digest of the output that
 * waits. A run can stop twice on the same output text (a model that repeats itself), and a decision on the
 * first stop sent again must not be taken for one on the second: the id tells the two apart.
 */

/**
 * The id of the review a run waits for at `waitingSeq` on the output with digest `outputHash`.
 * @example
 * const reviewId = reviewIdOf(record.waitingSeq ?? 0, record.pendingReview.outputHash); // '7-3f2a9c01b4d5e6f7'
 */
export function reviewIdOf(waitingSeq: number, outputHash: string): string {
  return `${waitingSeq}-${outputHash}`;
}
