/**
 * The calculator's expression parser: numbers, + - * /, parentheses and unary minus, by recursive
 * descent. No `eval`, no `Function`: anything else is an error naming the position.
 */

/** Thrown for an expression the grammar does not accept, or a division by zero. */
export class ArithmeticError extends Error {
  override readonly name = 'ArithmeticError';
}

/**
 * The value of an arithmetic expression.
 * @example
 * evaluateArithmetic('12 + 34 * 2') // 80
 */
export function evaluateArithmetic(expression: string): number {
  const tokens = [...expression.matchAll(/\s*(?:(\d+(?:\.\d+)?|\.\d+)|([-+*/()])|(\S))/g)];
  let index = 0;
  const peek = () => tokens[index];
  const fail = (what: string): never => {
    throw new ArithmeticError(`${what} at position ${peek()?.index ?? expression.length} in "${expression}"`);
  };
  const take = (operator: string) => {
    if (peek()?.[2] !== operator) return false;
    index++;
    return true;
  };
  const primary = (): number => {
    const token = peek();
    if (token === undefined) return fail('unexpected end');
    if (token[3] !== undefined) return fail(`unexpected "${token[3]}"`);
    if (token[1] !== undefined) {
      index++;
      return Number(token[1]);
    }
    if (take('-')) return -primary();
    if (take('+')) return primary();
    if (take('(')) {
      const value = sum();
      if (!take(')')) fail('expected ")"');
      return value;
    }
    return fail(`unexpected "${token[2] ?? ''}"`);
  };
  const product = (): number => {
    let value = primary();
    for (;;) {
      if (take('*')) value *= primary();
      else if (take('/')) {
        const divisor = primary();
        if (divisor === 0) throw new ArithmeticError(`division by zero in "${expression}"`);
        value /= divisor;
      } else return value;
    }
  };
  function sum(): number {
    let value = product();
    for (;;) {
      if (take('+')) value += product();
      else if (take('-')) value -= product();
      else return value;
    }
  }
  if (expression.trim() === '') throw new ArithmeticError('empty expression');
  const value = sum();
  if (index < tokens.length) fail(`unexpected "${peek()?.[0].trim() ?? ''}"`);
  return value;
}
