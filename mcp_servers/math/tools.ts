/**
 * The calculator's tools as plain functions: each takes validated arguments and returns a JSON value or
 * throws MathInputError for input it cannot compute (those become MCP `isError` results, never crashes).
 */
export class MathInputError extends Error {}

const MAX_FACTORIAL = 170; // 171! overflows a double
const MAX_FIBONACCI = 79; // F(78) is the last Fibonacci number below 2^53

function finite(x: number, what: string): number {
  if (!Number.isFinite(x)) throw new MathInputError(`${what} is not a finite number (got ${x})`);
  return x;
}

export const add = (a: number, b: number): number => finite(a + b, "a + b");
export const subtract = (a: number, b: number): number => finite(a - b, "a - b");
export const multiply = (a: number, b: number): number => finite(a * b, "a * b");

export function divide(a: number, b: number): number {
  if (b === 0) throw new MathInputError("division by zero: b must not be 0");
  return finite(a / b, "a / b");
}

export function power(a: number, b: number): number {
  return finite(a ** b, `${a} ** ${b}`);
}

export function remainder(a: number, b: number): number {
  if (b === 0) throw new MathInputError("remainder by zero: b must not be 0");
  return a % b;
}

export const cbrt = (a: number): number => Math.cbrt(a);

export function factorial(n: number): number {
  if (n < 0) throw new MathInputError(`factorial of a negative number is undefined (got ${n})`);
  if (n > MAX_FACTORIAL)
    throw new MathInputError(`factorial(${n}) overflows; the largest is ${MAX_FACTORIAL}`);
  let r = 1;
  for (let i = 2; i <= n; i++) r *= i;
  return r;
}

export const sin = (a: number): number => Math.sin(a);
export const cos = (a: number): number => Math.cos(a);
export function tan(a: number): number {
  return finite(Math.tan(a), `tan(${a})`);
}

/** The original calculator's odd one: a minus twice b. */
export const mine = (a: number, b: number): number => finite(a - 2 * b, "a - 2*b");

export function fibonacciNumbers(n: number): number[] {
  if (n < 0) throw new MathInputError(`n must be 0 or more (got ${n})`);
  if (n > MAX_FIBONACCI)
    throw new MathInputError(`n must be at most ${MAX_FIBONACCI} to stay exact (got ${n})`);
  const out: number[] = [];
  let [x, y] = [0, 1];
  for (let i = 0; i < n; i++) {
    out.push(x);
    [x, y] = [y, x + y];
  }
  return out;
}

/** Unicode code point of each character (ASCII values for ASCII text). */
export function stringsToCharsToInt(text: string): number[] {
  return Array.from(text, (ch) => ch.codePointAt(0)!);
}

export function intListToExponentialSum(values: number[]): number {
  return finite(
    values.reduce((sum, v) => sum + Math.exp(v), 0),
    "the sum of exponentials",
  );
}
