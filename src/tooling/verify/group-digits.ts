/**
 * `value.toLocaleString('en-US')` for the counts verify prints, without ICU: the first `toLocaleString` of a process
 * loads ICU's number formats (~13 ms), which a cold `loopstate verify` paid inside its exploration. Whole numbers are
 * grouped here; anything else (fractions, -0, infinities, NaN, integers past 2^53) goes to `toLocaleString` itself.
 */

/**
 * `value` with its digits in groups of three, as `value.toLocaleString('en-US')` writes it.
 * @example
 * groupDigits(1234567); // '1,234,567'
 */
export function groupDigits(value: number): string {
  if (!Number.isSafeInteger(value) || Object.is(value, -0)) return value.toLocaleString('en-US');
  const digits = String(Math.abs(value));
  let grouped = digits.slice(0, ((digits.length - 1) % 3) + 1);
  for (let position = grouped.length; position < digits.length; position += 3)
    grouped += `,${digits.slice(position, position + 3)}`;
  return value < 0 ? `-${grouped}` : grouped;
}
